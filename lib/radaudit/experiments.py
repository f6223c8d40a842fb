"""The experiment registry: name -> notebook, params schema, rehearsal, one-line description.

Adding an experiment is one entry here, one notebook in ``notebooks/`` and its presets in
``params/<name>/``. The schema class (and the rehearsal function) is imported only when the experiment is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from radaudit.config import BaseParams
from radaudit.registry import Registry


@dataclass(frozen=True)
class Experiment:
    name: str
    notebook: str  # file name inside notebooks/
    params: str | type[BaseParams]  # "module:Class" (imported lazily) or the class itself
    description: str
    paper: str | None = None  # file in ../shared/papers/ it implements
    citation: str | None = None  # authors, title, venue, as a reader cites it
    reference: str | None = None  # arXiv id (or DOI) of the paper
    claim: str | None = None  # one paragraph: what the paper claims (the report opens with it)
    #: "module:function" of the expensive step a shard run does a part of (``radaudit run <e> --shard i/n``,
    #: :mod:`radaudit.shards`): ``step(params, shard=(i, n)) -> dict`` of counts, writing into the shared cache
    #: exactly the entries the notebook's full run looks up. None: the experiment cannot be sharded.
    shard_step: str | None = None
    #: "module:function" of the CPU dress rehearsal (``radaudit run <e> --preset paper --rehearse``), imported lazily:
    #: ``rehearse(params, workdir) -> (params, {model id: twin class})`` gives these parameters for the rehearsal: every
    #: model replaced by a tiny random-weight twin of the same class (:mod:`radaudit.models.twins`), every credentialed
    #: dataset by an invented fixture in its real layout (:mod:`radaudit.data.fixtures`), written under ``workdir``,
    #: sizes cut to a handful. None: the experiment has no rehearsal (run its smoke preset instead).
    rehearsal: str | None = None
    #: How heavy a run is when nothing is cached yet (the stand-in models are trained then): a larger value runs
    #: first among the experiments never run before (``radaudit run all --jobs``, :func:`radaudit.run_many.run_order`),
    #: so the longest start first on a fresh clone. An ordinal hint, not a timing: on the fresh-clone demo of
    #: ``benchmarks/results/demo_fresh.json`` synthetic_cxr took longest, then modality_shift, then decoding_erasure.
    first_run_rank: int = 0
    #: "module:ATTR" of every constant that decides the experiment's trained stand-ins (training configs, recipe
    #: versions): part of the recipe the stability benchmark's verdicts belong to (:func:`radaudit.stability.recipe_id`).
    stand_ins: tuple[str, ...] = ()
    #: The finding ids that answer the paper's question, most direct first: ``index.html`` and listings lead with
    #: them (controls and descriptive numbers follow).
    headline: tuple[str, ...] = ()

    def params_model(self) -> type[BaseParams]:
        if not isinstance(self.params, str):
            return self.params
        module, cls = self.params.split(":")
        return getattr(importlib.import_module(module), cls)

    def rehearsal_function(self):
        """The imported :attr:`rehearsal` (``None`` when the experiment has none)."""
        if self.rehearsal is None:
            return None
        module, fn = self.rehearsal.split(":")
        return getattr(importlib.import_module(module), fn)

    def shard_function(self):
        """The imported :attr:`shard_step` (``None`` when the experiment has none)."""
        if self.shard_step is None:
            return None
        module, fn = self.shard_step.split(":")
        return getattr(importlib.import_module(module), fn)


EXPERIMENTS: Registry[Experiment] = Registry("experiment")
register = EXPERIMENTS.register


register(Experiment(
    name="data_overview",
    notebook="00_data_overview.ipynb",
    params="radaudit.audits.data_overview:Params",
    description="What the public datasets hold: counts, sex and age, report lengths, label prevalence, one example each.",
))


register(Experiment(
    name="decoding_erasure",
    notebook="01_decoding_erasure.ipynb",
    params="radaudit.audits.decoding_erasure:Params",
    rehearsal="radaudit.audits.decoding_erasure.rehearsal:rehearse",
    shard_step="radaudit.audits.decoding_erasure.shards:generation_step",
    first_run_rank=1,  # three report writers
    headline=("erased_terms_greedy", "greedy_distinct_reports"),
    stand_ins=("radaudit.audits.decoding_erasure.models:RECIPE_VERSION",
               "radaudit.audits.decoding_erasure.models:DEMO_CONFIG"),
    description="Does the decoding strategy erase sex-associated clinical terms? CAD, WAE, diversity, WEAT, ΔDIR "
                "(Parikh et al., 'Measuring What VLMs Don't Say').",
    paper="000_c11b3b836ef0a58a.txt",
    citation=('Parikh, Feragen, Das & Frank, "Measuring What VLMs Don\'t Say: Validation Metrics Hide Clinical '
              'Terminology Erasure in Radiology Report Generation", 2026'),
    reference="2603.01625",
    claim=('Surface metrics (BLEU, BERTScore) reward deterministic decoding, yet greedy and beam search collapse'
           " a report generator's output onto a few templates and erase clinical terms that the reference "
           'reports associate with one sex. Clinical Association Displacement (CAD) and Weighted Association '
           'Erasure (WAE) measure that erasure, and ranking decoding strategies by them reverses the ranking by '
           'surface similarity.'),
))


register(Experiment(
    name="metric_metaeval",
    headline=("whole_report_auroc_median", "trimmed_pair_auroc_median"),
    notebook="02_metric_metaeval.ipynb",
    params="radaudit.audits.metric_metaeval:Params",
    rehearsal="radaudit.audits.metric_metaeval.rehearsal:rehearse",
    description="Are report metrics clinically sound? Discriminative and Robustness Scores, AUROC, monotonicity "
                "and inter-radiologist agreement on GT-ME report pairs (Li et al., 'ReEvalMed').",
    paper="001_d2362e1e05417774.txt",
    citation=('Li, Li, Jian, Yuan & Zhu, "ReEvalMed: Rethinking Medical Report Evaluation by Aligning Metrics with '
              'Real-World Clinical Judgment", EMNLP 2025'),
    reference="2510.00280",
    claim=('Report-generation metrics give high scores to reports that contain clinically significant errors. On'
           ' pairs of a ground-truth report and a rewrite with one targeted error, annotated for clinical '
           'significance, existing metrics fail to separate significant errors from harmless rewording '
           '(Discriminative and Robustness Scores, AUROC), are not monotone in the number of errors, and agree '
           'poorly with radiologists.'),
))


register(Experiment(
    name="atomic_facts",
    headline=("atomimed_tau_total_errors", "atomimed_preference_accuracy"),
    notebook="03_atomic_facts.ipynb",
    params="radaudit.audits.atomic_facts:Params",
    rehearsal="radaudit.audits.atomic_facts.rehearsal:rehearse",
    description="Hierarchical atomic fact-checking (AtomiMed): disease/attribute facts verified both ways, with an "
                "audit trace, and its agreement with radiologists' error counts, ratings and preferences "
                "(Chang et al., 'AtomiMed').",
    paper="002_fa40d23387a3f426.txt",
    citation=('Chang et al., "AtomiMed: Hierarchical Atomic Fact-Checking for Universal Clinical-Aware Medical '
              'Report Evaluation", 2026'),
    reference="2606.31292",
    claim=('Breaking each report into atomic facts (a disease, then its attributes) and checking every fact in '
           'both directions gives a clinically aware score with an audit trail of what was missed or invented, '
           "and it agrees with radiologists' error counts, ratings and preferences better than existing report "
           'metrics.'),
))


register(Experiment(
    name="modality_shift",
    notebook="04_modality_shift.ipynb",
    params="radaudit.audits.modality_shift:Params",
    rehearsal="radaudit.audits.modality_shift.rehearsal:rehearse",
    description="Does a vision-language model use the image or the text? Selective Modality Shifting: swap the image "
                "or the text for an opposite-label sample's, then accuracy/F1, negative flip rate, calibration (ECE) "
                "and attention by modality (Restrepo et al., 'On the Risk of Misleading Reports').",
    paper="003_528df7f4b7accfa0.txt",
    citation=('Restrepo, Ktena, Vakalopoulou, Christodoulidis & Ferrante, "On the Risk of Misleading Reports: '
              'Diagnosing Textual Biases in Multimodal Clinical AI", 2025'),
    reference="2508.00171",
    claim=('Vision-language models asked a clinical yes/no question about an image and its report rely on the '
           "text. Swapping the report for an opposite-label patient's (Selective Modality Shifting) changes "
           'their answers far more than swapping the image, they stay confident when misled, and their attention'
           ' falls mostly on text tokens.'),
    first_run_rank=2,  # the tiny LLaVA
    headline=("text_shift_nfr", "image_shift_nfr"),
    stand_ins=("radaudit.audits.modality_shift.models:RECIPE_VERSION",
               "radaudit.audits.modality_shift.models:DEMO_VLM_CONFIG"),
))


register(Experiment(
    name="synthetic_cxr",
    notebook="05_synthetic_cxr.ipynb",
    params="radaudit.audits.synthetic_cxr:Params",
    rehearsal="radaudit.audits.synthetic_cxr.rehearsal:rehearse",
    shard_step="radaudit.audits.synthetic_cxr.shards:feature_step",
    first_run_rank=3,  # a diffusion model, three image networks, utility classifiers
    headline=("encoder_fid_order_agreement", "memoriser_flagged", "diffusion_vs_heldout_fid_gap_cxr"),
    stand_ins=("radaudit.audits.synthetic_cxr.models:RECIPE_VERSION",
               "radaudit.audits.synthetic_cxr.models:DEMO_ENCODER_CONFIG",
               "radaudit.audits.synthetic_cxr.models:DEMO_CLIP_CONFIG",
               "radaudit.audits.synthetic_cxr.models:DEMO_REID_CONFIG",
               "radaudit.audits.synthetic_cxr.classifier:RECIPE_VERSION",
               "radaudit.models.diffusion:RECIPE_VERSION", "radaudit.models.diffusion:DEMO_DIFFUSION_CONFIG"),
    description="Fidelity, privacy and utility of synthetic chest X-rays (CheXGenBench): FID/KID/PRDC on two encoders "
                "with CIs, per-label FID, re-identification and distances to training images, a classifier trained on "
                "synthetic images only, and rankings (Dutt et al., 'CheXGenBench').",
    paper="004_175f666718a5c618.txt",
    citation=('Dutt, Sanchez, Yao, McDonagh, Tsaftaris & Hospedales, "CheXGenBench: A Unified Benchmark For '
              'Fidelity, Privacy and Utility of Synthetic Chest Radiographs", 2025'),
    reference="2505.10496",
    claim=('Text-to-image models of chest X-rays must be judged on fidelity, privacy and utility together, on '
           'standard splits. FID with an ImageNet Inception network ranks them inconsistently where a radiograph'
           ' encoder (RadDino) does not; models memorise training patients whatever their fidelity (re-'
           'identification); they struggle on rare findings; and synthetic images help a classifier more than '
           'they help report generation.'),
))


def get_experiment(name: str) -> Experiment:
    """The registered experiment ``name``; an unknown name raises a ``ParamsError`` listing the known ones."""
    return EXPERIMENTS.lookup(name)
