"""The GT–ME pair dataset balanced as ReEvalMed Table 2 / §4.2.1, the monotonicity set (§4.3), parquet I/O.

Balance (§4.2.1): for the high-impact aspects (location, severity, description, comparison) 10
significant and 10 insignificant pairs for *each* error type (4 x 3 x 2 x 10 = 240); for the other
eight aspects 10 significant and 10 insignificant pairs with the error type sampled (8 x 2 x 10 =
160): 400 pairs at ``n_per_cell=10`` (:func:`table2_cells`). A cell that the reports cannot fill is
reported in ``fill`` with its counts (target, filled, candidates tried, not applicable, rejected,
of which ``unparseable``: LLM replies that never matched the JSON schema, shortfall), never padded.

Context (§4.2.1): "for significant error pairs, we retained substantial contextual content ... for
insignificant error pairs, we intentionally reduced the amount of surrounding context and kept only
the modified part when appropriate". ``context="paper"`` does that: insignificant pairs are cut to
the sentences that contain the edit (both texts cut at the same places; verification re-run);
``context="full"`` keeps whole reports for every pair.

Monotonicity (§4.3, Table 3, Figure 3): the same GT reports rewritten at five severity groups:
0 stylistic, 1 one minor insignificant factual error, 2 one significant error, 3 three significant
errors (in three different aspects), 4 a logical contradiction. The paper used four ReXVal reports;
:func:`build_monotonicity_set` picks ``n_reports`` (default 4) for which all five groups verify.

Everything is seeded: the same reports, engine, seed and parameters give the same table, in the
same order, byte for byte when saved.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import radaudit
from radaudit.data import fingerprint, load_dataset
from radaudit.errors import DataFormatError, ParamsError
from radaudit.perturb.base import (
    ASPECTS,
    ERROR_TYPES,
    HIGH_IMPACT_ASPECTS,
    MONOTONICITY_GROUPS,
    PAIR_COLUMNS,
    RULES,
    SIGNIFICANCE,
    Pair,
    apply_edits,
    derive_seed,
    rules_for,
)
from radaudit.perturb.engine import Outcome, RewriteTask, RuleEngine, make_pair
from radaudit.perturb.verify import check_outside, verify_rewrite
from radaudit.text.sections import sentences

__all__ = [
    "TEXT_FIELDS", "PairDataset", "gt_reports", "load_gt_reports", "table2_cells", "build_pair_dataset",
    "build_monotonicity_set", "pairs_frame", "save_pair_dataset", "load_pair_dataset", "to_hf_dataset",
    "MONOTONICITY_RULES", "FILL_COLUMNS",
]

#: Which report text becomes the GT. The paper's dataset "focuses on the findings of the report"
#: (Appendix B); CheXpert Plus's validation reports mostly have an impression only, hence the default.
TEXT_FIELDS = ("findings_or_impression", "findings", "impression", "report")
FILL_COLUMNS = ["aspect", "error_type", "significance", "target", "filled", "tried", "not_applicable", "rejected",
                "unparseable", "shortfall", "note"]

#: Rules used for each monotonicity group (§4.3 group definitions).
MONOTONICITY_RULES: dict[int, tuple[str, ...]] = {
    0: ("style_reorder", "style_template", "term_synonym", "unc_swap", "mod_synonym", "desc_synonym", "loc_redescribe"),
    1: ("size_jitter", "sev_adjacent", "loc_drop_side", "loc_add_subsite", "desc_drop_minor", "sev_drop_low",
        "desc_add_benign", "cmp_add_stable", "size_add_ctr", "sev_add_benign"),
    2: ("loc_flip_side", "sev_shift_two", "neg_flip", "cmp_reverse", "size_scale", "term_wrong", "sev_add_severe",
        "desc_opposite", "loc_make_bilateral", "unc_remove"),
    4: ("contra_assert", "contra_clear"),
}


def _text_of(row: Mapping[str, Any], text_field: str) -> str | None:
    def clean(v: Any) -> str | None:
        return v.strip() if isinstance(v, str) and v.strip() else None

    f, i = clean(row.get("findings")), clean(row.get("impression"))
    if text_field == "findings":
        return f
    if text_field == "impression":
        return i
    if text_field == "report":
        return "\n\n".join(x for x in (f, i) if x) or None
    return f or i


def gt_reports(frame: pd.DataFrame, *, text_field: str = "findings_or_impression", min_sentences: int = 1,
               source: str | None = None) -> pd.DataFrame:
    """``study_id, source, text`` from a tidy dataset frame (:mod:`radaudit.data` schema); reports
    without text (or with fewer than ``min_sentences`` sentences) are left out."""
    if text_field not in TEXT_FIELDS:
        raise ParamsError(f"text_field={text_field!r}: use one of {', '.join(TEXT_FIELDS)}.")
    missing = [c for c in ("study_id", "findings", "impression") if c not in frame.columns]
    if missing:
        raise DataFormatError(f"The reports frame lacks the columns {missing}; pass a frame from "
                              f"radaudit.data.load_dataset.")
    rows = []
    for rec in frame.to_dict("records"):
        t = _text_of(rec, text_field)
        if t is None or len(sentences(t)) < min_sentences:
            continue
        src = source or (rec.get("source") if isinstance(rec.get("source"), str) else "unknown")
        rows.append({"study_id": str(rec["study_id"]), "source": src, "text": t})
    return pd.DataFrame(rows, columns=["study_id", "source", "text"])


def load_gt_reports(datasets: Sequence[str] = ("iu_xray", "chexpert_plus_valid"), data_root: str | os.PathLike | None = None,
                    *, text_field: str = "findings_or_impression") -> tuple[pd.DataFrame, dict[str, Any]]:
    """GT reports from registered datasets (the demo: public IU X-ray and CheXpert Plus text) and a
    provenance record ``{dataset: {"fingerprint", "n_reports"}}`` (:func:`radaudit.data.fingerprint`)."""
    frames, prov = [], {}
    for name in datasets:
        df = gt_reports(load_dataset(name, data_root), text_field=text_field, source=name)
        frames.append(df)
        prov[name] = {"fingerprint": fingerprint(name, data_root), "n_reports": int(len(df)), "text_field": text_field}
    return pd.concat(frames, ignore_index=True), prov


def table2_cells(n_per_cell: int = 10) -> pd.DataFrame:
    """The cells of §4.2.1: ``aspect, error_type (None = sampled), significance, target``."""
    if not isinstance(n_per_cell, int) or n_per_cell < 1:
        raise ParamsError(f"n_per_cell must be a positive integer, got {n_per_cell!r}.")
    rows = []
    for aspect in ASPECTS:
        for sig in SIGNIFICANCE:
            if aspect in HIGH_IMPACT_ASPECTS:
                rows += [{"aspect": aspect, "error_type": et, "significance": sig, "target": n_per_cell}
                         for et in ERROR_TYPES]
            else:
                rows.append({"aspect": aspect, "error_type": None, "significance": sig, "target": n_per_cell})
    return pd.DataFrame(rows, columns=["aspect", "error_type", "significance", "target"])


def pairs_frame(pairs: Iterable[Pair]) -> pd.DataFrame:
    """A tidy table of pairs in :data:`~radaudit.perturb.base.PAIR_COLUMNS` order."""
    df = pd.DataFrame([p.to_row() for p in pairs], columns=list(PAIR_COLUMNS))
    df["group"] = df["group"].astype("Int64")
    for c in ("gt_start", "gt_end", "me_start", "me_end", "seed"):
        df[c] = df[c].astype("int64")
    df["verified"] = df["verified"].astype(bool)
    return df


@dataclass
class PairDataset:
    """``pairs`` (verified pairs), ``rejected`` (pairs that failed verification or parsing, with the
    reason), ``fill`` (per-cell counts, :data:`FILL_COLUMNS`) and ``provenance`` (JSON-able)."""

    pairs: pd.DataFrame
    rejected: pd.DataFrame
    fill: pd.DataFrame
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return bool((self.fill["shortfall"] == 0).all()) if len(self.fill) else True

    def shortfalls(self) -> pd.DataFrame:
        """The cells that could not be filled, with their counts."""
        return self.fill[self.fill["shortfall"] > 0].reset_index(drop=True)


def _trim_context(pair: Pair, check, labeler) -> Pair:
    """Cut an insignificant pair to the sentences holding its edits (§4.2.1); keep it whole when the
    trimmed pair no longer verifies."""
    gt, me = pair.gt, pair.rewritten
    ga, gb = pair.gt_span
    sel = [s for s in sentences(gt) if s.start <= gb and s.end >= ga]
    if not sel:
        return pair
    s0, s1 = min(s.start for s in sel), max(s.end for s in sel)
    if s0 == 0 and s1 == len(gt):
        return pair
    shift = len(me) - len(gt)
    spans = [((g0 - s0, g1 - s0), (m0 - s0, m1 - s0)) for g0, g1, m0, m1 in pair.edits]
    if any(g0 < 0 or g1 > s1 - s0 for (g0, g1), _ in spans):
        return pair
    gt2, me2 = gt[s0:s1], me[s0:s1 + shift]
    v = verify_rewrite(gt2, me2, spans, check, labeler)
    if not v.ok:
        pair.verification_note += "; full context kept (the trimmed pair fails verification)"
        return pair
    t = RewriteTask(pair.study_id, pair.source, gt2, pair.aspect, pair.significance, pair.error_type, pair.seed)
    new = make_pair(t, gt2, me2, spans, pair.explanation, engine=pair.engine, rule=pair.rule, error_type=pair.error_type,
                    verified=True, note=v.note + "; context reduced to the edited sentences (§4.2.1)",
                    group=pair.group)
    new.pair_id, new.context = pair.pair_id, "edited_sentences"
    return new


def _check_reports(reports: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(reports, pd.DataFrame) or not {"study_id", "text"} <= set(reports.columns):
        raise DataFormatError("reports must be a DataFrame with columns study_id, source, text "
                              "(use radaudit.perturb.dataset.gt_reports / load_gt_reports).")
    if reports.empty:
        raise DataFormatError("reports is empty: there are no GT reports to rewrite.")
    r = reports.copy()
    if "source" not in r.columns:
        r["source"] = "unknown"
    r["study_id"] = r["study_id"].astype(str)
    if r.duplicated(["source", "study_id"]).any():
        raise DataFormatError("reports has duplicate (source, study_id) rows; each GT report must appear once.")
    return r.sort_values(["source", "study_id"], kind="stable").reset_index(drop=True)  # input order never matters


def _engine(engine: Any) -> Any:
    if engine == "rules":
        return RuleEngine()
    if isinstance(engine, str):
        raise ParamsError(f"engine={engine!r}: pass 'rules' or an engine object (radaudit.perturb.llm.LLMEngine).")
    if not hasattr(engine, "rewrite"):
        raise ParamsError("engine must have a rewrite(tasks, labeler) method (RuleEngine or LLMEngine).")
    return engine


def _texts_sha(reports: pd.DataFrame) -> str:
    h = hashlib.sha256()
    for s, i, t in sorted(zip(reports["source"], reports["study_id"], reports["text"])):
        h.update(f"{s}\x1f{i}\x1f{t}\x1e".encode())
    return h.hexdigest()[:16]


def _provenance(kind: str, engine: Any, seed: int, reports: pd.DataFrame, sources: Mapping[str, Any] | None,
                **extra: Any) -> dict[str, Any]:
    return {
        "kind": kind, "paper": "ReEvalMed (Li et al., EMNLP 2025), paper 001", "seed": int(seed),
        "engine": engine.describe() if hasattr(engine, "describe") else {"engine": getattr(engine, "name", "?")},
        "sources": dict(sources or {}), "n_gt_reports": int(len(reports)), "gt_texts_sha256": _texts_sha(reports),
        "radaudit_version": radaudit.__version__, **extra,
    }


@dataclass
class _Unit:
    """A share of one cell's target: ``rule`` (``None`` = any rule of the cell) and its seeded report order."""

    cell: int
    aspect: str
    error_type: str | None
    significance: str
    rule: str | None
    target: int
    order: list[int]
    got: int = 0
    pos: int = 0


