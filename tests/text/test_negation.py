"""Negation / uncertainty cues and their scope, on real report sentences.

Sources (quoted verbatim): IU X-ray ``iu-xray-openi/indiana_reports.csv`` (uid given) and ReXrank
CheXpert Plus ``rexrank-chexpertplus-iu/ReXRank_CheXpertPlus.json`` (study key given). A few
hand-written sentences cover cases the brief names that the data do not contain verbatim; they
are marked "hand-written". Each expectation was worked out from the rules in the module
docstring before running the code.
"""

from __future__ import annotations

import pytest

from radaudit.text.negation import CUE_RULES, classify_mention, cue_rules, explain_mention, find_cues


def status(sentence: str, word: str, nth: int = 0, **kw) -> str:
    low = sentence.lower()
    start = -1
    for _ in range(nth + 1):
        start = low.index(word.lower(), start + 1)
    return classify_mention(sentence, (start, start + len(word)), **kw)


S1945 = ("Heart size within normal limits for technique, retrocardiac opacity XXXX due at XXXX in part to atelectasis "
         "with small left hemithorax, bronchovascular crowding without typical findings of pulmonary edema.")

CASES = [
    # ---- pre-negation: "no", "without (evidence of)", "negative for", "free of", "clear of", "no evidence of"
    ("There is no evidence of pneumothorax.", "pneumothorax", "negative"),  # IU uid 1
    ("The lungs are normally inflated without evidence of focal airspace disease, pleural effusion, or pneumothorax.",
     "pneumothorax", "negative"),  # IU uid 1948
    ("The lungs are normally inflated without evidence of focal airspace disease, pleural effusion, or pneumothorax.",
     "pleural effusion", "negative"),
    ("Negative for pneumothorax or pleural effusion.", "pleural effusion", "negative"),  # IU uid 24
    ("The lungs are free of focal airspace disease.", "airspace disease", "negative"),  # IU uid 23
    ("The lungs are mildly hypoinflated but grossly clear of focal airspace disease, pneumothorax or pleural effusion.",
     "pneumothorax", "negative"),  # IU uid 648
    ("No focal consolidation, pneumothorax or large pleural effusion.", "pleural effusion", "negative"),  # IU uid 3574
    ("Cardiomegaly without overt edema.", "edema", "negative"),  # chexpert-labeler sample report
    ("Cardiomegaly without overt edema.", "cardiomegaly", "positive"),
    # ---- post-negation: "... has resolved", "... not seen", "... removed"
    ("Previously seen left pleural effusion has resolved.", "pleural effusion", "negative"),  # IU uid 569
    ("The left apical pneumothorax has resolved.", "pneumothorax", "negative"),  # IU uid 649
    ("Discrete XXXX projectile not seen.", "projectile", "negative"),  # IU uid 284
    ("ET TUBE, NG TUBE, AND FEEDING TUBE REMOVED.", "tube", "negative"),  # ReXrank patient64660_study1
    ("ET TUBE, NG TUBE, AND FEEDING TUBE REMOVED.", "tube", "negative", 2),
    ("Pleural effusions are absent.", "effusions", "negative"),  # hand-written
    ("Pneumothorax is excluded.", "pneumothorax", "negative"),  # hand-written
    # ---- uncertainty
    ("Cannot exclude early pulmonary edema.", "edema", "uncertain"),  # IU uid 343
    ("A subtle infiltrate cannot be excluded.", "infiltrate", "uncertain"),  # IU uid 973
    ("Streaky opacity is noted within the left lung base which may represent focal area of atelectasis.",
     "atelectasis", "uncertain"),  # IU uid 3721
    ("Streaky opacity is noted within the left lung base which may represent focal area of atelectasis.",
     "opacity", "positive"),
    ("This is most concerning for pneumonia.", "pneumonia", "uncertain"),  # IU uid 118
    ("Left basilar subsegmental atelectasis versus scar noted.", "atelectasis", "uncertain"),  # IU uid 3360
    ("Left basilar subsegmental atelectasis versus scar noted.", "scar", "uncertain"),
    ("Questionable small right midlung nodule.", "nodule", "uncertain"),  # IU uid 387
    ("Suspected left hilar mass with obstructive atelectasis.", "mass", "uncertain"),  # IU uid 387
    ("pt with ? h/o COPD/XXXX smoking, r/o infiltrate/mass", "infiltrate", "uncertain"),  # IU uid 1681 indication
    ("pt with ? h/o COPD/XXXX smoking, r/o infiltrate/mass", "mass", "uncertain"),
    ("XXXX-year-old female with chest pain, rule out pneumonia..", "pneumonia", "uncertain"),  # IU uid 36
    ("Possible small left pleural effusion.", "effusion", "uncertain"),  # hand-written
    ("Findings suggestive of pulmonary edema.", "edema", "uncertain"),  # hand-written
    ("STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.", "edema", "uncertain"),  # patient64672_study1
    # ---- scope ends at "but", "however", "although", "which"
    ("It may be artifactual, but another mass on the left cannot be excluded.", "mass", "uncertain"),  # IU uid 1303
    ("SWAN-GANZ CATHETER HAS BEEN REMOVED BUT THE ASSOCIATED SHEATH\nREMAINS IN THE SUPERIOR VENA CAVA.",
     "catheter", "negative"),  # ReXrank patient64680_study1
    ("SWAN-GANZ CATHETER HAS BEEN REMOVED BUT THE ASSOCIATED SHEATH\nREMAINS IN THE SUPERIOR VENA CAVA.",
     "sheath", "positive"),
    ("Emphysema, however no acute cardiopulmonary finding.", "emphysema", "positive"),  # IU uid 35
    ("No pneumothorax, however there is a small left effusion.", "effusion", "positive"),  # hand-written
    ("No focal consolidation although a small effusion is present.", "effusion", "positive"),  # hand-written
    ("Left lower lobe atelectasis otherwise no acute cardiopulmonary disease.", "atelectasis", "positive"),  # IU uid 3721
    # ---- scope ends at another cue of a different kind
    ("No pleural effusion, may represent atelectasis.", "atelectasis", "uncertain"),  # hand-written
    ("Cannot exclude pneumonia, no effusion.", "effusion", "negative"),  # hand-written
    ("Cannot exclude pneumonia, no effusion.", "pneumonia", "uncertain"),
    # a documented price of weak adjectival hedges (NegBio reads it the same way)
    ("No effusion, possible small pneumothorax.", "pneumothorax", "negative"),  # hand-written
    # ... but an adjectival hedge inside a negated list does not end it (IU uids 94, 141, 186)
    ("No focal consolidation, suspicious pulmonary opacity, pleural effusion, or pneumothorax.", "pleural effusion", "negative"),
    ("No suspicious pulmonary nodules.", "nodules", "negative"),  # hand-written
    # NegBio "no NN to suggest XXX"
    ("There is no focal air space opacity to suggest a pneumonia.", "pneumonia", "negative"),  # IU uid 8
    # ---- "or" (CheXpert: uncertain) is outranked by negation
    ("There is no pneumothorax or pleural effusion.", "pneumothorax", "negative"),  # IU uid 3184
    ("Minimal left basilar subsegmental atelectasis or scarring.", "atelectasis", "uncertain"),  # IU uid 104
    # ---- normal / within normal limits (CheXpert negation patterns), backward over a subject list
    ("The heart, pulmonary XXXX and mediastinum are within normal limits.", "heart", "negative"),  # IU uid 8
    ("Heart size, mediastinal contour, and pulmonary vascularity are within normal limits.", "heart size", "negative"),  # IU 141
    ("The heart is normal in size and contour.", "contour", "negative"),  # IU uid 1480
    ("The heart is near top normal in size with normal appearance of the cardiomediastinal silhouette.", "heart", "negative"),  # IU 803
    ("Heart size is XXXX within normal limits.", "heart size", "negative"),  # IU uid 651
    ("The cardiac silhouette is enlarged and the pulmonary vascularity is normal.", "cardiac silhouette", "positive"),  # hand-written
    (S1945, "opacity", "positive"),  # IU uid 1945: "normal" does not reach past the comma
    (S1945, "heart size", "negative"),
    (S1945, "edema", "negative"),
    ("Heart is not enlarged.", "heart", "negative"),  # IU uid 74
    # ---- temporal "no change" is not a negation of the finding
    ("No change in moderate left pneumothorax with left pleural drainage catheter again seen overlying the left upper lung.",
     "pneumothorax", "positive"),  # IU uid 253
    ("No change in the small effusion.", "effusion", "positive"),  # the brief's example (hand-written)
    ("STABLE APPEARANCE OF THE HEART AND LUNGS, WITH NO SIGNIFICANT\nINTERVAL CHANGE IN PULMONARY EDEMA AND RETROCARDIAC "
     "LEFT LOWER LOBE\nATELECTASIS, CONSOLIDATION AND/OR EFFUSION.", "edema", "positive"),  # patient64678_study1
    ("STABLE APPEARANCE OF THE HEART AND LUNGS, WITH NO SIGNIFICANT\nINTERVAL CHANGE IN PULMONARY EDEMA AND RETROCARDIAC "
     "LEFT LOWER LOBE\nATELECTASIS, CONSOLIDATION AND/OR EFFUSION.", "effusion", "uncertain"),  # "and/or" (CheXpert)
    ("Please note that fractures may not be demonstrated and consider additional imaging as clinically warranted.",
     "fractures", "uncertain"),  # IU uid 398
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0][:40]}|{c[1]}" for c in CASES])
def test_mention_status(case):
    sentence, word, expected, *nth = case
    assert status(sentence, word, *nth) == expected


