"""Datasets in one tidy schema (:mod:`radaudit.data.schema`), loaded through one registry."""

from radaudit.data.registry import (
    DATASETS,
    DatasetSpec,
    Source,
    chexpert_phrases_dir,
    dataset_folder,
    fingerprint,
    get_spec,
    is_present,
    list_datasets,
    load_dataset,
    require,
    required_files,
)
from radaudit.data.root import resolve_data_root
from radaudit.data.schema import CORE_COLUMNS, finalize, normalize_sex, report_text, validate

__all__ = [
    "CORE_COLUMNS", "DATASETS", "DatasetSpec", "Source", "chexpert_phrases_dir", "dataset_folder", "finalize", "fingerprint",
    "get_spec", "is_present", "list_datasets", "load_dataset", "normalize_sex", "report_text", "require",
    "required_files", "resolve_data_root", "validate",
]
