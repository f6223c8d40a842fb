"""AtomiMed-clinical: AtomiMed's facts, scored so that the order of candidates is the order a radiologist gives.

**Not the paper's metric.** The paper (Chang et al., arXiv 2606.31292, Eq. 3-4) counts every fact
equally, matches attributes all-or-nothing, and scores attributes only for findings both reports
agree on. Written as small report pairs whose right order any radiologist knows, that definition
ranks many of them wrongly or as ties (issue 18): one false finding ties four when nothing else
matches (the zero floor); a missed tension pneumothorax costs what a missed granuloma costs;
"small" and "tiny" tie against "large"; a candidate that adds a correct detail the reference did not
state scores below a vaguer one; and a candidate that finds a finding but words one attribute
differently scores below one that leaves the finding out (the attribute level exists only for
findings both reports share, so silence avoids its penalty). The paper's definition stays the
registry's ``atomimed`` (:mod:`radaudit.atomic.pipeline`); this module is ``atomimed_clinical``.
Both use the same decompositions (either backend).

Definition
----------
Facts are the findings of both decompositions (:class:`~radaudit.atomic.schema.Finding`). Each
reference finding is paired with at most one candidate finding naming the same entity
(:func:`~radaudit.atomic.score.entity_similarity` ≥ θ, most similar first); an unpaired finding
reads as absent in the other report (the paper's ``unmentioned="no"``).

- **Weight** ``w(f)``: the clinical significance of the finding (:data:`SIGNIFICANCE_FILE`, four tiers
  after the ACR actionable-findings categories: immediate 4, urgent 2, follow-up 1, incidental ½),
  raised by a modifier ("tension" → immediate). A finding stated absent (a pertinent negative)
  weighs ``negative_weight · w`` (default ¼): saying "no pneumothorax" is worth less than finding one.
- **Credit** of a fact from the other report: absent–absent ``1``; present–present
  ``α + (1 − α)·a·h``; otherwise ``0``, except that a finding stated resolved against the same finding
  still present earns ``½ · (1 − |Δ|/4)`` on the whole temporal axis below (decreased ⅜, unchanged ¼,
  increased ⅛, new 0: "persistent edema" is nearer "edema has resolved" than "worsening edema").
  ``α`` = ½ (the paper's equal weight of the disease and attribute levels, Eq. 4), ``a`` the attribute
  agreement below, ``h`` = ``hedge_factor`` (¾) when one report hedges the finding ("possible pneumonia")
  and the other does not, else 1.
- **Attribute agreement** ``a`` of a paired finding, seen from the asking report: the mean over the facets the
  asking report states of a graded credit in [0, 1] (:func:`facet_credit`): location — side sets by Jaccard
  (left vs right 0), lobe/zone family met 1, a different family on the right side 0.25, not stated 0.75;
  severity/size word — ordinal distance on trace/minimal (1) < small/mild (2) < moderate (3) < large/severe
  (4), ``1 − |Δ|/3``; size — ``1 − |ln(a/b)| / ln 3`` (10 % tolerance); quantity — single/multiple equal 1,
  counts ``min/max``; temporal change — on resolved (−2) < decreased (−1) < unchanged (0) < increased (1) <
  new (2), ``1 − |Δ|/2``; morphology — per term of the asking report 1 when the other states it, 0 when the
  other states an exclusive term (calcified vs non-calcified, focal vs diffuse, ...), else ½ (another
  descriptor that does not contradict it, as if unstated), averaged. A lobe in one report and a zone it
  projects over in the other ("right middle lobe" vs "right base") count as a side without its lobe (0.75),
  not a wrong place; region families are compared by Jaccard, so naming one more family costs as naming one
  more side. A facet the other report does not state counts ½ when the reference asks (an omitted detail is
  half an error) and is **not assessed** when the candidate asks (a detail the reference did not state cannot
  be checked, so a correct extra detail is not penalised). No assessed facet → ``a`` = 1.
- **Precision / recall / F1**::

      R = (Σ_ref w·credit + κ) / (Σ_ref w + κ)      P = (Σ_cand w·credit + κ) / (Σ_cand w + κ)
      F1 = 2PR / (P + R)

  ``κ`` (default 1, the weight of one follow-up finding) is what a report gets for everything it
  leaves unsaid: it keeps scores apart when nothing matches (one false urgent finding against a
  normal reference gives P = 1/3, four give 1/9, where the paper's P is 0 for both) and gives two
  reports without findings 1, as the paper's rule for true normal studies does.

The ladder (issue 41; ``ClinicalOptions.rules``, default on)
-----------------------------------------------------------
What a present reference finding of weight ``w`` earns, by what the candidate says about it (credits are
fractions of ``w``; the tables are data files in ``radaudit/resources``, read by :mod:`radaudit.atomic.concepts`):

===  ===================================  ================================  =======================================
#    the candidate                        credit                            clinical reason
===  ===================================  ================================  =======================================
1    names it, every stated facet         1                                 finding and description are right
     agreeing (the concept table's
     descriptive, lay and
     interchangeable forms are its name)
2    names it with a wrong or missing     α + (1 − α)·a·h ∈ [½, 1); a more  found: the disease level (Eq. 4's half)
     attribute (size, extent, severity,   generic name × its credit (½-1)   is right, the description is graded
     lobe, change)
2c   names a critical finding two or      0, as rung 4, and its statement   told it can wait, the clinician does not
     more grades lower (tension/large →   is left out of precision          act: the same harm as a miss
     small, massive → trace; severe       (``downgrade_credit`` 0; a        (``clinical_criticality.yaml``); a tube
     alveolar edema → mild congestion,    tube placed elsewhere: its fact   said to lie where it does not is a false
     the same process at a lower stage),  earns 0 on both sides)            statement, worse than silence
     calls a malpositioned tube
     "satisfactory", or explains it away
     as technique
3    states a sign that implies it        the sign's σ ≤ 0.45 (default      the reader must infer the finding; some
     (silhouette sign, cephalisation,     0.4) on the base part             signs have other causes
     deep sulcus sign, hilar                                                (``clinical_signs.yaml``)
     displacement, ...)
4    says nothing about it                0                                 a miss
5    denies it: "no X", a denied more     0, and the stated or implied      the report tells the clinician it is
     generic or interchangeable finding   absence weighs                    not there: worse than silence
     ("no consolidation" for pneumonia,   ``negative_weight``·w on          (``clinical_normals.yaml``)
     "no nodule or mass" for a nodule),   precision with credit 0 (a
     a normal statement covering it       sign: ¼ of the sign's weight)
     ("lungs are clear"), or a sign the
     reference states as part of it ("no
     mediastinal shift", "trachea
     midline" against a tension
     pneumothorax)
5r   false reassurance: names an          0, and its statement counts       the report changes management the wrong
     actionable finding (weight ≥ 2)      against precision as a denial     way: the team stops as after a normal
     below its grade (2c, a lower size    (its own fact at credit 0, or     report; a downgrade that keeps the
     or severity, a lesser or generic     ``negative_weight``·w)            right next step ("small nodule, CT
     finding, a hedge) or explains it                                       suggested" for a mass) stays rung 2
     away, AND stands the work-up down
     ("no further imaging needed",
     "conservative management";
     :data:`STAND_DOWN`), where the
     reference does not
===  ===================================  ================================  =======================================

Rungs 2c, 5 and 5r after holdout4 (issue 41). Two authors of written cases disagreed on a critical downgrade: holdout3
tied "small pneumothorax, no mediastinal shift, follow-up film" for a tension pneumothorax with silence, holdout4 ranked
"small pneumothorax, no mediastinal shift, conservative management" below it. The rule taken is on management, not on
wording: a downgrade that leaves the team to decide costs a miss (2c); a report that also denies a sign of the critical
grade (5) or stands the work-up down (5r) tells the team to do nothing and ranks below silence, like a contradicting
normal statement; a downgrade that keeps the right next step is imprecise (2). holdout3's severity-downgrade-01 (its
candidate denies the shift) now scores just below silence and fails; that is this rule, not an accident.

After holdout5 (issue 41, paraphrase and severity; its failures read on 2026-12-02):

- **Mimics (rung 2c).** A benign finding named *instead of* the reference's finding explains the same shadow away
  (the concept table's ``mimics``: an unfolded aorta for a widened mediastinum, old healed fractures for acute ones):
  the finding is a miss and the mimic's statement is left out of precision, so the report ties silence
  (:func:`.downgrades.mimicked`). Naming the finding with the mimic as its possible cause is reporting it.
- **Under-calls.** For an actionable reference finding (weight ≥ 2) a grade below the reference's costs
  :data:`UNDERCALL_FACTOR` (1.5) per grade, an over-call 1 (a constant of :mod:`.facets`, reason there); a range that
  reaches the reference's grade is not an under-call. An over-call *into* a critical grade also claims the critical
  part, which the candidate earns only when the reference is critical too (a false critical alarm), as before.
- **Tip compartments.** Both reports calling a tube or line malpositioned, with its tip in different compartments
  (airway, digestive, venous, heart, pulmonary artery: ``clinical_criticality.yaml``), give opposite instructions: the
  candidate's device and malposition facts are a false position, credit 0 on both sides
  (:func:`.downgrades.facts_as_missed`).
- **Paraphrase.** An *airspace* opacity earns the full rung against a consolidation (a relation with
  ``when_morphology``; a bare opacity keeps its generic credit); a fissure named beside a shared lobe is its edge, not a
  second place (:mod:`.facets`); a folded sign gives the finding its grade (:func:`.prepare.fold_signs`); abbreviations,
  contrasts, number words and grade words are rewritten by the concept table (:func:`~radaudit.atomic.concepts.rewrite`).

So a missed or denied finding pulls recall to its floor ``κ/(w + κ)`` and leaves precision at best unchanged,
while any rung ≥ 2c raises recall at an equal or smaller cost to precision: a report that mentions the finding
scores above one that misses or denies it (tested on every finding of the concept table). The other way round
(the reference states a sign, the candidate names the finding it implies) the sign is accounted for (credit 1).
"Both" and "bilaterally" are read as bilateral (:func:`.prepare.prepare_findings`), and findings written before an
IMPRESSION header without a FINDINGS header are read as the findings (:func:`clinical_text`).

Signs a report states beside the finding they imply (same report, compatible side, the finding not hedged) are part
of that finding's description, not second facts (:func:`.prepare.fold_signs`): "a pleural line with no markings beyond it,
a small pocket of air" is a small pneumothorax, "a massive effusion with white-out and contralateral shift" one massive
effusion; a sign the other report states too is compared as it is. A finding the report itself explains away as
technique ("likely related to supine AP technique") is not asserted (:func:`.prepare.dismissed`). The clinical decomposer
reads a report after the concept table's ``rewrites`` (lay words for devices and anatomy: "breathing tube", "where the
windpipe divides"; :class:`ClinicalRuleDecomposer`).

Critical findings (``clinical_criticality.yaml``: tension, a large pneumothorax, free intraperitoneal air, a
malpositioned tube or line, a large or massive collection, complete collapse, severe edema) weigh the immediate
tier (4); the part above the name's tier is earned only by a report that states the critical grade too.

Context (``clinical_context.yaml``, :func:`context_factor`): with the patient's age, sex, indication and history,
a finding the context explains (expected) weighs ``expected_factor`` (½) of its weight in both reports, and a finding
the context makes dangerous (urgent) is raised to its rule's tier. A rule's words count only where the context affirms
them ("no known trauma", "denies vomiting" do not fire; :func:`~radaudit.atomic.concepts.affirmed`), an injury or an
operation weeks or years ago explains (expected) rather than alarms, and a finding the history itself documents as
known, stable or treated is expected (:func:`history_findings`). No context changes nothing (tested).

The trace (:func:`clinical_scores`) has one row per fact and direction: its weight, credit, the
attribute agreement and the facets compared, so every score can be checked by hand.

Modules
-------
This package's modules hold the pieces of the definition; every public name is importable from here.

- :mod:`.options`: :class:`ClinicalOptions` and the significance table (:class:`Significance`);
- :mod:`.facets`: graded facet credits (:func:`facet_credit`, :func:`attribute_agreement`);
- :mod:`.ladder`: pairing and the rungs of one fact (relations, signs, denials, the credit);
- :mod:`.criticality`: critical findings, downgrades, tip compartments (:func:`is_critical`);
- :mod:`.downgrades`: facts scored as missed (rung 2c) and false reassurance (rung 5r);
- :mod:`.context`: context rules and history (:func:`context_factor`, :func:`history_findings`);
- :mod:`.prepare`: a report's findings as the ladder reads them (names, dismissals, signs);
- :mod:`.decomposer`: the clinical rule decomposer and the text it reads (:func:`clinical_text`);
- :mod:`.scores_issue41`: the issue-41 scoring loop, in named steps;
- :mod:`.scores_before_issue41`: the definition before issue 41, kept for comparison;
- :mod:`.scoring`: a pair's score row and trace rows (:data:`CLINICAL_COLUMNS`);
- :mod:`.pairs`: one pair and a batch (:func:`clinical_scores`, :func:`score_pairs_clinical`).
"""

