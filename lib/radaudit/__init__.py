"""radaudit: a reproducible lab for auditing how radiology AI is evaluated.

The package is organised so that imports point one way:
notebooks -> audits -> (metrics, models, data, stats, plots, tables) -> core (config, paths).
Nothing here does work at import time.
"""

__version__ = "0.1.0"



def __getattr__(name: str):
    """``radaudit.score``: :func:`radaudit.scoring.score`, imported on first use (by name, like the registries, so
    the low layers that read ``radaudit.__version__`` do not depend on it)."""
    if name == "score":
        import importlib

        return importlib.import_module("radaudit.scoring").score
    raise AttributeError(f"module 'radaudit' has no attribute {name!r}")
