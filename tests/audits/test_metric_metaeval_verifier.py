"""metric_metaeval, issue 40 item 5: the metrics that share the pairs' verifier are marked in the tables and left
out of the median findings. The list is checked against the code (the import graph) and its reason is shown
on a verified pair (hand-made tables, hand-computed medians)."""

from __future__ import annotations

import ast
import importlib.util

import pandas as pd
import pytest

from radaudit.audits import metric_metaeval as mm
from radaudit.errors import ParamsError
from radaudit.metrics import METRICS
from radaudit.perturb.base import RULES

# ------------------------------------------------------------------------------------ the list


def test_a_metric_that_does_not_share_the_verifier_is_not_marked_one_that_does_is():
    for m in ("bleu4", "rougeL", "cider", "bertscore", "embedding_similarity", "chexbert_f1", "radgraph_f1", "green"):
        assert mm.shares_verifier(m) is None, m
    for m in ("chexpert_f1_micro_top5", "chexpert_f1_micro_all14", "chexpert_f1_macro_top5", "chexpert_f1_macro_all14"):
        assert mm.shares_verifier(m) == mm.SAME_LABELER == "verified by the same labeler"
    for m in ("atomimed", "atomimed_clinical"):
        assert mm.shares_verifier(m) == mm.SAME_TOOLKIT == "verified by the same toolkit"
    # LLM-made pairs are verified textually only: nothing is marked
    assert all(mm.shares_verifier(m, "llm") is None for m in METRICS)
    assert mm.verifier_marks(["bleu4", "atomimed", "chexpert_f1_micro_all14", "atomimed"]) == {
        "atomimed": mm.SAME_TOOLKIT, "chexpert_f1_micro_all14": mm.SAME_LABELER}
    with pytest.raises(ParamsError, match="unknown metric"):
        mm.shares_verifier("no_such_metric")
    with pytest.raises(ParamsError, match="engine must be one of"):
        mm.shares_verifier("bleu4", "gpt")


def _module_imports(name: str) -> set[str]:
    spec = importlib.util.find_spec(name)
    if spec is None or not str(spec.origin).endswith(".py"):
        return set()
    tree = ast.parse(open(spec.origin, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):  # function-level imports too (the registry imports lazily)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("radaudit"):
            out.add(node.module)
            parent = importlib.util.find_spec(node.module)
            if parent is not None and parent.submodule_search_locations:  # "from package import submodule"
                out |= {f"{node.module}.{a.name}" for a in node.names
                        if importlib.util.find_spec(f"{node.module}.{a.name}") is not None}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("radaudit")}
    return out


def _closure(*names: str) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]  # a package's __init__ runs too
        todo += sorted(_module_imports(m))
    return seen


def _toolkit(mods: set[str]) -> set[str]:
    return {m for m in mods if m.startswith("radaudit.text.")}


def test_the_list_is_what_the_import_graph_says():
    """The verifier's toolkit = the text modules the rules, their checks and the labeler reach; a registered
    metric is marked exactly when its factory's module reaches one of them."""
    verifier = _toolkit(_closure("radaudit.perturb.verify", "radaudit.perturb.textops", "radaudit.perturb.rules",
                                 "radaudit.text.labeler"))
    assert {"radaudit.text.labeler", "radaudit.text.negation", "radaudit.text.attributes"} <= verifier
    for name in METRICS:
        factory = METRICS.lookup(name).factory
        module = factory.split(":")[0] if isinstance(factory, str) else factory.__module__
        shared = _toolkit(_closure(module)) & verifier
        assert (mm.shares_verifier(name) is not None) == bool(shared), (name, sorted(shared))


# ------------------------------------------------------------------------------------ why: a verified pair


def test_a_pair_verified_by_the_labeler_scores_one_on_the_labelers_f1(shared_data):
    """A significant laterality flip passes its rule's check (side differs, CheXpert labels the same): the label
    F1 then scores it exactly 1 — the verifier's verdict read back — while ROUGE-L sees the edit."""
    from radaudit.data import chexpert_phrases_dir
    from radaudit.metrics import build_metric
    from radaudit.perturb.verify import all_of, labels, local_attr, verify_rewrite
    from radaudit.text.labeler import ChexpertLabeler

    gt = "Small left pleural effusion. No pneumothorax."
    me = "Small right pleural effusion. No pneumothorax."
    lab = ChexpertLabeler(chexpert_phrases_dir(shared_data))
    check = all_of(local_attr("laterality", "differ"), labels("same"))
    assert verify_rewrite(gt, me, [((6, 10), (6, 11))], check, lab).ok
    f1 = build_metric("chexpert_f1_micro_all14", data_root=shared_data).compute([gt], [me]).per_sample
    rouge = build_metric("rougeL").compute([gt], [me]).per_sample
    assert list(f1) == [1.0] and rouge[0] < 1.0


