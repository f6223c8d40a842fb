"""Section splitting (one-line and CheXpert Plus styles) and sentence splitting, on real report text.

Quoted reports (verbatim, ``\\n`` as in the files):
- ReXrank IU X-ray test set (``shared/data/rexrank-chexpertplus-iu/ReXRank_IUXray_test.json``),
  ``CXR3030_IM-1405``.
- ReXrank CheXpert Plus valid set (``ReXRank_CheXpertPlus.json``), ``patient64678_study1``,
  ``patient64680_study1``, ``patient64672_study1``.
- IU X-ray (``iu-xray-openi/indiana_reports.csv``), by uid.
"""

from __future__ import annotations

import json

import pytest

from radaudit.text.sections import Sentence, sentences, split_inline_sections, split_sections

CXR3030 = ("Findings: Normal cardiomediastinal silhouette. There is no focal consolidation. There are no XXXX of a "
           "large pleural effusion. There is no pneumothorax. There is no acute bony abnormality seen. Impression: "
           "There is no radiographic evidence of acute cardiopulmonary disease.")
P64678_CONTEXT = "Age:49.0.Gender:F.Indication:nanComparison: None."
P64680 = ("Findings: None. Impression: 1. SWAN-GANZ CATHETER HAS BEEN REMOVED BUT THE ASSOCIATED SHEATH\nREMAINS IN "
          "THE SUPERIOR VENA CAVA. ENDOTRACHEAL TUBE AND\nNASOGASTRIC TUBE APPEAR UNCHANGED.\n2. PERSISTENT BIBASILAR "
          "ATELECTASIS. NO EVIDENCE OF PULMONARY\nEDEMA.")
P64672_IMPRESSION = "1.STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.\n \n2.UNCHANGED CARDIOMEGALY.\n \n3.NO NEW CONSOLIDATION."


def _texts(ss: list[Sentence]) -> list[str]:
    return [s.text for s in ss]


# ------------------------------------------------------------------------------------- sections

def test_inline_sections_rexrank_iu():
    assert split_inline_sections(CXR3030) == {
        "findings": "Normal cardiomediastinal silhouette. There is no focal consolidation. There are no XXXX of a large "
                    "pleural effusion. There is no pneumothorax. There is no acute bony abnormality seen.",
        "impression": "There is no radiographic evidence of acute cardiopulmonary disease.",
    }
    # the default (line-start headers only) leaves one-line text whole, as before
    assert list(split_sections(CXR3030)) == ["findings"]


def test_inline_header_glued_to_previous_field():
    # ReXrank's CheXpert Plus context glues "nan" and "Comparison:" together
    assert split_sections(P64678_CONTEXT, inline=True) == {
        "preamble": "Age:49.0.Gender:F.", "indication": "nan", "comparison": "None."}


def test_inline_keeps_other_rules():
    assert split_sections("No effusion. Impression: stable", inline=True) == {"preamble": "No effusion.", "impression": "stable"}
    # a lower-case word glued to a header is not a header ("xcomparison:")
    assert split_sections("see xcomparison: none", inline=True) == {"preamble": "see xcomparison: none"}
    assert split_inline_sections(None) == {}


def test_chexpert_plus_headers(fixtures_dir):
    import pandas as pd

    df = pd.read_csv(fixtures_dir / "chexpert_plus" / "df_chexpert_plus_240401.csv")
    secs = split_sections(df.loc[0, "report"])
    assert secs == {
        "narrative": "CHEST 2 VIEWS",
        "history": "Cough for two weeks.",
        "comparison": "None.",
        "findings": "The heart is normal in size. Lungs are clear without focal consolidation.",
        "impression": "1. No acute cardiopulmonary disease.",
    }
    text = "SUMMARY:\nNormal chest.\nEND OF IMPRESSION:\nx\nACCESSION NUMBER: 123\nPROCEDURE COMMENTS: portable"
    assert split_sections(text) == {"summary": "Normal chest.", "end of impression": "x", "accession number": "123",
                                    "procedure comments": "portable"}


