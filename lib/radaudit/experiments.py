"""The experiment registry: name -> notebook, params schema, one-line description.

Adding an experiment is one entry here, one notebook in ``notebooks/`` and its presets in
``params/<name>/``. The schema class is imported only when the experiment is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from radaudit.config import BaseParams
from radaudit.errors import ParamsError


@dataclass(frozen=True)
class Experiment:
    name: str
    notebook: str  # file name inside notebooks/
    params: str | type[BaseParams]  # "module:Class" (imported lazily) or the class itself
    description: str
    paper: str | None = None  # file in ../shared/papers/ it implements

    def params_model(self) -> type[BaseParams]:
        if not isinstance(self.params, str):
            return self.params
        module, cls = self.params.split(":")
        return getattr(importlib.import_module(module), cls)


EXPERIMENTS: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    if exp.name in EXPERIMENTS:
        raise ValueError(f"experiment {exp.name!r} registered twice")
    EXPERIMENTS[exp.name] = exp
    return exp


register(Experiment(
    name="data_overview",
    notebook="00_data_overview.ipynb",
    params="radaudit.audits.data_overview:Params",
    description="What the public datasets hold: counts, sex and age, report lengths, label prevalence, one example each.",
))


def get_experiment(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ParamsError(f"Unknown experiment {name!r}. Known experiments: {', '.join(EXPERIMENTS)}.") from None
