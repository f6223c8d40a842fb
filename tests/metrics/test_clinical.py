"""CheXpert-label F1: hand-computed micro/macro/example-based values on real report pairs.

Reports (verbatim): IU X-ray ``indiana_reports.csv`` impressions (uid given) and ReXrank CheXpert
Plus ``patient64672_study1`` impression. Their labels (checked in tests/text/test_labeler.py and
re-asserted below) are:

- A = IU 3721 "Left lower lobe atelectasis otherwise no acute cardiopulmonary disease."  -> Atelectasis 1
- B = IU 627  "Cardiomegaly and pulmonary vascular congestion."  -> Cardiomegaly 1, Edema -1
- C = IU 88   "1. Findings consistent with mild congestive heart failure."  -> Edema 1, Cardiomegaly -1 (CHF rule)
- D = IU 3632 "1. Small left pleural effusion."  -> Pleural Effusion 1
- E = patient64672 "1.STABLE DIFFUSE ... LIKELY EDEMA. ... 2.UNCHANGED CARDIOMEGALY. ... 3.NO NEW CONSOLIDATION."
      -> Cardiomegaly 1, Edema -1, Consolidation -1

Pairs (reference, candidate): (A, B), (C, D), (E, B).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from radaudit.errors import ParamsError
from radaudit.metrics import METRICS, MetricInputError, build_metric, list_metrics
from radaudit.metrics.clinical import label_columns, make_chexpert_f1

A = "Left lower lobe atelectasis otherwise no acute cardiopulmonary disease."
B = "Cardiomegaly and pulmonary vascular congestion."
C = "1. Findings consistent with mild congestive heart failure."
D = "1. Small left pleural effusion."
E = "1.STABLE DIFFUSE RETICULAR INTERSTITIAL THICKENING, LIKELY EDEMA.\n \n2.UNCHANGED CARDIOMEGALY.\n \n3.NO NEW CONSOLIDATION."
REFS, CANDS = [A, C, E], [B, D, B]


@pytest.fixture(scope="module")
def root(shared_data):
    return shared_data


def metric(root, name="chexpert_f1_micro_top5", **kw):
    return build_metric(name, data_root=root, **kw)


def test_registered_names_and_lazy_build():
    names = {"chexpert_f1_micro_top5", "chexpert_f1_macro_top5", "chexpert_f1_micro_all14", "chexpert_f1_macro_all14"}
    clinical = set(list_metrics().query("kind == 'clinical'")["name"])
    assert names <= clinical and clinical - names == {"atomimed", "atomimed_clinical"}  # label F1s, AtomiMed (paper, ours)
    assert all(METRICS.lookup(n).requires == () for n in names)
    m = make_chexpert_f1()
    assert m._labeler is None  # the phrase lists are read on the first compute, not at build time
    assert label_columns("top5") == ("Cardiomegaly", "Edema", "Consolidation", "Atelectasis", "Pleural Effusion")
    assert len(label_columns("all14")) == 14


def test_labels_of_the_example(root):
    labels = metric(root).compute(REFS, CANDS).details
    got = [row.dropna().to_dict() for _, row in labels["ref_labels"].iterrows()]
    assert got == [{"Atelectasis": 1}, {"Cardiomegaly": -1, "Edema": 1}, {"Cardiomegaly": 1, "Edema": -1, "Consolidation": -1}]
    got = [row.dropna().to_dict() for _, row in labels["cand_labels"].iterrows()]
    assert got == [{"Cardiomegaly": 1, "Edema": -1}, {"Pleural Effusion": 1}, {"Cardiomegaly": 1, "Edema": -1}]


def test_uncertain_as_positive(root):
    # positives  ref: {Atel}, {Edema, Card}, {Card, Edema, Cons}   cand: {Card, Edema}, {Eff}, {Card, Edema}
    # per pair: (TP,FP,FN) = (0,2,1) -> 0; (0,1,2) -> 0; (2,0,1) -> 4/5
    # per label: Card TP1 FP1 FN1 -> 1/2; Edema TP1 FP1 FN1 -> 1/2; Cons FN1 -> 0; Atel FN1 -> 0; Eff FP1 -> 0
    # micro: TP 2, FP 3, FN 4 -> 4/11; macro top5: (1/2 + 1/2)/5 = 0.2; macro all14: 1/14
    r = metric(root).compute(REFS, CANDS)
    assert r.name == "chexpert_f1_micro_top5" and r.aggregate == "corpus"
    assert r.score == pytest.approx(4 / 11)
    np.testing.assert_allclose(r.per_sample, [0.0, 0.0, 0.8])
    assert r.details["mean_example_f1"] == pytest.approx(0.8 / 3)
    pl = r.details["per_label"].set_index("observation")
    assert pl.loc["Cardiomegaly", ["tp", "fp", "fn"]].tolist() == [1, 1, 1]
    assert pl["f1"].to_dict() == pytest.approx({"Cardiomegaly": 0.5, "Edema": 0.5, "Consolidation": 0.0,
                                                "Atelectasis": 0.0, "Pleural Effusion": 0.0})
    assert r.details["micro_precision"] == pytest.approx(2 / 5) and r.details["micro_recall"] == pytest.approx(2 / 6)
    assert metric(root, "chexpert_f1_macro_top5").compute(REFS, CANDS).score == pytest.approx(0.2)
    assert metric(root, "chexpert_f1_micro_all14").compute(REFS, CANDS).score == pytest.approx(4 / 11)
    assert metric(root, "chexpert_f1_macro_all14").compute(REFS, CANDS).score == pytest.approx(1 / 14)


def test_uncertain_as_negative(root):
    # ref: {Atel}, {Edema}, {Card}; cand: {Card}, {Eff}, {Card}
    # per pair: (0,1,1) -> 0; (0,1,1) -> 0; (1,0,0) -> 1
    # per label: Card TP1 FP1 -> 2/3; Edema FN1 -> 0; Cons none -> zero_division 0; Atel FN1 -> 0; Eff FP1 -> 0
    r = metric(root, uncertain="negative").compute(REFS, CANDS)
    assert r.score == pytest.approx(2 / 6)
    np.testing.assert_allclose(r.per_sample, [0.0, 0.0, 1.0])
    assert metric(root, "chexpert_f1_macro_top5", uncertain="negative").compute(REFS, CANDS).score == pytest.approx((2 / 3) / 5)
    # zero_division=nan: Consolidation (no positive anywhere) leaves the macro mean
    m = metric(root, "chexpert_f1_macro_top5", uncertain="negative", zero_division=math.nan)
    assert m.compute(REFS, CANDS).score == pytest.approx((2 / 3) / 4)


def test_uncertain_ignore(root):
    # cells with -1 on either side are dropped: (A,B) Edema, (C,D) Cardiomegaly, (E,B) Edema and Consolidation
    # remaining as in "negative" here: Card FP (A,B) + TP (E,B); Edema FN (C,D); Atel FN; Eff FP
    r = metric(root, uncertain="ignore").compute(REFS, CANDS)
    assert r.score == pytest.approx(1 / 3)
    np.testing.assert_allclose(r.per_sample, [0.0, 0.0, 1.0])
    # a pair where the policies differ: ref C (Card -1, Edema 1) vs cand B (Card 1, Edema -1)
    #   positive: both {Card, Edema} -> 1; negative: {Edema} vs {Card} -> 0; ignore: both cells dropped -> no positive -> 1
    got = {u: metric(root, uncertain=u).compute([C], [B]).per_sample[0] for u in ("positive", "negative", "ignore")}
    assert got == {"positive": 1.0, "negative": 0.0, "ignore": 1.0}


def test_edge_cases(root):
    m = metric(root)
    # neither report has a top-5 positive (IU uid 2353's impression "Normal chest" vs the first sentence of uid 3360's)
    r = m.compute(["Normal chest", ""], ["No acute cardiopulmonary abnormality.", ""])
    assert r.per_sample[0] == 1.0 and math.isnan(r.per_sample[1]) and r.n_undefined == 1
    assert math.isnan(m.compute(["", ""], ["", " "]).score)  # only both-empty pairs: undefined
    # empty candidate against a positive reference: all blank -> FN only -> 0
    assert m.compute([D], [""]).per_sample[0] == 0.0
    assert metric(root, no_positive=math.nan).compute(["Normal chest"], ["Normal chest"]).n_undefined == 1
    assert math.isnan(m.compute([], []).score)
    with pytest.raises(MetricInputError, match="missing"):
        m.compute([A, None], [B, C])
    with pytest.raises(MetricInputError, match="2 candidates"):
        m.compute([A], [B, C])


def test_bad_options():
    with pytest.raises(ParamsError, match="uncertain='maybe'"):
        make_chexpert_f1(uncertain="maybe")
    with pytest.raises(ParamsError, match="label_set"):
        make_chexpert_f1(label_set="top3")
    with pytest.raises(ParamsError, match="average"):
        make_chexpert_f1(average="weighted")


def test_to_frame_has_per_pair_counts(root):
    f = metric(root).compute(REFS, CANDS).to_frame()
    assert list(f.columns) == ["pair", "metric", "score", "tp", "fp", "fn"]
    assert f["tp"].tolist() == [0, 0, 2] and f["fp"].tolist() == [2, 1, 0] and f["fn"].tolist() == [1, 2, 1]
