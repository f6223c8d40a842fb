"""The notebook side of a run: validated params, the run folder, seeds, figure and table saving.

A notebook's first code cell (tagged ``parameters``) sets every parameter to its ``demo`` value
plus ``run_dir = None``; papermill injects the values of the preset being run. The next cell is::

    run = radaudit.session.start("data_overview", globals())
    P = run.params

which validates the parameters found in the notebook's namespace against the experiment's
schema, opens the run folder (the runner's, or a fresh ``outputs/<experiment>/<time>_interactive``
folder when the notebook is run by hand in Jupyter), applies the lab's plotting theme and returns
a :class:`Run`.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit import manifest
from radaudit.config import BaseParams, validate_params
from radaudit.experiments import get_experiment
from radaudit.files import atomic_write
from radaudit.findings import FINDINGS_FILE, Finding, findings_frame, settle, write_findings
from radaudit.models.backends import model_revision
from radaudit.models.resolver import set_resolve_listener
from radaudit.paths import machine_paths, outputs_dir, project_root, safe_name, scrub_paths
from radaudit.stability import read_stability, recipe_id, stability_for, stability_path
from radaudit.stats import stable_seed  # noqa: F401 - re-exported: notebooks call radaudit.session.stable_seed
from radaudit.tables import save_table

log = logging.getLogger("radaudit")


@dataclass
class Run:
    """A run in progress: where its outputs go and which parameters it uses."""

    experiment: str
    params: BaseParams
    dir: Path
    figures: list[str] = field(default_factory=list)
    findings: list[Any] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    models: dict[str, Any] = field(default_factory=dict)  # spec -> ResolvedModel, every model this run resolved
    _revisions: dict[str, Any] = field(default_factory=dict, repr=False)
    _recorded_models: Any = field(default=None, repr=False)
    _stability_doc: Any = field(default=None, repr=False)  # (stability file, this run's recipe), read once

    @property
    def seed(self) -> int:
        return int(self.params.seed)

    def rng(self, *keys: object) -> np.random.Generator:
        """An independent random generator for one named step (e.g. ``run.rng("bootstrap", "sex")``)."""
        return np.random.default_rng(stable_seed(self.seed, *keys))

    def step_seed(self, *keys: object) -> int:
        return stable_seed(self.seed, *keys)

    def record(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON-serialisable) in the run's manifest under ``recorded.<key>``: the data
        versions read, model revisions, counts of unparseable outputs, ... (written to
        ``recorded.json``, merged into ``manifest.json`` when the run ends)."""
        path = self.dir / "recorded.json"
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data[key] = value
        atomic_write(path, json.dumps(data, indent=2, default=str) + "\n")

    def note_model(self, resolved: Any) -> None:
        """Listener of :func:`radaudit.models.resolver.set_resolve_listener`: remember a model this run uses."""
        self.models.setdefault(resolved.spec or resolved.path_or_id, resolved)

    def record_models(self) -> dict[str, Any]:
        """Write ``recorded.models`` (every model the run resolved: source, what was loaded and its revision —
        the hub commit once it is in the local cache, ``dist==version`` for ``pypi:``, a content fingerprint for a
        local folder; :func:`radaudit.models.backends.model_revision`) and ``recorded.determinism``
        (:func:`radaudit.manifest.determinism_info`). Called whenever a figure, table or finding is saved, so the
        manifest names the commit a hub model was downloaded at, even for an unpinned id."""
        if self.models:
            out = {}
            for spec, resolved in sorted(self.models.items()):
                rev = self._revisions.get(spec)
                if rev is None or (resolved.source == "hub" and rev in {resolved.revision, "main"}):
                    rev = self._revisions[spec] = model_revision(resolved)  # cheap for hub ids; local: once
                out[spec] = {"source": resolved.source, "path_or_id": resolved.path_or_id,
                             "requested_revision": resolved.revision, "revision": rev}
            state = (out, manifest.determinism_info())
            if state != self._recorded_models:
                self.record("models", state[0])
                self.record("determinism", state[1])
                self._recorded_models = state
        return dict(self._recorded_models[0]) if self._recorded_models else {}

    def finding(self, id: str, label: str, value: Any, *, verdict: str, ci: Any = None, paper: Any = None,
                note: str = "", bar: Any = None, controls: Any = (), stability: Any = None) -> Any:
        """Add one headline result to the run's ``findings.json`` (format and verdict rules:
        :mod:`radaudit.findings`) and rewrite the file. Re-running a cell replaces the finding with
        the same ``id``. Returns the validated :class:`~radaudit.findings.Finding` as given; the file
        holds it after :func:`radaudit.findings.settle` (a ``shown`` its CI, controls or seeds do not
        carry is lowered there)."""
        if stability is None:
            stability = self._stability(id)
        f = Finding(id=id, label=label, value=value, verdict=verdict, ci=ci, paper=paper, note=note, bar=bar,
                    controls=tuple(controls or ()), stability=stability)
        ids = [x.id for x in self.findings]
        if f.id in ids:
            self.findings[ids.index(f.id)] = f
        else:
            self.findings.append(f)
        write_findings(self.dir / FINDINGS_FILE, self.experiment, self._preset(), self.findings)
        self.record_models()
        return f

    def _stability(self, finding_id: str) -> dict[str, Any] | None:
        """The stability benchmark's verdicts for this finding when the run's recipe is the benchmark's
        (:mod:`radaudit.stability`); ``None`` otherwise."""
        if self._stability_doc is None:
            path = stability_path()
            doc = read_stability(path) if path is not None and self.params is not None else {}
            recipe = recipe_id(self.experiment, self.params) if doc.get("preset") == self._preset() else None
            self._stability_doc = (doc, recipe)
        doc, recipe = self._stability_doc
        return stability_for(doc, self.experiment, recipe, finding_id) if recipe else None

    def add_findings(self, findings: Any) -> None:
        """:meth:`finding` for each :class:`~radaudit.findings.Finding` of ``findings`` (an experiment's
        ``headline_findings``)."""
        for f in findings:
            self.finding(**f.to_dict())

    def findings_table(self) -> Any:
        """The run's findings so far as a table, as the file holds them (:func:`radaudit.findings.settle`,
        :func:`radaudit.findings.findings_frame`)."""
        return findings_frame(settle(self.findings))

    def _preset(self) -> str:
        try:
            preset = json.loads((self.dir / "manifest.json").read_text(encoding="utf-8")).get("preset")
        except (OSError, ValueError):
            preset = None
        return preset or "interactive"

    def figure(self, fig: Any, name: str, *, close: bool = False) -> dict[str, Path]:
        """Save ``fig`` as ``figures/<name>.png`` (at the params' ``figure_dpi``, default 300) and, with ``figure_pdf``
        (default), ``.pdf`` (``name`` made file-safe by
        :func:`radaudit.paths.safe_name`: ``"pairs demo diffusion"`` → ``pairs-demo-diffusion``)."""
        from radaudit.plots import save_figure  # lazy: matplotlib and seaborn are optional for library users

        name = safe_name(name, 120)
        paths = save_figure(fig, self.dir / "figures", name, close=close, dpi=self.params.figure_dpi,
                            pdf=self.params.figure_pdf)
        self.figures.append(name)
        self.record_models()
        return paths

    def table(self, df: Any, name: str, *, caption: str | None = None, index: bool = False) -> dict[str, Path]:
        """Save ``df`` as ``tables/<name>.csv``, ``.md`` and ``.tex`` (``name`` made file-safe as in :meth:`figure`)."""
        name = safe_name(name, 120)
        paths = save_table(_without_machine_paths(df, self.params), self.dir / "tables", name, caption=caption,
                           index=index)
        self.tables.append(name)
        self.record_models()
        return paths