def _fill(units: list[_Unit], reports: pd.DataFrame, eng: Any, labeler: Any, context: str, seed: int,
          accepted: dict[int, list[Pair]], used: dict[int, set[int]], stats: dict[int, dict[str, int]],
          rejected: list[Pair]) -> None:
    """Fill every unit from its report order, in engine batches; a report is used at most once per cell."""
    hint = int(getattr(eng, "batch_hint", 0) or 0)
    study_ids, sources, texts = (reports[c].to_dict() for c in ("study_id", "source", "text"))  # not .at per task
    while True:
        batch: list[tuple[_Unit, int, RewriteTask]] = []
        for u in units:
            missing = u.target - u.got
            take: list[int] = []
            while missing > 0 and len(take) < max(missing, hint) and u.pos < len(u.order):
                i = u.order[u.pos]
                u.pos += 1
                if i not in used[u.cell]:
                    take.append(i)
            batch += [(u, i, RewriteTask(study_ids[i], sources[i], texts[i], u.aspect, u.significance, u.error_type,
                                         seed, u.rule)) for i in take]
        if not batch:
            return
        outcomes: list[Outcome] = eng.rewrite([t for _, _, t in batch], labeler)
        for (u, i, _t), o in zip(batch, outcomes):
            if u.got >= u.target:
                continue  # already full: the rest of this round's batch is unused
            st = stats[u.cell]
            st["tried"] += 1
            st["not_applicable"] += o.status == "not_applicable"
            st["rejected"] += len(o.rejected)
            st["unparseable"] += o.status == "unparseable"
            rejected += o.rejected
            if o.pair is None or i in used[u.cell]:
                continue  # (another rule of the cell took this report in the same batch)
            p = o.pair
            if context == "paper" and p.significance == "insignificant":
                chk = RULES[p.rule].check if p.rule in RULES else None
                p = _trim_context(p, chk, labeler)
            accepted[u.cell].append(p)
            used[u.cell].add(i)
            u.got += 1


