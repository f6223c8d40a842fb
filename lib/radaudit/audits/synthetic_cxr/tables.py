"""The synthetic_cxr experiment (CheXGenBench, paper 004): the tables' layouts and the run summary in words.

Paper: Dutt et al., *CheXGenBench* (``../shared/papers/004_175f666718a5c618.txt``). The numbers come from
:mod:`radaudit.audits.synthetic_cxr.study` (the long tables with their 95% bootstrap CIs: :func:`fidelity_long`,
:func:`privacy_long`, :func:`rank_summary`, ...); this module lays them out as the paper prints them: Table 1
(fidelity, :func:`table1`), Table 2 (per-label FID, :func:`per_label_table` long and :func:`per_label_wide`), Table 3
(privacy, :func:`table3`), the demo models' cards (:func:`card_table`) and :func:`summary_lines`. Table 4 and its flags
stay in :mod:`radaudit.audits.synthetic_cxr.table4` (utility's own module: :mod:`~radaudit.audits.synthetic_cxr.utility`
and the plots read its constants); Table 5 is :mod:`radaudit.audits.synthetic_cxr.reports`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from radaudit.metrics.image import per_label_fidelity

__all__ = ["card_table", "per_label_table", "per_label_wide", "summary_lines", "table1", "table3"]


# --- the demo models' cards ---------------------------------------------------------------------

def card_table(cards: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The demo models' held-out quality numbers, one row per (model, metric)."""
    rows = [{"model": name, "metric": k, "value": v} for name, card in cards.items()
            for k, v in (card.get("metrics") or {}).items() if isinstance(v, (int, float))]
    return pd.DataFrame(rows, columns=["model", "metric", "value"])


# --- Table 1: fidelity; Table 2: per label --------------------------------------------------------

def _fmt(est: float, lo: float, hi: float, digits: int) -> str:
    return f"{est:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


_DIGITS = {"fid": 2, "kid": 4, "precision": 3, "recall": 3, "density": 3, "coverage": 3, "alignment": 3}