from radaudit.atomic.clinical.context import check_contexts, context_factor, history_findings
from radaudit.atomic.clinical.criticality import is_critical
from radaudit.atomic.clinical.decomposer import ClinicalRuleDecomposer, clinical_decomposer, clinical_text
from radaudit.atomic.clinical.downgrades import STAND_DOWN
from radaudit.atomic.clinical.facets import UNDERCALL_FACTOR, attribute_agreement, facet_credit
from radaudit.atomic.clinical.ladder import other_resolved, pair_entities
from radaudit.atomic.clinical.options import SIGNIFICANCE_FILE, ClinicalOptions, Significance, load_significance
from radaudit.atomic.clinical.pairs import clinical_scores, score_pairs_clinical
from radaudit.atomic.clinical.scoring import CLINICAL_COLUMNS

__all__ = ["Significance", "load_significance", "SIGNIFICANCE_FILE", "facet_credit", "attribute_agreement",
           "pair_entities", "clinical_scores", "CLINICAL_COLUMNS", "ClinicalOptions", "ClinicalRuleDecomposer",
           "history_findings", "UNDERCALL_FACTOR", "STAND_DOWN", "check_contexts", "clinical_decomposer",
           "clinical_text", "context_factor", "is_critical", "other_resolved", "score_pairs_clinical"]
