"""One corpus of (reference, prediction, group) rows -> every number of the paper's Tables 1-2 (:class:`CorpusResult`),
and the collapse floor. The real-system baseline corpora are read by :mod:`radaudit.audits.decoding_erasure.data`."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.audits.decoding_erasure.intervals import delta_dir_interval, weat_interval
from radaudit.errors import ParamsError, RadauditError
from radaudit.metrics import MetricUnavailableError, build_metric
from radaudit.metrics.association import CATEGORIES, SILENCE_ERASURE, AssociationAudit, association_audit
from radaudit.metrics.base import metric_label
from radaudit.metrics.dir import delta_dir
from radaudit.metrics.diversity import DIVERSITY_METRICS, diversity_table
from radaudit.metrics.weat import WeatDataError, gender_attributes, select_targets, weat
from radaudit.models.encoders import TextEncoder
from radaudit.stats import benjamini_hochberg, bootstrap_ci, stable_seed

log = logging.getLogger(__name__)


SURFACE_METRICS: tuple[str, ...] = ("bertscore", "rouge1", "rougeL", "ratescore")
"""Surface-similarity metrics of the paper's Table 1 (registry names)."""

SURFACE_LABELS: dict[str, str] = {"bertscore_precision": "BERTScore P", "bertscore_recall": "BERTScore R"}
"""Row labels of BERTScore's sub-scores; every registry metric is shown by its registry label
(:func:`radaudit.metrics.base.metric_label`)."""


# ----------------------------------------------------------------------------------------------
# one corpus


@dataclass(frozen=True)
class CorpusResult:
    """Every number of one corpus (a strategy, a system).

    ``surface``: one row per surface metric (``metric``, ``label``, ``estimate``, ``low``, ``high``,
    ``se``, ``n``, ``n_undefined``). ``skipped``: surface metrics that could not run, with why.
    ``diversity_pred`` / ``diversity_ref``: :func:`diversity_table` of the predictions / references.
    ``association``: the CAD/WAE audit (``.words`` per-word table, ``.categories``, ``.wae``).
    ``weat``: one row per corpus side (``pred``, ``ref``) with S, ES, their 95% CIs, p and the target words
    (:data:`WEAT_COLUMNS`). ``dir``: ΔDIR and its counts (:meth:`DIRResult.to_dict`) with its 95% CI
    (``delta_dir_low``/``delta_dir_high``, :func:`_dir_row`). Where each interval comes from, and which unit it
    resamples: :mod:`radaudit.audits.decoding_erasure.intervals`.
    """

    name: str
    n_reports: int
    surface: pd.DataFrame
    skipped: dict[str, str]
    diversity_pred: pd.DataFrame
    diversity_ref: pd.DataFrame
    association: AssociationAudit
    weat: pd.DataFrame
    dir: dict[str, Any]
    reference_hash: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def words(self) -> pd.DataFrame:
        """The per-word CAD table (counts, s, z, z_disp, p, category) with a ``corpus`` column."""
        return self.association.words.assign(corpus=self.name)

    @property
    def categories(self) -> pd.DataFrame:
        return self.association.categories

    @property
    def wae(self) -> pd.DataFrame:
        return self.association.wae

    @property
    def excluded(self) -> dict[str, int]:
        return self.association.excluded

    def category_counts(self) -> dict[str, int]:
        """Words per category of the paper (§2.1.2, its displacement test); under :data:`SILENCE_ERASURE`, the
        words the silence test calls erased (association module, items 9 and 11); under
        :data:`REFERENCE_ASSOCIATED`, the reference words whose sex association survives BH (item 11); and under
        :data:`PAPER_ERASURE_ASSOCIATED`, the paper's Erasure words among those."""
        return _category_counts(self.association.words)


REFERENCE_ASSOCIATED = "Reference-associated (BH)"
"""Key of :meth:`CorpusResult.category_counts`: reference words whose sex association survives BH over the vocabulary
(association module, item 11) — the only words that can be erased."""
PAPER_ERASURE_ASSOCIATED = "Erasure (paper's test, BH-associated)"
"""Key of :meth:`CorpusResult.category_counts`: the paper's Erasure words whose reference association survives BH."""