def build_pair_dataset(reports: pd.DataFrame, engine: Any = "rules", n_per_cell: int = 10, seed: int = 0, *,
                       labeler: Any = None, context: str = "paper", cells: pd.DataFrame | None = None,
                       sources: Mapping[str, Any] | None = None, max_tasks_per_cell: int | None = None) -> PairDataset:
    """The balanced pair dataset (module docstring).

    ``reports``: ``study_id, source, text`` (:func:`gt_reports`). ``engine``: ``"rules"`` or an engine
    object. ``labeler``: a :class:`~radaudit.text.labeler.ChexpertLabeler` for the label checks
    (without one they are skipped and the notes say so). ``cells``: override :func:`table2_cells`.
    ``max_tasks_per_cell``: cap on reports tried per cell (LLM budgets); default all.
    Each GT report is used at most once per cell, in a seeded order per cell.

    Rules shared out (an engine with ``balance_rules``, the rule engine): a cell's target is split
    evenly over its rules (10 pairs, 3 rules: 4/3/3, the extra pairs to rules in a seeded order), each
    rule searching its own seeded report order, so that a cell's pairs are several kinds of edit and
    not mostly the rule that applies to most reports. What a rule cannot fill (it applies to too few
    reports) is filled afterwards by any rule of the cell, as without balancing; ``fill`` counts the cell.
    """
    if context not in ("paper", "full"):
        raise ParamsError(f"context={context!r}: use 'paper' (§4.2.1) or 'full'.")
    reports = _check_reports(reports)
    eng = _engine(engine)
    cells = table2_cells(n_per_cell) if cells is None else cells.reset_index(drop=True)
    balance = bool(getattr(eng, "balance_rules", False))

    def order_of(c, *extra: object) -> list[int]:
        idx = list(range(len(reports)))
        random.Random(derive_seed(seed, "cell", c.aspect, c.error_type, c.significance, *extra)).shuffle(idx)
        return idx[: max_tasks_per_cell] if max_tasks_per_cell else idx

    units: list[_Unit] = []
    for k, c in cells.iterrows():
        et = None if pd.isna(c.error_type) else c.error_type
        names: list[str | None] = [r.name for r in rules_for(c.aspect, c.significance, et)] if balance else [None]
        if len(names) > 1:
            random.Random(derive_seed(seed, "rule-share", c.aspect, et, c.significance)).shuffle(names)
        for j, name in enumerate(names):
            share = int(c.target) // len(names) + (1 if j < int(c.target) % len(names) else 0)
            if share:
                units.append(_Unit(k, c.aspect, et, c.significance, name, share,
                                   order_of(c) if name is None else order_of(c, name)))
    accepted: dict[int, list[Pair]] = {k: [] for k in cells.index}
    used: dict[int, set[int]] = {k: set() for k in cells.index}
    stats = {k: {"tried": 0, "not_applicable": 0, "rejected": 0, "unparseable": 0} for k in cells.index}
    rejected: list[Pair] = []
    _fill(units, reports, eng, labeler, context, seed, accepted, used, stats, rejected)
    if balance:  # what a rule could not fill, any rule of the cell may
        rest = [_Unit(k, c.aspect, None if pd.isna(c.error_type) else c.error_type, c.significance, None,
                      int(c.target) - len(accepted[k]), order_of(c))
                for k, c in cells.iterrows() if len(accepted[k]) < int(c.target)]
        _fill(rest, reports, eng, labeler, context, seed, accepted, used, stats, rejected)
    n_order = min(len(reports), max_tasks_per_cell or len(reports))
    fill_rows = []
    for k, c in cells.iterrows():
        n = len(accepted[k])
        short = int(c.target) - n
        st = stats[k]
        note = "" if short <= 0 else (f"only {n} of {n_order} reports gave a verified rewrite "
                                      f"({st['not_applicable']} had nothing to edit, {st['unparseable']} replies were "
                                      f"unparseable, {st['rejected'] - st['unparseable']} rewrites failed verification)")
        fill_rows.append({"aspect": c.aspect, "error_type": "sampled" if pd.isna(c.error_type) else c.error_type,
                          "significance": c.significance, "target": int(c.target), "filled": n, **stats[k],
                          "shortfall": max(short, 0), "note": note})
    pairs = [p for k in cells.index for p in accepted[k]]
    fill = pd.DataFrame(fill_rows, columns=FILL_COLUMNS)
    prov = _provenance("pair_dataset", eng, seed, reports, sources, n_per_cell=n_per_cell, context=context,
                       balance_rules=balance,
                       labeler=type(labeler).__name__ if labeler is not None else None,
                       counts={"target": int(fill["target"].sum()), "filled": int(fill["filled"].sum()),
                               "rejected": len(rejected), "unparseable": int(fill["unparseable"].sum()),
                               "cells_short": int((fill["shortfall"] > 0).sum())})
    return PairDataset(pairs_frame(pairs), pairs_frame(rejected), fill, prov)


