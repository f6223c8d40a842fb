"""The CPU dress rehearsal of decoding_erasure's paper preset (``radaudit run decoding_erasure --preset paper --rehearse``).

:func:`rehearse` turns the preset's parameters into the rehearsal's (tiny twins, random LoRA adapters, invented
fixtures, sizes cut); the runner finds it through the registry (:attr:`radaudit.experiments.Experiment.rehearsal`).
The random adapter itself is written by :func:`radaudit.audits.decoding_erasure.study.write_random_adapter`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from radaudit.audits.decoding_erasure.params import Params
from radaudit.audits.decoding_erasure.study import write_random_adapter
from radaudit.data.fixtures import write_mimic_cxr, write_rexgradient
from radaudit.errors import ParamsError
from radaudit.models.twins import twin_folder


def rehearse(params: Params, workdir: Path) -> tuple[Params, dict[str, str]]:
    """The paper run on CPU (``radaudit run decoding_erasure --preset paper --rehearse``, issue 19).

    ``report_model`` becomes its tiny twin (same class and processor type, :mod:`radaudit.models.twins`),
    ``image_dataset`` an invented fixture in its real layout (:mod:`radaudit.data.fixtures`), and the
    adapter path always runs: ``report_adapter`` (the preset's, or null) becomes a random LoRA adapter of
    the twin shaped by the preset's ``lora`` block (the same folder for the same block), and each
    ``skew_models`` entry another one. Cut: 12 reports (one batch; with fewer, too many bootstrap
    resamples of the twin's noise hold a single distinct sentence and semantic diversity fails the run),
    8 new tokens, 20 bootstrap resamples, 10 permutations, a p* sweep of three values (the grid's ends
    and ``p_star``), and no real-system baselines (Table 2's public corpora are read and scored the same
    way by every preset, so the smoke run covers them; here they would cost a fifth of the time).
    **vLLM needs a GPU**, so ``backend: vllm`` runs as ``hf`` (transformers) on the twin, recorded as
    ``rehearsal["backend"]``; both engines are given the same prompts (``tests/models/test_backends_equal_prompts.py``).
    Everything else is the paper's (dtype, batch size, strategies, image size, split, prompt). Returns
    ``(params, {model id: twin class, "report_adapter": what replaced it, ...})``.
    """
    if params.report_model is None:
        raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                          "(run it as it is).")
    workdir = Path(workdir)
    writers = {"rexgradient": write_rexgradient, "mimic_cxr": write_mimic_cxr}
    data = writers[params.image_dataset](workdir / "data" / params.image_dataset, n_studies=48)
    folder, cls = twin_folder(params.report_model, workdir / "twins")
    rehearsal = {params.report_model: cls}
    lora = ", ".join(f"{k}={v}" for k, v in sorted(params.lora.items()) if k != "target_modules")
    what = f"a random LoRA adapter of the twin (peft; {lora}; target_modules {params.lora.get('target_modules')})"

    shape = hashlib.sha256(json.dumps(params.lora, sort_keys=True).encode()).hexdigest()[:8]

    def adapter(name: str, seed: int) -> str:
        out = workdir / "adapters" / f"{folder.name}-lora{shape}-{name}"
        return str(write_random_adapter(folder, params.lora, out, seed=seed))

    rehearsal["report_adapter"] = f"{what}; the preset's: {params.report_adapter or 'null'}"
    skew_models = {}
    for i, (skew, spec) in enumerate(sorted(params.skew_models.items())):
        skew_models[skew] = adapter(f"skew{skew}", i + 1)
        rehearsal[f"skew_models.{skew}"] = f"{what}; the preset's: {spec}"
    update: dict[str, Any] = {}
    if params.backend == "vllm":
        update["backend"] = "hf"
        rehearsal["backend"] = "vllm -> hf (vLLM needs a GPU)"
    rehearsed = params.model_copy(update={
        **update,
        "report_model": str(folder), "report_adapter": adapter("report", 0), "skew_models": skew_models,
        "dataset_path": str(data), "n_reports": 12, "max_new_tokens": min(params.max_new_tokens, 8),
        "n_bootstrap": min(params.n_bootstrap, 20), "n_permutations": min(params.n_permutations, 10),
        "baselines": False, "p_grid": sorted({params.p_grid[0], params.p_star, params.p_grid[-1]})})
    return rehearsed, rehearsal
