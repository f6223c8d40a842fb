"""The demo-model training utility (radaudit.models.train): learning, seeding, the model folder, the time budget."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from radaudit.errors import ParamsError  # noqa: E402
from radaudit.models.train import (  # noqa: E402
    FeatureClassifier,
    FeatureClassifierConfig,
    LengthGroupedBatches,
    TrainingError,
    train_model,
)

STEPS = 40


@pytest.fixture(scope="module")
def blobs():
    """A learnable toy task: two Gaussian blobs in 8-d (class means -1 and +1), 200 train / 100 held out."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-1.0, 1.0, (150, 8)), rng.normal(1.0, 1.0, (150, 8))]).astype(np.float32)
    y = np.repeat([0, 1], 150)
    order = rng.permutation(300)
    x, y = x[order], y[order]
    train = torch.utils.data.TensorDataset(torch.from_numpy(x[:200]), torch.from_numpy(y[:200]))
    x_eval, y_eval = torch.from_numpy(x[200:]), torch.from_numpy(y[200:])

    def accuracy(model) -> dict[str, float]:
        return {"accuracy": float((model(x_eval).logits.argmax(-1) == y_eval).float().mean())}

    def factory():
        model = FeatureClassifier(FeatureClassifierConfig(n_features=8, hidden_size=16, dropout=0.1, num_labels=2))
        model.set_standardization(x[:200])
        return model

    return {"train": train, "eval_fn": accuracy, "factory": factory}


@pytest.fixture(scope="module")
def two_runs(blobs, tmp_path_factory):
    """The same training twice (seed 0) into two folders, and once with seed 1 (not saved)."""
    kw = dict(steps=STEPS, lr=1e-2, batch_size=32, log_every=5, data_description="Two Gaussian blobs in 8-d.",
              model_name="blob-classifier")
    a = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], seed=0,
                    output_dir=tmp_path_factory.mktemp("run-a"), **kw)
    b = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], seed=0,
                    output_dir=tmp_path_factory.mktemp("run-b"), **kw)
    c = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], seed=1, **kw)
    return a, b, c


def test_loss_decreases_on_a_learnable_task(two_runs):
    a, _, _ = two_runs
    assert a.steps == a.planned_steps == STEPS and not a.stopped_early and a.stop_reason is None
    assert len(a.loss_curve) == STEPS
    assert np.mean(a.loss_curve[-5:]) < 0.3 * np.mean(a.loss_curve[:5])
    assert a.metrics["accuracy"] > 0.9
    assert a.epochs == pytest.approx(STEPS / 7)  # 200 examples in batches of 32: 7 per epoch


def test_same_seed_same_weights_and_curve_other_seed_differs(two_runs):
    a, b, c = two_runs
    assert a.loss_curve == b.loss_curve and a.metrics == b.metrics
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert a.loss_curve != c.loss_curve
    for name in ("README.md", "loss_curve.png", "loss_curve.pdf", "model.safetensors", "config.json"):
        assert (a.output_dir / name).read_bytes() == (b.output_dir / name).read_bytes(), name


def test_model_card_log_and_reload(two_runs, blobs):
    a, _, _ = two_runs
    folder: Path = a.output_dir
    assert {p.name for p in folder.iterdir()} >= {"README.md", "config.json", "model.safetensors", "loss_curve.png",
                                                  "loss_curve.pdf", "training_log.json"}
    assert a.files["loss_curve_png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    card = (folder / "README.md").read_text()
    assert "# blob-classifier" in card and "Two Gaussian blobs in 8-d." in card
    assert f"| steps | {STEPS} of {STEPS} planned" in card and "| seed | 0 |" in card
    assert f"| accuracy | {a.metrics['accuracy']:.4f} |" in card and "![Training loss per step](loss_curve.png)" in card
    assert "library_name: transformers" in card and "FeatureClassifier.from_pretrained" in card
    log = json.loads((folder / "training_log.json").read_text())
    assert log["loss"] == a.loss_curve and log["metrics"] == a.metrics and log["seed"] == 0
    assert log["steps"] == STEPS and log["stopped_early"] is False and log["n_train"] == 200
    assert [e["step"] for e in log["logged_loss"]] == list(range(5, STEPS + 1, 5))

    reloaded = FeatureClassifier.from_pretrained(folder).eval()
    with torch.no_grad():
        assert blobs["eval_fn"](reloaded) == a.metrics  # the held-out metric, reproduced from the saved folder
    assert torch.equal(reloaded.feature_std, a.model.feature_std)  # standardisation is saved with the weights


def test_max_seconds_stops_cleanly_and_says_so(blobs, tmp_path):
    res = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], steps=100_000, lr=1e-2, seed=0,
                      max_seconds=0, output_dir=tmp_path)
    assert res.stopped_early and res.steps == 1 and res.planned_steps == 100_000
    assert "time budget max_seconds=0 reached after 1 of 100000 steps" in res.stop_reason
    assert "accuracy" in res.metrics  # still evaluated and saved
    assert "**Stopped early:** time budget" in (tmp_path / "README.md").read_text()
    log = json.loads((tmp_path / "training_log.json").read_text())
    assert log["stopped_early"] is True and log["stop_reason"] == res.stop_reason