# ------------------------------------------------------------------------------------ the tables and the medians


INSIG = next(n for n, r in RULES.items() if r.significance == "insignificant")
SIG = next(n for n, r in RULES.items() if r.significance == "significant")


def _scores() -> pd.DataFrame:
    """bleu4: insig 0.5, 0.1 vs sig 0.3, 0.3 -> 2 of 4 -> 0.5; rougeL: insig 0.9, 0.4 vs sig 0.5, 0.3 -> 3 of 4 -> 0.75;
    chexpert (shares the verifier): insig 1, 1 vs sig 0, 0 -> 1. Median of all three 0.75; without the label F1 0.625."""
    values = {"bleu4": ([0.5, 0.1], [0.3, 0.3]), "rougeL": ([0.9, 0.4], [0.5, 0.3]),
              "chexpert_f1_micro_all14": ([1.0, 1.0], [0.0, 0.0])}
    rows = []
    for k in range(3):
        for m, (ins, sig) in values.items():
            for kind, vals, rule in (("insignificant", ins, INSIG), ("significant", sig, SIG)):
                for j, v in enumerate(vals):
                    rows.append({"metric": m, "label": mm.metric_label(m), "pair_id": f"{kind[0]}{j}_{k}", "score": v,
                                 "significance": kind, "rule": rule, "higher_is_better": True, "group": None,
                                 "aspect": "location"})
    return pd.DataFrame(rows)


def test_the_medians_leave_out_the_marked_metrics_and_say_so():
    df = _scores()
    assert mm.median_auroc(df, n_bootstrap=50)["median"] == pytest.approx(0.75)  # all three
    f = {x.id: x for x in mm.run_findings(df, df, None, None, n_bootstrap=200)}
    for fid in ("whole_report_auroc_median", "trimmed_pair_auroc_median"):
        assert f[fid].value == pytest.approx(0.625)
        assert "median over 2 metrics" in f[fid].note
        assert "left out because they share the pairs' verifier: chexpert_f1_micro_all14 (verified by the same labeler)" \
            in f[fid].note
        assert f[fid].bar.op == "<" and f[fid].bar.value == 0.6 and f[fid].controls == ("oracle_auroc_control",)
    assert mm.without_shared(df, mm.verifier_marks(df["metric"].unique()))["metric"].unique().tolist() == ["bleu4", "rougeL"]
    # with the LLM engine nothing is left out
    g = {x.id: x for x in mm.run_findings(df, None, None, None, engine="llm", n_bootstrap=50)}
    assert g["trimmed_pair_auroc_median"].value == pytest.approx(0.75) and "left out" not in g[
        "trimmed_pair_auroc_median"].note
    # only marked metrics scored: no median, said why
    only = df[df["metric"] == "chexpert_f1_micro_all14"]
    h = {x.id: x for x in mm.run_findings(only, only, None, None, n_bootstrap=50)}
    assert h["whole_report_auroc_median"].value is None and "every metric scored shares the pairs' verifier" in h[
        "whole_report_auroc_median"].note


def test_tables_mark_the_shared_metrics_with_a_footnote():
    df = _scores().assign(score_100=lambda d: 100 * d["score"], error_type="inaccuracy")
    marks = mm.verifier_marks(df["metric"].unique())
    long = mm.ds_rs_long(df, n_bootstrap=20)
    t4 = mm.score_table(long, "DS", marks=marks)
    assert set(t4["Metric"]) == {"BLEU-4", "ROUGE-L", f"{mm.metric_label('chexpert_f1_micro_all14')} †"}
    assert set(mm.score_table(long, "DS")["Metric"]) == {"BLEU-4", "ROUGE-L", mm.metric_label("chexpert_f1_micro_all14")}
    foot = mm.verifier_footnote(marks)
    assert foot.startswith("† verified by the same labeler:") and "left out of the median-AUROC findings" in foot
    assert mm.verifier_footnote({}) == ""
    au = mm.auroc_table(df, n_bootstrap=20)
    col = mm.verifier_column(au, marks).set_index(["metric", "aspect"])["shares_verifier"]
    assert col[("chexpert_f1_micro_all14", "Overall")] == mm.SAME_LABELER and col[("bleu4", "Overall")] == ""
    comp = mm.context_comparison(au, au, marks).set_index("metric")
    assert comp.loc["chexpert_f1_micro_all14", "shares_verifier"] == mm.SAME_LABELER
    assert comp.loc["rougeL", "shares_verifier"] == ""
    lines = mm.summary_lines(long, au, marks=marks)
    assert any(line.startswith("**Scored partly by construction.**") and "verified by the same labeler" in line
               for line in lines)
