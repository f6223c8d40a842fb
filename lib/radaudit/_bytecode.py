"""Byte-compile, at install time, the modules the lab imports (``make install``; not a public API).

``pip install`` byte-compiles every module of every package it installs: ~22,000 files for this environment, 86 s
of a 194 s ``make install`` on 2 cores (2026-12-03, Intel Xeon). The lab imports ~5,000 of them. ``make install``
therefore installs with ``--no-compile`` and then runs ``python -m radaudit._bytecode``, which imports what the
notebooks, the CLI, the tests and the Ray workers import, with bytecode writing on (``make`` unsets
``PYTHONDONTWRITEBYTECODE`` for it): each of those modules gets its ``.pyc`` once, in ~45 s. A module imported
only later is compiled by Python on first use as usual (and, where the environment forbids writing bytecode, at
each import, as it would be without this step for any module pip had not compiled).

It imports every module of the ``radaudit`` package (an optional dependency that is not installed is skipped and
counted) and the libraries the lab imports inside functions (:data:`LAZY_IMPORTS`). Nothing runs but imports.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

#: Libraries the lab imports inside functions (so importing radaudit's modules does not reach them).
LAZY_IMPORTS = (
    "torch", "transformers", "transformers.modeling_utils", "transformers.models.llava.modeling_llava",
    "transformers.models.llama.modeling_llama", "transformers.models.bert.modeling_bert",
    "transformers.models.clip.modeling_clip", "transformers.models.resnet.modeling_resnet",
    "transformers.models.gpt2.modeling_gpt2", "transformers.generation", "safetensors.torch", "accelerate",
    "diffusers", "sklearn.linear_model", "sklearn.metrics", "scipy.stats", "scipy.optimize", "matplotlib.pyplot",
    "matplotlib.backends.backend_agg", "matplotlib.backends.backend_pdf", "fontTools.subset", "seaborn", "pyarrow",
    "pyarrow.parquet", "papermill", "nbconvert", "nbformat", "nbclient", "ipykernel.kernelapp", "IPython",
    "jupyter_client", "ray", "sacrebleu", "rouge_score.rouge_scorer", "nltk", "PIL.Image", "tokenizers",
    "pytest", "importlinter",
)


def _import(name: str) -> bool:
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 - an optional dependency that is not installed (vllm, peft...): skipped
        return False
    return True


def radaudit_modules() -> list[str]:
    """Every module of the radaudit package but the CLI's entry point (``radaudit.__main__`` runs the CLI when
    imported) and this one."""
    import radaudit

    return [m.name for m in pkgutil.walk_packages(radaudit.__path__, "radaudit.")
            if not m.name.endswith(("__main__", "._bytecode"))]


def main() -> int:
    """Import the modules; print how many and how long. Exit status 0 whatever was skipped."""
    start = time.monotonic()
    names = radaudit_modules()
    done = sum(_import(n) for n in names)
    lazy = sum(_import(n) for n in LAZY_IMPORTS)
    print(f"radaudit._bytecode: {len(sys.modules)} modules compiled or loaded ({done}/{len(names)} radaudit modules, "
          f"{lazy}/{len(LAZY_IMPORTS)} libraries) in {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
