"""radaudit: a reproducible lab for auditing how radiology AI is evaluated.

The package is organised so that imports point one way:
notebooks -> audits -> (metrics, models, data, stats, plots, tables) -> core (config, paths).
Nothing here does work at import time.
"""

__version__ = "0.1.0"
