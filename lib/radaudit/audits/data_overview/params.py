"""Parameters of the data overview (schema of ``params/data_overview/*.yaml``)."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import Field

from radaudit.config import BaseParams
from radaudit.data import require

log = logging.getLogger(__name__)


DatasetName = Literal[
    "iu_xray", "iu_xray_rexrank", "chexpert_plus_valid", "chexpert_plus_pairs", "radpref",
    "radpref_annotations", "covid_cxr", "mimic_cxr", "rexgradient", "chexpert_plus", "rexval",
]


class Params(BaseParams):
    """Parameters of the data overview (``params/data_overview/*.yaml``)."""

    datasets: list[DatasetName] = Field(
        default_factory=lambda: ["iu_xray", "chexpert_plus_valid", "chexpert_plus_pairs", "radpref", "radpref_annotations",
                                 "covid_cxr"],
        description="Datasets to describe (registry names; `radaudit data list` shows them).",
    )
    skip_missing: bool = Field(False, description="Skip a listed dataset that is not present instead of failing.")
    dataset_paths: dict[DatasetName, str] = Field(
        default_factory=dict, description="Own folder per dataset (credentialed sets kept outside the data root).",
    )
    iu_xray_format: Literal["csv", "xml"] = Field(
        "csv", description="Read IU X-ray from the CSV pair or the original Open-i XML tarball.",
    )
    max_rows: int | None = Field(None, ge=1, description="Random subsample per dataset (rows), for quick runs; null = all.")
    top_labels: int = Field(12, ge=1, description="Labels shown per dataset in the prevalence table and figure.")
    n_examples: int = Field(1, ge=0, description="Example reports shown per dataset.")
    show_images: bool = Field(True, description="Show an example image for datasets that ship images.")

    def preflight(self) -> None:
        if self.skip_missing:
            return
        for name in self.datasets:
            require(name, self.data_root, self.dataset_paths.get(name))