def test_a_warn_budget_runs_every_planned_step_and_gives_the_same_model(blobs, caplog):
    import torch

    planned = dict(steps=40, lr=1e-2, seed=3)
    free = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], **planned)
    with caplog.at_level("WARNING"):
        busy = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], **planned, max_seconds=0, budget="warn")
    assert busy.steps == busy.planned_steps == 40 and not busy.stopped_early and busy.stop_reason is None
    assert [r.message for r in caplog.records].count(next(r.message for r in caplog.records if "over its time budget"
                                                           in r.message)) == 1  # warned once, not per step
    for a, b in zip(free.model.state_dict().values(), busy.model.state_dict().values()):
        assert torch.equal(a, b)  # the machine's speed does not reach the weights
    with pytest.raises(ParamsError, match="budget must be 'stop' or 'warn'"):
        train_model(blobs["factory"], blobs["train"], steps=2, budget="later")


def test_plain_module_tuple_batches_epochs_and_rng_restored(blobs, tmp_path):
    state = torch.get_rng_state()
    res = train_model(lambda: torch.nn.Linear(8, 2), blobs["train"], epochs=2, lr=5e-2, batch_size=50, seed=3,
                      log_every=2, output_dir=tmp_path)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG is untouched
    assert res.steps == 8 and res.epochs == 2 and res.metrics == {}
    assert res.loss_curve[-1] < res.loss_curve[0]
    assert (tmp_path / "model.safetensors").is_file() and not (tmp_path / "config.json").exists()
    card = (tmp_path / "README.md").read_text()
    assert "library_name" not in card and "No held-out evaluation" in card