def test_no_new_is_uncertain_by_default_and_configurable():
    s = "3.NO NEW CONSOLIDATION."  # ReXrank patient64672_study1 (list marker kept: it is one sentence)
    assert status(s, "consolidation") == "uncertain"
    assert status(s, "consolidation", no_new="negative") == "negative"
    # "no new" is not "no change": a plain "no" still negates, "no change" does not
    assert status("NO NEW OPACITY OR PNEUMOTHORAX.", "pneumothorax") == "uncertain"  # patient64660_study1
    with pytest.raises(ValueError, match="no_new"):
        cue_rules("maybe")


def test_cues_and_scopes_are_reported():
    s = "No focal consolidation, pneumothorax or large pleural effusion."
    cues = find_cues(s)
    no = cues[0]
    assert (no.rule, no.kind, no.phase, no.text) == ("no / without", "negation", "main", "No")
    assert no.scopes == ((2, len(s) - 1),) or no.scopes == ((2, len(s)),)
    assert s[slice(*no.scopes[0])].strip().startswith("focal consolidation")
    # the backward scope of a post-negation cue is the clause before it
    s2 = "Previously seen left pleural effusion has resolved."
    (c,) = find_cues(s2)
    assert c.directions == ("backward",) and s2[slice(*c.scopes[0])] == "Previously seen left pleural effusion "
    # pseudo cues are reported but decide nothing
    (p,) = find_cues("No change in the small effusion.")
    assert p.kind == "pseudo"
    st, covering = explain_mention("No change in the small effusion.", (23, 31))
    assert st == "positive" and covering == []


