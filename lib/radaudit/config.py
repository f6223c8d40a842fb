"""Parameters: YAML presets validated by one pydantic schema per experiment.

A preset is ``params/<experiment>/<preset>.yaml``. It is read with ``yaml.safe_load``; two keys are
reserved and are not parameters: ``description`` (one line shown by ``radaudit list``) and
``extends`` (the name of another preset of the same experiment whose values this one starts from).

Every experiment's schema derives from :class:`BaseParams` and forbids unknown keys, so a typo
fails before anything runs, with a message that names the key and lists the allowed ones.
Command-line overrides (``-p key=value``) are typed by the schema: a ``str`` field keeps the text
as given, other fields parse it as YAML (``-p n_bootstrap=500``, ``-p flag=true``,
``-p datasets=[iu_xray,radpref]``; a list field also takes ``a,b,c``), and ``a.b=value`` sets a
key inside a mapping.
"""

from __future__ import annotations

import difflib
import types
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from radaudit.errors import ParamsError
from radaudit.names import check_component

RESERVED_PRESET_KEYS = ("description", "extends")

#: Old parameter names still accepted, each with a warning that names the new one: ``{old: new}``.
#: ``n_resamples`` was the bootstrap knob's second name (radaudit.stats took scipy's); the lab has one, ``n_bootstrap``.
RENAMED_KEYS: dict[str, str] = {"n_resamples": "n_bootstrap"}


@dataclass(frozen=True)
class Requirement:
    """One thing a preset needs from outside the repository, for ``radaudit preflight``.

    ``kind``: ``"data"`` (a local file or folder), ``"model"`` (hub id, folder or ``demo``), ``"adapter"``,
    ``"checkpoint"`` or ``"setting"`` (a switch that must be true, e.g. ``trust_remote_code``); ``key``: the parameter that
    names it; ``value``: its current value (``None``: not set); ``dtype`` / ``batch_size``: for a model's memory estimate;
    ``optional``: not needed for the run (reported, never a failure); ``note``: what it is for.
    """

    kind: str
    key: str
    value: Any
    dtype: str | None = None
    batch_size: int | None = None
    optional: bool = False
    note: str = ""


class BaseParams(BaseModel):
    """Keys every experiment has."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    seed: int = Field(0, description="Seed for every random step (bootstrap, sampling, model generation).")
    data_root: str | None = Field(None, description="Folder that holds the datasets; default $RADAUDIT_DATA, "
                                                    "then ../shared/data.")
    n_bootstrap: int = Field(1000, ge=2, description="Bootstrap resamples for every 95% CI.")
    confidence: float = Field(0.95, gt=0, lt=1, description="Confidence level of every interval.")
    figure_dpi: int = Field(300, ge=50, le=1200, description="Resolution of every saved PNG figure (the PDF beside "
                            "it is vector). The smoke presets use 72: the test suite checks that each figure is made, "
                            "not how sharp it is.")
    figure_pdf: bool = Field(True, description="Also save every figure as a vector PDF beside its PNG (for papers). "
                             "The smoke presets turn it off: embedding the fonts costs ~0.5 s a figure.")

    def preflight(self) -> None:
        """Checks that need the outside world (data present, models loadable), run before the notebook."""

    def requirements(self) -> list[Requirement]:
        """Every dataset path, model, adapter and checkpoint these parameters need (``radaudit preflight``)."""
        return []


def check_unique_names(names: list[str], what: str) -> None:
    """A params list of named entries (``models``, ``generators``): at least one entry and no name twice, else a
    ``ValueError`` saying so (raised inside a pydantic validator, it names the key)."""
    if not names or len(set(names)) != len(names):
        raise ValueError(f"{what} need at least one entry and unique names; got {names}")


# ----------------------------------------------------------------------------- error formatting

def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def format_validation_error(err: ValidationError, model: type[BaseModel], where: str) -> str:
    """One readable message for a pydantic error: each bad key, what is wrong, what is allowed."""
    allowed = _allowed_keys(model)
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(root)"
        if e["type"] == "extra_forbidden":
            key = str(e["loc"][0])
            hint = difflib.get_close_matches(key, allowed, n=1)
            did = f" Did you mean {hint[0]!r}?" if hint else ""
            lines.append(f"unknown key {loc!r}.{did} Allowed keys: {', '.join(allowed)}.")
        else:
            field = model.model_fields.get(str(e["loc"][0])) if e["loc"] else None
            desc = f" ({field.description})" if field is not None and field.description else ""
            lines.append(f"bad value for {loc!r}: {e['msg']} (got {e.get('input')!r}){desc}.")
    return f"Invalid parameters in {where}:\n  - " + "\n  - ".join(lines)


def renamed_keys(values: dict[str, Any], where: str = "the parameters") -> dict[str, Any]:
    """``values`` with every old key of :data:`RENAMED_KEYS` under its new name, each with a ``FutureWarning`` (shown
    to users by default) that says which name to write instead; both names at once is a :class:`ParamsError`."""
    out = dict(values)
    for old, new in RENAMED_KEYS.items():
        if old not in out:
            continue
        if new in out:
            raise ParamsError(f"{where} sets both {old!r} and {new!r}; {old!r} is the old name of {new!r}: "
                              f"keep {new!r} only.")
        warnings.warn(f"{where}: parameter {old!r} is deprecated and will be removed; write {new!r} instead "
                      f"(e.g. -p {new}=500).", FutureWarning, stacklevel=3)
        out[new] = out.pop(old)
    return out


def validate_params(model: type[BaseParams], values: dict[str, Any], where: str = "the parameters") -> BaseParams:
    values = renamed_keys(values, where)
    try:
        return model.model_validate(values)
    except ValidationError as err:
        raise ParamsError(format_validation_error(err, model, where)) from None


# ----------------------------------------------------------------------------- presets

def preset_path(params_dir: Path, experiment: str, preset: str) -> Path:
    return params_dir / check_component(experiment, "experiment") / f"{check_component(preset, 'preset')}.yaml"


def list_presets(params_dir: Path, experiment: str) -> dict[str, str]:
    """Preset name -> its one-line description, for every YAML file of the experiment."""
    out = {}
    for p in sorted((params_dir / experiment).glob("*.yaml")):
        raw = _read_yaml(p)
        out[p.stem] = str(raw.get("description", "")).strip()
    return out


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.constructor.ConstructorError as err:
        # yaml.safe_load never builds Python objects: a "!!python/..." tag is refused, never executed
        line = f", line {err.problem_mark.line + 1}" if err.problem_mark else ""
        raise ParamsError(f"{path}{line}: {err.problem}; refused (not executed): parameter files hold strings, "
                          "numbers, lists and mappings only.") from None
    except yaml.YAMLError as err:
        raise ParamsError(f"{path} is not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParamsError(f"{path} must hold a mapping of parameter names to values, not {type(data).__name__}.")
    return data


def load_preset(params_dir: Path, experiment: str, preset: str, _seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The preset's raw values (``extends`` resolved, reserved keys removed)."""
    path = preset_path(params_dir, experiment, preset)
    if not path.exists():
        have = sorted(list_presets(params_dir, experiment))
        raise ParamsError(
            f"No preset {preset!r} for experiment {experiment!r} (looked for {path}). "
            f"Available presets: {', '.join(have) or 'none'}."
        )
    raw = _read_yaml(path)
    base: dict[str, Any] = {}
    if "extends" in raw:
        parent = str(raw["extends"])
        if parent in _seen or parent == preset:
            raise ParamsError(f"Preset {preset!r} of {experiment!r} extends itself through {parent!r}.")
        base = load_preset(params_dir, experiment, parent, _seen + (preset,))
    values = {k: v for k, v in raw.items() if k not in RESERVED_PRESET_KEYS}
    return deep_merge(base, values)


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