def _without_machine_paths(df: Any, params: Any) -> Any:
    """``df`` with every folder of this machine in its text cells replaced by the word for it
    (:func:`radaudit.paths.machine_paths`: ``$RADAUDIT_DATA/covid-chestxray-dataset/images/x.png``): the same run in
    another folder, or on another machine with the data elsewhere, writes the same tables (issue 42)."""
    if not isinstance(df, pd.DataFrame):
        return df
    words = machine_paths(params.model_dump(mode="json") if hasattr(params, "model_dump") else None)
    text = [c for c in df.columns if df[c].dtype == object or pd.api.types.is_string_dtype(df[c])]
    if not text:
        return df
    out = df.copy()
    for c in text:
        out[c] = out[c].map(lambda v: scrub_paths(v, words) if isinstance(v, str) and "/" in v else v)
    return out


def _show_radaudit_logs() -> None:
    """Show radaudit's progress and warnings in the notebook without raising other libraries'
    log levels (the root logger is left alone: fontTools alone logs hundreds of INFO lines per PDF)."""
    lg = logging.getLogger("radaudit")
    if not any(getattr(h, "_radaudit", False) for h in lg.handlers):
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        h._radaudit = True  # type: ignore[attr-defined]
        lg.addHandler(h)
    lg.setLevel(logging.INFO)
    lg.propagate = False


def _interactive_dir(experiment: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = outputs_dir() / experiment
    for i in range(1, 1000):
        d = base / (f"{stamp}_interactive" + (f"-{i}" if i > 1 else ""))
        try:
            d.mkdir(parents=True, exist_ok=False)
            return d
        except FileExistsError:
            continue
    raise RuntimeError(f"could not create a fresh run folder under {base}")


def start(experiment: str, namespace: Mapping[str, Any]) -> Run:
    """Validate the notebook's parameters and open its run folder (see the module docstring)."""
    exp = get_experiment(experiment)
    model = exp.params_model()
    values = {k: namespace[k] for k in model.model_fields if k in namespace}
    params = validate_params(model, values, f"the notebook's parameters cell ({exp.notebook})")

    run_dir = namespace.get("run_dir")
    interactive = run_dir in (None, "")
    run_path = _interactive_dir(experiment) if interactive else Path(run_dir)
    (run_path / "figures").mkdir(parents=True, exist_ok=True)
    (run_path / "tables").mkdir(parents=True, exist_ok=True)
    if interactive:
        m = manifest.base_manifest(
            experiment=experiment, preset=None, run_name=run_path.name,
            params=params.model_dump(mode="json"), project=project_root(), status="interactive",
        )
        manifest.write(run_path / "manifest.json", m)

    np.random.seed(stable_seed(params.seed, "global") % (2**32))  # for libraries that use the global state
    try:
        from radaudit.plots import set_theme  # lazy: matplotlib and seaborn are optional for library users

        set_theme()
    except ImportError:  # plotting is optional for library users, never for notebooks
        log.warning("radaudit.plots unavailable; figures use matplotlib defaults")
    _show_radaudit_logs()
    log.info("run folder: %s", run_path)
    if manifest.use_deterministic_kernels():
        log.info("deterministic torch kernels on (RADAUDIT_DETERMINISTIC=1)")
    run = Run(experiment=experiment, params=params, dir=run_path)
    set_resolve_listener(run.note_model)  # the latest run of this kernel records the models it resolves
    return run
