"""The data overview's inputs: every requested dataset that is present, loaded (and subsampled) once, a status
table with each one's fingerprint, and the two choices every table makes of them: which datasets hold one row per
study (:func:`report_datasets`) and which unit a bootstrap resamples (:func:`resampling_units`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from radaudit.audits.data_overview.params import Params
from radaudit.data import DATASETS, fingerprint, get_spec, is_present, load_dataset, require
from radaudit.stats import stable_seed

__all__ = ["load_all", "report_datasets", "resampling_units"]


def load_all(params: Params) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Load every requested dataset that is present; return them and a status table.

    ``max_rows`` subsamples rows with a seed derived from ``params.seed`` and the dataset name.
    The status table carries each dataset's :func:`~radaudit.data.fingerprint` (its data version).
    """
    data, rows = {}, []
    for name in params.datasets:
        path = params.dataset_paths.get(name)
        spec = get_spec(name)
        if not is_present(name, params.data_root, path):
            if not params.skip_missing:
                require(name, params.data_root, path)  # raises with where to get it
            rows.append({"dataset": name, "title": spec.title, "access": spec.access, "status": "not present", "rows": 0,
                         "fingerprint": None})
            continue
        kwargs = {"format": params.iu_xray_format} if name == "iu_xray" else {}
        df = load_dataset(name, params.data_root, path=path, **kwargs)
        n_all = len(df)
        if params.max_rows is not None and len(df) > params.max_rows:
            df = df.sample(n=params.max_rows,
                           random_state=stable_seed(params.seed, "subsample", name) % (2**32)).sort_index()
        data[name] = df
        rows.append({"dataset": name, "title": spec.title, "access": spec.access,
                     "status": "loaded" + (f" (subsample of {n_all})" if len(df) < n_all else ""), "rows": len(df),
                     "fingerprint": fingerprint(name, params.data_root, path)})
    return data, pd.DataFrame(rows)


def resampling_units(df: pd.DataFrame) -> tuple[np.ndarray, str]:
    """Patient ids if every row has one, else study ids; and the unit's name."""
    if "patient_id" in df and df["patient_id"].notna().all():
        return df["patient_id"].to_numpy(dtype=object), "patient"
    return df["study_id"].to_numpy(dtype=object), "study"


def report_datasets(data: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The datasets of ``data`` (name → table) with one row per study: the registry's annotation tables (kind
    ``"annotations"``, e.g. RadPref's ratings) are left out; names the registry does not know count as report
    datasets. The per-study tables and figures (counts, sex, age, report length, label prevalence, examples,
    images) are drawn from these."""
    return {k: v for k, v in data.items() if k not in DATASETS or DATASETS[k].kind != "annotations"}
