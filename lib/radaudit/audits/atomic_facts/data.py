"""Reader studies for atomic_facts: RadPref, ReXVal and your own generations, as candidates + radiologists' judgements."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from radaudit.data import load_dataset
from radaudit.errors import ParamsError, RadauditError

log = logging.getLogger(__name__)


CANDIDATE_COLUMNS: tuple[str, ...] = ("case_id", "candidate", "system", "reference", "prediction")
JUDGEMENT_COLUMNS: tuple[str, ...] = ("case_id", "candidate", "rater", "total_errors", "significant_errors", "rating")
TARGETS: dict[str, str] = {
    "total_errors": "total errors",
    "significant_errors": "clinically significant errors",
    "rating": "1–5 rating",
}
"""Radiologist judgements a metric is correlated with (column → label)."""
NEGATED_TARGETS = {"total_errors", "significant_errors"}
"""The :data:`TARGETS` where lower is better (error counts): a metric's agreement with them is computed against
their negative, so that a positive correlation always means the metric agrees with the radiologists."""
SIGNIFICANT_LEVELS = ("urgent", "actionable_not_urgent")
MEAN_RATER = "mean"
INTER_RATER = "inter-rater"
#: display names of systems compared (RadPref's sources); others are shown as they are.
SYSTEM_LABELS: dict[str, str] = {"gpt": "GPT", "medgemma": "MedGemma"}


# ----------------------------------------------------------------------------------------------
# reader studies


@dataclass(frozen=True)
class ReaderStudy:
    """Candidates (:data:`CANDIDATE_COLUMNS`) and radiologists' judgements (:data:`JUDGEMENT_COLUMNS`)."""

    name: str
    candidates: pd.DataFrame
    judgements: pd.DataFrame

    def __post_init__(self) -> None:
        for what, df, cols in (("candidates", self.candidates, CANDIDATE_COLUMNS),
                               ("judgements", self.judgements, JUDGEMENT_COLUMNS)):
            missing = [c for c in cols if c not in df.columns]
            if missing:
                raise RadauditError(f"reader study {self.name!r}: {what} lacks column(s) {missing}; it needs {list(cols)}.")
        if self.candidates.duplicated(["case_id", "candidate"]).any():
            raise RadauditError(f"reader study {self.name!r}: a (case_id, candidate) appears twice in candidates.")
        keys = set(zip(self.candidates["case_id"], self.candidates["candidate"]))
        extra = set(zip(self.judgements["case_id"], self.judgements["candidate"])) - keys
        if extra:
            raise RadauditError(f"reader study {self.name!r}: judgements for unknown candidates, e.g. {sorted(extra)[:2]}.")

    @property
    def raters(self) -> list[Any]:
        return sorted(self.judgements["rater"].unique().tolist())

    @property
    def targets(self) -> list[str]:
        """The judgement kinds this study has (ReXVal has no ratings)."""
        return [t for t in TARGETS if self.judgements[t].notna().any()]


def _first_cases(df: pd.DataFrame, max_cases: int | None) -> pd.DataFrame:
    if max_cases is None:
        return df
    keep = list(dict.fromkeys(df["case_id"]))[:max_cases]
    return df[df["case_id"].isin(keep)]


def radpref_study(data_root: Any = None, max_cases: int | None = None, path: Any = None) -> ReaderStudy:
    """RadPref (CRIMSON): each case's reference findings and its GPT and MedGemma reports, with three
    radiologists' error counts and ratings (module docstring: how the counts are formed)."""
    cases = load_dataset("radpref", data_root, path=path)
    ann = load_dataset("radpref_annotations", data_root, path=path)
    rows = []
    for r in cases.itertuples(index=False):
        ref = "" if pd.isna(r.findings) else str(r.findings)
        for cand in ("C1", "C2"):
            k = cand.lower()
            rows.append({"case_id": str(r.study_id), "candidate": cand, "system": str(getattr(r, f"{k}_source")),
                         "reference": ref, "prediction": str(getattr(r, f"{k}_report"))})
    cand_df = _first_cases(pd.DataFrame(rows, columns=list(CANDIDATE_COLUMNS)), max_cases)
    sig = ann[[f"n_sig_{s}" for s in SIGNIFICANT_LEVELS]].sum(axis=1) + ann["n_attribute_errors_significant"]
    total = (ann["n_false_findings"] + ann["n_missing_findings"] + ann["n_attribute_errors_significant"]
             + ann["n_attribute_errors_negligible"])
    judg = pd.DataFrame({"case_id": ann["case_id"].astype(str), "candidate": ann["candidate"].astype(str),
                         "rater": ann["rater"].astype(int), "total_errors": total.astype(float),
                         "significant_errors": sig.astype(float), "rating": ann["rating_1to5"].astype(float)})
    judg = judg[judg["case_id"].isin(set(cand_df["case_id"]))].reset_index(drop=True)
    return ReaderStudy("radpref", cand_df.reset_index(drop=True), judg)