def _rule_rewrite(gt: str, name: str, seed: int, study_id: str, labeler: Any):
    r = RULES[name]
    rw = r(gt, random.Random(derive_seed(seed, study_id, name)))
    if rw is None:
        return None
    me, spans = apply_edits(gt, rw.edits)
    v = verify_rewrite(gt, me, spans, r.check, labeler)
    return (r, rw, me, spans, v) if v.ok else None


def _group_pair(task: RewriteTask, group: int, seed: int, labeler: Any) -> Pair | None:
    rng = random.Random(derive_seed(seed, "monotonicity", task.source, task.study_id, group))
    if group == 3:
        names = list(MONOTONICITY_RULES[2])
        rng.shuffle(names)
        chosen = []
        for name in names:
            got = _rule_rewrite(task.gt, name, seed, task.study_id, labeler)
            if got is None or got[0].aspect in {c[0].aspect for c in chosen}:
                continue
            span = (min(e.start for e in got[1].edits), max(e.end for e in got[1].edits))
            if any(span[0] <= c_end and c_start <= span[1] for c in chosen
                   for c_start, c_end in [(min(e.start for e in c[1].edits), max(e.end for e in c[1].edits))]):
                continue  # edits must not touch each other
            chosen.append(got)
            if len(chosen) == 3:
                break
        if len(chosen) < 3:
            return None
        chosen.sort(key=lambda c: min(e.start for e in c[1].edits))
        edits = tuple(e for c in chosen for e in c[1].edits)
        me, spans = apply_edits(task.gt, edits)
        problems = check_outside(task.gt, me, spans)
        if problems:
            return None
        return make_pair(task, task.gt, me, spans, " | ".join(c[1].explanation for c in chosen), engine="rules",
                         rule="+".join(c[0].name for c in chosen), error_type="+".join(c[0].error_type for c in chosen),
                         verified=True, note="three independently verified edits; text outside them unchanged",
                         group=3, aspect="+".join(c[0].aspect for c in chosen), significance="significant")
    names = list(MONOTONICITY_RULES[group])
    rng.shuffle(names)
    for name in names:
        got = _rule_rewrite(task.gt, name, seed, task.study_id, labeler)
        if got is None:
            continue
        r, rw, me, spans, v = got
        return make_pair(task, task.gt, me, spans, rw.explanation, engine="rules", rule=r.name, error_type=r.error_type,
                         verified=True, note=v.note, group=group, aspect=r.aspect, significance=r.significance)
    return None


