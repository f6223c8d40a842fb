"""How AtomiMed-clinical reads a report's text (:mod:`radaudit.atomic.clinical`): the rule decomposer over the clinical
vocabulary (:func:`clinical_decomposer`, :class:`ClinicalRuleDecomposer`) and the text it is given
(:func:`clinical_text`: the concept table's rewrites of lay words, abbreviations and number words, and findings written
before an IMPRESSION header read as the findings). The paper's ``atomimed`` reads the text as written, with the
lexicon's vocabulary (:class:`~radaudit.atomic.decompose.RuleDecomposer`).
"""

from __future__ import annotations

from dataclasses import dataclass

from radaudit.atomic.concepts import clinical_vocabulary, rewrite
from radaudit.atomic.decompose import RuleDecomposer
from radaudit.atomic.schema import Finding
from radaudit.text.sections import split_sections

__all__ = ["ClinicalRuleDecomposer", "clinical_decomposer", "clinical_text"]


@dataclass
class ClinicalRuleDecomposer(RuleDecomposer):
    """The rule decomposer reading each report after the concept table's ``rewrites``
    (:func:`~radaudit.atomic.concepts.rewrite`: lay words such as "breathing tube" or "where the windpipe divides"
    turned into "endotracheal tube", "the carina")."""

    def decompose_one(self, text: str) -> list[Finding]:
        return super().decompose_one(clinical_text(text) if self.sections else rewrite(text))


def clinical_text(text: str) -> str:
    """``text`` as the clinical decomposer reads it: after the concept table's rewrites, and with findings written
    before an IMPRESSION header without a FINDINGS header of their own ("Erect chest. Free gas under both
    hemidiaphragms. IMPRESSION: Pneumoperitoneum.") labelled FINDINGS, so that the section reader keeps them (issue 41,
    after holdout4: the description, with its sides and sizes, is where the attributes are; the paper's ``atomimed``
    reads the FINDINGS and IMPRESSION sections only)."""
    text = rewrite(text)
    secs = split_sections(text, inline=True)
    if "findings" not in secs and "impression" in secs and (secs.get("preamble") or "").strip():
        return f"FINDINGS: {secs['preamble']} IMPRESSION: {secs['impression']}"
    return text


def clinical_decomposer(uncertain: str = "yes", rules: bool = True) -> RuleDecomposer:
    """The rule decomposer of AtomiMed-clinical: the lexicon's vocabulary with the concept table's forms and the
    signs (:func:`~radaudit.atomic.concepts.clinical_vocabulary`), reading the text after the concept table's
    rewrites (:class:`ClinicalRuleDecomposer`); ``rules=False``: the lexicon's own (as before issue 41 and as the
    paper's ``atomimed``)."""
    if not rules:
        return RuleDecomposer(uncertain=uncertain)
    return ClinicalRuleDecomposer(uncertain=uncertain, findings=clinical_vocabulary())