# ----------------------------------------------------------------------------------------------
# dev / test halves (issue 18: agreement out of sample)

#: Seed of the dev/test split of a reader study's cases: the issue number, fixed before any result
#: of the split was seen (the IU labeler benchmark uses the same seed for its own split).
SPLIT_SEED = 18
SPLIT_PARTS: tuple[str, ...] = ("all", "dev", "test")
"""``all`` = every case; ``dev`` = the half rules may be written on; ``test`` = the half nobody looks at."""
_SPLIT_SALT = "radaudit-reader-study-split"


def _split_key(unit: str, seed: int) -> str:
    return hashlib.sha256(f"{_SPLIT_SALT}:{seed}:{unit}".encode()).hexdigest()


_REXGRADIENT_ID = re.compile(r"^(p[A-Za-z0-9]+)_a[A-Za-z0-9]+_s[0-9.]+$")


def case_patient(case_id: Any) -> str:
    """The patient of a case: ``pXXXX`` of a ReXGradient-style id ``pXXXX_aYYYY_s<UID>`` (RadPref's
    ids), else the case id itself (one case, one patient)."""
    m = _REXGRADIENT_ID.match(str(case_id))
    return m.group(1) if m else str(case_id)


def split_cases(case_ids: Iterable[Any], seed: int = SPLIT_SEED, *,
                by_patient: bool = True) -> dict[str, Literal["dev", "test"]]:
    """Split cases into two halves by case id: ``{case_id: "dev" | "test"}``, in first-seen order.

    Hash-based, exactly half: the distinct ids (as ``str``) are grouped by patient
    (:func:`case_patient`; with ``by_patient=False`` every case is its own group), the groups are
    ranked by ``sha256(f"{salt}:{seed}:{group}")`` (ties, which do not happen in practice, by the
    group), and walking that ranking a group goes to ``"dev"`` while it fits into ``n // 2`` cases;
    the rest are ``"test"``. So ``dev`` has exactly ``n // 2`` cases whenever the group sizes allow
    it (always when the groups are single cases, and on RadPref: 83 patients, 66 with one case)
    and otherwise as many as fit; the odd case goes to test. Two studies of one patient never fall
    in different halves (a rule written on one would have seen the other's wording).

    The result depends only on the *set* of ids and the seed: not on their order or repetition, on
    NumPy's or Python's random generators, or on the Python hash seed; another seed gives another
    split. ``dev`` is the half rule writers may read (e.g. to extend the rule lexicon); ``test`` is
    the half nobody reads, on which agreement is reported out of sample.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ParamsError(f"split seed must be an integer, got {seed!r}.")
    ids = list(dict.fromkeys(str(c) for c in case_ids))
    groups: dict[str, list[str]] = {}
    for c in ids:
        groups.setdefault(case_patient(c) if by_patient else c, []).append(c)
    target = len(ids) // 2
    dev: set[str] = set()
    for g in sorted(groups, key=lambda g: (_split_key(g, int(seed)), g)):
        if len(dev) + len(groups[g]) <= target:
            dev.update(groups[g])
        if len(dev) == target:
            break
    return {c: ("dev" if c in dev else "test") for c in ids}


def select_cases(study: ReaderStudy, case_ids: Iterable[Any], name: str | None = None) -> ReaderStudy:
    """The study restricted to ``case_ids`` (candidates and judgements; row order kept)."""
    keep = {str(c) for c in case_ids}
    cand = study.candidates[study.candidates["case_id"].astype(str).isin(keep)].reset_index(drop=True)
    if cand.empty:
        raise RadauditError(f"reader study {study.name!r}: none of the {len(keep)} selected cases is in the study.")
    judg = study.judgements[study.judgements["case_id"].astype(str).isin(keep)].reset_index(drop=True)
    return ReaderStudy(name or study.name, cand, judg)


def split_study(study: ReaderStudy, part: str = "all", seed: int = SPLIT_SEED,
                assignment: dict[str, str] | None = None) -> ReaderStudy:
    """One half of a study (:func:`split_cases` of its case ids; ``assignment`` overrides it, e.g.
    the split of the full study when this one is already cut down), or all of it for ``"all"``.
    The result is named ``"<study>/<part>"``."""
    if part not in SPLIT_PARTS:
        raise ParamsError(f"split part must be one of {list(SPLIT_PARTS)}, got {part!r}.")
    if part == "all":
        return study
    assignment = assignment if assignment is not None else split_cases(study.candidates["case_id"], seed)
    return select_cases(study, [c for c, p in assignment.items() if p == part], f"{study.name}/{part}")


def rexval_study(path: Any = None, data_root: Any = None, max_cases: int | None = None) -> ReaderStudy:
    """ReXVal: 50 MIMIC-CXR studies × 4 candidates (each retrieved by one metric), six radiologists'
    error counts (all / clinically significant, summed over the six categories); no ratings."""
    cand = load_dataset("rexval", data_root, path=path, table="candidates")
    err = load_dataset("rexval", data_root, path=path, table="errors")
    cand_df = pd.DataFrame({"case_id": cand["study_id"].astype(str), "candidate": cand["candidate_type"].astype(str),
                            "system": cand["candidate_type"].astype(str),
                            "reference": cand["reference_report"].fillna("").astype(str),
                            "prediction": cand["candidate_report"].fillna("").astype(str)})
    cand_df = _first_cases(cand_df, max_cases)
    per = (err.groupby(["study_id", "candidate_type", "rater_index"], as_index=False)
              [["num_errors_total", "num_errors_significant"]].sum())
    judg = pd.DataFrame({"case_id": per["study_id"].astype(str), "candidate": per["candidate_type"].astype(str),
                         "rater": per["rater_index"].astype(int), "total_errors": per["num_errors_total"].astype(float),
                         "significant_errors": per["num_errors_significant"].astype(float), "rating": np.nan})
    # a rater who rated a study but found no error in a candidate has no row in the error file: count 0
    raters_per_case = judg.groupby("case_id")["rater"].unique()
    full = [(c, k, r) for c, k in zip(cand_df["case_id"], cand_df["candidate"]) for r in raters_per_case.get(c, [])]
    grid = pd.DataFrame(full, columns=["case_id", "candidate", "rater"])
    judg = grid.merge(judg, on=["case_id", "candidate", "rater"], how="left")
    judg[["total_errors", "significant_errors"]] = judg[["total_errors", "significant_errors"]].fillna(0.0)
    judg["rating"] = np.nan
    return ReaderStudy("rexval", cand_df.reset_index(drop=True), judg[list(JUDGEMENT_COLUMNS)])


def generations_study(path: str | Path, max_per_strategy: int | None = None) -> pd.DataFrame:
    """Candidates (no judgements) from a table of decoding_erasure generations: one ``system`` per
    ``strategy``. The file (CSV, Parquet or JSONL) needs ``strategy``, ``reference``, ``prediction``."""
    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"strategy_generations: {p} is not a file.")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
    elif suffix in (".parquet", ".pq"):
        df = pd.read_parquet(p)
    elif suffix in (".jsonl", ".json"):
        df = pd.read_json(p, lines=suffix == ".jsonl", dtype=False)
    else:
        raise ParamsError(f"strategy_generations: {p.name} is not .csv, .parquet or .jsonl.")
    missing = [c for c in ("strategy", "reference", "prediction") if c not in df.columns]
    if missing:
        raise ParamsError(f"strategy_generations: {p.name} lacks column(s) {missing}; it has {list(df.columns)}.")
    if max_per_strategy is not None:
        df = df.groupby("strategy", sort=False).head(max_per_strategy)
    sid = df["study_id"].astype(str) if "study_id" in df.columns else pd.Series(range(len(df)), index=df.index).astype(str)
    return pd.DataFrame({"case_id": sid.to_numpy(), "candidate": df["strategy"].astype(str).to_numpy(),
                         "system": df["strategy"].astype(str).to_numpy(),
                         "reference": df["reference"].fillna("").astype(str).to_numpy(),
                         "prediction": df["prediction"].fillna("").astype(str).to_numpy()})