def build_monotonicity_set(reports: pd.DataFrame, seed: int = 0, *, n_reports: int = 4, labeler: Any = None,
                           min_sentences: int = 4, sources: Mapping[str, Any] | None = None) -> PairDataset:
    """The §4.3 set: ``n_reports`` GT reports, each rewritten at groups 0-4 (:data:`MONOTONICITY_GROUPS`).

    Reports are tried in a seeded order; one is used when every group verifies for it. ``fill``
    has one row per group (target ``n_reports``)."""
    reports = _check_reports(reports)
    if not isinstance(n_reports, int) or n_reports < 1:
        raise ParamsError(f"n_reports must be a positive integer, got {n_reports!r}.")
    idx = list(range(len(reports)))
    random.Random(derive_seed(seed, "monotonicity-order")).shuffle(idx)
    chosen: list[list[Pair]] = []
    tried = 0
    for i in idx:
        text = reports.at[i, "text"]
        if len(sentences(text)) < min_sentences:
            continue
        tried += 1
        task = RewriteTask(reports.at[i, "study_id"], reports.at[i, "source"], text, "stylistic", "insignificant",
                           None, seed)
        group_pairs = [_group_pair(task, g, seed, labeler) for g in MONOTONICITY_GROUPS]
        if all(p is not None for p in group_pairs):
            chosen.append(group_pairs)  # type: ignore[arg-type]
            if len(chosen) == n_reports:
                break
    pairs = [p for g in MONOTONICITY_GROUPS for row in chosen for p in row if p.group == g]
    fill = pd.DataFrame([{"aspect": "monotonicity", "error_type": MONOTONICITY_GROUPS[g], "significance":
                          "insignificant" if g < 2 else "significant", "target": n_reports, "filled": len(chosen),
                          "tried": tried, "not_applicable": tried - len(chosen), "rejected": 0, "unparseable": 0,
                          "shortfall": n_reports - len(chosen),
                          "note": "" if len(chosen) == n_reports else f"only {len(chosen)} of {tried} reports "
                                  f"(>= {min_sentences} sentences) support all five groups"}
                         for g in MONOTONICITY_GROUPS], columns=FILL_COLUMNS)
    prov = _provenance("monotonicity_set", RuleEngine(), seed, reports, sources, n_reports=n_reports,
                       groups={str(k): v for k, v in MONOTONICITY_GROUPS.items()},
                       group_rules={str(k): list(v) for k, v in MONOTONICITY_RULES.items()},
                       labeler=type(labeler).__name__ if labeler is not None else None)
    return PairDataset(pairs_frame(pairs), pairs_frame([]), fill, prov)


