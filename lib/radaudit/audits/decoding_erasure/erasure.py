"""Can the Erasure counts be read at all? Which reference words are sex-associated, their bootstrap CIs over studies,
and the two controls the Erasure findings rest on (issue 40).

A word can only be erased if it is sex-associated in the references. With V ≈ 900 words, about 5% pass the paper's
|z_ref| > z_strong = 2 by chance alone, so "associated" here means: the word's exact test of association
(:func:`radaudit.metrics.association.exact_association_p`) survives Benjamini–Hochberg over the V words at the
paper's p* (association module, item 11; column ``ref_associated``). Both Erasure counts of the findings count only
such words: the silence test by its definition (item 11), the paper's displacement test as
``(category == "Erasure") & ref_associated`` (its ``category`` column is left as the paper defines it).

Choices
-------
- **CIs of the counts** (:func:`erasure_bootstrap`): studies are resampled with replacement, stratified by sex (each
  replicate keeps the number of studies per sex, as the sex-balanced design does), with
  :func:`radaudit.stats.resample_weights`; each replicate's counts are recomputed from its token totals by
  :func:`radaudit.metrics.association.cad_arrays` (the CAD table's own code path) with the vocabulary fixed at the
  full data's V (as the WAE bootstrap, association item 6). A count of BH discoveries is biased upwards under the
  bootstrap (a resample repeats studies, which sharpens associations), so the interval is the stats module's
  *shifted* percentile interval (the replicates' spread placed around the estimate, as for WAE), its lower bound
  clipped at 0.
- **Planted control** (:func:`planted_control`, finding ``erasure_planted_control``): the phrase
  :data:`PLANTED_PHRASE` ("Breast implants.": real clinical words that the demo's 300 reference reports use once
  (breast) and never (implants)) is appended to ``k`` of the ``n_g`` references of one sex (default the first group,
  F); every study's prediction is one normal template
  (:data:`radaudit.audits.decoding_erasure.corpus.DEFAULT_TEMPLATE`). The planted words are then sex-associated and
  wholly erased, so the silence test must call them erased. ``k`` is chosen from the number of studies by
  :func:`planted_mentions`: the smallest ``k`` ≤ ``n_g`` for which both tests pass with a margin even in a resample
  that keeps few of the mentions: at ``k_lo = k − 2·sqrt(k·(1 − k/n_g))`` (the 2.5% quantile of the mentions a
  resample of the studies keeps), ``V · max(2 π_ref^k_lo, (1 − π_sil)^k_lo) ≤ p* / 2`` (π_ref: the sex's share of
  reference tokens, π_sil: the template's share of that sex's reference + template tokens; Bonferroni, stricter than
  BH, halved). For the demo (150 F studies, V ≈ 900, π_ref ≈ 0.49, π_sil ≈ 0.27) that is k = 45 (30% of the female
  reports; the run records the k it used); the smoke preset's 3 female studies cannot carry an association that
  survives BH, so its planted control fails, as it should. Its value is the largest p-value a planted word needs to be
  called erased (its BH-adjusted reference-association p and silence p; 1 when a z condition of the silence test
  fails), read against the bar ≤ p* with a percentile bootstrap CI over studies: the whole CI below p* means the
  planted erasure is found in at least 97.5% of resamples. The paper's displacement test is run on the same data and
  its count reported beside it (it cannot flag a word the template never writes, association item 8).
- **Negative control** (:func:`halving_control`, finding ``erasure_negative_control``): disjoint real reports. The
  references are split at random into two halves, stratified by sex (``n_g // 2`` studies of each sex in each
  half, seeded by :func:`radaudit.stats.stable_seed`); one half plays the references, the other half's reports
  the predictions. Nothing was erased between two random halves of the same reports, so a word flagged by either
  test (silence, or the paper's test on a BH-associated word) is a false alarm — and, unlike predictions that equal
  their references, two halves differ by sampling noise, so the control can fail. This is repeated over
  :data:`N_HALVINGS` = 200 halvings; the value is the share of halvings with at least one false alarm, with its
  Wilson 95% CI, read against the bar ≤ p* (BH at p* bounds the chance of any false discovery when nothing is
  erased): 0 of 200 gives [0, 0.019].
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from radaudit.audits.decoding_erasure.corpus import DEFAULT_TEMPLATE, collapse_floor
from radaudit.errors import ParamsError
from radaudit.metrics.association import cad_arrays, count_reports, tokenize_for_association
from radaudit.stats import BootstrapResult, interval_from_replicates, resample_weights, stable_seed, wilson_ci

__all__ = ["CAD_KEYS", "N_HALVINGS", "PLANT_MARGIN", "PLANTED_PHRASE", "erasure_bootstrap", "erasure_controls",
           "erasure_intervals", "erasure_statistics", "halving_control", "plant_phrase", "planted_control",
           "planted_mentions"]

PLANTED_PHRASE = "Breast implants."
"""The planted clinical phrase: real words that the demo's 300 reference reports use once (breast) and never
(implants), so the association the control needs is the one planted."""
PLANT_MARGIN = 2.0
"""The planted association must pass Bonferroni at p* / PLANT_MARGIN in a resample that keeps few mentions (see
:func:`planted_mentions`)."""
N_HALVINGS = 200
"""Random halvings of the negative control: 0 false alarms in 200 gives a Wilson upper bound of 0.019 < p* = 0.05."""
_REPLICATES_PER_CALL = 100
"""Bootstrap replicates per :func:`radaudit.metrics.association.cad_arrays` call of :func:`erasure_bootstrap`: the
CAD arrays of 100 replicates of a few thousand words are tens of MB; one call per replicate spent most of its time
in per-call overhead (BH, scipy's distributions)."""
CAD_KEYS: tuple[str, ...] = ("alpha", "p_star", "z_neutral", "z_strong", "correction")
"""The CAD thresholds these functions take (``min_count`` is applied to the vocabulary first)."""


def _cad_kw(kw: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if k in CAD_KEYS}


def _arrays_at(c_ref: np.ndarray, c_pred: np.ndarray, kw: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return cad_arrays(c_ref, c_pred, **_cad_kw(kw))


def erasure_statistics(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """From :func:`radaudit.metrics.association.cad_arrays`: ``reference_associated`` (words whose reference
    association survives BH), ``silence`` (the silence test's erased words: all of them are reference-associated)
    and ``paper`` (the paper's Erasure category among the reference-associated words). Arrays of replicates
    (``[V × B]``) give each count as an int array of B."""
    assoc = np.asarray(arrays["ref_associated"], dtype=bool)
    counts = {"reference_associated": assoc.sum(axis=0), "silence": np.asarray(arrays["erased_silence"]).sum(axis=0),
              "paper": ((np.asarray(arrays["category"]) == "Erasure") & assoc).sum(axis=0)}
    if assoc.ndim == 1:
        return {k: int(v) for k, v in counts.items()}
    return {k: np.asarray(v, dtype=np.int64) for k, v in counts.items()}


def _counts(df: pd.DataFrame, reference: str, prediction: str, group: str, groups: Sequence[Any], min_count: int):
    """The per-study token counts of the rows whose group is one of ``groups`` (others are left out, as the audit
    leaves them out)."""
    g = tuple(groups)
    kept = df[df[group].isin(list(g)) & df[group].notna()]
    return count_reports(kept[reference].tolist(), kept[prediction].tolist(), kept[group].tolist(),
                         groups=(g[0], g[1])).restrict(min_count)


def _totals(matrix: sparse.csr_matrix, codes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate group totals ``[V × b]`` for group 0 and group 1 from report weights ``[b × n]``."""
    w0 = (weights * (codes == 0)).T
    w1 = (weights * (codes == 1)).T
    return np.asarray(matrix.T @ w0), np.asarray(matrix.T @ w1)


def _interval(estimate: float, reps: np.ndarray, method: str, confidence: float, n: int, name: str,
              bounds: tuple[float, float]) -> BootstrapResult:
    """The stats module's interval, clipped to the statistic's range and widened to the estimate where every
    replicate lay on one side of it (a degenerate resampling distribution; the note of a finding says so)."""
    r = interval_from_replicates(estimate, np.asarray(reps, dtype=float), None, method, confidence, n, name, 0.1)
    lo, hi = max(r.low, bounds[0]), min(r.high, bounds[1])
    lo, hi = min(lo, estimate), max(hi, estimate)
    return replace(r, low=float(lo), high=float(hi))


def erasure_bootstrap(df: pd.DataFrame, *, reference: str = "reference", prediction: str = "prediction",
                      group: str = "group", groups: Sequence[Any] = ("F", "M"), n_bootstrap: int = 1000,
                      confidence: float = 0.95, seed: int = 0, min_count: int = 1,
                      **cad_kwargs: Any) -> dict[str, Any]:
    """The reference-associated and erased word counts of one corpus with bootstrap CIs over studies.

    ``df``: one row per study (reference, prediction, group). Returns ``{"estimate": erasure_statistics(...),
    "ci": {name: BootstrapResult | None}, "n_studies", "words": {"reference_associated": [...], "silence": [...],
    "paper": [...]}}`` (the words behind each count). Resampling: the module docstring; CIs are ``None`` with
    ``n_bootstrap = 0`` or fewer than two studies of a sex.
    """
    counts = _counts(df, reference, prediction, group, groups, min_count)
    a = _arrays_at(*counts.group_totals(), cad_kwargs)
    est = erasure_statistics(a)
    vocab = counts.vocab.astype(str)
    assoc = a["ref_associated"]
    words = {"reference_associated": vocab[assoc].tolist(), "silence": vocab[a["erased_silence"]].tolist(),
             "paper": vocab[(a["category"] == "Erasure") & assoc].tolist()}
    sizes = np.bincount(counts.group, minlength=2)
    ci: dict[str, BootstrapResult | None] = {k: None for k in est}
    if n_bootstrap and sizes.min() >= 2:
        reps = {k: [] for k in est}
        R, P, codes = counts.reference, counts.prediction, counts.group
        for W in resample_weights(counts.n_reports, n_bootstrap, seed=seed, strata=codes):
            for start in range(0, W.shape[0], _REPLICATES_PER_CALL):  # [V × 2 × b] stacks: one cad_arrays call each
                w = W[start:start + _REPLICATES_PER_CALL]
                s = erasure_statistics(_arrays_at(np.stack(_totals(R, codes, w), axis=1),
                                                  np.stack(_totals(P, codes, w), axis=1), cad_kwargs))
                for k, v in s.items():
                    reps[k].extend(v.tolist())
        for k in est:
            ci[k] = _interval(float(est[k]), np.array(reps[k]), "shifted", confidence, counts.n_reports, k,
                              (0.0, float(len(vocab))))
    return {"estimate": est, "ci": ci, "n_studies": int(counts.n_reports), "words": words}


def erasure_intervals(gens: pd.DataFrame, P: Any, names: Sequence[str] = ("greedy", "beam4")) -> dict[str, dict[str, Any]]:
    """:func:`erasure_bootstrap` of each strategy in ``names`` that the run generated (``gens``: the rows of
    :func:`radaudit.audits.decoding_erasure.study.study_generations`), with the run's params. Every strategy gets
    the same seed, so its resamples are the same studies (the reference counts' replicates are identical)."""
    out = {}
    for name in names:
        rows = gens[gens["strategy"] == name]
        if rows.empty:
            continue
        out[name] = erasure_bootstrap(rows, groups=P.groups, n_bootstrap=P.n_bootstrap, confidence=P.confidence,
                                      seed=stable_seed(P.seed, "erasure-bootstrap"), min_count=P.min_count,
                                      **_params_cad(P))
    return out


def _params_cad(P: Any) -> dict[str, Any]:
    return {k: getattr(P, k) for k in CAD_KEYS}


# ----------------------------------------------------------------------------------------------
# the planted control


def planted_mentions(n_group: int, *, vocab_size: int, pi_reference: float, pi_silence: float, p_star: float = 0.05,
                     margin: float = PLANT_MARGIN) -> tuple[int, bool]:
    """How many of ``n_group`` reports of one sex get the planted phrase (module docstring): the smallest ``k`` such
    that even a resample keeping only ``k_lo = k − 2·sqrt(k·(1 − k/n_group))`` of the mentions (the 2.5% quantile
    of the mentions in a resample of the ``n_group`` studies, normal approximation to Binomial(n_group, k/n_group))
    passes both tests with Bonferroni at p* / margin: ``vocab_size · max(2 π_ref^k_lo, (1 − π_sil)^k_lo) ≤ p* /
    margin``.

    ``2 π_ref^k`` is the exact association p of a word written k times in the sex's references and never in the
    other's (all k mentions in the group: P(X = k | n = k), doubled); ``(1 − π_sil)^k`` the silence test's p of a
    word the predictions never write. Returns ``(k, True)``, or ``(n_group, False)`` when even every report of
    the sex is not enough (too few studies for a planted association to survive BH with margin).
    """
    if n_group < 1:
        raise ParamsError(f"the planted control needs at least one report of the planted group, got {n_group}")
    if not (0 < pi_reference < 1 and 0 < pi_silence < 1):
        raise ParamsError(f"token shares must lie in (0, 1), got pi_reference={pi_reference}, pi_silence={pi_silence}")
    need = math.log(p_star / (margin * vocab_size))
    k_lo_min = max((need - math.log(2.0)) / math.log(pi_reference), need / math.log(1.0 - pi_silence))
    for k in range(1, int(n_group) + 1):
        if k - 2.0 * math.sqrt(k * (1.0 - k / n_group)) >= k_lo_min:
            return k, True
    return int(n_group), False


def plant_phrase(df: pd.DataFrame, k: int, *, phrase: str = PLANTED_PHRASE, reference: str = "reference",
                 group: str = "group", target: Any = "F", seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """``df`` with ``phrase`` appended to the reference of ``k`` studies of ``target`` (chosen at random, seeded),
    and the boolean mask of those rows."""
    rows = np.flatnonzero((df[group] == target).to_numpy(dtype=bool))
    if k > len(rows):
        raise ParamsError(f"cannot plant in {k} reports: group {target!r} has {len(rows)}")
    pick = np.sort(np.random.default_rng(stable_seed(seed, "plant", phrase)).permutation(rows)[:k])
    mask = np.zeros(len(df), dtype=bool)
    mask[pick] = True
    out = df.copy()
    refs = out[reference].astype(str).to_numpy(dtype=object)
    refs[mask] = [f"{t.rstrip()} {phrase}" for t in refs[mask]]
    out[reference] = refs
    return out, mask


def planted_control(df: pd.DataFrame, *, reference: str = "reference", group: str = "group",
                    groups: Sequence[Any] = ("F", "M"),
                    model: str | Callable[[pd.DataFrame], Sequence[str]] = DEFAULT_TEMPLATE,
                    phrase: str = PLANTED_PHRASE, target: Any = None, mentions: int | None = None,
                    n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0, min_count: int = 1,
                    **cad_kwargs: Any) -> dict[str, Any]:
    """The positive control of the Erasure findings: a planted association that a one-template generator erases.

    ``df``: the run's references, one row per study (``reference``, ``group``). ``model``: the generator under
    test — a string is written for every study (default the normal template), a callable maps the planted rows to
    predictions (a test passes one that copies the references, and the control fails). ``target``: the sex the
    phrase is planted in (default ``groups[0]``); ``mentions``: how many of its reports get it (default
    :func:`planted_mentions`). Returns a JSON-ready dict: ``value`` (the largest p a planted word needs to be
    called erased; module docstring), ``low``/``high`` (percentile bootstrap over studies, stratified by sex),
    ``erased`` (planted words the silence test calls erased) of ``planted_words``, ``paper_flags`` (planted words
    the paper's displacement test calls Erasure) and ``paper_total`` (every word it calls Erasure), ``mentions``,
    ``n_target``, ``share``, ``enough`` (whether the preset has studies enough for the margin), ``p_star``.
    """
    g = tuple(groups)
    tgt = g[0] if target is None else target
    kept = df[df[group].isin(list(g)) & df[group].notna()].reset_index(drop=True)
    cad_kw = dict(_cad_kw(cad_kwargs))
    p_star = float(cad_kw.get("p_star", 0.05))
    words = list(dict.fromkeys(tokenize_for_association(phrase)))
    if not words:
        raise ParamsError(f"the planted phrase {phrase!r} has no word the association metrics count")
    n_target = int((kept[group] == tgt).sum())
    enough = True
    if mentions is None:
        template = model if isinstance(model, str) else DEFAULT_TEMPLATE
        base = count_reports(kept[reference].tolist(), [template] * len(kept), kept[group].tolist(), groups=(g[0], g[1]))
        cr, cp = base.group_totals()
        j = g.index(tgt)
        pi_ref = float(cr[:, j].sum() / cr.sum())
        pi_sil = float(cp[:, j].sum() / (cp[:, j].sum() + cr[:, j].sum()))
        vocab = len(set(base.vocab.astype(str)) | set(words))
        mentions, enough = planted_mentions(n_target, vocab_size=vocab, pi_reference=min(max(pi_ref, 1e-9), 1 - 1e-9),
                                            pi_silence=min(max(pi_sil, 1e-9), 1 - 1e-9), p_star=p_star)
    planted, _ = plant_phrase(kept, int(mentions), phrase=phrase, reference=reference, group=group, target=tgt, seed=seed)
    preds = [model] * len(planted) if isinstance(model, str) else list(model(planted))
    if len(preds) != len(planted):
        raise ParamsError(f"the model wrote {len(preds)} predictions for {len(planted)} studies")
    counts = count_reports(planted[reference].tolist(), preds, planted[group].tolist(), groups=(g[0], g[1]))
    counts = counts.restrict(min_count)
    vocab = counts.vocab.astype(str)
    idx = np.array([int(np.flatnonzero(vocab == w)[0]) for w in words if w in set(vocab)], dtype=int)
    j = g.index(tgt)
    z_strong, z_neutral = float(cad_kw.get("z_strong", 2.0)), float(cad_kw.get("z_neutral", 1.0))
    bh = cad_kw.get("correction", "bh") == "bh"

    def evidence(a: Mapping[str, np.ndarray]) -> Any:
        """The planted words' weakest evidence of erasure (a float; one per replicate of ``[V × B]`` arrays)."""
        if idx.size < len(words):
            return 1.0 if a["p_silence"].ndim == 1 else np.ones(a["p_silence"].shape[1])
        p_ref = a["p_ref_exact_adj" if bh else "p_ref_exact"][idx]
        p_sil = a["p_silence_adj" if bh else "p_silence"][idx]
        ok = (np.abs(a["z_ref_exact"][idx]) > z_strong) & (np.abs(a["z_pred_exact"][idx]) < z_neutral) & (
            a["silence_tested"][idx] == j)
        weakest = np.max(np.where(ok, np.maximum(p_ref, p_sil), 1.0), axis=0)
        return float(weakest) if weakest.ndim == 0 else weakest

    a = _arrays_at(*counts.group_totals(), cad_kw)
    value = evidence(a)
    erased = [w for w in words if w in set(vocab[a["erased_silence"]])]
    paper_flags = [w for w in words if w in set(vocab[a["category"] == "Erasure"])]
    low = high = math.nan
    n_boot = 0
    sizes = np.bincount(counts.group, minlength=2)
    if n_bootstrap and sizes.min() >= 2:
        reps = []
        R, P, codes = counts.reference, counts.prediction, counts.group
        for W in resample_weights(counts.n_reports, n_bootstrap, seed=stable_seed(seed, "planted-bootstrap"),
                                  strata=codes):
            for start in range(0, W.shape[0], _REPLICATES_PER_CALL):  # stacked, as in erasure_bootstrap
                w = W[start:start + _REPLICATES_PER_CALL]
                reps.extend(evidence(_arrays_at(np.stack(_totals(R, codes, w), axis=1),
                                                np.stack(_totals(P, codes, w), axis=1), cad_kw)).tolist())
        r = _interval(value, np.array(reps), "percentile", confidence, counts.n_reports, "planted", (0.0, 1.0))
        low, high, n_boot = r.low, r.high, n_bootstrap
    return {"value": value, "low": low, "high": high, "n_bootstrap": n_boot, "phrase": phrase, "target": str(tgt),
            "planted_words": words, "erased": erased, "paper_flags": paper_flags,
            "paper_total": int((a["category"] == "Erasure").sum()), "silence_total": int(a["erased_silence"].sum()),
            "mentions": int(mentions), "n_target": n_target, "share": int(mentions) / n_target if n_target else math.nan,
            "enough": bool(enough), "p_star": p_star, "margin": PLANT_MARGIN}


# ----------------------------------------------------------------------------------------------
# the negative control


def halving_control(df: pd.DataFrame, *, reference: str = "reference", prediction: str | None = None,
                    group: str = "group", groups: Sequence[Any] = ("F", "M"), n_halvings: int = N_HALVINGS,
                    confidence: float = 0.95, seed: int = 0, min_count: int = 1, **cad_kwargs: Any) -> dict[str, Any]:
    """The negative control of the Erasure findings: one random half of the reports against the other.

    Each of ``n_halvings`` halvings (stratified by sex: ``n_g // 2`` studies of each sex per half; seeded by
    ``stable_seed(seed, "halving", h)``) audits half A's ``reference`` texts as the references and half B's
    ``prediction`` texts as the predictions (``prediction=None``: the references themselves, i.e. disjoint real
    reports; a test passes edited reports and the control fails). A halving raises a false alarm when either
    test flags a word (the silence test, or the paper's Erasure on a BH-associated word). The vocabulary of a
    halving is the words its two halves use (as the audit of that corpus would have it). Returns a JSON-ready dict:
    ``value`` (share of halvings with a false alarm), ``low``/``high`` (Wilson), ``alarms``, ``n_halvings``,
    ``silence_alarms``, ``paper_alarms``, ``flagged`` (the most often flagged words with their counts),
    ``mean_reference_associated`` (BH-associated words per half: what the halves could lose), ``p_star``, ``note``
    (why the control could not run: fewer than 2 studies of a group; ``value`` is then NaN).
    """
    g = tuple(groups)
    counts = _counts(df, reference, prediction or reference, group, g, 1)
    codes = counts.group
    members = [np.flatnonzero(codes == c) for c in (0, 1)]
    cad_kw = _cad_kw(cad_kwargs)
    if min(len(m) for m in members) < 2:  # nothing to halve: the control cannot run (its finding says so)
        return {"value": math.nan, "low": math.nan, "high": math.nan, "alarms": 0, "n_halvings": 0, "silence_alarms": 0,
                "paper_alarms": 0, "flagged": {}, "mean_reference_associated": math.nan,
                "p_star": float(cad_kw.get("p_star", 0.05)),
                "note": f"needs at least 2 studies of each group to halve, got {counts.group_sizes}"}
    R, P = counts.reference, counts.prediction
    alarms = sil_alarms = paper_alarms = 0
    flagged: Counter[str] = Counter()
    assoc = []
    vocab = counts.vocab.astype(str)
    for h in range(int(n_halvings)):
        rng = np.random.default_rng(stable_seed(seed, "halving", h))
        half_a, half_b = [], []
        for m in members:
            perm = rng.permutation(m)
            k = len(m) // 2
            half_a.append(perm[:k])
            half_b.append(perm[k:2 * k])
        c_ref = np.column_stack([np.asarray(R[a].sum(axis=0)).ravel() for a in half_a]).astype(float)
        c_pred = np.column_stack([np.asarray(P[b].sum(axis=0)).ravel() for b in half_b]).astype(float)
        keep = (c_ref.sum(axis=1) + c_pred.sum(axis=1)) >= max(1, min_count)
        a = _arrays_at(c_ref[keep], c_pred[keep], cad_kw)
        s = erasure_statistics(a)
        assoc.append(s["reference_associated"])
        sil_alarms += s["silence"] > 0
        paper_alarms += s["paper"] > 0
        if s["silence"] or s["paper"]:
            alarms += 1
            w = vocab[keep]
            flagged.update(set(w[a["erased_silence"]]) | set(w[(a["category"] == "Erasure") & a["ref_associated"]]))
    low, high = wilson_ci(alarms, int(n_halvings), confidence)
    return {"value": alarms / n_halvings, "low": float(low), "high": float(high), "alarms": int(alarms),
            "n_halvings": int(n_halvings), "silence_alarms": int(sil_alarms), "paper_alarms": int(paper_alarms),
            "flagged": dict(flagged.most_common(8)), "mean_reference_associated": float(np.mean(assoc)),
            "p_star": float(cad_kw.get("p_star", 0.05)), "note": ""}


def erasure_controls(reference_rows: pd.DataFrame, P: Any) -> dict[str, dict[str, Any]]:
    """The three controls of a run on its references (one row per study: ``reference``, ``group``), with its params:
    ``planted`` (:func:`planted_control`), ``negative`` (:func:`halving_control`) and ``floor`` (the descriptive
    one-template count on the unplanted references, :func:`radaudit.audits.decoding_erasure.corpus.collapse_floor`)."""
    cad = _params_cad(P)
    rows = reference_rows[["reference", "group"]].reset_index(drop=True)
    return {
        "planted": planted_control(rows, groups=P.groups, n_bootstrap=P.n_bootstrap, confidence=P.confidence,
                                   seed=stable_seed(P.seed, "planted-control"), min_count=P.min_count, **cad),
        "negative": halving_control(rows, groups=P.groups, confidence=P.confidence,
                                    seed=stable_seed(P.seed, "halving-control"), min_count=P.min_count, **cad),
        "floor": collapse_floor(rows, groups=P.groups, min_count=P.min_count, **cad),
    }
