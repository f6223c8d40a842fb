"""The synthetic_cxr experiment (CheXGenBench, paper 004): the experiment's steps as the notebook runs them.

Paper: Dutt et al., *CheXGenBench* (``../shared/papers/004_175f666718a5c618.txt``). The pieces:

* parameters: :mod:`radaudit.audits.synthetic_cxr.params`;
* real data, splits and prompts: :mod:`radaudit.audits.synthetic_cxr.data`;
* generators (the demo diffusion model, memoriser, degrader, held-out real, a user's folder, hub
  pipelines) and their cached image sets: :mod:`radaudit.audits.synthetic_cxr.generators`;
* the demo encoders (chest X-ray encoder, CLIP-style alignment, Siamese re-ID):
  :mod:`radaudit.audits.synthetic_cxr.models`, :mod:`radaudit.models.cxr_nets`;
* metrics: :mod:`radaudit.metrics.image` (FID/KID/PRDC with CIs, per-label, privacy, ranks);
* utility (Table 4): :mod:`radaudit.audits.synthetic_cxr.utility`; report generation (Table 5):
  :mod:`radaudit.audits.synthetic_cxr.reports`; the tables' layouts and the run summary:
  :mod:`radaudit.audits.synthetic_cxr.tables`; figures: :mod:`radaudit.audits.synthetic_cxr.plots`.

This module holds the functions that turn the sets into the numbers of the paper's tables (Table 1 fidelity,
Table 2 per label, Table 3 privacy, Table 8 ranks) as long tables, every headline number with a 95% bootstrap CI.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.audits.synthetic_cxr import controls as scc
from radaudit.audits.synthetic_cxr import generators as scg
from radaudit.audits.synthetic_cxr import models as scm
from radaudit.audits.synthetic_cxr.data import demo_frame, mimic_prompts, read_synthetic_set
from radaudit.audits.synthetic_cxr.features import image_features
from radaudit.audits.synthetic_cxr.generators import GenerationContext, match_pool
from radaudit.audits.synthetic_cxr.params import Params
from radaudit.audits.synthetic_cxr.reports import (
    read_generated_reports,
    report_utility_long,
    retrieval_reports,
)
from radaudit.errors import DataFormatError, ParamsError
from radaudit.metrics.image import (
    extract_features,
    fidelity_intervals,
    privacy_pairs,
    privacy_summary,
    rank_correlation,
    rank_table,
)
from radaudit.metrics.image.fidelity import label_matrix
from radaudit.metrics.image.uncertainty import fid_from_grams, one_blas_thread
from radaudit.models.cache import default_cache_dir
from radaudit.models.cxr_nets import (
    BioViLTAlignment,
    ClipAlignment,
    SiameseScorer,
    cxr_encoder,
    load_packhauser_reid,
)
from radaudit.models.image_encoders import build_image_encoder
from radaudit.stats import bootstrap_ci, resample_groups, stable_seed
from radaudit.stats.ranks import kendall_tau, spearman_rho

__all__ = [
    "alignment_table", "dose_response", "dose_spearman", "encoder_agreement", "encoder_view_check", "fid_gap",
    "fidelity_long", "reid_ceiling", "flagged_share", "generate_sets", "generators_to_inspect", "load_models",
    "per_label_intervals", "prepare", "privacy_for", "privacy_long", "privacy_reference_overlap", "rank_summary",
    "real_utility_set", "reid_flags", "reid_halves", "reid_null_threshold", "report_candidates", "report_utility",
    "sample_grid_inputs", "Study", "utility_cache_dir", "utility_train_sets",
]

log = logging.getLogger(__name__)


class Study:
    """The real data of a run: metadata, the generators' shared context, and the real image sets.

    ``test`` (the fidelity reference and the utility test set) is decoded by :func:`prepare`. ``train`` is
    decoded only when something asks for every training image (the demo models train on them; a user's
    folder set is compared with its nearest training image): MIMIC-CXR's training split is 237,388 images,
    about 230 GiB as float32 at 512 px, which the paper path never holds (privacy and utility read the
    training images their requests name, through ``context.pixels``)."""

    def __init__(self, frame: pd.DataFrame, context: Any, train: np.ndarray | None = None,
                 test: np.ndarray | None = None, train_meta: pd.DataFrame | None = None,
                 test_meta: pd.DataFrame | None = None, models: dict[str, Any] | None = None) -> None:
        if test is None or train_meta is None or test_meta is None:
            raise ParamsError("Study needs test images and the train/test metadata (build it with prepare(params)).")
        self.frame, self.context, self._train, self.test = frame, context, train, test
        self.train_meta, self.test_meta, self.models = train_meta, test_meta, dict(models or {})

    @property
    def train(self) -> np.ndarray:
        """Every training image ``[n_train, size, size]``, decoded on first access (see the class docstring)."""
        if self._train is None:
            log.info("decoding all %d training images (%.1f MiB)", len(self.train_meta),
                     len(self.train_meta) * self.context.size ** 2 * 4 / 2 ** 20)
            self._train = self.context.pixels(self.train_meta["study_id"].astype(str).tolist())
        return self._train

    def split_counts(self, labels: Sequence[str]) -> pd.DataFrame:
        rows = []
        for split, g in self.frame.groupby("split", sort=False):
            row = {"split": split, "images": len(g), "patients": g["patient_id"].nunique()}
            for lab in labels:
                row[lab] = int(g["labels"].map(lambda ls, lab=lab: lab in list(ls)).sum())
            rows.append(row)
        return pd.DataFrame(rows)


def prepare(params: Params, cache_dir: str | os.PathLike | None = None) -> Study:
    """Load the real data's metadata, split it by patient, and decode the **test** images (``image_size``).

    Streams: the training images are not decoded here (see :class:`Study`); memory grows with the test split
    and the metadata, not with the training split. MIMIC-CXR (``dataset_options`` go to
    :func:`~radaudit.audits.synthetic_cxr.data.mimic_prompts`) also gets the studies of the held-out split
    (:meth:`Params.heldout`) that the LLaVA-Rad annotations do not cover, for the held-out real generator."""
    if params.dataset == "covid_cxr":
        frame = demo_frame(params.data_root, seed=params.split_seed, fractions=tuple(params.fractions),
                           **params.dataset_options)
    else:
        frame = mimic_prompts(params.dataset_path, **{"pool_splits": [params.heldout()], **params.dataset_options})
    ctx = GenerationContext(frame=frame, size=params.image_size, cache_dir=cache_dir, resize=params.resize)
    train_meta = frame[frame["split"] == "train"].reset_index(drop=True)
    test_meta = frame[frame["split"] == "test"].reset_index(drop=True)
    if train_meta.empty or test_meta.empty:
        raise ParamsError("The split has no train or no test images; check fractions and the data.")
    test = ctx.pixels(test_meta["study_id"].tolist())
    return Study(frame=frame, context=ctx, train=None, test=test, train_meta=train_meta, test_meta=test_meta)


# --- models and image sets ------------------------------------------------------------------------

def load_models(params: Params, study: Study, cache_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """The run's encoders: ``cxr`` (ImageEncoder), ``inception`` (optional), ``alignment`` (scorer with
    ``score(images, captions)``, or None), ``reid`` (a PairScorer), and ``cards``: the demo models'
    held-out quality (from their model cards). Demo models train on the train split on first use."""
    hp = params.demo_models
    args = (study.train, study.train_meta, study.test, study.test_meta)
    out: dict[str, Any] = {"cards": {}}
    if params.cxr_encoder == "demo":
        path = scm.demo_encoder_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("encoder", {}))
        out["cxr"], out["cards"]["encoder"] = cxr_encoder(path), scm.model_card(path)
    else:
        out["cxr"] = build_image_encoder(params.cxr_encoder)
    if params.use_inception:
        out["inception"] = build_image_encoder("inception-fid")
    if params.alignment_model == "demo":
        path = scm.demo_clip_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("clip", {}))
        out["alignment"], out["cards"]["clip"] = ClipAlignment(path), scm.model_card(path)
    elif params.alignment_model == "biovil-t":
        out["alignment"] = BioViLTAlignment()
    else:
        out["alignment"] = None
    if params.reid_model == "demo":
        path = scm.demo_reid_path(*args, seed=params.seed, cache_dir=cache_dir, **hp.get("reid", {}))
        out["reid"], out["cards"]["reid"] = SiameseScorer(path), scm.model_card(path)
    else:
        out["reid"] = SiameseScorer(load_packhauser_reid(params.reid_model))
    return out


def encoder_view_check(params: Params, study: Study, models: Mapping[str, Any]) -> dict[str, float] | None:
    """The demo encoder's view accuracy against a linear probe on the pixels of the same test images
    (:func:`~radaudit.audits.synthetic_cxr.models.view_correctness`, the probe of its model card), as
    :func:`~radaudit.audits.synthetic_cxr.controls.view_gain`: ``gain, low, high, encoder, pixels, n``. ``None``
    without the demo encoder (RadDino has no view head) or without two views."""
    if params.cxr_encoder != "demo" or "cxr" not in models:
        return None
    card = (models.get("cards") or {}).get("encoder") or {}
    target = (card.get("hyperparameters") or {}).get("view_target", "projection")
    vc = scm.view_correctness(models["cxr"], study.train, study.train_meta, study.test, study.test_meta, target)
    if vc is None or len(vc) < 2:
        return None
    return scc.view_gain(vc["encoder_correct"], vc["pixel_correct"], n_bootstrap=params.n_bootstrap,
                     seed=stable_seed(params.seed, "view-gain"), confidence=params.confidence)


def reid_ceiling(scorer: Any) -> float | None:
    """The highest score a re-ID network with a monotone head can give (an exact copy: ``sigmoid(bias)``; see
    :mod:`radaudit.audits.synthetic_cxr.models`, "Re-ID"), or ``None`` for an unconstrained head (the paper's)."""
    model = getattr(scorer, "model", None)
    if model is None or not getattr(getattr(model, "config", None), "monotone_head", False):
        return None
    import torch

    return float(torch.sigmoid(model.fc_end.bias.detach().double()).reshape(-1)[0])


def utility_cache_dir(params: Params, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """Where Table 4's classifiers are kept (``<cache>/utility_classifiers``; content-addressed by their training
    images, labels, seed and settings: :func:`~radaudit.audits.synthetic_cxr.classifier.load_or_train_classifier`), or
    ``None`` with ``cache: false`` (every run trains them)."""
    if not params.cache:
        return None
    return (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "utility_classifiers"


def generate_sets(params: Params, study: Study, cache_dir: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """Every generator's three image sets (cached on disk): ``fidelity`` (``fidelity_k`` images per test
    prompt), ``privacy`` (``privacy_prompts`` training prompts of the audit half of the training patients,
    :func:`reid_halves`, x ``privacy_seeds`` seeds) and ``utility``
    (``utility_n`` training prompts). Returns ``{generator: {purpose: (images, requests)}}``."""
    seed = params.seed
    _, audit_patients = reid_halves(study, seed)  # privacy prompts: the audit half only (see reid_null_threshold)
    requests = {
        "fidelity": scg.fidelity_requests(study.frame, "test", k=params.fidelity_k, seed=seed),
        "privacy": scg.privacy_requests(study.frame, params.privacy_prompts, params.privacy_seeds, seed=seed,
                                        patients=audit_patients),
        "utility": scg.utility_requests(study.frame, params.utility_n or len(study.train_meta), seed=seed),
    }
    out: dict[str, dict[str, Any]] = {}
    for entry in params.generators:
        extra = dict(entry.params)
        if entry.kind == "diffusion" and extra.get("model", "demo") == "demo":
            extra.setdefault("train", params.demo_models.get("diffusion") or None)
            extra.setdefault("model_seed", seed)
        if entry.kind == "heldout_real":
            extra.setdefault("split", params.heldout())
        out[entry.name] = {}
        if entry.kind == "folder":  # bring your own: the whole set serves every purpose, in file order
            meta = read_synthetic_set(extra["metadata_csv"], extra.get("images_root"))
            imgs = scg.generate_set(entry.kind, None, cache_dir, context=study.context, **extra)
            out[entry.name] = {purpose: (imgs, meta) for purpose in requests}
            continue
        for purpose, req in requests.items():
            # the real image each request is made from (reference generators), decided on the whole frame:
            # held-out real without replacement, the degrader never of the prompt's patient
            req_g = scg.assign_sources(entry.kind, req, context=study.context, **extra)
            out[entry.name][purpose] = (scg.generate_set(entry.kind, req_g, cache_dir, context=study.context, **extra),
                                        req_g)
    return out


def real_utility_set(params: Params, study: Study) -> tuple[np.ndarray, pd.DataFrame]:
    """The real baseline of Tables 4 and 5, size-matched to the generators: the real training image of every
    utility request (:func:`~radaudit.audits.synthetic_cxr.generators.utility_requests`, the same requests
    :func:`generate_sets` gives every generator), so the real classifier sees the same prompts and as many
    images as each generator's utility set — as CheXGenBench, whose real baseline is the 20,000 real images
    of the 20,000 prompts the generators draw (``training_data_20K.csv``). With ``utility_n`` null (as many as
    real training images) that is every training image once, in the training split's order. Returns the
    images and their metadata (``prompt``, ``labels``, ``study_id``)."""
    if params.utility_n is None:
        return study.train, study.train_meta
    req = scg.utility_requests(study.frame, params.utility_n, seed=params.seed)
    ids = req["source_study_id"].astype(str).tolist()
    meta = req[["prompt", "labels"]].assign(study_id=ids)
    return study.context.pixels(ids), meta


def utility_train_sets(params: Params, study: Study, sets: Mapping[str, Mapping[str, Any]]
                       ) -> dict[str, tuple[np.ndarray, list[Any]]]:
    """Table 4's training sources ``{source: (images, labels)}``: ``real`` (:func:`real_utility_set`) first, then
    every generator's utility set. A source of another size than the real baseline (a user's folder, which
    serves its whole set) is logged: its utility is then not size-matched."""
    images, meta = real_utility_set(params, study)
    out = {"real": (images, meta["labels"].tolist())}
    out |= {name: (s["utility"][0], s["utility"][1]["labels"].tolist()) for name, s in sets.items()}
    other = {name: len(v[0]) for name, v in out.items() if len(v[0]) != len(images)}
    if other:
        log.warning("Table 4: the real baseline has %d images; %s differ (not size-matched)", len(images), other)
    return out


def sample_grid_inputs(study: Study, sets: Mapping[str, Mapping[str, Any]], n: int = 8
                       ) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
    """The samples figure's rows (``plot_sample_grid(*sample_grid_inputs(study, sets))``): every row shows the
    same ``n`` test prompts — the first request of each distinct prompt in the fidelity requests' order
    (then further requests if there are fewer than ``n`` distinct prompts), so labels and views vary across
    columns — and the top row, "real (test)", is the real test image each prompt was written from. A set
    without ``source_study_id`` (a user's folder) shows its first ``n`` images."""
    with_source = [s["fidelity"][1] for s in sets.values() if "source_study_id" in s["fidelity"][1].columns]
    grid: dict[str, np.ndarray] = {}
    prompts: dict[str, list[str]] = {}
    ids: list[str] = []
    if with_source:
        req = with_source[0].reset_index(drop=True)
        first = req.drop_duplicates("prompt").index.tolist()
        rest = [i for i in req.index if i not in set(first)]
        rows = req.loc[(first + rest)[:n]]
        ids = rows["source_study_id"].astype(str).tolist()
        grid["real (test)"] = study.context.pixels(ids)
        prompts["real (test)"] = rows["prompt"].astype(str).tolist()
    for name, s in sets.items():
        images, req = s["fidelity"]
        req = req.reset_index(drop=True)
        if ids and "source_study_id" in req.columns:
            pos = {sid: i for i, sid in reversed(list(enumerate(req["source_study_id"].astype(str))))}
            take = [pos[i] for i in ids if i in pos]
        else:
            take = list(range(min(n, len(images))))
        grid[name] = np.asarray(images)[take]
        prompts[name] = req["prompt"].astype(str).iloc[take].tolist()
    return grid, prompts


def generators_to_inspect(pairs: Mapping[str, pd.DataFrame], generators: Sequence[Any]) -> list[str]:
    """Whose closest privacy pairs to draw: the generator with the highest mean re-ID score, then every
    generator that is a model (not one of the reference generators with a verdict known in advance)."""
    reference = {"memoriser", "degrader", "heldout_real"}
    scored = {g: float(p["reid"].mean()) for g, p in pairs.items() if "reid" in p and p["reid"].notna().any()}
    out = [max(scored, key=scored.get)] if scored else []
    out += [e.name for e in generators if e.kind not in reference and e.name in pairs and e.name not in out]
    return out


def privacy_for(study: Study, images: np.ndarray, requests: pd.DataFrame, models: Mapping[str, Any], *,
                reference: str = "own") -> pd.DataFrame:
    """:func:`radaudit.metrics.image.privacy_pairs` for one generator's privacy set: each synthetic image
    against its prompt's training image (``reference="own"``, paper §3.2), or — for a set without
    ``source_study_id`` (a user's folder) — against the nearest training image of the train split."""
    if reference == "own" and "source_study_id" in requests.columns:
        ids = requests["source_study_id"].astype(str).tolist()
        uniq = list(dict.fromkeys(ids))
        pos = {sid: i for i, sid in enumerate(uniq)}
        train = study.context.pixels(uniq)
        return privacy_pairs(list(train), list(images), [pos[s] for s in ids], prompt_ids=ids,
                             seeds=requests["seed"].tolist(), encoder=models["cxr"], scorer=models["reid"], size=None,
                             reference="own")
    return privacy_pairs(list(study.train), list(images), [0] * len(images), prompt_ids=requests["prompt"].tolist(),
                         seeds=requests["seed"].tolist() if "seed" in requests else None, encoder=models["cxr"],
                         scorer=models["reid"], size=None, reference="nearest")


# --- Table 5: report generation -------------------------------------------------------------------

def report_candidates(params: Params, study: Study, sets: Mapping[str, Mapping[str, Any]],
                      models: Mapping[str, Any]) -> tuple[dict[str, list[str]], pd.DataFrame]:
    """One generated report per real test study and training source (``real`` + every generator).

    A source listed in ``params.report_generation.files`` takes the reports of your own report model from its CSV
    (:func:`radaudit.audits.synthetic_cxr.reports.read_generated_reports`: every test study, empty reports
    counted); any other source gets the stand-in: nearest-neighbour report retrieval in the chest X-ray
    encoder's space, over the source's utility images and their prompts (``real``: the size-matched real
    training images of :func:`real_utility_set` and their captions). Returns the reports and a table
    ``source, how, n_empty, note``."""
    cfg = params.report_generation
    real_images, real_meta = real_utility_set(params, study)
    sources = {"real": (real_images, real_meta["prompt"].astype(str).tolist())}
    sources |= {g: (s["utility"][0], s["utility"][1]["prompt"].astype(str).tolist()) for g, s in sets.items()}
    unknown = sorted(set(cfg.files) - set(sources))
    if unknown:
        raise ParamsError(f"report_generation.files names source(s) {unknown}; the sources are {list(sources)}.")
    ids = study.test_meta["study_id"].astype(str).tolist()
    test_feats = None
    out: dict[str, list[str]] = {}
    rows = []
    for src, (images, texts) in sources.items():
        if src in cfg.files:
            got = read_generated_reports(cfg.files[src], ids)
            out[src] = list(got.reports)
            rows.append({"source": src, "how": f"file {cfg.files[src]}", "n_empty": got.n_empty, "note": got.note})
            continue
        if test_feats is None:
            test_feats = extract_features(models["cxr"], list(study.test))
        out[src] = retrieval_reports(extract_features(models["cxr"], list(images)), texts, test_feats)
        rows.append({"source": src, "how": f"retrieval over {len(texts)} image-text pairs", "n_empty": 0, "note": ""})
    return out, pd.DataFrame(rows)


def report_utility(params: Params, study: Study, reports: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Table 5 (long): every source's reports against the real test references, 95% bootstrap CIs over test
    studies, paired differences to ``real`` with BH-adjusted p-values
    (:func:`radaudit.audits.synthetic_cxr.reports.report_utility_long`)."""
    cfg = params.report_generation
    if cfg.reference_column not in study.test_meta.columns:
        raise ParamsError(f"report_generation.reference_column={cfg.reference_column!r} is not a column of the test "
                          f"metadata ({sorted(study.test_meta.columns)}).")
    col = study.test_meta[cfg.reference_column]
    keep = (col.notna() & (col.astype(str).str.strip() != "")).to_numpy()
    if not keep.any():
        raise DataFormatError(f"No real test study has a {cfg.reference_column!r} text to compare reports with; set "
                              "report_generation.reference_column to the reference report column.")
    refs = col[keep].astype(str).tolist()
    cands = {}
    for src, texts in reports.items():
        if len(texts) != len(keep):
            raise DataFormatError(f"{src!r} has {len(texts)} reports for {len(keep)} test studies.")
        cands[src] = [t for t, k in zip(texts, keep) if k]
    long = report_utility_long(refs, cands, metrics=tuple(cfg.metrics), label_mode=cfg.label_mode,
                               label_names=params.labels if cfg.label_mode == "labels" else None, baseline="real",
                               n_bootstrap=params.n_bootstrap, seed=params.seed, confidence=params.confidence,
                               data_root=params.data_root, min_positives=params.min_positives_test)
    long.attrs["n_without_reference"] = int((~keep).sum())
    if (~keep).any():
        log.warning("Table 5: %d of %d test studies have no %r text and are left out.", int((~keep).sum()), len(keep),
                    cfg.reference_column)
    return long


# --- Table 1: fidelity ------------------------------------------------------------------------------

def fidelity_long(real_features: Mapping[str, np.ndarray], synth_features: Mapping[str, Mapping[str, np.ndarray]], *,
                  n_bootstrap: int = 1000, seed: int = 0, confidence: float = 0.95, nearest_k: int = 5) -> pd.DataFrame:
    """Every fidelity metric per generator x encoder with a bootstrap CI over images (Table 1, long).

    ``real_features``: ``{encoder: [n, d]}`` of the real test images; ``synth_features``:
    ``{generator: {encoder: [m, d]}}``. FID and KID on every encoder; precision/recall/density/
    coverage (k = ``nearest_k``) on the chest X-ray encoder only, as CheXGenBench computes PRDC on
    RadDino. Columns: ``generator, encoder, metric, estimate, low, high, bias, ...``
    (:func:`radaudit.metrics.image.fidelity_intervals`).
    """
    parts = []
    for gen, feats in synth_features.items():
        for enc, real in real_features.items():
            metrics = ("fid", "kid", "precision", "recall", "density", "coverage") if enc != "inception" else ("fid", "kid")
            t = fidelity_intervals(real, feats[enc], metrics=metrics, n_bootstrap=n_bootstrap,
                                   seed=stable_seed(seed, "fidelity", gen, enc), confidence=confidence,
                                   nearest_k=nearest_k)
            parts.append(t.assign(generator=gen, encoder=enc))
    out = pd.concat(parts, ignore_index=True)
    return out[["generator", "encoder"] + [c for c in out.columns if c not in ("generator", "encoder")]]


def alignment_table(scores: Mapping[str, np.ndarray], *, n_bootstrap: int = 1000, seed: int = 0,
                    confidence: float = 0.95) -> pd.DataFrame:
    """Mean image–text alignment per generator (Table 1's "Alignment Score") with a bootstrap CI over images."""
    rows = []
    for gen, s in scores.items():
        s = np.asarray(s, dtype=float)
        r = bootstrap_ci(s, np.mean, n_bootstrap=n_bootstrap, seed=stable_seed(seed, "alignment", gen),
                         confidence=confidence, method="percentile")
        rows.append({"generator": gen, "encoder": "alignment", "metric": "alignment", "estimate": r.estimate,
                     "low": r.low, "high": r.high, "n_synth": len(s)})
    return pd.DataFrame(rows)


# --- Table 3: privacy ---------------------------------------------------------------------------

_PRIVACY = {"avg_reid": ("max_reid", np.mean), "avg_latent_distance": ("min_latent_distance", np.mean),
            "avg_pixel_distance": ("min_pixel_distance", np.mean)}


def privacy_long(per_prompt: Mapping[str, pd.DataFrame], *, delta: float = 0.85, n_bootstrap: int = 1000, seed: int = 0,
                 confidence: float = 0.95, calibrated_threshold: float | None = None) -> pd.DataFrame:
    """Table 3 (long) per generator: Avg. Re-ID (mean of per-prompt maxima), Avg. latent and pixel distance
    (means of per-prompt minima), Max. Re-ID and Count Re-ID > δ, with bootstrap CIs over prompts
    (the max has no meaningful bootstrap interval and is reported bare).

    δ = 0.85 is calibrated for the paper's re-ID network. ``calibrated_threshold`` adds a second count,
    ``count_reid_above_calibrated``; it must be calibrated on the statistic it is compared with here, the
    per-prompt **max over seeds** (:func:`reid_null_threshold`), not on single pairs."""
    rows = []
    for gen, pp in per_prompt.items():
        summ = privacy_summary(pp, delta=delta)
        for metric, (col, fn) in _PRIVACY.items():
            vals = pp[col].to_numpy(float)
            vals = vals[np.isfinite(vals)]
            if len(vals) < 2:
                rows.append({"generator": gen, "metric": metric, "estimate": summ[metric], "low": np.nan, "high": np.nan})
                continue
            r = bootstrap_ci(vals, fn, n_bootstrap=n_bootstrap, seed=stable_seed(seed, "privacy", gen, metric),
                             confidence=confidence, method="percentile")
            rows.append({"generator": gen, "metric": metric, "estimate": r.estimate, "low": r.low, "high": r.high})
        rows.append({"generator": gen, "metric": "max_reid", "estimate": summ["max_reid"], "low": np.nan, "high": np.nan})
        mx = pp["max_reid"].to_numpy(float)
        mx = mx[np.isfinite(mx)]
        if len(mx) >= 2:
            r = bootstrap_ci(mx, lambda x: float((x > delta).sum()), n_bootstrap=n_bootstrap,
                             seed=stable_seed(seed, "privacy", gen, "count"), confidence=confidence, method="percentile")
            lo, hi = r.low, r.high
        else:
            lo = hi = np.nan
        rows.append({"generator": gen, "metric": "count_reid_above_delta", "estimate": summ["count_reid_above_delta"],
                     "low": lo, "high": hi})
        n_rows = 5
        if calibrated_threshold is not None and len(mx) >= 2:
            thr = float(calibrated_threshold)
            r = bootstrap_ci(mx, lambda x, thr=thr: float((x > thr).sum()), n_bootstrap=n_bootstrap,
                             seed=stable_seed(seed, "privacy", gen, "count_calibrated"), confidence=confidence,
                             method="percentile")
            rows.append({"generator": gen, "metric": "count_reid_above_calibrated", "estimate": float((mx > thr).sum()),
                         "low": r.low, "high": r.high, "threshold": thr})
            n_rows = 6
        for r_ in rows[-n_rows:]:
            r_.update(n_prompts=summ["n_prompts"], delta=delta)
    return pd.DataFrame(rows)


# --- Table 8: ranks -----------------------------------------------------------------------------

def rank_summary(fidelity: pd.DataFrame, utility_long: pd.DataFrame, *, macro: str = "macro",
                 baseline: str = "real") -> tuple[pd.DataFrame, dict[str, float]]:
    """Table 8: per-metric ranks of the generators on Table 1's estimates (1 = best), their average and the
    overall rank; and Spearman's ρ between the fidelity rank and the utility rank (macro AUROC).
    Rows are sorted best first (overall rank, then average rank; ties keep Table 1's order)."""
    f = fidelity.copy()
    f["column"] = [m if e in ("alignment",) else f"{m}_{e}" if m in ("fid", "kid") else m
                   for m, e in zip(f["metric"], f["encoder"])]
    scores = f.pivot(index="generator", columns="column", values="estimate")
    direction = {c: c.split("_")[0] not in ("fid", "kid") for c in scores.columns}
    ranks = rank_table(scores, higher_is_better=direction)
    util = utility_long[(utility_long["label"] == macro) & (utility_long["source"] != baseline)]
    util = util.set_index("source")["auroc"]
    util_rank = util.rank(ascending=False)
    ranks["utility_macro_auroc"] = util.reindex(ranks.index)
    ranks["utility_rank"] = util_rank.reindex(ranks.index)
    corr = rank_correlation(ranks["overall_rank"], ranks["utility_rank"])
    first_seen = {g: i for i, g in enumerate(pd.unique(fidelity["generator"]))}
    ranks = ranks.assign(_order=[first_seen.get(g, len(first_seen)) for g in ranks.index])
    ranks = ranks.sort_values(["overall_rank", "average_rank", "_order"], kind="stable").drop(columns="_order")
    paper = ["fid_cxr", "kid_cxr", "fid_inception", "kid_inception", "precision", "recall", "density", "coverage",
             "alignment"]  # Table 1's column order
    first = [c for c in paper if c in ranks.columns] + [c for c in scores.columns if c not in paper]
    ranks = ranks[first + [c for c in ranks.columns if c not in first]]
    return ranks.reset_index().rename(columns={"index": "generator"}), corr


# --- privacy controls: where the reference images came from, and a threshold for the max over seeds -----------

def privacy_reference_overlap(sets: Mapping[str, Mapping[str, Any]], generators: Sequence[Any]) -> pd.DataFrame:
    """Per generator, how many audited privacy images were made from the prompt's own training image or from
    another image of the prompt's patient (from the ``pool_study_id``/``pool_patient_id`` the reference
    generators record, :func:`radaudit.audits.synthetic_cxr.generators.assign_sources`).

    The memoriser copies the prompt's image by design (the positive control): its rows say so and it is
    not counted in ``counts_toward_overlap``. Every other generator must have 0 (the degrader draws other
    patients' images, held-out real images come from patients no generator trains on); a generator that
    draws no real image (a model, a folder) has no recorded source and 0 by construction."""
    kinds = {e.name: e.kind for e in generators}
    rows = []
    for name, s in sets.items():
        req = s["privacy"][1]
        has = "pool_study_id" in req.columns and req["pool_study_id"].notna().any()
        same_image = int((req["pool_study_id"].astype(str) == req["source_study_id"].astype(str)).sum()) if has else 0
        same_patient = (int((req["pool_patient_id"].astype(str) == req["source_patient_id"].astype(str)).sum())
                        if has and "source_patient_id" in req.columns else 0)
        memoriser = kinds.get(name) == "memoriser"
        rows.append({"generator": name, "kind": kinds.get(name, ""), "n_images": len(req),
                     "source_recorded": bool(has), "same_image": same_image, "same_patient": same_patient,
                     "counts_toward_overlap": not memoriser,
                     "role": "positive control: copies the prompt's image by design" if memoriser else
                     ("reference image of another patient" if has else "no real source image")})
    return pd.DataFrame(rows)


def reid_halves(study: Study | pd.DataFrame, seed: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """``(calibration, audit)`` halves of the **training** patients
    (:func:`radaudit.audits.synthetic_cxr.controls.patient_halves`): the re-ID threshold is calibrated on the
    first, every generator's privacy prompts are drawn from the second (:func:`generate_sets`)."""
    frame = study if isinstance(study, pd.DataFrame) else study.frame
    return scc.patient_halves(frame.loc[frame["split"] == "train", "patient_id"].astype(str), seed)


def reid_null_threshold(study: Study, scorer: Any, *, n_seeds: int, fpr: float = 0.01, rounds: int = 5,
                        seed: int = 0, n_prompts: int | None = None) -> dict[str, Any]:
    """The re-ID threshold, calibrated on the statistic the audit applies it to (the **max over ``n_seeds``**) and
    on patients the audit never sees (issue 40; :mod:`radaudit.audits.synthetic_cxr.controls`).

    A prompt is flagged when the highest re-ID score of its ``n_seeds`` images exceeds the threshold. A
    threshold taken from single pairs (e.g. 1% of different-patient *pairs* above it) lets a prompt of
    unrelated images through about ``1 − 0.99^n_seeds`` of the time (5% at 5 seeds). The null prompts are
    ``n_prompts`` training images (default: every one) of the **calibration half** of the training patients
    (:func:`reid_halves`; the privacy prompts come from the other half), drawn as the audit draws its prompts
    (:func:`~radaudit.audits.synthetic_cxr.generators.privacy_requests`); each is a "prompt image" ``rounds``
    times, and each time ``n_seeds`` label- and view-matched images of the real **test** split (patients no
    demo network trains on, other than the prompt's; not the held-out real generator's split, so that control
    stays independent; :func:`~radaudit.audits.synthetic_cxr.generators.match_pool`) play the synthetic images —
    what a generator producing realistic, new patients would give. The threshold is the ``1 − fpr`` quantile of
    those maxima (:func:`~radaudit.audits.synthetic_cxr.controls.calibrated_threshold`). Returns ``threshold``,
    ``fpr``, ``n_null`` (null prompts x rounds), ``null_max`` (their maxima), ``null`` (a frame ``patient_id,
    study_id, round, max_reid``), ``pair_threshold`` (the per-pair quantile, for comparison), ``statistic``,
    ``n_seeds``, ``calibration_patients`` / ``audit_patients`` (the halves) and their sizes."""
    cal, audit = reid_halves(study, seed)
    n_cal = int(study.train_meta["patient_id"].astype(str).isin(cal).sum())
    base = scg.privacy_requests(study.frame, n_prompts or n_cal, n_seeds * rounds, seed=seed, patients=cal)
    partners, _ = match_pool(base, study.test_meta, "reid-null", other_patient=True)
    pos = {sid: i for i, sid in enumerate(study.test_meta["study_id"].astype(str))}
    prompt_ids = base["source_study_id"].astype(str).tolist()
    uniq = list(dict.fromkeys(prompt_ids))
    upos = {sid: i for i, sid in enumerate(uniq)}
    prompt_px = study.context.pixels(uniq)
    ref = prompt_px[[upos[s] for s in prompt_ids]]
    other = study.test[[pos[s] for s in partners]]
    scores = np.asarray(scorer(list(ref), list(other)), dtype=float)
    maxima = scores.reshape(-1, n_seeds).max(axis=1)
    first = np.arange(0, len(base), n_seeds)
    null = pd.DataFrame({"patient_id": base["source_patient_id"].astype(str).to_numpy()[first],
                         "study_id": np.asarray(prompt_ids, dtype=object)[first],
                         "round": (np.arange(len(first)) % rounds), "max_reid": maxima})
    thr = scc.calibrated_threshold(maxima, fpr)
    return {"threshold": thr, "fpr": float(fpr), "n_null": int(len(maxima)), "null_max": maxima, "null": null,
            "pair_threshold": float(np.quantile(scores, 1.0 - fpr, method="higher")),
            "statistic": f"max over {n_seeds} seeds", "n_seeds": int(n_seeds), "rounds": int(rounds),
            "calibration_patients": cal, "audit_patients": audit, "n_calibration_patients": len(cal),
            "n_audit_patients": len(audit), "n_calibration_prompts": len(uniq)}


def reid_flags(null: Mapping[str, Any], per_prompt: Mapping[str, pd.DataFrame], study: Study, *,
               threshold: float | None = None, confidence: float = 0.95) -> dict[str, dict[str, float]]:
    """Per generator, the share of its **audit-half** privacy prompts whose max re-ID over seeds exceeds the
    threshold of :func:`reid_null_threshold` (Wilson CI), through
    :func:`~radaudit.audits.synthetic_cxr.controls.split_calibration`: the threshold is taken from the null's
    calibration half and every generator's prompts of calibration patients are dropped (``n_dropped``; 0 when
    the sets come from :func:`generate_sets`). ``per_prompt``: :func:`radaudit.metrics.image.per_prompt_privacy`
    tables keyed by generator (``prompt`` = the prompt's training study id). ``threshold``: flag at this value
    instead (e.g. the paper's δ), on the same audit-half prompts."""
    patient_of = dict(zip(study.frame["study_id"].astype(str), study.frame["patient_id"].astype(str)))
    audit = {g: pd.DataFrame({"patient_id": [patient_of.get(str(p), "") for p in pp["prompt"]],
                              "max_reid": pp["max_reid"].to_numpy(float)}) for g, pp in per_prompt.items()}
    out = scc.split_calibration(null["null"], audit, null["calibration_patients"], fpr=null["fpr"], confidence=confidence)
    if abs(out["threshold"] - null["threshold"]) > 1e-12:
        raise DataFormatError("reid_flags: the null's calibration half does not give the run's threshold; pass the "
                              "dict reid_null_threshold returned.")
    if threshold is None:
        return out["flags"]
    return {g: {**scc.flag_share(df.loc[~df["patient_id"].isin(null["calibration_patients"]), "max_reid"], threshold,
                             confidence), "n_dropped": out["flags"][g]["n_dropped"]} for g, df in audit.items()}


def flagged_share(per_prompt: pd.DataFrame, threshold: float, confidence: float = 0.95) -> dict[str, float]:
    """Share of prompts whose max re-ID exceeds ``threshold`` with its Wilson CI
    (:func:`~radaudit.audits.synthetic_cxr.controls.flag_share`: the unit is the prompt and the count binomial; a
    0/n or n/n share still gets an interval of non-zero width). The run reads the audit half only:
    :func:`reid_flags`."""
    return scc.flag_share(per_prompt["max_reid"].to_numpy(float), threshold, confidence)


# --- the degrader's dose-response ------------------------------------------------------------------------

def dose_response(params: Params, study: Study, encoders: Mapping[str, Any], real_features: Mapping[str, np.ndarray],
                  cache_dir: str | os.PathLike | None = None) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The degrader at every level of ``params.degrader_levels`` on the **same** source images (one per real
    test prompt, label/view-matched training images of other patients), scored like Table 1 on every
    encoder: FID, KID and precision with bootstrap CIs over images. A metric that ranks damage must follow
    the dose monotonically. Returns the long table (``level, blur_sigma, noise_sigma, encoder, metric,
    estimate, low, high, ...``) and ``{level label: images}`` for the figure."""
    parts, images = [], {}
    for i, (label, lvl, imgs) in enumerate(dose_sets(params, study, cache_dir)):
        images[label] = imgs
        for enc_name, enc in encoders.items():
            feats = image_features(enc, imgs, cache=params.cache)
            t = fidelity_intervals(real_features[enc_name], feats, metrics=("fid", "kid", "precision"),
                                   n_bootstrap=params.n_bootstrap, seed=stable_seed(params.seed, "dose", i, enc_name),
                                   confidence=params.confidence, nearest_k=params.nearest_k)
            parts.append(t.assign(level=i, level_label=label, blur_sigma=float(lvl.get("blur_sigma", 0.0)),
                                  noise_sigma=float(lvl.get("noise_sigma", 0.0)), encoder=enc_name))
    if not parts:
        return pd.DataFrame(columns=["level", "encoder", "metric", "estimate", "low", "high"]), images
    out = pd.concat(parts, ignore_index=True)
    first = ["level", "level_label", "blur_sigma", "noise_sigma", "encoder", "metric"]
    return out[first + [c for c in out.columns if c not in first]], images


def dose_sets(params: Params, study: Study, cache_dir: str | os.PathLike | None = None
              ) -> list[tuple[str, dict[str, Any], np.ndarray]]:
    """The degrader's images at every level of ``params.degrader_levels``, ``[(label, level, images)]`` in level
    order: one per real test prompt, from the same label/view-matched training images of other patients
    (cached on disk). :func:`dose_response` scores them; a shard run extracts their features."""
    req = scg.fidelity_requests(study.frame, "test", k=1, seed=params.seed)
    base = dict(next((e.params for e in params.generators if e.kind == "degrader"), {}))
    base = {k: v for k, v in base.items() if k not in ("blur_sigma", "noise_sigma")}
    req = scg.assign_sources("degrader", req, context=study.context, **base)
    out = []
    for i, lvl in enumerate(params.degrader_levels):
        imgs = scg.generate_set("degrader", req, cache_dir, context=study.context, **base, **lvl)
        out.append((f"{i}: blur {lvl.get('blur_sigma', 0):g} px, noise {lvl.get('noise_sigma', 0):g}", dict(lvl), imgs))
    return out


def dose_spearman(dose: pd.DataFrame) -> pd.DataFrame:
    """Spearman's ρ between dose level and each metric per encoder (FID/KID should rise: ρ = +1; precision
    should fall: ρ = −1), with ``monotone`` = every step in the expected direction. ρ:
    :func:`radaudit.stats.spearman_rho`."""
    rows = []
    for (enc, met), g_ in dose.groupby(["encoder", "metric"], sort=False):
        g_ = g_.sort_values("level")
        est = g_["estimate"].to_numpy(float)
        sign = -1.0 if met == "precision" else 1.0
        rho = (round(spearman_rho(g_["level"], est), 12) if len(g_) >= 2 and np.ptp(est) > 0
               else float("nan"))  # rounded: a perfect rank agreement is 1.0, not 0.9999999999999999
        steps = np.diff(est) * sign
        rows.append({"encoder": enc, "metric": met, "n_levels": len(g_), "spearman": rho, "expected": sign,
                     "monotone": bool(len(steps) and (steps > 0).all())})
    return pd.DataFrame(rows)


# --- Table 2 with CIs, the FID gap, the encoders' agreement ---------------------------------------------------

def per_label_intervals(real_features: np.ndarray, real_labels: Sequence[Any],
                        synth: Mapping[str, tuple[np.ndarray, Sequence[Any]]], labels: Sequence[str], *,
                        min_images: int = 5, n_bootstrap: int = 1000, seed: int = 0,
                        confidence: float = 0.95) -> pd.DataFrame:
    """Table 2 (long) with a bootstrap CI over images (real and synthetic resampled independently, shifted
    interval as Table 1): per generator x label, ``fid, fid_low, fid_high, n_real, n_synth, note``. A label
    below ``min_images`` on either side is left blank with the reason; at n = 18 the interval is wide, which
    is the point of printing it."""
    x = np.asarray(real_features, dtype=np.float64)
    rl = label_matrix(list(real_labels), len(x), "real_labels", list(labels))
    rows = []
    for gen, (feats, labs) in synth.items():
        y = np.asarray(feats, dtype=np.float64)
        sl = label_matrix(list(labs), len(y), "synth_labels", list(labels))
        for lab in labels:
            rm = rl[lab].to_numpy() if lab in rl else np.zeros(len(x), bool)
            sm = sl[lab].to_numpy() if lab in sl else np.zeros(len(y), bool)
            row = {"generator": gen, "label": lab, "n_real": int(rm.sum()), "n_synth": int(sm.sum()),
                   "fid": np.nan, "fid_low": np.nan, "fid_high": np.nan, "note": ""}
            if min(rm.sum(), sm.sum()) < max(2, min_images):
                row["note"] = f"fewer than {max(2, min_images)} images"
            else:
                t = fidelity_intervals(x[rm], y[sm], metrics=("fid",), n_bootstrap=n_bootstrap,
                                       seed=stable_seed(seed, "per-label", gen, lab), confidence=confidence)
                r = t.iloc[0]
                row.update(fid=float(r["estimate"]), fid_low=float(r["low"]), fid_high=float(r["high"]))
            rows.append(row)
    return pd.DataFrame(rows)


def fid_gap(real: np.ndarray, synth_a: np.ndarray, synth_b: np.ndarray, *, n_bootstrap: int = 1000, seed: int = 0,
            confidence: float = 0.95) -> dict[str, float]:
    """FID(a) − FID(b) against the same real set, with a paired bootstrap CI: each replicate resamples the real
    images once (shared by both) and each synthetic set independently; the interval is the percentile interval
    of the replicate gaps re-centred on the estimate (both FIDs carry a similar resampling bias, which the
    re-centring removes). On one BLAS thread, as :func:`~radaudit.metrics.image.uncertainty.fidelity_intervals`."""
    x, a, b = (np.asarray(v, dtype=np.float64) for v in (real, synth_a, synth_b))
    reps = np.empty(int(n_bootstrap))
    with one_blas_thread():
        kxx, kaa, kbb, kxa, kxb = x @ x.T, a @ a.T, b @ b.T, x @ a.T, x @ b.T
        est = fid_from_grams(kxx, kaa, kxa) - fid_from_grams(kxx, kbb, kxb)
        # three independent samples, one draw each per replicate (real, then a, then b): the real draw is shared
        for i, (ix, ia, ib) in enumerate(resample_groups((len(x), len(a), len(b)), int(n_bootstrap), seed=seed)):
            gx = kxx[np.ix_(ix, ix)]
            reps[i] = (fid_from_grams(gx, kaa[np.ix_(ia, ia)], kxa[np.ix_(ix, ia)])
                       - fid_from_grams(gx, kbb[np.ix_(ib, ib)], kxb[np.ix_(ix, ib)]))
    centred = reps - reps.mean() + est
    alpha = (1 - confidence) / 2
    return {"gap": float(est), "low": float(np.quantile(centred, alpha)), "high": float(np.quantile(centred, 1 - alpha))}


def encoder_agreement(fidelity: pd.DataFrame, a: str = "cxr", b: str = "inception", metric: str = "fid") -> dict[str, float]:
    """Do two encoders order the generators the same way? Spearman's ρ and Kendall's τ between their
    ``metric`` estimates over the generators of Table 1, and the number of generator pairs they order
    differently. ρ and τ-b: :func:`radaudit.stats.spearman_rho`, :func:`radaudit.stats.kendall_tau` (NaN when an
    encoder's estimate is missing for a generator, or constant)."""
    f = fidelity[fidelity["metric"] == metric].pivot(index="generator", columns="encoder", values="estimate")
    if a not in f or b not in f or len(f) < 2:
        return {"spearman": float("nan"), "kendall": float("nan"), "discordant_pairs": float("nan"), "n": len(f)}
    va, vb = f[a].to_numpy(float), f[b].to_numpy(float)
    disc = sum(1 for i in range(len(va)) for j in range(i + 1, len(va)) if (va[i] - va[j]) * (vb[i] - vb[j]) < 0)
    complete = not (np.isnan(va).any() or np.isnan(vb).any())  # a missing estimate: no ranking (NaN, as scipy's)
    return {"spearman": round(spearman_rho(va, vb), 12) if complete else float("nan"),
            "kendall": round(kendall_tau(va, vb), 12) if complete else float("nan"),
            "discordant_pairs": float(disc), "n": len(f)}