def test_decision_order_pre_negation_uncertainty_first():
    # "cannot be ruled out" (pre-negation uncertainty) wins over the "or" uncertainty and any negation
    s = "Opacity in the lingula is favored to represent prominent pericardial fat, but lingular atelectasis or infiltrate cannot be ruled out."  # IU uid 828
    st, covering = explain_mention(s, (s.index("atelectasis"), s.index("atelectasis") + 11))
    assert st == "uncertain" and covering[0].rule == "cannot be excluded"


def test_every_rule_documents_its_source():
    assert all(r.source for r in CUE_RULES)
    assert {r.kind for r in CUE_RULES} == {"negation", "uncertainty", "pseudo"}


def test_bad_span():
    with pytest.raises(ValueError, match="span"):
        classify_mention("No effusion.", (5, 50))
    assert find_cues("") == []


def test_find_cues_memo_hands_out_new_lists():
    """find_cues is memoised; a caller that changes its list does not change what the next caller gets."""
    s = "No pneumothorax or pleural effusion."
    cues = find_cues(s)
    expected = list(cues)
    cues.clear()
    assert find_cues(s) == expected and expected
    assert find_cues(s, no_new="negative") == expected  # no "new" in the sentence: both settings agree


@pytest.mark.parametrize("sentence, mention, status", [
    # CheXpert's '# obscuring the XXX': the obscured thing is uncertain, the thing that obscures it is seen
    ("Retrocardiac opacity obscuring the medial left hemidiaphragm.", "opacity", "positive"),
    ("Opacity obscuring the left costophrenic angle.", "costophrenic angle", "uncertain"),
    ("The left heart border is obscured.", "left heart border", "uncertain"),
    ("Obscured right hemidiaphragm.", "right hemidiaphragm", "uncertain"),
])
def test_obscuring_hedges_what_is_obscured_not_what_obscures_it(sentence, mention, status):
    start = sentence.index(mention)
    assert classify_mention(sentence, (start, start + len(mention))) == status
