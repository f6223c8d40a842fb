"""Embedding metrics: BERTScore and sentence-embedding cosine similarity, on transformers ``AutoModel``.

Both take a model spec (:mod:`radaudit.models.resolver`: hub id, local folder or ``pypi:`` spec).
The default is the all-MiniLM-L6-v2 shipped on PyPI (:data:`DEFAULT_TEXT_ENCODER`), which runs
offline on CPU; the ``paper`` presets name hub ids (RadEval's ``bertscore`` uses
``distilbert-base-uncased`` at layer 5, RadCliQ's uses ``distilroberta-base``; ANCHORS.md §6).

BERTScore (Zhang et al. 2020, ICLR, §3, Eq. 1–3)
-------------------------------------------------
For a reference ``x = <x_1..x_k>`` and candidate ``x̂ = <x̂_1..x̂_l>`` with L2-normalised contextual
token embeddings from layer ``num_layers``, weights ``w`` (1, or idf):

    R = Σ_{x_i∈x} w(x_i) max_{x̂_j∈x̂} x_iᵀx̂_j / Σ w(x_i)      P = Σ_{x̂_j∈x̂} w(x̂_j) max_{x_i∈x} x_iᵀx̂_j / Σ w(x̂_j)
    F = 2PR / (P + R)

This reproduces ``bert-score==0.3.13`` (``bert_score.score``) to float precision, detail by detail:

- **Tokens.** Each text is stripped, then tokenised with special tokens (``[CLS] … [SEP]``; for
  GPT-2/RoBERTa tokenizers with ``add_prefix_space=True``), truncated to ``max_length`` (default
  the tokenizer's ``model_max_length``, as bert-score; capped at ``max_position_embeddings`` when
  the tokenizer sets none). Truncated texts are counted in ``details["n_truncated"]`` and warned about.
- **Layer.** The model's first ``num_layers`` transformer blocks are kept, as bert-score does
  (``num_layers=0`` = the embedding layer). Default: bert-score's ``model2layers`` value for the
  model's hub id (:data:`MODEL2LAYERS`, copied from bert-score 0.3.13 for the models the lab's
  presets name; a pypi model uses the hub id it mirrors), else the **last layer**. For the default
  MiniLM (not in bert-score's table) that is layer 6 of 6.
- **Special tokens.** ``[CLS]``/``[SEP]`` get weight 0, so they add nothing to the sums, but, as
  in bert-score, they stay in the similarity matrix and can be the best match of a real token.
- **idf** (``idf=True``): ``idf(t) = log((M+1)/(df(t)+1))`` over the M REFERENCES of the batch
  passed to ``compute`` (duplicates counted, df over token-id sets); a token absent from them gets
  ``log(M+1)``; ``[CLS]``/``[SEP]`` occur in every reference, so their weight is 0.
- **Baseline rescaling** (``baseline=``): ``(s - b) / (1 - b)`` separately for P, R and F (F is
  rescaled, not recomputed), with ``b`` given as ``(p, r, f)`` numbers, as a path to a bert-score
  baseline file (``LAYER,P,R,F`` rows; the row ``num_layers`` is used), or ``"bert-score"``: the
  file the installed bert-score package ships for the model's hub id and ``baseline_lang`` (it
  ships some, e.g. ``en/distilbert-base-uncased.tsv``; nothing is downloaded).
- **Empty texts** (empty or whitespace-only, i.e. only special tokens): bert-score sets P = R = 0
  and F = 0 (with a printed warning); ``empty="zero"`` (default) does the same and counts them in
  ``details["n_empty_reference"/"n_empty_candidate"]`` with a warning; ``empty="nan"`` makes such
  pairs undefined (NaN, counted in ``n_undefined``). With ``idf=True`` a candidate whose tokens all
  occur in every reference has zero total weight: bert-score then gives P = NaN (and R = NaN when
  the same holds for the reference) and F = 0; we do the same, or NaN under ``empty="nan"``.

bert-score's padding artefact (``bert_score_batch``): bert-score groups the pairs in input order in
chunks of its ``batch_size`` (default 64), pads each chunk, and masks padded positions by
*multiplying* similarities by 0. So when a reference is shorter than the longest reference of its
chunk, each candidate token's best match is ``max(best real cosine, 0)`` (recall: the same with the
roles swapped), and a pair's score depends on which pairs share its chunk. This matters only for
tokens whose cosine to every token of the other text is negative: rare for anisotropic models, but
the default MiniLM's last layer is fairly isotropic (on the 200 RadEval pairs it changes one pair, by 1.3e-4 in P).
``bert_score_batch=64`` (default) reproduces bert-score exactly with its default batch size (pass
bert-score's ``batch_size`` if it was changed); ``bert_score_batch=None`` uses the paper's definition
(max over real tokens; a pair's score then never depends on the other pairs). Either way the result
does not depend on our own ``batch_size``: the clipping is computed from the chunk layout, not from
how we batch.

Speed: unique texts are encoded once (and, through ``cache_mb``, once per metric object across calls:
references repeat across strategies, conditions and aspects), the model loaded once per metric object with the
unused top layers dropped. The distinct texts are sorted by token length and cut into batches of neighbours that
minimise padded token-steps plus a per-call cost (:func:`radaudit.metrics.token_match.forward_batches`: at most
``batch_size`` texts; about 2% padding on RadEval's reports; equal-length batches run without an attention mask); pairs
are matched in length-sorted batches with one batched matmul each, padded positions masked
(:func:`radaudit.metrics.token_match.greedy_match`), and results returned in input order. A score does not depend
on the batching beyond float32 rounding (~1e-7).

Sentence-embedding similarity
-----------------------------
``cos(e(ref), e(cand))`` with ``e`` = the attention-masked mean of the last layer's token states
(``[CLS]``/``[SEP]`` included), L2-normalised: the sentence-transformers recipe for
all-MiniLM-L6-v2 (its ``modules.json``: Transformer → mean Pooling → Normalize), with its
``max_seq_length`` (256, from ``sentence_bert_config.json`` when the folder has one) as the
truncation length. ``pooling="cls"`` uses the ``[CLS]`` state instead. An empty text is encoded as
sentence-transformers does (``[CLS][SEP]`` only, a defined vector); ``empty="nan"`` makes such
pairs undefined instead.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from radaudit.errors import ParamsError
from radaudit.metrics.base import MetricResult, MetricSpec, check_pairs, mean_result
from radaudit.metrics.token_match import DEFAULT_CALL_COST, greedy_match, normalised_token_states
from radaudit.models.encoders import (
    TextEncoder,
    batched_token_states,
    encoder_max_length,
    length_batches,  # noqa: F401  (re-exported: radaudit.metrics.embedding.length_batches)
    tokenize_texts,
    warn_truncated,
)
from radaudit.models.resolver import DEFAULT_TEXT_ENCODER, ResolvedModel, load_text_encoder, resolve_model
from radaudit.models.text_memo import encoder_call_parts, memo_call

# The tokenising/batching helpers live in radaudit.models.encoders (shared with TextEncoder).
_tokenize = tokenize_texts
_token_states = batched_token_states
_max_length = encoder_max_length
_warn_truncated = warn_truncated

SPECS: list[MetricSpec] = [
    MetricSpec(
        name="bertscore",
        label="BERTScore F1",
        factory="radaudit.metrics.embedding:BERTScore",
        kind="embedding",
        description="BERTScore F1 (Zhang et al. 2020): greedy cosine matching of contextual token embeddings; "
                    "details: precision, recall, f1. Options: model, num_layers, idf, baseline.",
        requires=("torch", "transformers"),
        extra="models",
    ),
    MetricSpec(
        name="embedding_similarity",
        label="Embedding cosine",
        factory="radaudit.metrics.embedding:EmbeddingSimilarity",
        kind="embedding",
        description="Cosine similarity of mean-pooled, L2-normalised sentence embeddings (sentence-transformers "
                    "recipe). Options: model, pooling.",
        requires=("torch", "transformers"),
        extra="models",
    ),
]

#: bert-score 0.3.13 ``utils.model2layers`` (layer tuned on WMT16), for the hub ids the lab's presets
#: and the radiology metric packages use. A test checks these against the installed bert-score.
MODEL2LAYERS: dict[str, int] = {
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "bert-base-multilingual-cased": 9,
    "roberta-base": 10,
    "roberta-large": 17,
    "roberta-large-mnli": 19,
    "distilroberta-base": 5,
    "distilbert-base-uncased": 5,
    "distilbert-base-multilingual-cased": 5,
    "xlm-roberta-base": 9,
    "xlm-roberta-large": 17,
    "allenai/scibert_scivocab_uncased": 8,
    "allenai/scibert_scivocab_cased": 9,
    "microsoft/deberta-base": 9,
    "microsoft/deberta-base-mnli": 9,
    "microsoft/deberta-large": 16,
    "microsoft/deberta-large-mnli": 18,
    "microsoft/deberta-xlarge": 18,
    "microsoft/deberta-xlarge-mnli": 40,
    "microsoft/deberta-v3-base": 9,
    "microsoft/deberta-v3-large": 12,
    "google/electra-base-discriminator": 9,
}


def default_num_layers(model: ResolvedModel, n_layers: int) -> int:
    """bert-score's tuned layer for the model's hub id when known, else the last layer (``n_layers``)."""
    hub_id = model.hub_id
    return MODEL2LAYERS.get(hub_id, n_layers) if hub_id else n_layers


# --- shared encoding helpers ----------------------------------------------------------------------

def _unique(texts: list[str]) -> tuple[list[str], list[int]]:
    """The distinct stripped texts, and for each input the index of its distinct text."""
    index: dict[str, int] = {}
    where = [index.setdefault(t.strip(), len(index)) for t in texts]
    return list(index), where


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ParamsError(f"{name}={value!r} is not allowed: use one of {', '.join(map(repr, allowed))}.")
    return value


# --- BERTScore -------------------------------------------------------------------------------------

def _base_encoder(model: Any) -> Any:
    # As bert-score: an encoder-decoder model is scored with its encoder.
    return model.encoder if hasattr(model, "decoder") and hasattr(model, "encoder") else model


def _layer_stack(model: Any) -> tuple[Any, str] | None:
    """``(owner, attribute)`` of the list of transformer blocks bert-score's ``get_model`` truncates."""
    import torch

    def is_list(obj: Any, attr: str) -> bool:
        return isinstance(getattr(obj, attr, None), torch.nn.ModuleList)

    if hasattr(model, "n_layers"):  # XLM: bert-score sets n_layers; we read hidden_states instead
        return None
    if is_list(model, "layer"):  # XLNet
        return model, "layer"
    if is_list(model, "block"):  # the encoder stack of a T5 (bert-score: T5EncoderModel.encoder.block)
        return model, "block"
    enc = getattr(model, "encoder", None)
    if enc is not None:
        if hasattr(enc, "albert_layer_groups"):  # ALBERT shares layers: use hidden_states
            return None
        for attr in ("block", "layer"):  # T5, BERT/RoBERTa/DeBERTa/ELECTRA
            if is_list(enc, attr):
                return enc, attr
        return None
    if getattr(model, "transformer", None) is not None and is_list(model.transformer, "layer"):  # DistilBERT
        return model.transformer, "layer"
    if is_list(model, "layers"):  # BART-style encoders
        return model, "layers"
    return None