# ----------------------------------------------------------------------------- overrides

def _is_str_annotation(ann: Any) -> bool:
    if ann is str or ann is Path:
        return True
    args = typing.get_args(ann)
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        return bool(non_none) and all(_is_str_annotation(a) for a in non_none)
    if origin is typing.Literal:
        return all(isinstance(a, str) for a in args)
    return False


def _is_list_annotation(ann: Any) -> bool:
    origin = typing.get_origin(ann)
    if origin in (list, tuple, set, frozenset):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list_annotation(a) for a in typing.get_args(ann) if a is not type(None))
    return False


def parse_override_value(model: type[BaseModel], key: str, raw: str) -> Any:
    """Type the text of ``-p key=raw`` by the schema's annotation for ``key`` (see module docstring)."""
    top = key.split(".")[0]
    field = model.model_fields.get(RENAMED_KEYS.get(top, top))
    if field is None:
        # leave it to validation, which names the key and the allowed ones
        return raw
    ann = field.annotation
    if "." not in key and _is_str_annotation(ann):
        if raw.lower() in ("null", "none", "~") and type(None) in typing.get_args(ann):
            return None
        return raw
    if "." not in key and _is_list_annotation(ann) and not raw.strip().startswith("["):
        return [yaml.safe_load(x.strip()) if x.strip() else x for x in raw.split(",")] if raw.strip() else []
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def parse_overrides(model: type[BaseModel], items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``["a=1", "b.c=x"]`` -> ``{"a": 1, "b": {"c": "x"}}``, typed by ``model``."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ParamsError(f"Override {item!r} must look like key=value (e.g. -p seed=1).")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ParamsError(f"Override {item!r} has an empty key.")
        value = parse_override_value(model, key, raw)
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ParamsError(f"Override {item!r} sets inside {p!r}, which is not a mapping.")
        node[parts[-1]] = value
    return out


def load_params_file(path: str | Path) -> dict[str, Any]:
    """A user's parameter file (``radaudit run EXP -f my.yaml``): a YAML mapping read with ``yaml.safe_load``
    (a ``!!python/...`` tag is an error, never executed); ``description``/``extends`` are ignored, so the
    output of ``radaudit params EXP > my.yaml`` loads back unchanged."""
    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"parameter file {str(p)!r} does not exist (write one with `radaudit params <experiment> "
                          "> my.yaml`, edit it, then pass -f my.yaml).")
    return {k: v for k, v in _read_yaml(p).items() if k not in RESERVED_PRESET_KEYS}


def resolve_params(
    model: type[BaseParams],
    params_dir: Path,
    experiment: str,
    preset: str,
    overrides: list[str] | tuple[str, ...] = (),
    extra: dict[str, Any] | None = None,
    params_files: list[str | Path] | tuple[str | Path, ...] = (),
) -> BaseParams:
    """Preset values, then each ``-f`` parameter file in order, then ``-p`` overrides, then ``extra``
    (e.g. ``--data-root``), validated by the same schema."""
    # each layer under the current names first, so that an old name in one layer overrides the new name in another
    values = renamed_keys(load_preset(params_dir, experiment, preset), f"preset {preset!r} of {experiment!r}")
    for f in params_files:
        values = deep_merge(values, renamed_keys(load_params_file(f), str(f)))
    values = deep_merge(values, renamed_keys(parse_overrides(model, overrides), "the -p overrides"))
    if extra:
        values = deep_merge(values, {k: v for k, v in extra.items() if v is not None})
    where = (f"preset {preset!r} of {experiment!r}" + "".join(f" + {f}" for f in params_files)
             + (" with the -p overrides" if overrides else ""))
    return validate_params(model, values, where)
