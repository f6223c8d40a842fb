"""Report rewriting for meta-evaluation: GT–ME pairs (ReEvalMed, paper 001, §4.1–4.3, Table 2, Table 3).

- :mod:`~radaudit.perturb.base`: the :class:`Pair` record, the aspect / error type / significance
  constants and the rule registry :data:`RULES`;
- :mod:`~radaudit.perturb.rules`: deterministic seeded rewrite rules built on :mod:`radaudit.text`;
- :mod:`~radaudit.perturb.verify`: only the intended part changed, in the intended way;
- :mod:`~radaudit.perturb.llm`: LLM rewriting with the paper's protocol (one targeted aspect);
- :mod:`~radaudit.perturb.dataset`: the balanced pair dataset, the monotonicity set, parquet I/O.

Importing the package registers the rules (:mod:`~radaudit.perturb.rules`); the LLM and dataset
modules are imported when used.
"""

from radaudit.perturb.base import (
    ASPECTS,
    ERROR_TYPES,
    HIGH_IMPACT_ASPECTS,
    MONOTONICITY_GROUPS,
    RULES,
    SIGNIFICANCE,
    Edit,
    Pair,
    Rewrite,
    RewriteRule,
    rules_for,
)

# isort: split
from radaudit.perturb import rules as _rules  # noqa: F401,E402 - registers the rewrite rules

__all__ = ["ASPECTS", "ERROR_TYPES", "HIGH_IMPACT_ASPECTS", "MONOTONICITY_GROUPS", "RULES", "SIGNIFICANCE", "Edit",
           "Pair", "Rewrite", "RewriteRule", "rules_for"]