# ------------------------------------------------------------------------------------------- I/O

_FILES = {"pairs": "pairs.parquet", "rejected": "rejected.parquet", "fill": "fill.parquet"}
PROVENANCE_FILE = "provenance.json"


def save_pair_dataset(ds: PairDataset, folder: str | os.PathLike) -> Path:
    """Write ``pairs.parquet``, ``rejected.parquet``, ``fill.parquet`` and ``provenance.json`` (sorted
    keys, no timestamps: the same dataset gives the same bytes) into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for attr, name in _FILES.items():
        getattr(ds, attr).to_parquet(folder / name, index=False)
    prov = dict(ds.provenance, files=sorted([*_FILES.values()]))
    (folder / PROVENANCE_FILE).write_text(json.dumps(prov, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return folder


def load_pair_dataset(folder: str | os.PathLike) -> PairDataset:
    """Read a folder written by :func:`save_pair_dataset`."""
    folder = Path(folder)
    missing = [n for n in [*_FILES.values(), PROVENANCE_FILE] if not (folder / n).exists()]
    if missing:
        raise DataFormatError(f"{folder} is not a saved pair dataset: {missing} missing (write it with save_pair_dataset).")
    frames = {attr: pd.read_parquet(folder / name) for attr, name in _FILES.items()}
    for key in ("pairs", "rejected"):
        df = frames[key]
        df["edits"] = [[list(map(int, e)) for e in x] if x is not None else [] for x in df["edits"]]
        df["group"] = df["group"].astype("Int64")
    prov = json.loads((folder / PROVENANCE_FILE).read_text(encoding="utf-8"))
    return PairDataset(frames["pairs"], frames["rejected"], frames["fill"], prov)


def to_hf_dataset(ds: PairDataset):
    """The verified pairs as a Hugging Face ``datasets.Dataset`` (needs the ``hub`` extra)."""
    try:
        import datasets
    except ImportError:
        raise ParamsError("to_hf_dataset needs the 'datasets' package: pip install 'radaudit[hub]' "
                          "(the parquet files written by save_pair_dataset load with "
                          "datasets.load_dataset('parquet')).") from None
    return datasets.Dataset.from_pandas(ds.pairs, preserve_index=False)
