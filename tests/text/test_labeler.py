"""The CheXpert-style labeler on real reports, hand-labelled from the rules in its docstring.

Phrase lists: ``shared/data/cxr-label-phrases`` (through the ``shared_data`` fixture). Reports
(verbatim): IU X-ray ``iu-xray-openi/indiana_reports.csv`` (findings + "\\n\\n" + impression, uid
given), ReXrank CheXpert Plus ``rexrank-chexpertplus-iu/ReXRank_CheXpertPlus.json`` (impression,
study key given), ReXrank IU X-ray test ``ReXRank_IUXray_test.json``, and the four sample reports
of stanfordmlgroup/chexpert-labeler (MIT) with the labels its own pipeline printed
(``labeled_reports.csv``).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from radaudit.data import chexpert_phrases_dir
from radaudit.errors import DatasetNotFoundError
from radaudit.text.labeler import CHEXPERT_LABELER_EXAMPLES, OBSERVATIONS, TOP5, ChexpertLabeler, load_phrases

NAN = math.nan


@pytest.fixture(scope="module")
def labeler(shared_data):
    return ChexpertLabeler(chexpert_phrases_dir(shared_data))


@pytest.fixture(scope="module")
def iu(shared_data):
    df = pd.read_csv(shared_data / "iu-xray-openi" / "indiana_reports.csv", dtype=str, keep_default_na=False)
    return df.set_index("uid")


def iu_text(iu, uid: str) -> str:
    return iu.loc[uid, "findings"] + "\n\n" + iu.loc[uid, "impression"]


def nonblank(row: pd.Series) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if v == v}


CHEXPERT_SAMPLES = CHEXPERT_LABELER_EXAMPLES  # the labeler's published output on its sample reports


@pytest.mark.parametrize("text, expected", CHEXPERT_SAMPLES)
def test_matches_the_chexpert_labelers_own_output(labeler, text, expected):
    assert nonblank(labeler.label([text]).iloc[0]) == expected


def test_output_schema(labeler):
    texts = pd.Series(["No acute cardiopulmonary process.", ""], index=["a", "b"])
    out = labeler.label(texts)
    assert list(out.columns) == list(OBSERVATIONS) and len(OBSERVATIONS) == 14
    assert list(out.index) == ["a", "b"] and (out.dtypes == float).all()
    assert set(TOP5) <= set(OBSERVATIONS)
    assert labeler.label([]).shape == (0, 14)


def test_iu_3721(labeler, iu):
    # "Streaky opacity is noted within the left lung base which may represent focal area of atelectasis. Right
    #  lung is grossly clear. Cardiac silhouette and mediastinal contours are within normal limits. There is no
    #  pneumothorax. No large pleural effusion. || Left lower lobe atelectasis otherwise no acute cardiopulmonary
    #  disease."  MeSH: Opacity/lung/base/left/streaky; Pulmonary Atelectasis/lower lobe/left
    # opacity positive; atelectasis uncertain then positive -> 1; cardiac silhouette + mediastinal contours
    # negated by "within normal limits" (Cardiomegaly 0, Enlarged Cardiomediastinum 0); pneumothorax, effusion 0;
    # No Finding blank (positive findings).
    out = labeler.label([iu_text(iu, "3721")]).iloc[0]
    assert nonblank(out) == {"Enlarged Cardiomediastinum": 0, "Cardiomegaly": 0, "Lung Opacity": 1, "Atelectasis": 1,
                             "Pneumothorax": 0, "Pleural Effusion": 0}


def test_iu_88_chf_adds_uncertain_cardiomegaly(labeler, iu):
    # "... There is mild diffuse interstitial prominence suggestive of edema. ... || 1. Findings consistent with
    #  mild congestive heart failure."  "heart failure" is an Edema phrase (positive -> Edema 1) and, by the
    #  labeler's CHF exception, adds an uncertain Cardiomegaly; "prominence" and "Degenerative" (no_finding.txt)
    #  block No Finding.  MeSH: Cardiomegaly/mild; ...; Heart Failure/mild
    out = labeler.label([iu_text(iu, "88")]).iloc[0]
    assert nonblank(out) == {"Enlarged Cardiomediastinum": 0, "Cardiomegaly": -1, "Edema": 1, "Consolidation": 0,
                             "Pleural Effusion": 0}
    ms = labeler.mentions(iu_text(iu, "88"))
    assert ms.loc[ms.text == "heart failure", "status"].tolist() == ["positive"]


def test_iu_627_vascular_congestion_is_uncertain(labeler, iu):
    # "Stable cardiomegaly. ... No consolidating airspace disease is seen. No pleural effusion or pneumothorax.
    #  || Cardiomegaly and pulmonary vascular congestion."  (CheXpert: "vascular congestion" is uncertain)
    out = labeler.label([iu_text(iu, "627")]).iloc[0]
    assert nonblank(out) == {"Cardiomegaly": 1, "Lung Opacity": 0, "Edema": -1, "Consolidation": 0,
                             "Pneumothorax": 0, "Pleural Effusion": 0}


def test_rexrank_chexpert_plus_impressions(labeler):
    p64660 = ("ET TUBE, NG TUBE, AND FEEDING TUBE REMOVED.  LEFT IJ CATHETER \nREMAINS IN   PLACE.  PERSISTENTLY LOW LUNG "
              "VOLUMES WITH FOCAL \nRETROCARDIAC OPACITY AND VASCULAR INDISTINCTNESS, CONSISTENT WITH \nEDEMA.  NO NEW "
              "OPACITY OR PNEUMOTHORAX.")
    p64672 = "1.STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.\n \n2.UNCHANGED CARDIOMEGALY.\n \n3.NO NEW CONSOLIDATION."
    out = labeler.label([p64660, p64672])
    # tubes removed (0) but the catheter remains (1) -> 1; "no new" -> uncertain; indistinctness -1, edema 1 -> 1
    assert nonblank(out.iloc[0]) == {"Lung Opacity": 1, "Edema": 1, "Pneumothorax": -1, "Support Devices": 1}
    # "likely edema" -1, cardiomegaly 1, "no new consolidation" -1 (CheXpert's pre-negation uncertainty)
    assert nonblank(out.iloc[1]) == {"Cardiomegaly": 1, "Edema": -1, "Consolidation": -1}
    neg = ChexpertLabeler(labeler.phrases_dir, no_new="negative")
    assert neg.label([p64672]).iloc[0]["Consolidation"] == 0


def test_rexrank_iu_normal_report(labeler, shared_data):
    import json

    rec = json.loads((shared_data / "rexrank-chexpertplus-iu" / "ReXRank_IUXray_test.json").read_text())["CXR3030_IM-1405"]
    # "Normal cardiomediastinal silhouette." matches "mediastinal silhouette" (ECM) inside the word, as the
    # labeler's substring matching does, and "normal" negates it; everything else is "no ..." -> No Finding 1
    assert nonblank(labeler.label([rec["report"]]).iloc[0]) == {
        "No Finding": 1, "Enlarged Cardiomediastinum": 0, "Consolidation": 0, "Pneumothorax": 0, "Pleural Effusion": 0}


def test_no_finding_ignores_support_devices_only(labeler, iu):
    # IU uid 596: "The heart is normal in size. The mediastinum is unremarkable. The right chest XXXX tip is
    # visualized in the mid SVC. There is no pneumothorax. The lungs are clear. || No acute disease."
    # nothing positive (the device word was de-identified) -> No Finding 1
    assert labeler.label([iu_text(iu, "596")]).iloc[0]["No Finding"] == 1
    # a device alone does not block No Finding (IU uid 174, first sentence)
    out = labeler.label(["There is a left-sided PICC with tip at the caval atrial junction."]).iloc[0]
    assert nonblank(out) == {"No Finding": 1, "Support Devices": 1}


def test_unmentions(labeler):
    # CheXpert unmentions and this module's extra ones (real IU sentences)
    assert nonblank(labeler.label(["There is a 22 x 14 mm calcified nodule in the left lower lobe."]).iloc[0]) \
        == {}  # uid 1290: "calcified nodul" unmention; "calcifi" blocks No Finding
    assert nonblank(labeler.label(["There are degenerative endplate changes throughout the thoracic spine."]).iloc[0]) == {}
    out = labeler.label(["Radiodensity overlying the middle cardiac silhouette, XXXX representing a hiatal hernia."]).iloc[0]
    assert "Cardiomegaly" not in nonblank(out)  # uid 288: positional unmention


def test_mentions_explain(labeler):
    text = CHEXPERT_SAMPLES[2][0]
    ms = labeler.mentions(text)
    assert list(ms.columns) == ["observation", "phrase", "text", "start", "end", "sentence", "sentence_start", "status", "rule"]
    assert ms[["observation", "text", "status", "rule"]].values.tolist() == [
        ["Lung Opacity", "airspace disease", "positive", ""],
        ["Atelectasis", "atelectasis", "uncertain", "may represent"],
        ["Consolidation", "consolidation", "uncertain", "or"],
    ]
    assert all(text[s:e] == t for s, e, t in zip(ms.start, ms.end, ms.text))


def test_empty_and_bad_inputs(labeler):
    out = labeler.label(["", "   "])
    assert out.isna().all().all()
    with pytest.raises(ValueError, match=r"texts \[1\] are missing"):
        labeler.label(["No effusion.", None])
    with pytest.raises(ValueError, match="missing"):
        labeler.label([float("nan")])
    with pytest.raises(TypeError, match="sequence"):
        labeler.label("No effusion.")
    with pytest.raises(TypeError, match="not a str"):
        labeler.label([3])


def test_non_english_and_long_reports(labeler, iu):
    # German: no English phrase matches -> nothing but No Finding (defined, not an error)
    assert nonblank(labeler.label(["Kein Pleuraerguss. Herz normal groß."]).iloc[0]) == {"No Finding": 1}
    # a very long report (all IU impressions of 50 reports joined) is labelled whole, without truncation
    long = " ".join(iu["impression"].head(50))
    assert len(long) > 3000 and labeler.label([long]).shape == (1, 14)


def test_missing_phrase_lists(tmp_path):
    with pytest.raises(FileNotFoundError, match="phrases folder"):
        ChexpertLabeler(phrases_dir=tmp_path)
    (tmp_path / "mention").mkdir()
    with pytest.raises(FileNotFoundError, match="lacks the phrase lists"):
        load_phrases(tmp_path)
    with pytest.raises(DatasetNotFoundError):
        chexpert_phrases_dir(tmp_path / "no-data-root")


# ------------------------------------------------------------------------------------------------
# Precision rules (deviations 6-11 of radaudit.text.labeler, issue 18): for each rule a hand-written
# sentence where it must fire and one where it must not. ``precision_rules=False`` is the labeler
# before them.


@pytest.fixture(scope="module")
def labeler_before(shared_data):
    return ChexpertLabeler(chexpert_phrases_dir(shared_data), precision_rules=False)


def one(lab, text: str, obs: str) -> float:
    return float(lab.label([text]).iloc[0][obs])


def is_blank(v: float) -> bool:
    return v != v


@pytest.mark.parametrize("fires, keeps, obs, kept_value", [
    # deviation 6: a past infection is not a pneumonia
    ("Calcified hilar nodes, sequela of old granulomatous infection.", "Right lower lobe opacity consistent with infection.",
     "Pneumonia", 1),
    ("Right apical scarring from prior tuberculosis infection.", "Left lower lobe pneumonia.", "Pneumonia", 1),
    # edema outside the lungs
    ("Soft tissue edema over the left lateral chest wall.", "Mild interstitial edema.", "Edema", 1),
    # contours that are not cardiomediastinal
    ("Prominent hilar contours.", "The mediastinal contour is widened.", "Enlarged Cardiomediastinum", 1),
    ("Old healed right 6th rib contour deformity.", "The superior mediastinal contour is prominent.", "Enlarged Cardiomediastinum", 1),
    # a device fracture is not a bone fracture
    ("Central venous catheter fracture at the level of the first rib.", "Acute fracture of the left clavicle.", "Fracture", 1),
    # lumpectomy, breast prostheses, supporting structures
    ("Surgical changes of a right lumpectomy.", "A 2 cm lump in the right upper lobe.", "Lung Lesion", 1),
    ("Supporting soft tissues are unremarkable.", "Support lines in standard position.", "Support Devices", 1),
])
def test_precision_unmentions(labeler, labeler_before, fires, keeps, obs, kept_value):
    assert is_blank(one(labeler, fires, obs)) and not is_blank(one(labeler_before, fires, obs))
    assert one(labeler, keeps, obs) == kept_value


def test_breast_prostheses_are_not_support_devices(labeler):
    # the "prosthesis" added by deviation 11 is not read in "breast prostheses" (breast implants)
    assert is_blank(one(labeler, "Bilateral breast prostheses.", "Support Devices"))
    assert one(labeler, "Left humeral head prosthesis.", "Support Devices") == 1


@pytest.mark.parametrize("text, obs", [
    ("The mediastinum is shifted to the left.", "Enlarged Cardiomediastinum"),
    ("Stable mediastinal contours.", "Enlarged Cardiomediastinum"),
    ("Motion limits evaluation of the mediastinum.", "Enlarged Cardiomediastinum"),
    ("Heart size is stable.", "Cardiomegaly"),
    ("Low lung volumes with magnified appearance of the heart.", "Cardiomegaly"),
    ("Stable, nonenlarged cardiomediastinal silhouette.", "Enlarged Cardiomediastinum"),
])
def test_anatomy_without_a_size_word_is_not_a_mention(labeler, labeler_before, text, obs):
    # deviation 7 fires: the structure is named, its size is not stated
    assert is_blank(one(labeler, text, obs))
    assert one(labeler_before, text, obs) in (1, -1)  # CheXpert: positive, or uncertain when "stable"


@pytest.mark.parametrize("text, obs, expected", [
    ("The mediastinum is widened.", "Enlarged Cardiomediastinum", 1),
    ("The heart is mildly enlarged.", "Cardiomegaly", 1),
    ("Heart size is normal.", "Cardiomegaly", 0),  # negated mentions stay
    ("The mediastinal contours are within normal limits.", "Enlarged Cardiomediastinum", 0),
    ("Stable enlarged cardiac silhouette.", "Cardiomegaly", -1),  # size word: CheXpert's stable rule still acts
    ("Borderline heart size.", "Cardiomegaly", -1),
    ("Stable cardiomegaly.", "Cardiomegaly", 1),  # an abnormality phrase, not anatomy
])
def test_anatomy_with_a_size_word_or_negation_is_kept(labeler, text, obs, expected):
    assert one(labeler, text, obs) == expected


@pytest.mark.parametrize("fires, keeps, obs", [
    # deviation 8: hedges the cue list lacked
    ("A pneumonia superimposed on emphysema would be a consideration.", "A pneumonia superimposed on emphysema.", "Pneumonia"),
    ("Posterior airspace opacity consistent with developing infection.", "Posterior airspace opacity consistent with infection.",
     "Pneumonia"),
    ("Possibility of a nondisplaced left 7th rib fracture.", "Nondisplaced left 7th rib fracture.", "Fracture"),
    ("Limited exam, for evaluation of rib fractures.", "Healing left rib fractures.", "Fracture"),
    ("Bony overlap at the apices could obscure a small pulmonary nodule.", "A small pulmonary nodule at the right apex.",
     "Lung Lesion"),
])
def test_added_hedges(labeler, labeler_before, fires, keeps, obs):
    assert one(labeler, fires, obs) == -1 and one(labeler_before, fires, obs) == 1
    assert one(labeler, keeps, obs) == 1


def test_non_prefix_negates(labeler, labeler_before):
    # deviation 9
    assert one(labeler, "Mild nonconsolidating right lower lobe airspace disease.", "Consolidation") == 0
    assert one(labeler_before, "Mild nonconsolidating right lower lobe airspace disease.", "Consolidation") == 1
    assert one(labeler, "Consolidating right lower lobe airspace disease.", "Consolidation") == 1
    assert one(labeler, "Non-displaced fracture of the left 5th rib.", "Fracture") == 1  # "non" on another word


def test_limitation_statement_is_not_a_finding(labeler, labeler_before):
    # deviation 10: an exam limitation says nothing about the patient
    text = "Please note that nondisplaced rib fractures may not be demonstrated."
    out = nonblank(labeler.label([text]).iloc[0])
    assert out == {"No Finding": 1}
    assert one(labeler_before, text, "Fracture") == -1
    # not a limitation: uncertainty about this patient stays uncertain
    assert one(labeler, "A small apical pneumothorax cannot be excluded.", "Pneumothorax") == -1
    assert one(labeler, "A subtle left rib fracture may be present.", "Fracture") == -1


@pytest.mark.parametrize("fires, keeps, obs, kept_value", [
    # deviation 11, Edema: congestion in other words, uncertain like CheXpert's "vascular congestion"
    ("Cardiomegaly and pulmonary venous hypertension.", "No pulmonary venous hypertension.", "Edema", 0),
    ("Mild congestion without overt edema.", "No congestion.", "Edema", 0),
    ("The pulmonary vessels are engorged.", "The pulmonary vasculature is not engorged.", "Edema", 0),
    ("Prominence of the central pulmonary vasculature.", "Pulmonary vascularity is normal.", "Edema", NAN),
])
def test_congestion_phrases_are_uncertain_edema(labeler, labeler_before, fires, keeps, obs, kept_value):
    assert one(labeler, fires, obs) == -1 and one(labeler_before, fires, obs) != -1
    v = one(labeler, keeps, obs)
    assert (is_blank(v) and is_blank(kept_value)) or v == kept_value


@pytest.mark.parametrize("fires, keeps, obs", [
    # deviation 11, Support Devices and Pleural Other: phrases the lists lack
    ("Coronary artery stents.", "Coronary artery calcification.", "Support Devices"),
    ("Spinal cord stimulator overlies the lower thoracic spine.", "Degenerative change of the lower thoracic spine.", "Support Devices"),
    ("EKG leads overlie the chest.", "No acute cardiopulmonary abnormality.", "Support Devices"),
    ("Right chest XXXX tip in the low SVC.", "The tip of the left scapula projects over the lung apex.", "Support Devices"),
    ("Tracheostomy in place.", "The trachea is midline.", "Support Devices"),
    ("Mild thickening of the right minor fissure.", "The minor fissure is not thickened.", "Pleural Other"),
    ("Biapical pleural capping.", "The lung apices are clear.", "Pleural Other"),
    ("Biapical fibronodular thickening.", "The lung apices are clear.", "Pleural Other"),
    ("Mild biapical pleural-peripheral scarring.", "Mild right basilar scarring.", "Pleural Other"),
    ("Stable interstitial fibrotic changes in both lungs.", "No fibrotic change.", "Pleural Other"),
    ("Stable cavity in the right apex.", "Small right pleural effusion.", "Lung Lesion"),
    ("Right upper lobe cavitation.", "Air in the pleural cavity.", "Lung Lesion"),
    ("Aspiration pneumonitis in the right lower lobe.", "Right lower lobe atelectasis.", "Pneumonia"),
    ("VP shunt tubing courses over the right chest.", "The trachea is midline.", "Support Devices"),
    ("IVC filter in place.", "The IVC is not dilated.", "Support Devices"),
    ("Right humeral head bone anchor.", "Right humeral head is intact.", "Support Devices"),
])
def test_added_mentions(labeler, labeler_before, fires, keeps, obs):
    assert one(labeler, fires, obs) == 1 and is_blank(one(labeler_before, fires, obs))
    assert one(labeler, keeps, obs) != 1


@pytest.mark.parametrize("text", [
    # deviation 12: abnormalities of the kinds no_finding.txt holds, which it lacks
    "Heart size normal. Lungs are clear. Thoracic spondylosis.",
    "Lungs clear. Heart size normal. Anterior osteophytes of the thoracic spine.",
    "Tortuous thoracic aorta. Well-expanded and clear lungs.",
    "Low lung volumes. Normal heart size. Lungs are clear.",
    "Lung volumes are low. No focal infiltrates.",
    "Bronchovascular crowding. No focal consolidation.",
    "Left axillary surgical clips. The lungs are clear.",
    "Foreign body in the soft tissues of the left chest wall. Clear lungs.",
    "Mild dextrocurvature of the spine. Clear lungs.",
    "Acromioclavicular arthritis. The lungs are clear.",
    "Status post right upper lobectomy. No acute findings.",
    "Right hilar adenopathy. The lungs are clear.",
])
def test_other_abnormalities_block_no_finding(labeler, labeler_before, text):
    assert is_blank(one(labeler, text, "No Finding"))
    assert one(labeler_before, text, "No Finding") == 1


def test_negated_abnormalities_keep_no_finding(labeler):
    # deviation 12's abnormalities negated leave No Finding standing; "fusion" is not read inside "effusion"
    assert one(labeler, "No adenopathy. No scoliosis. Lungs are clear.", "No Finding") == 1
    assert one(labeler, "No pleural effusion. Normal lung volumes. Lungs are clear.", "No Finding") == 1


def test_precision_rounds(shared_data, labeler, labeler_before):
    first = ChexpertLabeler(chexpert_phrases_dir(shared_data), precision_rules=1)
    assert (first.precision_round, labeler.precision_round, labeler_before.precision_round) == (1, 2, 0)
    assert first.precision_rules is True and labeler_before.precision_rules is False
    # the second round's additions are off in round 1, the first round's are on
    assert one(first, "Thoracic spondylosis. Clear lungs.", "No Finding") == 1
    assert is_blank(one(first, "Stable cavity in the right apex.", "Lung Lesion"))
    assert one(first, "Coronary artery stents.", "Support Devices") == 1
    assert one(labeler, "Stable cavity in the right apex.", "Lung Lesion") == 1
    for bad in (3, -1, "yes", 1.5):
        with pytest.raises(ValueError, match="precision_rules"):
            ChexpertLabeler(chexpert_phrases_dir(shared_data), precision_rules=bad)


def test_postsurgical_wording_without_material_keeps_no_finding(labeler):
    # deviation 12 adds material and changes the image shows, not what was done
    assert one(labeler, "Patient status post sternotomy and CABG. The lungs are clear.", "No Finding") == 1
    assert one(labeler, "Postsurgical changes of the cervical spine. The lungs are clear.", "No Finding") == 1


def test_precision_rules_flag(labeler, labeler_before):
    assert labeler.precision_rules is True and labeler_before.precision_rules is False
    # the CheXpert labeler's own examples hold either way
    for text, expected in CHEXPERT_SAMPLES:
        assert nonblank(labeler_before.label([text]).iloc[0]) == expected


def test_memoised_sentence_mentions_shift_to_each_offset(labeler, shared_data):
    """The same sentence, memoised once, gives spans in each report it appears in, and the same mentions as a
    labeler that has seen nothing (a fresh instance) and as the same labeler with its memo cleared."""
    sentence = "Cannot exclude small left pleural effusion."
    first = labeler.mentions(sentence)
    second = labeler.mentions("Heart size is normal. " + sentence)
    shifted = second[second["sentence"] == sentence]
    assert shifted["start"].tolist() == [s + 22 for s in first["start"]]
    assert shifted["sentence_start"].unique().tolist() == [22]
    text = "Heart size is normal. " + sentence
    assert all(text[s:e] == t for s, e, t in zip(second.start, second.end, second.text))
    fresh = ChexpertLabeler(chexpert_phrases_dir(shared_data))
    pd.testing.assert_frame_equal(fresh.mentions(text), second)
    labeler._mention_memo.clear()
    pd.testing.assert_frame_equal(labeler.mentions(text), second)


def test_memo_keys_on_the_settings(shared_data):
    """Changing ``no_new`` on an instance does not serve mentions computed under the other setting."""
    lab = ChexpertLabeler(chexpert_phrases_dir(shared_data))
    text = "No new consolidation."
    before = lab.label_one(text)["Consolidation"]
    lab.no_new = "negative"
    assert (before, lab.label_one(text)["Consolidation"]) == (-1.0, 0.0)


def test_pickled_labeler_leaves_its_memo_behind_and_labels_the_same(shared_data):
    import pickle

    lab = ChexpertLabeler(chexpert_phrases_dir(shared_data))
    text = "Small left pleural effusion. No pneumothorax."
    before = lab.label_one(text)
    assert lab._mention_memo
    copy = pickle.loads(pickle.dumps(lab))
    assert "_mention_memo" not in vars(copy)
    assert copy.label_one(text) == before