def test_tiny_text_model_with_dict_batches_and_tokenizer(tmp_path):
    """A tiny BERT sequence classifier (dict batches, model(**batch).loss), saved with its tokenizer."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "no", "small", "large", "left", "right", "pleural",
             "effusion", "pneumothorax", "."]
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(words)})
    texts = [f"{neg}{size} {side} {finding} ." for neg in ("", "no ") for size in ("small", "large")
             for side in ("left", "right") for finding in ("pleural effusion", "pneumothorax")]
    labels = [0 if t.startswith("no ") else 1 for t in texts]
    examples = [{"text": t, "label": y} for t, y in zip(texts, labels)]

    def collate(batch):
        enc = tok([e["text"] for e in batch], padding=True, return_tensors="pt")
        return {**enc, "labels": torch.tensor([e["label"] for e in batch])}

    def accuracy(model):
        enc = tok(texts, padding=True, return_tensors="pt")
        return float((model(**enc).logits.argmax(-1) == torch.tensor(labels)).float().mean())

    def factory():
        cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=16, num_labels=2)
        return transformers.BertForSequenceClassification(cfg)

    res = train_model(factory, examples, accuracy, steps=30, lr=5e-3, batch_size=8, seed=0, collate_fn=collate,
                      output_dir=tmp_path, processors=[tok], metric_name="train_accuracy")
    assert np.mean(res.loss_curve[-5:]) < np.mean(res.loss_curve[:5])
    assert set(res.metrics) == {"train_accuracy"}
    model = transformers.AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    assert (tmp_path / "tokenizer_config.json").is_file()
    with torch.no_grad():
        assert accuracy(model) == res.metrics["train_accuracy"]


def test_bad_params_and_non_finite_loss(blobs):
    with pytest.raises(ParamsError, match="exactly one of steps"):
        train_model(blobs["factory"], blobs["train"], steps=5, epochs=1)
    with pytest.raises(ParamsError, match="exactly one of steps"):
        train_model(blobs["factory"], blobs["train"])
    with pytest.raises(ParamsError, match="steps must be a positive integer"):
        train_model(blobs["factory"], blobs["train"], steps=0)
    with pytest.raises(ParamsError, match="train_data is empty"):
        train_model(blobs["factory"], [], steps=1)
    with pytest.raises(TrainingError, match="loss is nan at step 1"):
        train_model(blobs["factory"], blobs["train"], steps=3,
                    loss_fn=lambda m, b: m(b[0]).logits.sum() * float("nan"))


# ------------------------------------------------------------------------------------------------ lr schedule

def test_cosine_lr_by_hand():
    from radaudit.models.train import cosine_lr

    assert cosine_lr(0.002, 0, 800) == 0.002
    assert cosine_lr(0.002, 400, 800) == pytest.approx(0.001)          # (1 + cos(pi/2)) / 2 = 1/2
    assert cosine_lr(0.002, 200, 800) == pytest.approx(0.002 * (1 + 2 ** -0.5) / 2)  # cos(pi/4) = 1/sqrt(2)
    assert cosine_lr(0.002, 800, 800) == pytest.approx(0.0, abs=1e-18)
    with pytest.raises(ParamsError, match="planned"):
        cosine_lr(0.002, 1, 0)


def test_a_cosine_schedule_decays_the_optimizer_rate_and_is_recorded(blobs, tmp_path):
    seen = []

    def loss_fn(model, batch):  # the default loss, recording the rate the optimizer holds at each step
        from radaudit.models.train import default_loss
        seen.append(opt_ref[0].param_groups[0]["lr"] if opt_ref else None)
        return default_loss(model, batch)

    opt_ref: list = []
    orig = torch.optim.AdamW

    class Spy(orig):  # keeps a handle on the optimizer train_model builds
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            opt_ref.append(self)

    torch.optim.AdamW = Spy
    try:
        res = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], steps=8, lr=1e-2, seed=0,
                          loss_fn=loss_fn, lr_schedule="cosine", output_dir=tmp_path)
    finally:
        torch.optim.AdamW = orig
    # the rate used at step k (1-based) is cosine_lr(lr, k - 1, 8): 1e-2 first, then decaying, never 0 in use
    from radaudit.models.train import cosine_lr
    assert seen == pytest.approx([cosine_lr(1e-2, k, 8) for k in range(8)])
    assert seen[0] == 1e-2 and all(a > b for a, b in zip(seen, seen[1:]))
    assert res.log["lr_schedule"] == "cosine"
    assert "cosine lr" in (tmp_path / "README.md").read_text()
    constant = train_model(blobs["factory"], blobs["train"], blobs["eval_fn"], steps=8, lr=1e-2, seed=0)
    assert "lr_schedule" not in constant.log  # the default's record is as before
    with pytest.raises(ParamsError, match="lr_schedule"):
        train_model(blobs["factory"], blobs["train"], steps=2, lr_schedule="linear")


def test_length_grouped_batches_group_by_length_cover_every_example_and_follow_the_seed():
    # 12 examples, lengths 1..12 in a scrambled order; batch 2, pools of 3 batches (6 examples)
    lengths = [7, 1, 12, 4, 9, 2, 11, 5, 3, 10, 6, 8]
    sampler = LengthGroupedBatches(lengths, batch_size=2, pool=3)
    assert len(sampler) == 6
    torch.manual_seed(0)
    epoch = list(sampler)
    assert len(epoch) == 6 and sorted(i for b in epoch for i in b) == list(range(12))
    # each pool of 6 is sorted before it is cut: within a pool, every batch's lengths lie below the next batch's,
    # so the 6 batches split into two pools of 3 batches whose length ranges do not overlap inside a pool
    pools = {}
    torch.manual_seed(0)
    perm = torch.randperm(12).tolist()  # the sampler's first draw
    for k, chunk in enumerate((perm[:6], perm[6:])):
        ranked = sorted(chunk, key=lambda i: lengths[i])
        pools[k] = [ranked[j:j + 2] for j in range(0, 6, 2)]
    assert sorted(map(sorted, epoch)) == sorted(sorted(b) for p in pools.values() for b in p)
    # same seed, same batches; another seed, other batches
    torch.manual_seed(0)
    assert list(sampler) == epoch
    torch.manual_seed(1)
    assert list(sampler) != epoch
    # a pool of the whole set gives the least padding possible: consecutive lengths in each batch
    whole = LengthGroupedBatches(lengths, batch_size=2, pool=6)
    torch.manual_seed(0)
    assert sorted(sorted(lengths[i] for i in b) for b in whole) == [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10], [11, 12]]
    # a last, partial batch
    assert len(LengthGroupedBatches(lengths[:5], batch_size=2)) == 3
    with pytest.raises(ParamsError, match="no lengths"):
        LengthGroupedBatches([], batch_size=2)
    with pytest.raises(ParamsError, match="batch_size"):
        LengthGroupedBatches(lengths, batch_size=0)


def test_length_grouped_batches_pad_less_than_random_batches():
    # lengths like the report corpus's (long tail): the grouped batches' padding share is far below random batches'
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(4.0, 0.5, 2000).astype(int), 5, 160).tolist()

    def padding_share(batches):
        useful = sum(lengths[i] for b in batches for i in b)
        padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
        return 1 - useful / padded

    torch.manual_seed(0)
    grouped = padding_share(list(LengthGroupedBatches(lengths, batch_size=32)))
    order = torch.randperm(len(lengths)).tolist()
    random_batches = [order[j:j + 32] for j in range(0, len(order), 32)]
    assert padding_share(random_batches) > 0.5 and grouped < 0.2  # measured: 0.57 and 0.14
