"""Deterministic, seeded rewrite rules: one small function per (aspect, significance, error type).

Each rule reads a real report, finds an editable fact with the text toolkit (sentences, negation
scope, attribute extraction), chooses one with the ``rng`` it is given, and returns a
:class:`~radaudit.perturb.base.Rewrite` (edits in GT coordinates and an explanation), or ``None``
when the report has nothing of that kind. Facts are edited only where they are *asserted*
(:func:`~radaudit.perturb.textops.is_positive`) unless the rule is about negation. The
``check`` of each rule is its semantic verification (:mod:`radaudit.perturb.verify`).

The clinical reading of each rule follows ReEvalMed's Table 2 examples and Appendix A explanations
(paper 001); where the paper gives no example for a cell, the rule's docstring says what was chosen.
Significant ≈ "may plausibly affect downstream clinical decisions"; insignificant ≈ "does not alter
diagnostic interpretation or treatment" (§3.1, §4.3).

The rules live in one module per aspect (``location``, ``severity``, ...; Location's further insignificant rules in
``location_insignificant``, its shared helpers in ``_location_common``); importing this package
registers them all (each rule in :data:`radaudit.perturb.base.RULES`). To add a rule: write it in its
aspect's module with ``@rule(aspect, significance, error_type, check=...)`` and add its case to
``tests/perturb/rule_cases/<aspect>.yaml``.
"""

# isort: skip_file
# Imported in Table 2's row order, which is the order of the RULES registry: the engine shuffles a cell's
# rules with a seeded rng starting from that order, so reordering these lines would change every pair dataset.
from radaudit.perturb.rules import location  # noqa: F401, I001
from radaudit.perturb.rules import location_insignificant  # noqa: F401, I001  (location's last rules: right after it)
from radaudit.perturb.rules import severity  # noqa: F401, I001
from radaudit.perturb.rules import description  # noqa: F401, I001
from radaudit.perturb.rules import comparison  # noqa: F401, I001
from radaudit.perturb.rules import negation  # noqa: F401, I001
from radaudit.perturb.rules import modality  # noqa: F401, I001
from radaudit.perturb.rules import size_distance  # noqa: F401, I001
from radaudit.perturb.rules import contradiction  # noqa: F401, I001
from radaudit.perturb.rules import uncertainty  # noqa: F401, I001
from radaudit.perturb.rules import terminology  # noqa: F401, I001
from radaudit.perturb.rules import noise  # noqa: F401, I001
from radaudit.perturb.rules import stylistic  # noqa: F401, I001

__all__: list[str] = []  # the rules are reached through radaudit.perturb.base.RULES
