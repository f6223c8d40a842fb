"""The generic entry point: CAD and WAE for any corpus of (reference, prediction, group) rows (paper §2)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from radaudit.metrics.association.cad import cad_from_counts, cad_summary, check_thresholds
from radaudit.metrics.association.counts import AssociationInputError, count_reports
from radaudit.metrics.association.inference import wae_inference

__all__ = ["AssociationAudit", "association_audit"]

@dataclass(frozen=True)
class AssociationAudit:
    """Everything :func:`association_audit` computes for one corpus.

    ``words``: the CAD per-word table (:func:`cad`). ``categories``: words per category
    (:func:`cad_summary`). ``wae``: :func:`wae_inference`'s table. ``n_reports``: reports per group
    that were audited; ``n_tokens``: tokens per (corpus, group) after stop-word removal;
    ``excluded``: rows left out because their group value is not one of ``groups``, by value
    (``"<NA>"`` for missing), never dropped silently. ``params``: the parameters used.
    """

    words: pd.DataFrame
    categories: pd.DataFrame
    wae: pd.DataFrame
    groups: tuple[str, str]
    n_reports: dict[str, int]
    n_tokens: dict[str, int]
    excluded: dict[str, int]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def n_excluded(self) -> int:
        return int(sum(self.excluded.values()))


def _check_texts(df: pd.DataFrame, col: str) -> None:
    s = df[col]
    missing = s.isna().to_numpy()
    if missing.any():
        bad = list(df.index[missing][:10])
        raise AssociationInputError(
            f"column {col!r} is missing (None/NaN) in {int(missing.sum())} rows (index {bad}"
            f"{' ...' if missing.sum() > 10 else ''}). Drop those rows upstream and report how many, or use '' for a "
            "report that is genuinely empty (it then contributes no tokens).")
    wrong = ~s.map(lambda v: isinstance(v, str)).to_numpy(dtype=bool)
    if wrong.any():
        raise AssociationInputError(f"column {col!r} has non-string values at index {list(df.index[wrong][:10])}")


def association_audit(
    df: pd.DataFrame,
    reference: str = "reference",
    prediction: str = "prediction",
    group: str = "group",
    groups: tuple[Any, Any] = ("F", "M"),
    *,
    alpha: float = 0.1,
    p_star: float = 0.05,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    correction: Literal["bh", "none"] = "bh",
    min_count: int = 1,
    assoc_z: float | None = None,
    stopwords: Iterable[str] | None = None,
    min_length: int = 2,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    ci_method: Literal["percentile", "basic", "bca", "shifted"] = "shifted",
    bootstrap_seed: int | None = 0,
    n_permutations: int = 1000,
    permutation_seed: int | None = 1,
    strict: bool = False,
) -> AssociationAudit:
    """CAD and WAE for any corpus of (reference, prediction, group) rows (paper §2).

    Args:
        df: one row per report; the three named columns hold the reference text, the generated
            text and the group (sex by default; any two values of any column: age bands, sites).
        groups: the two groups compared; s > 0 means associated with ``groups[0]``. Rows whose
            group is anything else (``"O"``, NA, a third band) are excluded and counted in
            ``excluded``; with ``strict=True`` they raise instead.
        alpha, p_star, z_neutral, z_strong, correction, min_count: CAD (:func:`cad`).
        assoc_z: τ of WAE_g (default ``z_neutral``). stopwords, min_length: tokenisation
            (:func:`tokenize_for_association`).
        n_bootstrap, confidence, ci_method, bootstrap_seed, n_permutations, permutation_seed:
            inference (:func:`wae_inference`); the notebook derives the seeds from the run seed.

    Texts: a missing text (None/NaN) is an error naming the rows; ``""`` is a defined, empty
    report with no tokens. If every prediction is empty, all s_pred are 0 (both groups smooth to
    the uniform distribution 1/V), every reference association counts as erased where it is
    displaced, and WAE_pred is NaN (its weights sum to 0).

    Raises:
        AssociationInputError: a missing column or text, a group with no reports (the message
            gives the counts per group and the excluded values), unknown group values with
            ``strict=True``, no token left to audit, bad parameters.
    """
    missing_cols = [c for c in (reference, prediction, group) if c not in df.columns]
    if missing_cols:
        raise AssociationInputError(f"df has no column(s) {missing_cols}; columns are {list(df.columns)}")
    g = tuple(groups)
    if len(g) != 2 or g[0] == g[1]:
        raise AssociationInputError(f"groups must be two distinct values, got {groups!r}")
    check_thresholds(alpha, p_star, z_neutral, z_strong)
    labels = df[group]
    known = labels.isin(list(g)).to_numpy(dtype=bool) & ~labels.isna().to_numpy(dtype=bool)
    excluded: dict[str, int] = {}
    if (~known).any():
        vals = labels[~known]
        keyed = vals.map(lambda v: "<NA>" if pd.isna(v) else str(v))
        excluded = {str(k): int(v) for k, v in sorted(keyed.value_counts().items())}
        if strict:
            raise AssociationInputError(
                f"{int((~known).sum())} rows have a {group!r} value outside groups={list(g)}: {excluded}. Map or drop "
                "them, or pass strict=False to exclude them (they are then counted in the result's 'excluded').")
    kept = df.loc[known]
    sizes = {str(x): int((kept[group] == x).sum()) for x in g}
    empty = [k for k, v in sizes.items() if v == 0]
    if empty:
        raise AssociationInputError(
            f"group {empty[0]!r} has no reports (reports per group: {sizes}; excluded values: {excluded or 'none'}). "
            "CAD compares two groups: check the group column and the groups parameter.")
    _check_texts(kept, reference)
    _check_texts(kept, prediction)
    counts = count_reports(kept[reference].tolist(), kept[prediction].tolist(), kept[group].tolist(), groups=(g[0], g[1]),
                           stopwords=stopwords, min_length=min_length)
    if len(counts.vocab) == 0:
        raise AssociationInputError("no token is left in either corpus after tokenisation and stop-word removal")
    tau = z_neutral if assoc_z is None else assoc_z
    words = cad_from_counts(counts, alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong,
                            min_count=min_count, correction=correction)
    wae_table = wae_inference(counts, alpha=alpha, assoc_z=tau, min_count=min_count, n_bootstrap=n_bootstrap,
                              confidence=confidence, ci_method=ci_method, bootstrap_seed=bootstrap_seed,
                              n_permutations=n_permutations, permutation_seed=permutation_seed)
    gs = (str(g[0]), str(g[1]))
    n_tokens = {f"{c}_{x}": int(words[f"c_{c}_{x}"].sum()) for c in ("ref", "pred") for x in gs}
    params = dict(alpha=alpha, p_star=p_star, z_neutral=z_neutral, z_strong=z_strong, z_crit=words.attrs["z_crit"],
                  correction=correction, min_count=min_count, assoc_z=tau, min_length=min_length,
                  stopwords="nltk_english" if stopwords is None else "custom", V=int(words.attrs["V"]),
                  n_bootstrap=n_bootstrap, confidence=confidence, ci_method=ci_method, bootstrap_seed=bootstrap_seed,
                  n_permutations=n_permutations, permutation_seed=permutation_seed)
    return AssociationAudit(words=words, categories=cad_summary(words), wae=wae_table, groups=gs, n_reports=sizes,
                            n_tokens=n_tokens, excluded=excluded, params=params)
