"""Image metrics of CheXGenBench (paper 004): fidelity, mode coverage, privacy, rankings.

Pure numpy/scipy functions on feature arrays and images; no model is loaded here (features come
from an :class:`~radaudit.models.encoders.ImageEncoder` through :func:`extract_features`). These
are not report-pair metrics, so they are not in the :mod:`radaudit.metrics` registry.

- :mod:`~radaudit.metrics.image.fidelity`: :func:`fid` (full-set, streaming :class:`FeatureStats`),
  :func:`kid`, :func:`prdc` (k = 5), :func:`per_label_fidelity` (conditional FID/KID/PRDC);
- :mod:`~radaudit.metrics.image.privacy`: :func:`pixel_distance` (float, never uint8),
  :func:`latent_distance`, :func:`reid_scores`, :func:`privacy_pairs`, :func:`per_prompt_privacy`,
  :func:`privacy_summary` (Table 3, δ = 0.85 count);
- :mod:`~radaudit.metrics.image.ranking`: :func:`rank_table` (Table 8), :func:`rank_correlation`;
- :mod:`~radaudit.metrics.image.uncertainty`: :func:`fidelity_intervals` (95% bootstrap CIs over
  images for FID, KID and PRDC; FID by the Gram identity, :func:`fid_gram`);
- :mod:`~radaudit.metrics.image.features`: :func:`extract_features`, :func:`iter_features`.
"""

from radaudit.metrics.image.features import extract_features, iter_features
from radaudit.metrics.image.fidelity import (
    FID_EPS,
    FIDELITY_METRICS,
    FeatureStats,
    KIDResult,
    feature_stats,
    fid,
    frechet_distance,
    kid,
    label_matrix,
    per_label_fidelity,
    prdc,
)
from radaudit.metrics.image.privacy import (
    DELTA,
    PairScorer,
    as_float_image,
    latent_distance,
    per_prompt_privacy,
    pixel_distance,
    privacy_pairs,
    privacy_summary,
    reid_scores,
)
from radaudit.metrics.image.ranking import HIGHER_IS_BETTER, rank_correlation, rank_table
from radaudit.metrics.image.uncertainty import fid_gram, fidelity_intervals, prdc_indicators

__all__ = [
    "DELTA", "FIDELITY_METRICS", "FID_EPS", "HIGHER_IS_BETTER", "FeatureStats", "KIDResult", "PairScorer",
    "as_float_image", "extract_features", "feature_stats", "fid", "frechet_distance", "iter_features", "kid",
    "fid_gram", "fidelity_intervals", "label_matrix", "latent_distance", "prdc_indicators", "per_label_fidelity",
    "per_prompt_privacy", "pixel_distance", "prdc",
    "privacy_pairs", "privacy_summary", "rank_correlation", "rank_table", "reid_scores",
]
