"""Reader studies for atomic_facts: RadPref, ReXVal and your own generations, as candidates + radiologists' judgements."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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
_NEGATED = {"total_errors", "significant_errors"}  # lower is better: correlate with the negative
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
    from radaudit.data import load_dataset

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


def rexval_study(path: Any = None, data_root: Any = None, max_cases: int | None = None) -> ReaderStudy:
    """ReXVal: 50 MIMIC-CXR studies × 4 candidates (each retrieved by one metric), six radiologists'
    error counts (all / clinically significant, summed over the six categories); no ratings."""
    from radaudit.data import load_dataset

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