def test_real_rexrank_file_inline(shared_data):
    data = json.loads((shared_data / "rexrank-chexpertplus-iu" / "ReXRank_IUXray_test.json").read_text())
    rec = data["CXR3030_IM-1405"]
    secs = split_inline_sections(rec["report"])
    assert secs["findings"] == rec["section_findings"]
    assert secs["impression"] == rec["section_impression"]


# ------------------------------------------------------------------------------------ sentences

def test_sentence_spans_point_into_the_text():
    ss = sentences(P64680)
    assert all(P64680[s.start:s.end] == s.text for s in ss)
    assert ss[0] == Sentence(ss[0].text, ss[0].start, ss[0].end) and ss[0].span == (ss[0].start, ss[0].end)


def test_numbered_list_and_hard_wrapped_lines():
    # "1." after "Impression:" stays in its sentence; "\n2." opens a new one; single newlines do not split
    assert _texts(sentences(P64680)) == [
        "Findings: None.",
        "Impression: 1. SWAN-GANZ CATHETER HAS BEEN REMOVED BUT THE ASSOCIATED SHEATH\nREMAINS IN THE SUPERIOR VENA CAVA.",
        "ENDOTRACHEAL TUBE AND\nNASOGASTRIC TUBE APPEAR UNCHANGED.",
        "PERSISTENT BIBASILAR ATELECTASIS.",
        "NO EVIDENCE OF PULMONARY\nEDEMA.",
    ]


def test_list_markers_glued_to_capitals_and_blank_lines():
    assert _texts(sentences(P64672_IMPRESSION)) == [
        "STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.", "UNCHANGED CARDIOMEGALY.", "NO NEW CONSOLIDATION."]


def test_list_items_without_periods_split_on_newlines():
    text = "1. Left pleural effusion\n2. Cardiomegaly without overt edema\n- right basilar atelectasis"
    assert _texts(sentences(text)) == ["Left pleural effusion", "Cardiomegaly without overt edema", "right basilar atelectasis"]


@pytest.mark.parametrize("text, expected", [
    # IU uid 1970 style: decimals and numbers after a sentence end with a list marker (IU impressions)
    ("No acute cardiopulmonary abnormality. 2. 1.7 cm nodular opacity in the right lower lobe.",
     ["No acute cardiopulmonary abnormality.", "1.7 cm nodular opacity in the right lower lobe."]),
    # IU: a measurement ends the sentence ("... measuring 2.2 x 1.6 cm. Recommend ...")
    ("Mass measuring 2.2 x 1.6 cm. Recommend CT.", ["Mass measuring 2.2 x 1.6 cm.", "Recommend CT."]),
    # abbreviations: approx., Dr., vs.
    ("Nodule measures approx. 3.5 cm. Dr. XXXX was notified. Atelectasis vs. scar.",
     ["Nodule measures approx. 3.5 cm.", "Dr. XXXX was notified.", "Atelectasis vs. scar."]),
    # IU typos: a period glued to the next sentence, a double period
    ("Heart size is mildly enlarged but stable.. The lungs are clear.Heart size normal",
     ["Heart size is mildly enlarged but stable..", "The lungs are clear.", "Heart size normal"]),
    # IU uid 1681 indication: a "?" after a space is an uncertainty mark, not a sentence end
    ("pt with ? h/o COPD/XXXX smoking, r/o infiltrate/mass", ["pt with ? h/o COPD/XXXX smoking, r/o infiltrate/mass"]),
    ("heart murmur? Eval.", ["heart murmur?", "Eval."]),
    ("1.There is a left basilar opacity. 2.No evidence of acute disease.",
     ["There is a left basilar opacity.", "No evidence of acute disease."]),
])
def test_sentence_rules(text, expected):
    assert _texts(sentences(text)) == expected


@pytest.mark.parametrize("text", [None, "", "   \n ", float("nan"), "1. ", "- ", " . "])
def test_sentences_empty(text):
    assert sentences(text) == []


def test_sentences_memo_hands_out_new_lists():
    """sentences() is memoised; a caller that changes its list does not change what the next caller gets."""
    text = "Heart normal. Lungs clear."
    got = sentences(text)
    got.append(Sentence("x", 0, 1))
    assert [s.text for s in sentences(text)] == ["Heart normal.", "Lungs clear."]