def _category_counts(words: pd.DataFrame) -> dict[str, int]:
    counts = words["category"].value_counts()
    out = {c: int(counts.get(c, 0)) for c in (*CATEGORIES, "Unclassified", "Stable")}
    out[SILENCE_ERASURE] = int(words["erased_silence"].sum())
    assoc = words["ref_associated"].to_numpy(dtype=bool)
    out[REFERENCE_ASSOCIATED] = int(assoc.sum())
    out[PAPER_ERASURE_ASSOCIATED] = int(((words["category"] == "Erasure").to_numpy() & assoc).sum())
    return out


def _texts_hash(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def _surface(refs: list[str], preds: list[str], metrics: Sequence[str], options: Mapping[str, Mapping[str, Any]],
             *, n_bootstrap: int, confidence: float, seed: int) -> tuple[pd.DataFrame, dict[str, str]]:
    rows, skipped = [], {}
    for name in metrics:
        try:
            metric = build_metric(name, **dict(options.get(name, {})))
            res = metric.compute(refs, preds)
        except (MetricUnavailableError, ImportError, OSError) as err:
            skipped[name] = f"{type(err).__name__}: {err}"
            log.info("surface metric %s skipped: %s", name, err)
            continue
        series = {name: res.per_sample}
        if name == "bertscore":  # P and R as their own rows (paper Table 1 "BERTScore P/R")
            for part in ("precision", "recall"):
                v = res.details.get(part)
                if v is not None and np.ndim(v) == 1 and len(v) == len(refs):
                    series[f"bertscore_{part}"] = np.asarray(v, dtype=float)
        for key, values in series.items():
            vals = np.asarray(values, dtype=float)
            ok = vals[np.isfinite(vals)]
            est = float(ok.mean()) if ok.size else math.nan
            low = high = se = math.nan
            if ok.size >= 2 and n_bootstrap:
                ci = bootstrap_ci(ok, np.mean, n_bootstrap=n_bootstrap, confidence=confidence, method="percentile",
                                  seed=stable_seed(seed, "surface", key))
                low, high, se = ci.low, ci.high, ci.se
            rows.append({"metric": key, "label": metric_label(key, SURFACE_LABELS), "estimate": est, "low": low,
                         "high": high, "se": se, "n": int(ok.size), "n_undefined": int(vals.size - ok.size)})
    return pd.DataFrame(rows, columns=["metric", "label", "estimate", "low", "high", "se", "n", "n_undefined"]), skipped


WEAT_COLUMNS: tuple[str, ...] = ("side", "S", "S_low", "S_high", "ES", "ES_low", "ES_high", "pvalue", "ci_method",
                                  "n_targets", "X", "Y", "note")
"""Columns of :attr:`CorpusResult.weat`: per corpus side, S and ES with their 95% bootstrap intervals (target words
resampled within each set, :func:`radaudit.audits.decoding_erasure.intervals.weat_interval`), the permutation p, the
interval method (``bca``, or ``percentile`` where BCa cannot be formed), the words per target set and the words."""


def _weat_rows(words: pd.DataFrame, *, k: int, attributes: str, vectors: Any, seed: int, n_bootstrap: int = 0,
               confidence: float = 0.95, bootstrap_seed: int = 0) -> pd.DataFrame:
    rows = []
    for side in ("pred", "ref"):
        row: dict[str, Any] = {"side": side, "S": math.nan, "S_low": math.nan, "S_high": math.nan, "ES": math.nan,
                               "ES_low": math.nan, "ES_high": math.nan, "pvalue": math.nan, "ci_method": None,
                               "n_targets": 0, "X": "", "Y": "", "note": ""}
        try:
            A, B = gender_attributes(attributes)
            scores = words.set_index("word")[f"z_{side}"]
            if side == "pred":  # a word the model never writes carries no prediction association
                scores = scores[words.set_index("word")["c_pred"] > 0]
            t = select_targets(scores, k=k, vectors=vectors)
            res = weat(t.female, t.male, A, B, vectors=vectors, seed=seed)
            row.update(S=res.statistic, ES=res.effect_size, pvalue=res.pvalue, X=" ".join(t.female),
                       Y=" ".join(t.male), n_targets=len(res.s_x))
            ci = weat_interval(res.s_x, res.s_y, statistic=res.statistic, effect_size=res.effect_size, ddof=res.ddof,
                               n_bootstrap=n_bootstrap, confidence=confidence, seed=stable_seed(bootstrap_seed, side))
            methods = (ci["S"]["method"], ci["ES"]["method"])
            row.update(S_low=ci["S"]["low"], S_high=ci["S"]["high"], ES_low=ci["ES"]["low"], ES_high=ci["ES"]["high"],
                       ci_method=methods[0] if methods[0] == methods[1] else f"S {methods[0]}, ES {methods[1]}")
        except (ParamsError, WeatDataError) as err:
            row["note"] = str(err)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(WEAT_COLUMNS))


