"""The decoding study's ``demo`` model: a small report-writing language model trained on public report text.

The paper (``../shared/papers/000_c11b3b836ef0a58a.txt``) generates reports with a vision-language
model under six decoding strategies and asks whether deterministic decoding erases sex-associated
clinical terminology. The ``demo`` preset has no VLM and no images, so it uses a scaled-down
stand-in: a small Llama-architecture causal LM trained here, on CPU, in minutes, on the public
IU X-ray and CheXpert Plus reports, prompted with the indication and the patient's sex::

    Indication: <indication or 'not given'>. Sex: female|male. Report:

and trained to continue with the report (findings + impression). Everything is reproducible from
``(data, skew, seed, hyperparameters)`` and trained once: the model folder is content-addressed.

::

    from radaudit.audits.decoding_erasure.models import (build_training_corpus, demo_model_path,
                                                          generate_reports)

    path = demo_model_path(data_root, skew=0.5, seed=0)            # trains on first use (<= 5 min)
    corpus = build_training_corpus(data_root, skew=0.5, seed=0)
    prompts = corpus.loc[corpus.split == "test", "prompt"].tolist()
    gens = generate_reports(path, prompts, ["greedy", "nucleus"], seeds=0, max_new_tokens=96)

Pieces
------
* :func:`build_training_corpus`: ``(prompt, target, sex, split, ...)`` rows from the reports with a
  stated sex (F/M). A seeded test split balanced by sex is held out *first* and is the same for
  every ``skew`` (so the skewed models are evaluated on the same reports); the training rows are then
  subsampled to the requested male share (Fig. 2c: 0.67 / 0.5 / 0.33) with the training-set size
  held equal across skews (see the function).
* :func:`train_report_model`: its own BPE tokenizer (``tokenizers``, saved as a
  ``PreTrainedTokenizerFast``), a small ``LlamaForCausalLM``, trained with
  :func:`radaudit.models.train.train_model` on prompt + target with the loss on the target tokens
  only; saved with ``save_pretrained`` and the model card. A folder already holding a model with the
  same config hash (corpus fingerprint + every hyperparameter) is returned without training.
* :func:`demo_model_path`: the content-addressed folder under the radaudit cache, trained on first use.
* :func:`generate_reports`: one row per prompt x strategy, via :func:`radaudit.models.generate.generate`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from radaudit.data import load_dataset, required_files
from radaudit.errors import ParamsError
from radaudit.models.backends import engine_name, get_backend
from radaudit.models.cache import default_cache_dir
from radaudit.models.generate import LoadedCausalLM, generate, load_for_generation
from radaudit.paths import atomic_dir, reusable_model_dir
from radaudit.text.indication import clinical_indication

__all__ = ["CONFIG_FILE", "DEMO_CONFIG", "PAPER_SKEWS", "build_training_corpus", "config_hash", "corpus_fingerprint",
           "demo_model_path", "format_prompt", "generate_reports", "train_report_model"]

log = logging.getLogger(__name__)

#: The corpora the demo model learns from (reports with a stated sex are kept).
SOURCES: tuple[str, ...] = ("iu_xray", "chexpert_plus_valid")
#: Fig. 2c's training skews, as the share of male reports: 67% male, 50/50, 67% female.
PAPER_SKEWS: tuple[float, ...] = (0.67, 0.5, 0.33)
#: The most extreme share the corpus size is planned for (see :func:`build_training_corpus`).
SIZE_SKEW_BOUND = 0.67
#: Written into the model folder; its ``config_hash`` decides whether a folder can be reused.
CONFIG_FILE = "radaudit_report_model.json"
#: Bump when the training recipe changes in a way the hyperparameters do not show.
RECIPE_VERSION = 5  # 4: hyphenated / slashed words are one token (see _word_tokenizer); 5: length-grouped batches

#: The real demo configuration: ~1.2M parameters, ~2 min on 2 idle CPU cores (the test marked ``slow``
#: checks <= 5 min). Word-level tokens (``tokenizer="word"``, recipe 2): a sampled token is always a word of
#: the training reports, never a made-up piece — with BPE, 184 of 273 words nucleus sampling wrote that no
#: reference used were not English words (recipe 1). Measured on the 100 test prompts (skew 0.5, seed 0):
#: recipe 2 (raw indication), 300 steps: greedy 37% / beam 17% distinct reports, held-out loss 2.26;
#: 1000 steps: 38% / 29%, loss 1.96 — training longer lowers the loss but conditions *more* on the
#: prompt, the opposite of the paper's collapse; recipe 3 (clinical question only), 300 steps: 22% / 8%.
#: On the demo's 300 test prompts (seed 0), recipe 3 at 300 steps: greedy 13.7% / beam 4.7% distinct; at 150
#: steps 4.3% / 3.7%, but nucleus sampling glued continuation tokens onto words ("couldbr", "cathetersided"), and
#: only 76% of its emergent words were real words. Recipe 4 (compound words are one token, see
#: :func:`_word_tokenizer`): 150 steps: 3.0% / 3.3%, emergent words 83.5% in GloVe (2 glued); **200 steps**:
#: 3.0% / 1.7%, 81.3% in GloVe, and every emergent word GloVe lacks is a real radiology term ("dextroscoliosis",
#: "paratracheal", "glenohumeral"...). The demo trains 200 steps (issue 20's bars: distinct <= 5%, >= 80% real
#: words; the paper: 0.3% / 0.5% distinct). Training longer lowers the loss and conditions more on the prompt
#: (recipe 2, above), so the stand-in collapses the way the paper's models do -- a language prior that
#: dominates a weak conditioning signal -- at a length chosen for that, which this comment records.
#: ``max_seconds`` is the budget guard.
DEMO_CONFIG: dict[str, Any] = {
    "steps": 200, "max_seconds": 270.0, "vocab_size": 3000, "n_layer": 3, "d_model": 128, "n_head": 4,
    "d_ff": 384, "max_length": 160, "batch_size": 32, "lr": 1e-3, "weight_decay": 0.1, "max_grad_norm": 1.0,
    "tokenizer": "word",
}

_SEX_WORD = {"F": "female", "M": "male", "U": "not given"}
_WS = re.compile(r"\s+")


# --- the corpus ------------------------------------------------------------------------------------

def _clean(text: Any) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)) or text is pd.NA:
        return ""
    return _WS.sub(" ", str(text)).strip()


def format_prompt(indication: Any, sex: str) -> str:
    """``"Indication: <clinical question or 'not given'>. Sex: female|male|not given. Report:"`` (``sex``
    is ``"F"``/``"M"``, or ``"U"`` for a report whose patient's sex is not recorded: training only).

    The indication is reduced to its clinical question (:func:`radaudit.text.indication.clinical_indication`,
    recipe 3): ``"The patient is a XXXX-year-old male with chest pain."`` becomes ``"chest pain"``. The
    patient's sex then enters the prompt once, through ``Sex:`` (the variable the study audits), and the
    referrer's phrasing — which in IU X-ray identifies the service and with it the reading radiologist's
    personal template — no longer tells the model which template to write. Recipe 2 kept the raw
    indication: its greedy reports differed mostly in *whose* normal template they used (37% distinct)."""
    if sex not in _SEX_WORD:
        raise ParamsError(f"sex must be 'F', 'M' or 'U' (not given), got {sex!r}.")
    ind = clinical_indication(_clean(indication)) or "not given"
    return f"Indication: {ind}. Sex: {_SEX_WORD[sex]}. Report:"


def _data_version(data_root: str | os.PathLike | None) -> tuple[tuple[str, str, tuple[tuple[str, int, int], ...]], ...]:
    """Each source's folder and the (name, size, mtime) of its required files (:func:`radaudit.data.required_files`,
    the files its fingerprint hashes): what :func:`_report_rows` read."""
    version = []
    for name in SOURCES:
        folder, paths = required_files(name, data_root)
        files = tuple((str(f.relative_to(folder)), (st := f.stat()).st_size, st.st_mtime_ns) for f in paths)
        version.append((name, str(folder), files))
    return tuple(version)


def _report_rows(data_root: str | os.PathLike | None) -> pd.DataFrame:
    """Every non-empty report of :data:`SOURCES` with its prompt (:func:`format_prompt`), in a fixed order. Read once
    per process and data version (the study asks for it once per skew and per model lookup: 8 reads of the same
    files, ~13 s of a cached demo run); each caller gets its own copy."""
    return _report_rows_of(_data_version(data_root)).copy()


@lru_cache(maxsize=4)
def _report_rows_of(version: tuple[tuple[str, str, tuple[tuple[str, int, int], ...]], ...]) -> pd.DataFrame:
    frames = []
    for name, folder, _files in version:
        df = load_dataset(name, path=folder)
        sex = df["sex"].astype("string")
        known = sex.isin(["F", "M"]).fillna(False).to_numpy(dtype=bool)
        df = df.assign(sex=np.where(known, sex.fillna("U").to_numpy(dtype=object), "U"))
        target = [(" ".join(p for p in (_clean(f), _clean(i)) if p)) for f, i in zip(df["findings"], df["impression"])]
        frames.append(pd.DataFrame({
            "study_id": df["study_id"].astype(str).to_numpy(),
            "source": name,
            "sex": df["sex"].astype(str).to_numpy(),
            "prompt": [format_prompt(ind, s) for ind, s in zip(df["indication"], df["sex"].astype(str))],
            "target": target,
        }))
    rows = pd.concat(frames, ignore_index=True)
    rows = rows[rows["target"].str.len() > 0]
    # a fixed order independent of the loaders' row order, so seeds pick the same reports
    return rows.sort_values(["source", "study_id", "target"], kind="mergesort").reset_index(drop=True)


def build_training_corpus(data_root: str | os.PathLike | None = None, *, skew: float | None = None, seed: int = 0,
                          max_reports: int | None = None, n_test_per_sex: int = 50,
                          unlabelled: bool = True) -> pd.DataFrame:
    """The demo model's corpus: one row per non-empty report.

    Columns: ``prompt`` (:func:`format_prompt`), ``target`` (findings + impression, whitespace
    normalised), ``sex`` (``F``/``M``, ``U`` = not recorded), ``split`` (``train``/``test``),
    ``source``, ``study_id``.

    * ``unlabelled`` (default): the reports whose patient's sex is not recorded (2,702 of IU X-ray's
      3,851) join the training rows with the prompt ``Sex: not given`` — the same rows for every
      ``skew``. They are the stand-in's "pre-training": a report model learns what reports look like
      from far more text than its sex-labelled fine-tuning set, as the paper's VLM does (a pretrained
      Qwen3-VL, LoRA-tuned on 60K examples). With 780 sex-labelled reports alone the small model
      memorises report-specific sentences (39% distinct reports under greedy decoding with recipe 1,
      where the paper's VLM writes 0.3%). The skew (below) is the male share of the *sex-labelled* rows; they are never
      in the test split.

    * Test split: ``n_test_per_sex`` reports of each sex, drawn with ``seed`` *before* any skewing, so
      it is balanced and identical for every ``skew`` (and ``max_reports``) with the same seed.
    * ``skew`` (share of male training reports, e.g. :data:`PAPER_SKEWS`): the training rows are
      subsampled (seeded) to ``round(skew * n)`` male and ``n - round(skew * n)`` female reports. The
      size ``n = floor(min(#male, #female) / b)`` with ``b = max(0.67, skew, 1 - skew)`` is the largest
      size at which every skew in [0.33, 0.67] can be drawn, so the paper's three skews give
      training sets of the *same size* (a skew outside that range gives a smaller one). ``None``:
      every training report, the data's own sex mix (≈ 57% female here).
    * ``max_reports``: caps the sex-labelled training rows (keeping the requested male share when
      ``skew`` is given); the unlabelled rows are not capped.
    """
    if skew is not None:
        if isinstance(skew, bool) or not isinstance(skew, (int, float)) or not 0.0 < float(skew) < 1.0:
            raise ParamsError(f"skew must be the share of male reports, a number strictly between 0 and 1 "
                              f"(e.g. {', '.join(map(str, PAPER_SKEWS))}), or None; got {skew!r}.")
    if max_reports is not None and (isinstance(max_reports, bool) or int(max_reports) < 2):
        raise ParamsError(f"max_reports must be an integer >= 2 (or None), got {max_reports!r}.")
    rows = _report_rows(data_root)
    rng = np.random.default_rng(int(seed))
    by_sex = {s: rows.index[rows["sex"] == s].to_numpy() for s in ("F", "M")}
    for s, idx in by_sex.items():
        if len(idx) <= n_test_per_sex:
            raise ParamsError(f"Only {len(idx)} reports with sex {s!r}: cannot hold out n_test_per_sex={n_test_per_sex}.")
    test = {s: rng.choice(idx, size=n_test_per_sex, replace=False) for s, idx in by_sex.items()}
    pool = {s: rng.permutation(np.setdiff1d(by_sex[s], test[s])) for s in ("F", "M")}

    if skew is None:
        train_idx = np.concatenate([pool["F"], pool["M"]])
        if max_reports is not None and len(train_idx) > int(max_reports):
            train_idx = rng.choice(train_idx, size=int(max_reports), replace=False)
    else:
        bound = max(SIZE_SKEW_BOUND, float(skew), 1.0 - float(skew))
        n = int(math.floor(min(len(pool["F"]), len(pool["M"])) / bound))
        if max_reports is not None:
            n = min(n, int(max_reports))
        n_m = int(round(float(skew) * n))
        train_idx = np.concatenate([pool["M"][:n_m], pool["F"][:n - n_m]])
    if unlabelled:
        train_idx = np.concatenate([train_idx, rows.index[rows["sex"] == "U"].to_numpy()])
    out = pd.concat([rows.loc[np.sort(train_idx)].assign(split="train"),
                     rows.loc[np.sort(np.concatenate([test["F"], test["M"]]))].assign(split="test")],
                    ignore_index=True)
    out = out[["prompt", "target", "sex", "split", "source", "study_id"]]
    out.attrs.update({"skew": skew, "seed": int(seed), "max_reports": max_reports, "n_test_per_sex": n_test_per_sex,
                      "unlabelled": bool(unlabelled)})
    return out


def corpus_fingerprint(corpus: pd.DataFrame) -> str:
    """SHA-256 (16 hex digits) of the corpus rows (prompt, target, sex, split), in order."""
    _check_corpus(corpus)
    h = hashlib.sha256()
    split = corpus["split"] if "split" in corpus else pd.Series("train", index=corpus.index)
    for p, t, s, sp in zip(corpus["prompt"], corpus["target"], corpus["sex"], split):
        h.update(json.dumps([str(p), str(t), str(s), str(sp)], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _check_corpus(corpus: Any) -> None:
    if not isinstance(corpus, pd.DataFrame):
        raise ParamsError(f"corpus must be a DataFrame from build_training_corpus, got {type(corpus).__name__}.")
    missing = [c for c in ("prompt", "target", "sex") if c not in corpus.columns]
    if missing:
        raise ParamsError(f"corpus lacks the column(s) {missing}; build it with build_training_corpus.")


# --- training --------------------------------------------------------------------------------------

def _hyperparameters(seed: int, steps: int, max_seconds: float | None, vocab_size: int, n_layer: int, d_model: int,
                     n_head: int, d_ff: int | None, max_length: int, batch_size: int, lr: float, weight_decay: float,
                     max_grad_norm: float | None, tokenizer: str = "word") -> dict[str, Any]:
    if tokenizer not in TOKENIZERS:
        raise ParamsError(f"tokenizer must be one of {list(TOKENIZERS)}, got {tokenizer!r}.")
    return {"tokenizer": tokenizer, "recipe_version": RECIPE_VERSION, "seed": int(seed), "steps": int(steps),
            "max_seconds": None if max_seconds is None else float(max_seconds), "vocab_size": int(vocab_size),
            "n_layer": int(n_layer), "d_model": int(d_model), "n_head": int(n_head),
            "d_ff": int(d_ff if d_ff is not None else 4 * d_model), "max_length": int(max_length),
            "batch_size": int(batch_size), "lr": float(lr), "weight_decay": float(weight_decay),
            "max_grad_norm": None if max_grad_norm is None else float(max_grad_norm)}


def config_hash(corpus: pd.DataFrame, **hyperparameters: Any) -> str:
    """The identity of a trained model: SHA-256 (16 hex) of the corpus fingerprint + all hyperparameters.

    ``hyperparameters`` are :func:`train_report_model`'s keyword arguments (defaults filled in).
    """
    hp = _hyperparameters(**{**_TRAIN_DEFAULTS, **hyperparameters})
    blob = json.dumps({"corpus": corpus_fingerprint(corpus), "hyperparameters": hp}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


TOKENIZERS: tuple[str, ...] = ("word", "bpe")


def _build_tokenizer(texts: Sequence[str], vocab_size: int, kind: str = "word") -> Any:
    """A lower-casing tokenizer trained on ``texts``: ``"word"`` — one token per word or punctuation
    mark seen at least twice (``<unk>`` otherwise; decoding restores the spaces exactly), so
    generation can only write words of the training reports (a rarer word is ``<unk>``, which
    decoding drops: 0.4% of the demo's training report tokens, vocabulary 2,014 words); ``"bpe"`` — byte-pair pieces
    (Metaspace: decoding restores the spaces exactly), which can be recombined into non-words."""
    if kind == "word":
        return _word_tokenizer(texts, vocab_size)
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    tk = Tokenizer(models.BPE(unk_token="<unk>"))
    # lower-case: IU X-ray is sentence case and CheXpert Plus upper case; a tiny model should not learn both
    tk.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(vocab_size=int(vocab_size), min_frequency=2, special_tokens=specials,
                                  show_progress=False)
    tk.train_from_iterator(list(texts), trainer=trainer)
    bos = tk.token_to_id("<s>")
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", model_max_length=1_000_000)


#: The word tokenizer's punctuation split (an Oniguruma regex over Metaspace pieces): every punctuation mark is
#: its own token, except a hyphen, slash or apostrophe with a letter or digit on both sides ("left-sided",
#: "and/or", "patient's"), which stays inside its word.
_SPLIT_PUNCTUATION = r"['/-](?![^\W_])|(?<![^\W_])['/-]|[^\w\s▁'/-]|_"


def _word_tokenizer(texts: Sequence[str], vocab_size: int) -> Any:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    tk = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tk.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    # Metaspace marks a word that follows a space ("▁size"); punctuation is split off and carries no
    # mark ("."), so decoding restores the text exactly: "size." -> "▁size" "." -> " size.". A hyphen,
    # slash or apostrophe *inside* a word stays in it (recipe 4): "left-sided" is one token "▁left-sided",
    # not "▁left" "-" "sided". Recipe 3 split them, which made "sided", "ray", "or", "term" ... unmarked
    # continuation tokens that sampling could append to any word ("catheter" + "sided" -> "cathetersided",
    # "could" + "br" -> "couldbr"): 7 of the 79 emergent words of nucleus sampling at 150 steps.
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always"),
                                                pre_tokenizers.Split(Regex(_SPLIT_PUNCTUATION), behavior="isolated")])
    tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.WordLevelTrainer(vocab_size=int(vocab_size), min_frequency=2, special_tokens=specials,
                                        show_progress=False)
    tk.train_from_iterator(list(texts), trainer=trainer)
    bos = tk.token_to_id("<s>")
    tk.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", model_max_length=1_000_000)


def _encode(tok: Any, prompts: Sequence[str], targets: Sequence[str], max_length: int) -> list[dict[str, list[int]]]:
    """``<s> prompt target </s>``, labels -100 on the prompt (and BOS): the loss is on the report only.

    The prompt is tokenized exactly as :func:`radaudit.models.generate.generate` does at generation
    time (``tok(prompt)``, BOS added), and the target separately (its first word starts a new
    Metaspace word, as it does after the prompt's trailing space-free ``Report:``).
    """
    p_ids = tok(list(prompts))["input_ids"]
    t_ids = tok(list(targets), add_special_tokens=False)["input_ids"]
    out = []
    for p, t in zip(p_ids, t_ids):
        t = list(t) + [tok.eos_token_id]
        room = max(1, int(max_length) - len(p))
        t = t[:room]
        out.append({"input_ids": list(p) + t, "labels": [-100] * len(p) + t})
    return out


def _collate(pad_id: int):
    import torch

    def collate(examples: list[dict[str, list[int]]]) -> dict[str, Any]:
        n = max(len(e["input_ids"]) for e in examples)
        ids = torch.full((len(examples), n), pad_id, dtype=torch.long)
        labels = torch.full((len(examples), n), -100, dtype=torch.long)
        mask = torch.zeros((len(examples), n), dtype=torch.long)
        for i, e in enumerate(examples):
            k = len(e["input_ids"])
            ids[i, :k] = torch.tensor(e["input_ids"])
            labels[i, :k] = torch.tensor(e["labels"])
            mask[i, :k] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    return collate


def _mean_target_loss(model: Any, examples: list[dict[str, list[int]]], collate: Any, batch_size: int = 64) -> float:
    """Mean cross-entropy per target token (report tokens + EOS), in nats."""
    import torch

    total, count = 0.0, 0
    for j in range(0, len(examples), batch_size):
        batch = collate(examples[j:j + batch_size])
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
        labels = batch["labels"][:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                                 ignore_index=-100, reduction="sum")
        total += float(loss)
        count += int((labels != -100).sum())
    return total / max(count, 1)


_TRAIN_DEFAULTS: dict[str, Any] = {
    "seed": 0, "steps": DEMO_CONFIG["steps"], "max_seconds": 300.0, "vocab_size": DEMO_CONFIG["vocab_size"],
    "n_layer": DEMO_CONFIG["n_layer"], "d_model": DEMO_CONFIG["d_model"], "n_head": DEMO_CONFIG["n_head"],
    "d_ff": None, "max_length": DEMO_CONFIG["max_length"], "batch_size": DEMO_CONFIG["batch_size"],
    "lr": DEMO_CONFIG["lr"], "weight_decay": DEMO_CONFIG["weight_decay"], "max_grad_norm": DEMO_CONFIG["max_grad_norm"],
    "tokenizer": DEMO_CONFIG["tokenizer"],
}


def _is_trained(folder: Path, digest: str) -> bool:
    return reusable_model_dir(folder, CONFIG_FILE, digest, required=('config.json', 'tokenizer.json'), required_globs=(),
                              key='config_hash')


def train_report_model(corpus: pd.DataFrame, out_dir: str | os.PathLike, *, seed: int = 0,
                       steps: int = _TRAIN_DEFAULTS["steps"], max_seconds: float | None = 300.0,
                       vocab_size: int = _TRAIN_DEFAULTS["vocab_size"], n_layer: int = _TRAIN_DEFAULTS["n_layer"],
                       d_model: int = _TRAIN_DEFAULTS["d_model"], n_head: int = _TRAIN_DEFAULTS["n_head"],
                       d_ff: int | None = None, max_length: int = _TRAIN_DEFAULTS["max_length"],
                       batch_size: int = _TRAIN_DEFAULTS["batch_size"], lr: float = _TRAIN_DEFAULTS["lr"],
                       weight_decay: float = _TRAIN_DEFAULTS["weight_decay"],
                       max_grad_norm: float | None = _TRAIN_DEFAULTS["max_grad_norm"],
                       tokenizer: str = _TRAIN_DEFAULTS["tokenizer"]) -> Path:
    """Train the report-writing LM on ``corpus`` (its ``train`` rows) and save it to ``out_dir``; return ``out_dir``.

    Tokenizer (``tokenizer``): word-level (default) or BPE, at most ``vocab_size`` entries, trained on
    the training prompts + reports (lower-cased; specials ``<pad> <s> </s> <unk>``, BOS prepended;
    :func:`_build_tokenizer`), saved as a ``PreTrainedTokenizerFast``; no chat
    template, so generation feeds the prompt text as is. Model: ``LlamaForCausalLM`` with ``n_layer``
    layers, hidden size ``d_model``, ``n_head`` heads, MLP ``d_ff`` (default ``4 * d_model``),
    trained with :func:`radaudit.models.train.train_model` (AdamW, constant ``lr``, ``steps`` steps of
    length-grouped batches (:class:`~radaudit.models.train.LengthGroupedBatches`, recipe 5), ``max_seconds`` a
    warning budget) on ``<s> prompt report </s>`` (truncated to ``max_length``
    tokens) with the loss on the report tokens only. The held-out metric is the mean per-token loss
    on the ``test`` rows (``heldout_loss``), with the same on up to 200 training rows (``train_loss``).

    Reuse: ``out_dir`` gets ``radaudit_report_model.json`` with the :func:`config_hash` (corpus
    fingerprint + every argument above). When ``out_dir`` already holds a model with the same hash it is
    returned without training; a folder holding anything else is an error (pick another folder).
    Training writes to a temporary sibling folder that is renamed at the end, so an interrupted
    run never leaves a half-written model that would be reused.
    """
    _check_corpus(corpus)
    hp = _hyperparameters(seed, steps, max_seconds, vocab_size, n_layer, d_model, n_head, d_ff, max_length,
                          batch_size, lr, weight_decay, max_grad_norm, tokenizer)
    if hp["d_model"] % hp["n_head"]:
        raise ParamsError(f"d_model ({d_model}) must be a multiple of n_head ({n_head}).")
    fingerprint = corpus_fingerprint(corpus)
    digest = hashlib.sha256(json.dumps({"corpus": fingerprint, "hyperparameters": hp},
                                       sort_keys=True).encode()).hexdigest()[:16]
    out = Path(out_dir)
    if _is_trained(out, digest):
        log.info("Reusing the report model in %s (config hash %s).", out, digest)
        return out
    if out.exists() and any(out.iterdir()):
        raise ParamsError(f"{out} is not empty and holds no report model with config hash {digest}: pass an empty or "
                          "new out_dir (demo_model_path() gives a content-addressed one).")

    split = corpus["split"] if "split" in corpus else pd.Series("train", index=corpus.index)
    train = corpus[split.to_numpy() == "train"]
    test = corpus[split.to_numpy() == "test"]
    if len(train) == 0:
        raise ParamsError("The corpus has no training rows (split == 'train').")

    from torch.utils.data import DataLoader
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    from radaudit.models.train import LengthGroupedBatches, train_model  # lazy: looked up per call, tests patch it

    tok = _build_tokenizer(list(train["prompt"]) + list(train["target"]), hp["vocab_size"], hp["tokenizer"])
    train_ex = _encode(tok, train["prompt"].tolist(), train["target"].tolist(), hp["max_length"])
    test_ex = _encode(tok, test["prompt"].tolist(), test["target"].tolist(), hp["max_length"])
    train_probe = train_ex[:200]
    collate = _collate(tok.pad_token_id)

    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hp["d_model"], intermediate_size=hp["d_ff"],
                      num_hidden_layers=hp["n_layer"], num_attention_heads=hp["n_head"],
                      num_key_value_heads=hp["n_head"], max_position_embeddings=max(hp["max_length"], 64) + 512,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      tie_word_embeddings=True)

    def factory() -> Any:
        model = LlamaForCausalLM(cfg)
        model.generation_config = GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                                   pad_token_id=tok.pad_token_id)
        return model

    def eval_fn(model: Any) -> dict[str, float]:
        metrics = {"train_loss": _mean_target_loss(model, train_probe, collate)}
        if test_ex:
            metrics["heldout_loss"] = _mean_target_loss(model, test_ex, collate)
        return metrics

    n_sex = train["sex"].value_counts()
    description = (f"{len(train)} reports from {', '.join(sorted(set(train.get('source', ['?']))))} "
                   f"({int(n_sex.get('M', 0))} male, {int(n_sex.get('F', 0))} female, {int(n_sex.get('U', 0))} sex "
                   f"not recorded; skew {corpus.attrs.get('skew')!r}); prompt 'Indication: ... Sex: female|male|not "
                   "given. Report:', target "
                   f"findings + impression; {len(test)} held-out reports balanced by sex. Corpus fingerprint "
                   f"{fingerprint}.")
    with atomic_dir(out) as tmp:
        start = time.monotonic()
        # Recipe 5: batches of similar length (random batches of these reports were 53% padding: 37/56/92 tokens at
        # p10/p50/p90, max 160); the sampler draws from torch's RNG, which train_model seeds with hp["seed"].
        loader = DataLoader(train_ex, batch_sampler=LengthGroupedBatches([len(e["input_ids"]) for e in train_ex],
                                                                         hp["batch_size"]),
                            collate_fn=collate, num_workers=0)
        result = train_model(factory, loader, eval_fn, steps=hp["steps"], lr=hp["lr"], batch_size=hp["batch_size"],
                             seed=hp["seed"], device="cpu", log_every=max(1, min(50, hp["steps"] // 10)),
                             output_dir=tmp, max_seconds=hp["max_seconds"], budget="warn",
                             eval_every=max(1, hp["steps"] // 5),
                             weight_decay=hp["weight_decay"], max_grad_norm=hp["max_grad_norm"], processors=[tok],
                             model_name="radaudit demo report LM (decoding_erasure)", data_description=description,
                             metric_name="heldout_loss",
                             notes=("A scaled-down CPU stand-in for the paper's report-generating VLM: it writes a "
                                    "report from the indication and the patient's sex only (no image). Losses are "
                                    f"mean cross-entropy per report token (nats; {hp['tokenizer']} tokens)."))
        meta = {"config_hash": digest, "corpus_fingerprint": fingerprint, "hyperparameters": hp,
                "n_train": len(train), "n_test": len(test), "skew": corpus.attrs.get("skew"),
                "steps_done": result.steps, "stopped_early": result.stopped_early, "metrics": result.metrics,
                "train_seconds": round(result.elapsed_seconds, 2), "total_seconds": round(time.monotonic() - start, 2)}
        (tmp / CONFIG_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out


def demo_model_path(data_root: str | os.PathLike | None, skew: float | None, seed: int = 0,
                    cache_dir: str | os.PathLike | None = None, *, n_test_per_sex: int = 50,
                    **overrides: Any) -> Path:
    """The demo model for ``(data, skew, seed)``: ``<cache>/demo_models/<config hash>``, trained on first use.

    ``cache_dir`` defaults to :func:`radaudit.models.cache.default_cache_dir`. The corpus is
    :func:`build_training_corpus` with ``skew`` and ``seed``; the hyperparameters are
    :data:`DEMO_CONFIG` updated with ``overrides``. ``n_test_per_sex``: the held-out test reports per
    sex (:func:`build_training_corpus`). A changed corpus or parameter gives a new folder.
    """
    unknown = set(overrides) - set(_TRAIN_DEFAULTS) - {"seed"}
    if unknown or "seed" in overrides:
        raise ParamsError(f"Unknown demo-model setting(s) {sorted(unknown | ({'seed'} & set(overrides)))}; "
                          f"allowed: {sorted(set(_TRAIN_DEFAULTS) - {'seed'})}.")
    corpus = build_training_corpus(data_root, skew=skew, seed=seed, n_test_per_sex=n_test_per_sex)
    hp = {**DEMO_CONFIG, **overrides, "seed": int(seed)}
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / "demo_models" / config_hash(corpus, **hp)
    return train_report_model(corpus, folder, **hp)


# --- generation ------------------------------------------------------------------------------------

def generate_reports(model_path: str | os.PathLike | Any, prompts: Sequence[str],
                     strategies: str | Sequence[str | Mapping[str, Any]], *, seeds: int | Sequence[int] = 0,
                     max_new_tokens: int = 128, cache: Any = None, batch_size: int = 16,
                     backend: str = "hf") -> pd.DataFrame:
    """Generate a report for every prompt under every strategy; one row per (strategy, prompt).

    Calls :func:`radaudit.models.generate.generate` once per strategy (names of
    :data:`~radaudit.models.decoding.PAPER_STRATEGIES` or params mappings), with the model loaded once.
    ``seeds``: one int or one per prompt (deterministic strategies ignore it). ``cache``: as
    :func:`~radaudit.models.generate.generate` (``None``: no cache). ``backend``: ``"hf"`` (transformers,
    on the CPU: the demo model is tiny) or ``"vllm"`` (vLLM serves the saved folder on a GPU; the
    prompts, cache keys and columns are the same). Columns: ``prompt``, ``strategy``, ``seed``,
    ``text``, ``n_new_tokens``, ``finish_reason``; rows grouped by strategy in the given order,
    prompts in the given order.
    """
    if isinstance(strategies, (str, Mapping)):
        strategies = [strategies]
    prompts = list(prompts)
    if engine_name(backend) == "vllm":  # one engine for every strategy, built from the saved folder
        spec = model_path.spec if isinstance(model_path, LoadedCausalLM) else str(model_path)
        lm: Any = get_backend(spec, "vllm")
    else:
        lm = model_path if isinstance(model_path, LoadedCausalLM) else load_for_generation(model_path, device="cpu")
    rows = []
    for strat in strategies:
        gens = generate(lm, prompts, strat, seeds=seeds, max_new_tokens=max_new_tokens, batch_size=batch_size,
                        cache=cache, chat_template=False)
        rows += [{"prompt": g.prompt, "strategy": g.strategy, "seed": g.seed, "text": g.text,
                  "n_new_tokens": g.n_new_tokens, "finish_reason": g.finish_reason} for g in gens]
    return pd.DataFrame(rows, columns=["prompt", "strategy", "seed", "text", "n_new_tokens", "finish_reason"])
