"""The experiment registry: name -> notebook, params schema, one-line description.

Adding an experiment is one entry here, one notebook in ``notebooks/`` and its presets in
``params/<name>/``. The schema class is imported only when the experiment is used.
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

    def params_model(self) -> type[BaseParams]:
        if not isinstance(self.params, str):
            return self.params
        module, cls = self.params.split(":")
        return getattr(importlib.import_module(module), cls)


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
    description="Does the decoding strategy erase sex-associated clinical terms? CAD, WAE, diversity, WEAT, ΔDIR "
                "(Parikh et al., 'Measuring What VLMs Don't Say').",
    paper="000_c11b3b836ef0a58a.txt",
))


register(Experiment(
    name="metric_metaeval",
    notebook="02_metric_metaeval.ipynb",
    params="radaudit.audits.metric_metaeval:Params",
    description="Are report metrics clinically sound? Discriminative and Robustness Scores, AUROC, monotonicity "
                "and inter-radiologist agreement on GT-ME report pairs (Li et al., 'ReEvalMed').",
    paper="001_d2362e1e05417774.txt",
))


register(Experiment(
    name="atomic_facts",
    notebook="03_atomic_facts.ipynb",
    params="radaudit.audits.atomic_facts:Params",
    description="Hierarchical atomic fact-checking (AtomiMed): disease/attribute facts verified both ways, with an "
                "audit trace, and its agreement with radiologists' error counts, ratings and preferences "
                "(Chang et al., 'AtomiMed').",
    paper="002_fa40d23387a3f426.txt",
))


register(Experiment(
    name="modality_shift",
    notebook="04_modality_shift.ipynb",
    params="radaudit.audits.modality_shift:Params",
    description="Does a vision-language model use the image or the text? Selective Modality Shifting: swap the image "
                "or the text for an opposite-label sample's, then accuracy/F1, negative flip rate, calibration (ECE) "
                "and attention by modality (Restrepo et al., 'On the Risk of Misleading Reports').",
    paper="003_528df7f4b7accfa0.txt",
))


register(Experiment(
    name="synthetic_cxr",
    notebook="05_synthetic_cxr.ipynb",
    params="radaudit.audits.synthetic_cxr:Params",
    description="Fidelity, privacy and utility of synthetic chest X-rays (CheXGenBench): FID/KID/PRDC on two encoders "
                "with CIs, per-label FID, re-identification and distances to training images, a classifier trained on "
                "synthetic images only, and rankings (Dutt et al., 'CheXGenBench').",
    paper="004_175f666718a5c618.txt",
))


def get_experiment(name: str) -> Experiment:
    """The registered experiment ``name``; an unknown name raises a ``ParamsError`` listing the known ones."""
    return EXPERIMENTS.lookup(name)