def load_baseline(baseline: Any, num_layers: int, hub_id: str | None = None, lang: str = "en") -> np.ndarray | None:
    """The ``(p, r, f)`` rescaling baseline from numbers, a bert-score baseline file, or ``"bert-score"``."""
    if baseline is None:
        return None
    if isinstance(baseline, str) and baseline == "bert-score":
        import importlib.util

        spec = importlib.util.find_spec("bert_score")  # locates the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise ParamsError("baseline='bert-score' reads the baseline files the bert-score package ships: "
                              "pip install bert-score==0.3.13, or pass baseline=(p, r, f) or a file path.")
        if not hub_id:
            raise ParamsError("baseline='bert-score' needs a model whose hub id is known (a hub id or a known pypi "
                              "model); for a local folder pass baseline=(p, r, f) or a baseline file path.")
        path = Path(list(spec.submodule_search_locations)[0]) / "rescale_baseline" / lang / f"{hub_id}.tsv"
        if not path.is_file():
            raise ParamsError(f"bert-score ships no {lang!r} baseline for {hub_id!r} (looked for {path}); "
                              "pass baseline=(p, r, f) or a baseline file path.")
        baseline = path
    if isinstance(baseline, (str, os.PathLike)):
        import pandas as pd

        path = Path(baseline)
        if not path.is_file():
            raise ParamsError(f"Baseline file {str(path)!r} does not exist (expected bert-score's format: a "
                              "LAYER,P,R,F header and one row per layer).")
        table = pd.read_csv(path)  # bert-score: pd.read_csv(path).iloc[num_layers].to_numpy()[1:]
        if num_layers >= len(table):
            raise ParamsError(f"Baseline file {str(path)!r} has {len(table)} rows; layer {num_layers} is not among them.")
        values = table.iloc[num_layers].to_numpy()[1:]
    else:
        values = baseline
    arr = np.asarray(values, dtype=np.float32)  # bert-score rescales in float32
    if arr.shape != (3,) or not np.all(np.isfinite(arr)) or np.any(arr >= 1):
        raise ParamsError(f"baseline must be three finite numbers (p, r, f) below 1, got {values!r}.")
    return arr