def _dir_row(kept: pd.DataFrame, reference: str, prediction: str, group: str, g: tuple[Any, Any], *,
             per_report: bool, n_bootstrap: int, confidence: float, seed: int) -> dict[str, Any]:
    """ΔDIR (:func:`radaudit.metrics.dir.delta_dir`, numerator ``g[1]``) with its 95% bootstrap interval (reports
    resampled within each group, BCa: :func:`radaudit.audits.decoding_erasure.intervals.delta_dir_interval`) as
    ``delta_dir_low``, ``delta_dir_high``, ``delta_dir_se``, ``delta_dir_ci_method``, ``delta_dir_n_failed``."""
    refs, preds, groups = kept[reference].tolist(), kept[prediction].tolist(), kept[group].tolist()
    d = delta_dir(refs, preds, groups, numerator=g[1], denominator=g[0], per_report=per_report, on_zero="nan")
    ci = delta_dir_interval(refs, preds, groups, numerator=g[1], denominator=g[0], estimate=d.delta,
                            per_report=per_report, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    return {**d.to_dict(), "delta_dir_low": ci["low"], "delta_dir_high": ci["high"], "delta_dir_se": ci["se"],
            "delta_dir_ci_method": ci["method"], "delta_dir_n_failed": ci["n_failed"]}


def evaluate_corpus(
    df: pd.DataFrame,
    *,
    name: str,
    reference: str = "reference",
    prediction: str = "prediction",
    group: str = "group",
    groups: Sequence[Any] = ("F", "M"),
    seed: int = 0,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    p_star: float = 0.05,
    alpha: float = 0.1,
    z_neutral: float = 1.0,
    z_strong: float = 2.0,
    correction: Literal["bh", "none"] = "bh",
    min_count: int = 1,
    n_permutations: int = 1000,
    surface_metrics: Sequence[str] = SURFACE_METRICS,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    text_encoder: str | None = None,
    encoder: Any = None,
    diversity_metrics: Sequence[str] = DIVERSITY_METRICS,
    weat_k: int = 8,
    weat_attributes: Literal["terms", "family", "both"] = "terms",
    word_vectors: Any = None,
    dir_per_report: bool = False,
) -> CorpusResult:
    """Every table of the paper for one corpus of (reference, prediction, group) rows.

    Args:
        df: one row per report; ``reference``/``prediction``/``group`` name its columns. Groups
            are any two values of any column (sex by default; age bands, sites).
        name: the corpus's name (a column of :func:`strategy_table`).
        seed, n_bootstrap, confidence: every CI; each step's seed is derived from ``seed`` and ``name``.
        p_star, alpha, z_neutral, z_strong, correction, min_count, n_permutations: CAD / WAE
            (:func:`radaudit.metrics.association.association_audit`).
        surface_metrics: registry names; unavailable ones are skipped and listed in ``skipped``.
        metric_options: build options per metric, e.g. ``{"bertscore": {"model": path}}``.
        text_encoder: model spec for BERTScore and semantic diversity (None: the PyPI MiniLM).
            ``encoder``: an already built encoder object for semantic diversity (``embed(texts)``),
            overriding ``text_encoder`` there (tests pass a fast fake).
        diversity_metrics: which of the four diversity metrics to compute.
        weat_k, weat_attributes, word_vectors: WEAT (module docstring); vectors default to GloVe 6B 50d.
        dir_per_report: ΔDIR from mean tokens per report (see :mod:`radaudit.metrics.dir`).
    """
    missing = [c for c in (reference, prediction, group) if c not in df.columns]
    if missing:
        raise RadauditError(f"corpus {name!r} has no column(s) {missing}; columns are {list(df.columns)}")
    g = tuple(groups)
    if len(g) != 2 or g[0] == g[1]:
        raise ParamsError(f"groups must be two distinct values, got {groups!r}")
    s = int(stable_seed(seed, "decoding_erasure", name))
    # association first: it validates texts and groups with the clearest messages
    audit = association_audit(df, reference, prediction, group, g, alpha=alpha, p_star=p_star, z_neutral=z_neutral,
                              z_strong=z_strong, correction=correction, min_count=min_count, n_bootstrap=n_bootstrap,
                              confidence=confidence, bootstrap_seed=stable_seed(s, "wae-bootstrap"),
                              n_permutations=n_permutations, permutation_seed=stable_seed(s, "wae-permutation"))
    refs, preds = df[reference].tolist(), df[prediction].tolist()
    options = {k: dict(v) for k, v in (metric_options or {}).items()}
    if text_encoder is not None:
        options.setdefault("bertscore", {}).setdefault("model", text_encoder)
    surface, skipped = _surface(refs, preds, surface_metrics, options, n_bootstrap=n_bootstrap, confidence=confidence,
                                seed=s)
    enc = encoder
    if enc is None and "semantic_diversity" in diversity_metrics:
        enc = TextEncoder(text_encoder) if text_encoder is not None else TextEncoder()
    div = {side: diversity_table(texts, seed=stable_seed(s, "diversity", side), n_bootstrap=n_bootstrap,
                                 encoder=enc, metrics=tuple(diversity_metrics), confidence=confidence)
           for side, texts in (("pred", preds), ("ref", refs))}
    weat_table = _weat_rows(audit.words, k=weat_k, attributes=weat_attributes, vectors=word_vectors,
                            seed=stable_seed(s, "weat"), n_bootstrap=n_bootstrap, confidence=confidence,
                            bootstrap_seed=stable_seed(s, "weat-bootstrap"))
    kept = df[df[group].isin(list(g)) & df[group].notna()]
    dir_row = _dir_row(kept, reference, prediction, group, g, per_report=dir_per_report, n_bootstrap=n_bootstrap,
                       confidence=confidence, seed=stable_seed(s, "dir-bootstrap"))
    params = dict(audit.params, groups=[str(x) for x in g], seed=seed, derived_seed=s, n_bootstrap=n_bootstrap,
                  surface_metrics=list(surface_metrics), diversity_metrics=list(diversity_metrics),
                  weat_k=weat_k, weat_attributes=weat_attributes, dir_per_report=dir_per_report,
                  text_encoder=text_encoder)
    return CorpusResult(name=name, n_reports=len(df), surface=surface, skipped=skipped, diversity_pred=div["pred"],
                        diversity_ref=div["ref"], association=audit, weat=weat_table, dir=dir_row,
                        reference_hash=_texts_hash(refs), params=params)


# ----------------------------------------------------------------------------------------------
# the collapse floor and the copy check


DEFAULT_TEMPLATE = ("No acute cardiopulmonary abnormality. The lungs are clear. Heart size is normal. "
                    "No pleural effusion or pneumothorax.")
"""A normal chest X-ray report: the template a fully collapsed generator writes for every study."""


def collapse_floor(df: pd.DataFrame, *, reference: str = "reference", group: str = "group",
                   groups: Sequence[Any] = ("F", "M"), template: str | None = DEFAULT_TEMPLATE,
                   **cad_kwargs: Any) -> dict[str, Any]:
    """What CAD can detect on these references at all: the categories when *every* prediction is ``template``.

    A generator that writes the same normal report for every study is the extreme of template
    collapse. On the run's own references this count is descriptive (finding ``erasure_positive_control``):
    it is 0 whenever the references hold no word whose sex association survives BH (association module,
    item 11), so the control the findings rest on plants an association first
    (:func:`radaudit.audits.decoding_erasure.erasure.planted_control`). The paper's test flags only the
    template's own words here (a word the model never writes cannot be displaced under Eqs. 1–3:
    :mod:`radaudit.metrics.association` item 8), so its count is the most the *paper's* Erasure
    can show on these references whatever the sample size; the silence test (item 9) flags the
    strongly associated words the template leaves out, and is 0 only when the references hold none
    it can detect. Returns ``{"n_reports", "strong_reference_words" (|z_ref| > z_strong),
    "strong_reference_words_exact" (|z_ref_exact| > z_strong), "reference_words_bh" (associations that
    survive BH over the vocabulary: :func:`_associated_after_bh`), <category>: count, ...,
    SILENCE_ERASURE: count}``. ``template=None`` keeps every reference as its own prediction
    (:func:`copy_control`).
    """
    kw = {k: v for k, v in cad_kwargs.items() if k in {"alpha", "p_star", "z_neutral", "z_strong", "correction",
                                                       "min_count"}}
    refs = df[reference].to_numpy()
    d = pd.DataFrame({"reference": refs, "prediction": refs if template is None else template,
                      "group": df[group].to_numpy()})
    a = association_audit(d, "reference", "prediction", "group", tuple(groups), n_bootstrap=0, n_permutations=0, **kw)
    w = a.words
    counts = _category_counts(w)
    z_strong = float(w.attrs.get("z_strong", kw.get("z_strong", 2.0)))
    out: dict[str, Any] = {"n_reports": int(sum(a.n_reports.values())),
                           "strong_reference_words": int((w["z_ref"].abs() > z_strong).sum()),
                           "strong_reference_words_exact": int((w["z_ref_exact"].abs() > z_strong).sum()),
                           "reference_words_bh": _associated_after_bh(w, float(kw.get("p_star", 0.05)))}
    out.update({c: counts[c] for c in (*CATEGORIES, "Unclassified", SILENCE_ERASURE)})
    return out


def _associated_after_bh(words: pd.DataFrame, p_star: float) -> int:
    """Reference words whose sex association survives Benjamini–Hochberg over the vocabulary: the exact
    test's two-sided p (``p_ref_exact``, association module items 10–11), adjusted at ``p_star`` (whatever the
    audit's ``correction``). The paper's "strongly associated" (|z_ref| > z_strong) is not corrected for testing
    every word, so with V words about 5% pass it by chance; this count says how many associations are more
    than that."""
    return int(benjamini_hochberg(words["p_ref_exact"].to_numpy(float), alpha=p_star)[0].sum())


def copy_control(df: pd.DataFrame, *, reference: str = "reference", group: str = "group",
                 groups: Sequence[Any] = ("F", "M"), **cad_kwargs: Any) -> dict[str, Any]:
    """Every prediction is its own reference: a sanity check, not a control.

    Nothing is erased, so both tests flag 0 words — by construction (equal rates give a silence p ≥ 0.5), so
    this cannot fail and is no evidence. The negative control the findings rest on compares *disjoint* real
    reports (:func:`radaudit.audits.decoding_erasure.erasure.halving_control`). Returns the same keys as
    :func:`collapse_floor`.
    """
    return collapse_floor(df, reference=reference, group=group, groups=groups, template=None, **cad_kwargs)
