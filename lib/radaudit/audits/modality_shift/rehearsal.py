"""The CPU dress rehearsal of modality_shift's paper preset (``radaudit run modality_shift --preset paper --rehearse``).

:func:`rehearse` turns the preset's parameters into the rehearsal's (tiny twins, an invented fixture, sizes cut); the
runner finds it through the registry (:attr:`radaudit.experiments.Experiment.rehearsal`).
"""

from __future__ import annotations

from pathlib import Path

from radaudit.audits.modality_shift.models import DEMO_MODEL
from radaudit.audits.modality_shift.params import Params
from radaudit.data.fixtures import write_mimic_cxr
from radaudit.errors import ParamsError
from radaudit.models.twins import twin_folder
from radaudit.models.vlm import conversion_needed


def rehearse(params: Params, workdir: Path) -> tuple[Params, dict[str, str]]:
    """The paper run on CPU: an invented MIMIC-CXR fixture (16 studies, 8 evaluated), every VLM's tiny
    twin (same class and processor type, its dtype kept), 50 bootstrap resamples, 8 new tokens, one
    traced sample. LLaVA-Med is rehearsed as the LlavaForConditionalGeneration it must be converted to.
    **vLLM needs a GPU**, so ``backend: vllm`` runs as ``hf`` on the twins, recorded as ``rehearsal["backend"]``;
    both engines are given the same rendered prompts and images (``tests/models/test_vlm_backends_equal.py``)."""
    if params.dataset == "covid_cxr":
        raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                          "(run it as it is).")
    if params.dataset != "mimic_cxr":
        raise ParamsError(f"No rehearsal fixture for dataset={params.dataset!r} yet; rehearse with dataset=mimic_cxr.")
    data = write_mimic_cxr(Path(workdir) / "data" / "mimic_cxr", n_studies=16)
    models, rehearsal = [], {}
    if params.backend == "vllm":  # vLLM needs a GPU; both engines get the same prompts and images
        rehearsal["backend"] = "vllm -> hf (vLLM needs a GPU)"
    for spec in params.models:
        if spec.model == DEMO_MODEL:
            raise ParamsError("The demo VLM trains on covid_cxr; a rehearsal replaces hub models only.")
        folder, cls = twin_folder(spec.model, Path(workdir) / "twins")
        rehearsal[spec.model] = cls + (" (as converted; see radaudit preflight)" if conversion_needed(spec.model)
                                       else "")
        models.append(spec.model_copy(update={"model": str(folder), "device": "cpu", "trust_remote_code": False,
                                              "image_processor": {}}))
    options = {**params.dataset_options, "images_dir": str(data / "files"),
               "patients_path": str(data / "patients.csv.gz"), "race_path": None}
    rehearsed = params.model_copy(update={"dataset_path": str(data), "dataset_options": options, "models": models,
                                          "backend": "hf",
                                          "n_bootstrap": 50, "max_new_tokens": min(params.max_new_tokens, 8),
                                          "attention_samples": min(params.attention_samples, 1),
                                          "attention_max_new_tokens": min(params.attention_max_new_tokens, 2)})
    return rehearsed, rehearsal