class BERTScore:
    """BERTScore on a transformers encoder; see the module docstring for every definition.

    Options: ``model`` (spec, default the PyPI MiniLM), ``num_layers`` (default: bert-score's tuned
    layer for the hub id, else the last), ``idf`` (bool), ``baseline`` (``None``, ``(p, r, f)``, a
    bert-score baseline file or ``"bert-score"``) with ``baseline_lang``, ``batch_size`` (texts per
    forward pass and pairs per matching step), ``max_length``, ``device`` (``None`` = cuda when
    available), ``dtype`` (``None`` = fp32), ``empty`` (``"zero"`` as bert-score, or ``"nan"``),
    ``call_cost`` (the fixed cost of one forward call in token-steps, for the length bucketing of
    :func:`radaudit.metrics.token_match.forward_batches`; 0 = batches of equal length only, no padding),
    ``bert_score_batch`` (64 = reproduce ``bert_score.score(batch_size=64)`` exactly, its padding
    artefact included; ``None`` = the paper's max over real tokens; see the module docstring),
    ``cache_mb`` (token states of texts already encoded are kept across calls, up to this many MiB,
    least recently used evicted; 0 = off; ``cache_hits``/``cache_misses`` count distinct texts),
    ``disk_cache`` (``True``: the default cache folder; a folder; ``False``/``None`` = off): each call's
    P/R/F are kept on disk and the same call on the same model gives the same bytes back without encoding
    (:mod:`radaudit.models.text_memo`; ``disk_hits``/``disk_misses`` count calls). A warm in-memory cache
    can change a score by float32 rounding (~1e-7, see ``_encode``); the disk cache serves the bytes of
    the call's first computation, so a rerun of the same calls repeats the first run bit for bit.

    ``compute`` returns per_sample = F1 and details ``precision``/``recall``/``f1`` (arrays) plus
    ``n_truncated``, ``n_empty_reference``, ``n_empty_candidate``, ``num_layers``, ``idf``, ``rescaled``.
    """

    def __init__(self, model: str | os.PathLike[str] = DEFAULT_TEXT_ENCODER, num_layers: int | None = None,
                 idf: bool = False, baseline: Any = None, baseline_lang: str = "en", batch_size: int = 64,
                 max_length: int | None = None, device: str | None = None, dtype: Any = None,
                 empty: Literal["zero", "nan"] = "zero", bert_score_batch: int | None = 64,
                 trust_remote_code: bool = False, name: str = "bertscore", cache_mb: float = 256.0,
                 disk_cache: Any = True, call_cost: float = DEFAULT_CALL_COST) -> None:
        import torch

        if not isinstance(idf, bool):
            raise ParamsError(f"idf must be true or false, got {idf!r}.")
        if int(batch_size) < 1:
            raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self.name = name
        self.idf = idf
        self.batch_size = int(batch_size)
        if float(call_cost) < 0:
            raise ParamsError(f"call_cost must be >= 0 (0 = batches of equal length only), got {call_cost!r}.")
        self.call_cost = float(call_cost)
        self.empty = _check_choice("empty", empty, ("zero", "nan"))
        if bert_score_batch is not None and int(bert_score_batch) < 1:
            raise ParamsError(f"bert_score_batch must be a positive integer or null, got {bert_score_batch!r}.")
        self.bert_score_batch = int(bert_score_batch) if bert_score_batch is not None else None
        self.resolved = resolve_model(model)
        self.tokenizer, full = load_text_encoder(self.resolved, device=device, dtype=dtype,
                                                 trust_remote_code=trust_remote_code)
        self.device = str(next(full.parameters()).device)
        encoder = _base_encoder(full)
        stack = _layer_stack(encoder)
        n_layers = len(getattr(*stack)) if stack else int(encoder.config.num_hidden_layers)
        self.num_layers = default_num_layers(self.resolved, n_layers) if num_layers is None else int(num_layers)
        if not 0 <= self.num_layers <= n_layers:
            raise ParamsError(f"num_layers={num_layers!r} is out of range: {self.resolved.spec!r} has {n_layers} "
                              f"layers (0 = the embedding layer).")
        self._hidden_index: int | None = None
        if stack:  # drop the unused top blocks, as bert-score does (the model is ours alone)
            owner, attr = stack
            setattr(owner, attr, torch.nn.ModuleList(list(getattr(owner, attr))[:self.num_layers]))
        else:
            self._hidden_index = self.num_layers
        self.model = encoder
        self.max_length = _max_length(self.tokenizer, full, max_length)
        self.baseline = load_baseline(baseline, self.num_layers, self.resolved.hub_id, baseline_lang)
        if float(cache_mb) < 0:
            raise ParamsError(f"cache_mb must be >= 0 (0 turns the embedding cache off), got {cache_mb!r}.")
        self.cache_mb = float(cache_mb)
        # text -> (token ids, truncated?, L2-normalised token states): least recently used first
        self._cache: OrderedDict[str, tuple[list[int], bool, Any]] = OrderedDict()
        self._cache_bytes = 0
        self.cache_hits = self.cache_misses = 0
        self.disk_cache = disk_cache
        self.disk_hits = self.disk_misses = 0
        self._pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self._n_special = len(_tokenize(self.tokenizer, [""], self.max_length)[0][0])
        self._zero_ids = {self.tokenizer.sep_token_id, self.tokenizer.cls_token_id} - {None}

    def _encode(self, texts: list[str]) -> tuple[list[list[int]], list[bool], list[Any]]:
        """Token ids, truncation flags and L2-normalised token states of distinct ``texts``.

        States of texts seen in an earlier call come from the cache (``cache_mb``, least recently used
        evicted): references repeat across decoding strategies, conditions and aspects, and encoding is
        nearly all of BERTScore's time. A text's states do not depend on the other texts of its batch
        beyond float32 rounding (~1e-7: the padded width changes the order of a few sums), so a warm
        cache changes no score beyond that; a fresh metric object scoring the same calls in the same
        order gives the same numbers bit for bit.
        """
        missing = [t for t in texts if t not in self._cache]
        self.cache_hits += len(texts) - len(missing)
        self.cache_misses += len(missing)
        new: dict[str, tuple[list[int], bool, Any]] = {}
        if missing:
            ids_m, cut_m = _tokenize(self.tokenizer, missing, self.max_length)
            states_m = normalised_token_states(self.model, ids_m, self._pad_id, self.batch_size, self.device,
                                               self._hidden_index, self.call_cost)
            for t, i, c, st in zip(missing, ids_m, cut_m, states_m):
                new[t] = (i, c, st)
        out = [new[t] if t in new else self._cache[t] for t in texts]
        if self.cache_mb > 0:
            for t in texts:
                if t in self._cache:
                    self._cache.move_to_end(t)
            for t, v in new.items():
                self._cache[t] = v
                self._cache_bytes += v[2].numel() * v[2].element_size()
            cap = self.cache_mb * 2**20
            while self._cache and self._cache_bytes > cap:
                _, old = self._cache.popitem(last=False)
                self._cache_bytes -= old[2].numel() * old[2].element_size()
        return [o[0] for o in out], [o[1] for o in out], [o[2] for o in out]

    # bert-score: idf_dict = defaultdict(lambda: 1.0) with [SEP]/[CLS] = 0, or get_idf_dict(refs)
    def _weights(self, ids: list[list[int]], ref_ids: list[list[int]]) -> list[Any]:
        import torch

        if self.idf:
            m = len(ref_ids)
            df = Counter(t for x in ref_ids for t in set(x))
            unseen = math.log(m + 1)
            table = {t: math.log((m + 1) / (c + 1)) for t, c in df.items()}
            rows = [[table.get(t, unseen) for t in x] for x in ids]
        else:
            rows = [[0.0 if t in self._zero_ids else 1.0 for t in x] for x in ids]
        return [torch.tensor(r, dtype=torch.float32) for r in rows]

    def score(self, references: Sequence[str],
              candidates: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """``(precision, recall, f1, info)`` as float arrays in input order (no input checks; see ``compute``).
        A call already made on this model comes from the disk cache (``disk_cache``), its warnings given again."""
        refs, cands = list(references), list(candidates)
        n = len(refs)
        arrays, counts, hit = memo_call(self.disk_cache, self._call_parts(refs, cands),
                                        lambda: self._score(refs, cands))
        self.disk_hits += int(hit)
        self.disk_misses += int(not hit)
        n_truncated, n_empty_r, n_empty_c = (int(counts[k]) for k in ("n_truncated", "n_empty_reference",
                                                                      "n_empty_candidate"))
        _warn_truncated(self.name, n_truncated, 2 * n, self.max_length, stacklevel=4)
        if n_empty_c or n_empty_r:
            what = "undefined (NaN)" if self.empty == "nan" else "scored 0, as bert-score does"
            warnings.warn(f"{self.name}: {n_empty_c} empty candidate(s) and {n_empty_r} empty reference(s) are {what}.",
                          UserWarning, stacklevel=3)
        out_np = arrays["prf"].reshape(n, 3)
        info = {"n_truncated": n_truncated, "n_empty_reference": n_empty_r, "n_empty_candidate": n_empty_c,
                "num_layers": self.num_layers, "idf": self.idf, "rescaled": self.baseline is not None,
                "bert_score_batch": self.bert_score_batch,
                "model": self.resolved.spec}
        return out_np[:, 0], out_np[:, 1], out_np[:, 2], info

    def _call_parts(self, refs: list[str], cands: list[str]) -> dict[str, Any] | None:
        """The disk-cache key parts of one call (:func:`radaudit.models.text_memo.call_key_parts`); ``None`` when
        the cache is off or the weights have no identity on disk."""
        options = {"num_layers": self.num_layers, "idf": self.idf, "empty": self.empty, "max_length": self.max_length,
                   "bert_score_batch": self.bert_score_batch, "batch_size": self.batch_size, "call_cost": self.call_cost,
                   "baseline": None if self.baseline is None else np.asarray(self.baseline, dtype=float).tolist()}
        return encoder_call_parts(self, "bertscore", {"spec": self.resolved.spec}, options,
                                  {"references": refs, "candidates": cands},
                                  code=("radaudit.metrics.embedding", "radaudit.metrics.token_match",
                                        "radaudit.models.encoders"))

    def _score(self, refs: list[str], cands: list[str]) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """``({"prf": [n, 3] float64}, counts)``: the computation behind :meth:`score` (no warnings)."""
        import torch

        n = len(refs)
        texts, where = _unique(refs + cands)
        ids, cut, states = self._encode(texts)
        n_truncated = sum(cut[u] for u in where)
        weights = self._weights(ids, [ids[u] for u in where[:n]])
        ref_u, cand_u = where[:n], where[n:]

        clip_p = clip_r = None
        if self.bert_score_batch and n:
            # bert-score pads the pairs in input-order chunks of its batch_size and multiplies the
            # similarity to padded positions by 0: a candidate token's best match is clipped at 0 when
            # its reference is shorter than the chunk's longest reference (recall: vice versa).
            ref_len = np.array([len(ids[u]) for u in ref_u])
            cand_len = np.array([len(ids[u]) for u in cand_u])
            chunk = np.arange(n) // self.bert_score_batch
            clip_p = (ref_len < np.maximum.reduceat(ref_len, np.unique(chunk, return_index=True)[1])[chunk]).tolist()
            clip_r = (cand_len < np.maximum.reduceat(cand_len, np.unique(chunk, return_index=True)[1])[chunk]).tolist()
        # one batched matmul per length-sorted batch of pairs, padded positions masked (radaudit.metrics.token_match)
        P, R = greedy_match([states[u] for u in cand_u], [states[u] for u in ref_u], [weights[u] for u in cand_u],
                            [weights[u] for u in ref_u], self.batch_size, clip_p, clip_r)

        F = 2 * P * R / (P + R)
        empty_c = torch.tensor([len(ids[u]) == self._n_special for u in cand_u], dtype=torch.bool)
        empty_r = torch.tensor([len(ids[u]) == self._n_special for u in ref_u], dtype=torch.bool)
        n_empty_c, n_empty_r = int(empty_c.sum()), int(empty_r.sum())
        empty = empty_c | empty_r
        if self.empty == "nan":
            P, R = P.masked_fill(empty, math.nan), R.masked_fill(empty, math.nan)
            F = F.masked_fill(empty, math.nan)  # NaN from a zero idf mass stays NaN too
        else:
            P, R = P.masked_fill(empty, 0.0), R.masked_fill(empty, 0.0)
            F = F.masked_fill(torch.isnan(F), 0.0)
        out = torch.stack((P, R, F), dim=-1)
        if self.baseline is not None:
            b = torch.from_numpy(self.baseline)
            out = (out - b) / (1 - b)
        return ({"prf": out.numpy().astype(np.float64)},
                {"n_truncated": int(n_truncated), "n_empty_reference": n_empty_r, "n_empty_candidate": n_empty_c})

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        """BERTScore of each (reference, candidate) pair; score = mean F1 over defined pairs."""
        refs, cands = check_pairs(references, candidates)
        p, r, f, info = self.score(refs, cands)
        return mean_result(self.name, f, {"precision": p, "recall": r, "f1": f, **info})


# --- sentence-embedding similarity ---------------------------------------------------------------

class EmbeddingSimilarity:
    """Cosine similarity of sentence embeddings; see the module docstring.

    Options: ``model`` (spec), ``pooling`` (``"mean"`` or ``"cls"``), ``max_length`` (default the
    folder's sentence-transformers ``max_seq_length``, else the tokenizer's limit), ``batch_size``,
    ``device``, ``dtype``, ``empty`` (``"encode"`` as sentence-transformers, or ``"nan"``), ``disk_cache`` (as
    :class:`~radaudit.models.encoders.TextEncoder`'s: a repeated call's embeddings come from disk).
    """

    def __init__(self, model: str | os.PathLike[str] = DEFAULT_TEXT_ENCODER,
                 pooling: Literal["mean", "cls"] = "mean", max_length: int | None = None, batch_size: int = 64,
                 device: str | None = None, dtype: Any = None, empty: Literal["encode", "nan"] = "encode",
                 trust_remote_code: bool = False, name: str = "embedding_similarity", disk_cache: Any = True) -> None:
        if int(batch_size) < 1:
            raise ParamsError(f"batch_size must be a positive integer, got {batch_size!r}.")
        self.name = name
        self.pooling = _check_choice("pooling", pooling, ("mean", "cls"))
        self.empty = _check_choice("empty", empty, ("encode", "nan"))
        self.batch_size = int(batch_size)
        # TextEncoder does the tokenising, batching and pooling (one implementation for the lab)
        self.encoder = TextEncoder(model, device=device, dtype=dtype, max_length=max_length, pooling=self.pooling,
                                   normalize=True, batch_size=self.batch_size, trust_remote_code=trust_remote_code,
                                   disk_cache=disk_cache)
        self.resolved = self.encoder.resolved
        self.tokenizer, self.model = self.encoder.tokenizer, self.encoder.model
        self.device = self.encoder.device
        self.max_length = self.encoder.max_length
        self._n_special = self.encoder.n_special

    def _encode(self, texts: list[str]) -> tuple[np.ndarray, list[bool], list[int]]:
        ids, cut = self.encoder.tokenize(texts)
        with warnings.catch_warnings():  # the truncation warning is given by the callers, in this metric's name
            warnings.simplefilter("ignore", UserWarning)
            emb = self.encoder.embed(texts)  # a repeated call comes from the text-output cache
        return emb, cut, [len(x) for x in ids]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(n, d)`` L2-normalised sentence embeddings (texts stripped, as sentence-transformers)."""
        texts = [t.strip() for t in texts]
        emb, cut, _ = self._encode(texts)
        _warn_truncated(self.name, sum(cut), len(texts), self.max_length)
        return emb

    def compute(self, references: Sequence[str], candidates: Sequence[str]) -> MetricResult:
        """Cosine similarity per pair; score = mean over defined pairs."""
        refs, cands = check_pairs(references, candidates)
        n = len(refs)
        texts, where = _unique(refs + cands)
        emb, cut, lengths = self._encode(texts)
        n_truncated = sum(cut[u] for u in where)
        _warn_truncated(self.name, n_truncated, 2 * n, self.max_length)
        ref_u, cand_u = np.asarray(where[:n], dtype=int), np.asarray(where[n:], dtype=int)
        sims = np.einsum("ij,ij->i", emb[ref_u], emb[cand_u]).astype(np.float64) if n else np.zeros(0)
        is_empty = np.array([length == self._n_special for length in lengths], dtype=bool)  # only special tokens
        empty = is_empty[ref_u] | is_empty[cand_u] if n else np.zeros(0, dtype=bool)
        if self.empty == "nan":
            sims[empty] = math.nan
        details = {"n_truncated": n_truncated, "n_empty": int(empty.sum()), "pooling": self.pooling,
                   "model": self.resolved.spec}
        return mean_result(self.name, sims, details)