def table1(long: pd.DataFrame, encoder_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 1 layout: one row per generator, one column per metric (``"FID (CXR encoder)"``, ...), each cell
    ``estimate [low, high]``."""
    names = dict(encoder_names or {})
    df = long.copy()
    df["column"] = [m.upper() if m in ("fid", "kid") else m.capitalize() for m in df["metric"]]
    df["column"] = [c if e == "alignment" or m not in ("fid", "kid") else f"{c} ({names.get(e, e)})"
                    for c, e, m in zip(df["column"], df["encoder"], df["metric"])]
    df["cell"] = [_fmt(e, lo, hi, _DIGITS.get(m, 3))
                  for e, lo, hi, m in zip(df["estimate"], df["low"], df["high"], df["metric"])]
    order = list(dict.fromkeys(df["column"]))
    wide = df.pivot(index="generator", columns="column", values="cell").reindex(columns=order)
    return wide.reindex(list(dict.fromkeys(long["generator"]))).reset_index()


def per_label_table(real_features: np.ndarray, real_labels: Sequence[Any],
                    synth: Mapping[str, tuple[np.ndarray, Sequence[Any]]], labels: Sequence[str], *,
                    min_images: int = 5) -> pd.DataFrame:
    """Table 2 (long): per generator x label, FID on the chest X-ray encoder features of the label's real test
    images and of the synthetic images generated from prompts carrying it, with the counts and a note
    when a label has fewer than ``min_images`` on either side."""
    parts = []
    for gen, (feats, labs) in synth.items():
        t = per_label_fidelity(real_features, list(real_labels), feats, list(labs), metrics=("fid",), labels=list(labels),
                               min_images=min_images, fid_method="eigvals")
        parts.append(t.assign(generator=gen))
    out = pd.concat(parts, ignore_index=True)
    return out[["generator"] + [c for c in out.columns if c != "generator"]]


def per_label_wide(long: pd.DataFrame, labels: Sequence[str], digits: int = 1) -> pd.DataFrame:
    """Table 2 layout: generator x label, cells ``FID [low, high] (n real/n synth)``, blank cells with their note."""
    def cell(r: pd.Series) -> str:
        if not np.isfinite(r["fid"]):
            return f"n/a ({r['note']}; n = {r['n_real']}/{r['n_synth']})"
        return f"{_fmt(r['fid'], r['fid_low'], r['fid_high'], digits)} (n = {r['n_real']}/{r['n_synth']})"
    df = long.assign(cell=long.apply(cell, axis=1))
    wide = df.pivot(index="generator", columns="label", values="cell").reindex(columns=list(labels))
    return wide.reindex(list(dict.fromkeys(long["generator"])))


# --- Table 3: privacy ---------------------------------------------------------------------------

_T3_NAMES = {"avg_reid": "Avg. Re-ID (↓)", "avg_latent_distance": "Avg. latent distance (↑)",
             "avg_pixel_distance": "Avg. pixel distance (↑)", "max_reid": "Max. Re-ID (↓)",
             "count_reid_above_delta": "Count Re-ID > δ (↓)",
             "count_reid_above_calibrated": "Count Re-ID > calibrated threshold (↓)"}


def table3(long: pd.DataFrame) -> pd.DataFrame:
    """Table 3 layout: rows = the five privacy measures, columns = generators, cells ``estimate [low, high]``."""
    def cell(r: pd.Series) -> str:
        if r["metric"].startswith("count_reid_above"):
            base = f"{int(r['estimate'])} of {int(r['n_prompts'])}"
            return base if not np.isfinite(r["low"]) else f"{base} [{int(r['low'])}, {int(r['high'])}]"
        if not np.isfinite(r["low"]):
            return f"{r['estimate']:.3f}"
        return _fmt(r["estimate"], r["low"], r["high"], 3)

    df = long.assign(cell=long.apply(cell, axis=1), measure=long["metric"].map(_T3_NAMES))
    wide = df.pivot(index="measure", columns="generator", values="cell")
    present = [v for k, v in _T3_NAMES.items() if k in set(long["metric"])]
    return wide.reindex(index=present, columns=list(dict.fromkeys(long["generator"]))).reset_index()


# --- summary ------------------------------------------------------------------------------------

def summary_lines(fidelity: pd.DataFrame, privacy: pd.DataFrame, utility_long: pd.DataFrame, ranks: pd.DataFrame,
                  corr: Mapping[str, float], *, cxr_encoder: str = "cxr", delta: float = 0.85,
                  reports_long: pd.DataFrame | None = None) -> list[str]:
    """Plain-words findings computed from the run's tables (``reports_long``: Table 5, optional)."""
    lines = []
    fid = fidelity[(fidelity["metric"] == "fid") & (fidelity["encoder"] == cxr_encoder)].set_index("generator")
    if len(fid):
        best, worst = fid["estimate"].idxmin(), fid["estimate"].idxmax()
        lines.append(f"- **Fidelity** (FID on the chest X-ray encoder, lower is better): best {best} "
                     f"{_fmt(*fid.loc[best, ['estimate', 'low', 'high']], 2)}, worst {worst} "
                     f"{_fmt(*fid.loc[worst, ['estimate', 'low', 'high']], 2)}.")
    reid = privacy[privacy["metric"] == "avg_reid"].set_index("generator")
    cnt = privacy[privacy["metric"] == "count_reid_above_delta"].set_index("generator")
    if len(reid) and reid["estimate"].notna().any():
        worst = reid["estimate"].idxmax()
        lines.append(f"- **Privacy**: the highest average re-identification score is {worst}'s "
                     f"{_fmt(*reid.loc[worst, ['estimate', 'low', 'high']], 3)}; prompts with a re-ID score above "
                     f"δ = {delta}: " + ", ".join(f"{g} {int(r['estimate'])}/{int(r['n_prompts'])}"
                                                   for g, r in cnt.iterrows()) + ".")
        cal = privacy[privacy["metric"] == "count_reid_above_calibrated"].set_index("generator")
        if len(cal):
            thr = float(cal["threshold"].iloc[0])
            lines.append(f"- Above the re-ID network's own calibrated threshold ({thr:.2f}: the max over seeds that "
                         "1% of null prompts exceed, calibrated on one half of the training patients; the audited "
                         "prompts are the other half's): " + ", ".join(
                             f"{g} {int(r['estimate'])}/{int(r['n_prompts'])}" for g, r in cal.iterrows()) + ".")
    macro = utility_long[utility_long["label"] == "macro"].set_index("source")
    if len(macro):
        lines.append("- **Utility** (macro AUROC on the real test set of a classifier trained on each source only): "
                     + ", ".join(f"{s} {_fmt(*r[['auroc', 'ci_low', 'ci_high']], 3)}" for s, r in macro.iterrows()) + ".")
    if reports_long is not None and len(reports_long):
        f1 = next((m for m in ("f1_micro", "f1_micro_14") if m in set(reports_long["metric"])), None)
        if f1 is not None:
            r = reports_long[reports_long["metric"] == f1].set_index("source")
            lines.append(f"- **Report generation** (Table 5, {f1.replace('_', ' ')} of the generated reports' findings "
                         "on the real test set): " + ", ".join(
                             f"{s} {_fmt(*row[['estimate', 'low', 'high']], 3)}" + ("*" if row["p_bh"] < 0.05 else "")
                             for s, row in r.iterrows()) + " (* differs from real, BH-adjusted p < 0.05).")
    if len(ranks):
        order = ranks.sort_values("overall_rank")["generator"].tolist()
        rho = corr.get("spearman", float("nan"))
        lines.append(f"- **Ranking** (Table 8, average rank over the fidelity metrics): {' > '.join(order)}; "
                     f"Spearman ρ between fidelity rank and utility rank = "
                     f"{'n/a' if not np.isfinite(rho) else f'{rho:.2f}'} over {int(corr.get('n', 0))} generators.")
    return lines
