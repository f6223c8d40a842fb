"""Train the lab's small CPU demo models, reproducibly, and save them with a model card.

:func:`train_model` is a plain PyTorch loop, on purpose, not ``transformers.Trainer``: the demo
models are tiny (a classifier on image features, a small text model) and train for minutes on 2
CPU cores, and a plain loop gives what the lab needs directly — bit-for-bit reproducibility from
one seed (no global state left behind), a per-step loss curve, a wall-clock budget that stops
cleanly, any ``torch.nn.Module`` (not only ``PreTrainedModel``), and a model folder laid out as
the lab wants it — where ``Trainer`` would add its own run directory, checkpoints, callbacks and
``accelerate`` start-up for none of that.

What a call does
----------------
1. Inside :func:`torch.random.fork_rng` (the caller's RNG state is restored afterwards):
   ``torch.manual_seed(seed)``; builds the model if a zero-argument factory was passed (so the
   initial weights follow the seed too); builds a ``DataLoader`` (``num_workers=0``, shuffling
   with a ``torch.Generator`` seeded with ``seed``) unless a ``DataLoader`` was passed.
2. AdamW (``lr``, ``weight_decay``; a constant learning rate, or ``lr_schedule="cosine"``: cosine decay to 0 over
   the planned steps; optional gradient-norm clipping) for
   ``steps`` optimizer steps, or ``epochs`` passes over the loader. The loss of every step is kept.
   A non-finite loss stops with :class:`TrainingError` (lower ``lr``). After each step, if
   ``max_seconds`` have passed: with ``budget="stop"`` training stops cleanly (the rest — evaluation,
   saving, card — still runs, and the result, log and card say it stopped on the time budget and after
   how many steps); with ``budget="warn"`` one warning is logged and the planned steps all run, so the
   model is a function of data, settings and seed, never of the machine's speed. The demo stand-ins
   use ``"warn"``: a model cut short by a busy CPU moved published verdicts (issue 40).
3. ``eval_fn(model)`` (model in eval mode, under ``torch.no_grad``) returns the held-out metric: a
   number (named ``metric_name``) or a ``{name: number}`` dict; it runs at the end and, with
   ``eval_every``, every that many steps.
4. With ``output_dir``: the weights (``save_pretrained`` for a ``PreTrainedModel`` or any module with
   that method, else ``model.safetensors`` from the state dict), the ``processors`` (tokenizer,
   image processor: their ``save_pretrained``), ``loss_curve.png`` (+ ``.pdf``, via
   :func:`radaudit.plots.save_figure`: byte-reproducible), ``training_log.json`` (settings, per-step
   losses, evaluations, stop reason, wall time and package versions) and ``README.md``: a model
   card with the data description, training settings (steps, seed, ...), the held-out metrics and
   the loss curve. Everything but the wall time in ``training_log.json`` is a function of the
   inputs and the seed.

Batches and the loss
--------------------
``loss_fn(model, batch) -> scalar tensor`` when given. Otherwise: a dict batch is passed as
``model(**batch)`` and its ``loss`` is used (transformers models with ``labels``); an
``(inputs, labels)`` batch gives ``model(inputs)`` (its ``.logits`` if it has them) and cross-entropy
for integer labels, mean squared error for float labels.

:class:`FeatureClassifier` (``from radaudit.models.train import FeatureClassifier``) is a ready
``PreTrainedModel`` for "a classifier on image features": standardise the features (stored
mean/std), an optional hidden layer, a linear head; single-label, multi-label or regression loss as
transformers' ``*ForSequenceClassification`` models. It is defined when first imported, so importing
this module does not import torch.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import numbers
import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from radaudit.errors import ParamsError, RadauditError
from radaudit.models.resolver import resolve_device
from radaudit.progress import eta_line

# FeatureClassifier(Config) are provided by the module's __getattr__ (PEP 562), built on first access
__all__ = ["FeatureClassifier", "FeatureClassifierConfig", "LR_SCHEDULES", "LengthGroupedBatches",  # noqa: F822
           "TrainResult", "TrainingError", "cosine_lr", "default_loss", "train_model"]

log = logging.getLogger(__name__)

LOSS_CURVE = "loss_curve"  # file stem of the loss-curve figure
TRAINING_LOG = "training_log.json"
MODEL_CARD = "README.md"


class TrainingError(RadauditError, RuntimeError):
    """Training cannot go on (a non-finite loss, a model that returns no loss)."""


@dataclass
class TrainResult:
    """What :func:`train_model` returns.

    ``model``: the trained model (eval mode, on the training device). ``steps``: optimizer steps
    done; ``planned_steps``: asked for. ``loss_curve``: the training loss of each step.
    ``metrics``: the final held-out metrics; ``eval_history``: ``[{"step": s, **metrics}]``.
    ``stopped_early``/``stop_reason``: set when ``max_seconds`` ended training. ``files``: what was
    written (``weights_dir``, ``model_card``, ``loss_curve_png``, ``loss_curve_pdf``, ``training_log``).
    """

    model: Any
    steps: int
    planned_steps: int
    epochs: float
    loss_curve: list[float]
    metrics: dict[str, float]
    eval_history: list[dict[str, float]] = field(default_factory=list)
    stopped_early: bool = False
    stop_reason: str | None = None
    elapsed_seconds: float = 0.0
    output_dir: Path | None = None
    files: dict[str, Path] = field(default_factory=dict)
    log: dict[str, Any] = field(default_factory=dict)


# --- the loss ------------------------------------------------------------------------------------

def default_loss(model: Any, batch: Any) -> Any:
    """The loss of one batch when no ``loss_fn`` is given (see the module docstring)."""
    import torch  # heavy optional dependency: imported on call, not with the module
    import torch.nn.functional as F

    if isinstance(batch, Mapping):
        out = model(**batch)
        loss = out.get("loss") if isinstance(out, Mapping) else getattr(out, "loss", None)
        if loss is None:
            raise TrainingError(f"{type(model).__name__}(**batch) returned no loss: put the targets in the batch under "
                                "the key the model expects (transformers: 'labels'), or pass loss_fn=.")
        return loss
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        inputs, labels = batch
        out = model(inputs)
        logits = getattr(out, "logits", None)
        if logits is None:
            logits = out[0] if isinstance(out, (tuple, list)) else out
        if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
            raise TrainingError("default loss: the model output and the labels must be tensors; pass loss_fn=.")
        if labels.dtype.is_floating_point:
            if logits.numel() != labels.numel():
                raise TrainingError(f"default loss (MSE for float labels): logits {tuple(logits.shape)} and labels "
                                    f"{tuple(labels.shape)} differ in size; pass loss_fn=.")
            return F.mse_loss(logits.reshape(labels.shape).float(), labels.float())
        return F.cross_entropy(logits.float(), labels.long())
    raise TrainingError(f"default loss: a batch must be a dict (model(**batch).loss) or an (inputs, labels) pair, got "
                        f"{type(batch).__name__}; pass loss_fn=(model, batch) -> loss.")


def _to_device(batch: Any, device: str) -> Any:
    import torch  # heavy optional dependency: imported on call, not with the module

    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return {k: _to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_to_device(v, device) for v in batch)
    if isinstance(batch, list):
        return [_to_device(v, device) for v in batch]
    return batch


# --- evaluation ----------------------------------------------------------------------------------

def _evaluate(model: Any, eval_fn: Callable[[Any], Any], metric_name: str) -> dict[str, float]:
    import torch  # heavy optional dependency: imported on call, not with the module

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            value = eval_fn(model)
    finally:
        model.train(was_training)
    items = value.items() if isinstance(value, Mapping) else [(metric_name, value)]
    out: dict[str, float] = {}
    for k, v in items:
        try:
            out[str(k)] = float(v)
        except (TypeError, ValueError):
            raise ParamsError(f"eval_fn must return a number or a {{name: number}} dict; {k!r} is "
                              f"{type(v).__name__}.") from None
    return out


# --- settings ------------------------------------------------------------------------------------

def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ParamsError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _check_settings(*, steps: Any, epochs: Any, batch_size: Any, log_every: Any, eval_every: Any, lr: Any,
                    max_seconds: Any, eval_fn: Any, seed: Any) -> tuple[int | None, int | None, int, int, int | None, int]:
    """``(steps, epochs, batch_size, log_every, eval_every, seed)`` checked (a ``ParamsError`` names the bad one) as ints."""
    if (steps is None) == (epochs is None):
        raise ParamsError("Give exactly one of steps= (optimizer steps) or epochs= (passes over the data).")
    steps = None if steps is None else _positive_int("steps", steps)
    epochs = None if epochs is None else _positive_int("epochs", epochs)
    batch_size = _positive_int("batch_size", batch_size)
    log_every = _positive_int("log_every", log_every)
    eval_every = None if eval_every is None else _positive_int("eval_every", eval_every)
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise ParamsError(f"lr must be a positive number, got {lr!r}.")
    if max_seconds is not None and not (isinstance(max_seconds, (int, float)) and max_seconds >= 0):
        raise ParamsError(f"max_seconds must be a non-negative number of seconds (or None for no budget), "
                          f"got {max_seconds!r}.")
    if eval_every is not None and eval_fn is None:
        raise ParamsError("eval_every needs an eval_fn.")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ParamsError(f"seed must be an integer, got {seed!r}.")
    return steps, epochs, batch_size, log_every, eval_every, int(seed)


class LengthGroupedBatches:
    """A batch sampler (``DataLoader(..., batch_sampler=...)``) that keeps padding small.

    Each epoch: a random permutation of the examples is cut into pools of ``pool`` batches
    (``pool * batch_size`` examples), each pool is sorted by ``lengths`` and cut into batches, and the
    batches are shuffled. A batch then holds examples of similar length, while which examples meet in a
    batch, and the order of the batches, still change every epoch (the "length-grouped" sampler of
    transformers' ``group_by_length``, written here because that one lives in ``Trainer`` and draws a
    different pool size). The randomness is torch's global RNG, so inside :func:`train_model` (which
    seeds it) the batches follow the training seed.

    Args:
        lengths: one length per example (tokens), in dataset order.
        batch_size: examples per batch; the last batch of a pool may be smaller.
        pool: batches per sorted pool (default 8): larger pools pad less and mix less.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, pool: int = 8) -> None:
        self.lengths = [int(n) for n in lengths]
        self.batch_size = _positive_int("batch_size", batch_size)
        self.pool = _positive_int("pool", pool)
        if not self.lengths:
            raise ParamsError("LengthGroupedBatches got no lengths: nothing to batch.")

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)  # = full pools * pool + the last pool's batches

    def __iter__(self):
        import torch  # heavy optional dependency: imported on call, not with the module

        perm = torch.randperm(len(self.lengths)).tolist()
        size = self.pool * self.batch_size
        batches = []
        for s in range(0, len(perm), size):
            chunk = sorted(perm[s:s + size], key=lambda i: self.lengths[i])
            batches += [chunk[j:j + self.batch_size] for j in range(0, len(chunk), self.batch_size)]
        for b in torch.randperm(len(batches)).tolist():
            yield batches[b]


# --- model, batches, optimizer (called inside train_model's seeded fork_rng) --------------------

def _build_model(model: Any) -> Any:
    """``model`` itself when it is a module, else what the factory returns (its initial weights drawn from torch's RNG)."""
    import torch  # heavy optional dependency: imported on call, not with the module

    if not isinstance(model, torch.nn.Module):
        if not callable(model):
            raise ParamsError(f"model must be a torch.nn.Module or a factory returning one, got {type(model).__name__}.")
        model = model()
        if not isinstance(model, torch.nn.Module):
            raise ParamsError(f"The model factory returned {type(model).__name__}, not a torch.nn.Module.")
    return model


def _batches(train_data: Any, *, batch_size: int, shuffle: bool, collate_fn: Callable[[list], Any] | None,
             seed: int) -> tuple[Any, int]:
    """``(loader, batches per epoch)``: ``train_data`` if it is a DataLoader, else one shuffled by a ``seed`` generator."""
    import torch  # heavy optional dependency: imported on call, not with the module
    from torch.utils.data import DataLoader

    if hasattr(train_data, "__len__") and not isinstance(train_data, DataLoader) and len(train_data) == 0:
        raise ParamsError("train_data is empty: nothing to train on.")
    if isinstance(train_data, DataLoader):
        loader = train_data
    else:
        generator = torch.Generator().manual_seed(seed)
        loader = DataLoader(train_data, batch_size=batch_size, shuffle=shuffle, generator=generator,
                            collate_fn=collate_fn, num_workers=0)
    try:
        per_epoch = len(loader)
    except TypeError:
        raise ParamsError("train_data must have a length (a map-style dataset or a DataLoader over one).") from None
    if per_epoch < 1:
        raise ParamsError("train_data is empty: nothing to train on.")
    return loader, per_epoch


def _optimizer(model: Any, device: str, lr: float, weight_decay: float) -> tuple[list[Any], Any]:
    """``(trainable parameters, AdamW over them)``, the model moved to ``device`` and put in training mode."""
    import torch  # heavy optional dependency: imported on call, not with the module

    model.to(device)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ParamsError(f"{type(model).__name__} has no trainable parameters.")
    optimizer = torch.optim.AdamW(params, lr=float(lr), weight_decay=float(weight_decay))
    return params, optimizer


#: The learning-rate schedules :func:`train_model` knows.
LR_SCHEDULES = ("constant", "cosine")


def cosine_lr(lr: float, step: int, planned: int) -> float:
    """The learning rate after ``step`` of ``planned`` steps under cosine decay (Loshchilov & Hutter 2017, SGDR,
    Eq. 5 with one cycle, no restart, minimum 0): ``lr * (1 + cos(pi * step / planned)) / 2``; ``lr`` at step 0,
    ``lr / 2`` half-way, 0 at the last step."""
    if planned < 1:
        raise ParamsError(f"planned steps must be >= 1, got {planned!r}.")
    return float(lr) * 0.5 * (1.0 + math.cos(math.pi * min(step, planned) / planned))


# --- the loop ------------------------------------------------------------------------------------

@dataclass
class _Progress:
    """What the training loop records: steps done, the loss of each, the logged means, evaluations, why it stopped."""

    step: int = 0
    losses: list[float] = field(default_factory=list)
    logged: list[dict[str, float]] = field(default_factory=list)
    history: list[dict[str, float]] = field(default_factory=list)
    stop_reason: str | None = None
    elapsed: float = 0.0


def _run_steps(model: Any, loader: Any, optimizer: Any, params: list[Any], loss_fn: Callable[[Any, Any], Any], *,
               device: str, planned: int, lr: float, max_grad_norm: float | None, log_every: int,
               eval_every: int | None, eval_fn: Callable[[Any], Any] | None, metric_name: str,
               max_seconds: float | None, budget: str = "stop", lr_schedule: str = "constant") -> _Progress:
    """The optimizer steps: ``planned`` of them, or fewer when ``max_seconds`` runs out and ``budget`` is
    ``"stop"`` (``"warn"``: a warning, and all planned steps); losses logged and checked."""
    import torch  # heavy optional dependency: imported on call, not with the module

    progress = _Progress()
    losses, logged, history = progress.losses, progress.logged, progress.history
    step = 0
    warned = False
    start = time.monotonic()
    while step < planned and progress.stop_reason is None:
        for batch in loader:
            batch = _to_device(batch, device)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model, batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise TrainingError(f"The training loss is {value} at step {step + 1} (lr={lr}): lower lr, or check "
                                    "the inputs for NaN/inf.")
            loss.backward()
            if max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, float(max_grad_norm))
            optimizer.step()
            step += 1
            if lr_schedule == "cosine":
                for group in optimizer.param_groups:
                    group["lr"] = cosine_lr(lr, step, planned)
            losses.append(value)
            if step % log_every == 0 or step == planned:
                window = losses[-log_every:]
                logged.append({"step": step, "loss": sum(window) / len(window)})
                log.info("%s  loss %.4f (mean of the last %d)",
                         eta_line("train", step, planned, time.monotonic() - start, "steps"), logged[-1]["loss"],
                         len(window))
            if eval_every is not None and step % eval_every == 0 and step < planned:
                history.append({"step": step, **_evaluate(model, eval_fn, metric_name)})  # type: ignore[arg-type]
            if step >= planned:
                break
            if max_seconds is not None and not warned and time.monotonic() - start >= max_seconds:
                if budget == "warn":
                    warned = True
                    log.warning("Training is over its time budget (max_seconds=%g) after %d of %d steps; it runs "
                                "the planned steps anyway, so the model does not depend on this machine's speed.",
                                max_seconds, step, planned)
                    continue
                progress.stop_reason = (f"time budget max_seconds={max_seconds:g} reached after {step} of {planned} "
                                        "steps")
                log.warning("Training stopped early: %s.", progress.stop_reason)
                break
    progress.elapsed = time.monotonic() - start
    progress.step = step
    return progress


# --- the training record -------------------------------------------------------------------------

def _training_log(result: TrainResult, *, model_name: str | None, data_description: str, n_train: int | None,
                  seed: int, device: str, lr: float, weight_decay: float, max_grad_norm: float | None,
                  batch_size: int | None, per_epoch: int, max_seconds: float | None, log_every: int,
                  logged: list[dict[str, float]], lr_schedule: str = "constant") -> dict[str, Any]:
    """``training_log.json``'s content: the settings, the loss of every step, the evaluations, the stop reason
    (``lr_schedule`` recorded when it is not the default constant rate, so that earlier records stay as written)."""
    model = result.model
    schedule = {} if lr_schedule == "constant" else {"lr_schedule": lr_schedule}
    return {
        "model_name": model_name or type(model).__name__,
        "model_class": f"{type(model).__module__}.{type(model).__qualname__}",
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "data": data_description,
        "n_train": n_train,
        "seed": seed,
        "device": device,
        "optimizer": "AdamW",
        "lr": float(lr),
        **schedule,
        "weight_decay": float(weight_decay),
        "max_grad_norm": max_grad_norm,
        "batch_size": batch_size,
        "steps_per_epoch": per_epoch,
        "planned_steps": result.planned_steps,
        "steps": result.steps,
        "epochs": result.steps / per_epoch,
        "max_seconds": max_seconds,
        "stopped_early": result.stopped_early,
        "stop_reason": result.stop_reason,
        "metrics": result.metrics,
        "eval_history": result.eval_history,
        "log_every": log_every,
        "logged_loss": logged,
        "loss": result.loss_curve,
        "elapsed_seconds": round(result.elapsed_seconds, 3),
        "versions": _versions(),
    }


# --- train_model ---------------------------------------------------------------------------------

def train_model(model: Any, train_data: Any, eval_fn: Callable[[Any], Any] | None = None, *,
                steps: int | None = None, epochs: int | None = None, lr: float = 1e-3, batch_size: int = 32,
                seed: int = 0, device: str | None = "cpu", log_every: int = 10, output_dir: str | os.PathLike | None = None,
                max_seconds: float | None = None, budget: str = "stop", eval_every: int | None = None,
                loss_fn: Callable[[Any, Any], Any] | None = None, collate_fn: Callable[[list], Any] | None = None,
                weight_decay: float = 0.0, max_grad_norm: float | None = None, shuffle: bool = True,
                processors: Sequence[Any] = (), model_name: str | None = None, data_description: str = "",
                metric_name: str = "metric", notes: str = "", lr_schedule: str = "constant") -> TrainResult:
    """Train ``model`` on ``train_data``, evaluate it with ``eval_fn``, and save it with a model card.

    Args:
        model: a ``torch.nn.Module`` or a zero-argument factory returning one (then its initial
            weights follow ``seed`` as well).
        train_data: a map-style dataset (``torch.utils.data.Dataset``, a list of examples, a
            ``datasets.Dataset`` in torch format) or a ready ``DataLoader`` (used as is: its batch size
            and order apply; its shuffling follows ``seed`` unless it has its own generator).
        eval_fn: ``eval_fn(model) -> number | {name: number}``: the held-out metric.
        steps, epochs: how long: exactly one of them (optimizer steps, or passes over the loader).
        lr, weight_decay, max_grad_norm: AdamW; optional clipping.
        lr_schedule: ``"constant"`` (default: ``lr`` at every step) or ``"cosine"`` (:func:`cosine_lr`: from ``lr``
            down to 0 at the last planned step, so that the last steps settle instead of moving the weights as far
            as the first ones; a model is then read at the end of a decay, not at a random point of a constant-rate
            walk).
        batch_size, shuffle, collate_fn: for the ``DataLoader`` built from a dataset.
        seed: seeds torch (init via a factory, shuffling, dropout) inside ``fork_rng``.
        device: ``"cpu"`` (default: the demo models are CPU models), ``"cuda"``, or ``None``/``"auto"``.
        log_every: log the mean loss every that many steps (also the smoothing window of the plot).
        output_dir: where to save the model, its card, the loss curve and the log (``None``: nothing saved).
        max_seconds: wall-clock budget for the training steps (checked after each step, so at
            least one step runs); stopping on it is recorded, not an error.
        budget: what ``max_seconds`` does: ``"stop"`` (stop there) or ``"warn"`` (log once, run every
            planned step: the model then depends on data, settings and seed only).
        eval_every: also evaluate every that many steps (kept in ``eval_history`` and the log).
        loss_fn: ``loss_fn(model, batch) -> scalar`` (default :func:`default_loss`).
        processors: objects with ``save_pretrained`` (tokenizer, image processor) saved beside the weights.
        model_name, data_description, metric_name, notes: for the model card.
    """
    import torch  # heavy optional dependency: imported on call, not with the module

    steps, epochs, batch_size, log_every, eval_every, seed = _check_settings(
        steps=steps, epochs=epochs, batch_size=batch_size, log_every=log_every, eval_every=eval_every, lr=lr,
        max_seconds=max_seconds, eval_fn=eval_fn, seed=seed)
    if budget not in ("stop", "warn"):
        raise ParamsError(f"budget must be 'stop' or 'warn', got {budget!r}.")
    if lr_schedule not in LR_SCHEDULES:
        raise ParamsError(f"lr_schedule must be one of {list(LR_SCHEDULES)}, got {lr_schedule!r}.")
    device = resolve_device(device)
    loss_fn = loss_fn or default_loss

    fork_devices = [torch.cuda.current_device()] if device.startswith("cuda") and torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(seed)
        model = _build_model(model)
        loader, per_epoch = _batches(train_data, batch_size=batch_size, shuffle=shuffle, collate_fn=collate_fn, seed=seed)
        planned = steps if steps is not None else epochs * per_epoch  # type: ignore[operator]
        n_train = len(loader.dataset) if hasattr(loader.dataset, "__len__") else None
        params, optimizer = _optimizer(model, device, lr, weight_decay)
        progress = _run_steps(model, loader, optimizer, params, loss_fn, device=device, planned=planned, lr=lr,
                              max_grad_norm=max_grad_norm, log_every=log_every, eval_every=eval_every, eval_fn=eval_fn,
                              metric_name=metric_name, max_seconds=max_seconds, budget=budget,
                              lr_schedule=lr_schedule)
        metrics = _evaluate(model, eval_fn, metric_name) if eval_fn is not None else {}
        if eval_fn is not None:
            progress.history.append({"step": progress.step, **metrics})
    model.eval()

    result = TrainResult(model=model, steps=progress.step, planned_steps=planned, epochs=progress.step / per_epoch,
                         loss_curve=progress.losses, metrics=metrics, eval_history=progress.history,
                         stopped_early=progress.stop_reason is not None, stop_reason=progress.stop_reason,
                         elapsed_seconds=progress.elapsed)
    loader_batch = loader.batch_size or getattr(loader.batch_sampler, "batch_size", None)  # a batch_sampler's size
    result.log = _training_log(result, model_name=model_name, data_description=data_description, n_train=n_train,
                               seed=seed, device=device, lr=lr, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
                               batch_size=loader_batch, per_epoch=per_epoch, max_seconds=max_seconds,
                               log_every=log_every, logged=progress.logged, lr_schedule=lr_schedule)
    if output_dir is not None:
        result.output_dir = Path(output_dir)
        result.files = _save(result, processors, notes, metric_name)
    return result


# --- saving: weights, loss curve, log, model card ------------------------------------------------

def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for name in ("radaudit", "torch", "transformers"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def _moving_average(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def _plot_loss(result: TrainResult, directory: Path) -> dict[str, Path]:
    from matplotlib.figure import Figure  # matplotlib, seaborn (also via radaudit.plots): heavy, imported on call

    from radaudit.plots import PALETTE, save_figure  # lazy: radaudit.plots imports pyplot and seaborn

    fig = Figure(figsize=(6.0, 3.6))
    ax = fig.add_subplot()
    x = list(range(1, len(result.loss_curve) + 1))
    window = int(result.log["log_every"])
    ax.plot(x, result.loss_curve, color=PALETTE[4], linewidth=0.8, alpha=0.7, label="loss per step")
    if len(x) > 1:
        ax.plot(x, _moving_average(result.loss_curve, window), color=PALETTE[0], linewidth=1.8,
                label=f"mean of the last {window} steps")
    if result.stopped_early:
        ax.axvline(result.steps, color=PALETTE[5], linestyle="--", linewidth=1.0, label="time budget reached")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss")
    ax.set_title(f"{result.log['model_name']}: training loss (seed {result.log['seed']})")
    ax.legend(frameon=False)
    fig.tight_layout()
    return save_figure(fig, directory, LOSS_CURVE)


def _save(result: TrainResult, processors: Sequence[Any], notes: str, metric_name: str) -> dict[str, Path]:
    directory = result.output_dir
    assert directory is not None
    directory.mkdir(parents=True, exist_ok=True)
    model = result.model
    if hasattr(model, "save_pretrained"):
        model.save_pretrained(directory)
        weights = "saved with `save_pretrained` (config + safetensors weights)"
    else:
        from safetensors.torch import save_model  # heavy optional dependency: imported on call, not with the module

        save_model(model, str(directory / "model.safetensors"))
        weights = "`model.safetensors`: the state dict (load with `safetensors.torch.load_model(model, path)`)"
    for proc in processors:
        if not hasattr(proc, "save_pretrained"):
            raise ParamsError(f"processors must have save_pretrained (a tokenizer or image processor), "
                              f"got {type(proc).__name__}.")
        proc.save_pretrained(directory)
    figs = _plot_loss(result, directory)
    log_path = directory / TRAINING_LOG
    log_path.write_text(json.dumps(result.log, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    card = directory / MODEL_CARD
    card.write_text(_model_card(result, weights, processors, notes), encoding="utf-8")
    return {"weights_dir": directory, "model_card": card, "loss_curve_png": figs["png"],
            "loss_curve_pdf": figs["pdf"], "training_log": log_path}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "—" if v is None else str(v)


def _model_card(result: TrainResult, weights: str, processors: Sequence[Any], notes: str) -> str:
    """The README.md beside the weights. Deterministic: no timestamps, no wall time."""
    lg = result.log
    model = result.model
    is_hf = hasattr(model, "save_pretrained") and hasattr(type(model), "from_pretrained")
    cls = type(model)
    window = lg["log_every"]
    tail = result.loss_curve[-window:]
    lines = ["---"]
    if is_hf:
        lines.append("library_name: transformers")
    lines += ["tags:", "- radaudit", "- demo-model", "---", "", f"# {lg['model_name']}", ""]
    lines.append("A small demo model trained on CPU by `radaudit.models.train.train_model` for the lab's `demo` "
                 "preset: a scaled-down stand-in, not a clinical model.")
    if notes:
        lines += ["", notes.strip()]
    lines += ["", "## Data", "", lg["data"].strip() or "(no description given)", ""]
    if lg["n_train"] is not None:
        lines.append(f"Training examples: {lg['n_train']} ({lg['steps_per_epoch']} batches per epoch).")
    lines += ["", "## Training", "", "| setting | value |", "|---|---|",
              f"| model class | `{lg['model_class']}` |",
              f"| parameters | {lg['n_parameters']:,} |",
              f"| optimizer | AdamW, {lg.get('lr_schedule', 'constant')} lr {_fmt(lg['lr'])}, "
              f"weight decay {_fmt(lg['weight_decay'])}"
              + (f", grad-norm clip {_fmt(lg['max_grad_norm'])}" if lg["max_grad_norm"] is not None else "") + " |",
              f"| batch size | {_fmt(lg['batch_size'])} |",
              f"| steps | {lg['steps']} of {lg['planned_steps']} planned ({lg['epochs']:.3g} epochs) |",
              f"| seed | {lg['seed']} |",
              f"| device | {lg['device']} |",
              f"| time budget | {'none' if lg['max_seconds'] is None else _fmt(float(lg['max_seconds'])) + ' s'} |"]
    if result.stopped_early:
        lines += ["", f"**Stopped early:** {result.stop_reason}. The model was evaluated and saved as it was then."]
    if tail:
        lines += ["", f"Final training loss (mean of the last {len(tail)} steps): {sum(tail) / len(tail):.4f}; "
                      f"first step: {result.loss_curve[0]:.4f}."]
    lines += ["", "## Held-out evaluation", ""]
    if result.metrics:
        lines += ["| metric | value |", "|---|---|"] + [f"| {k} | {v:.4f} |" for k, v in result.metrics.items()]
    else:
        lines.append("No held-out evaluation was run (no eval_fn).")
    lines += ["", "## Loss curve", "", f"![Training loss per step]({LOSS_CURVE}.png)", "",
              "## Files", "",
              f"- weights: {weights}"]
    for proc in processors:
        lines.append(f"- `{type(proc).__name__}` (saved with `save_pretrained`)")
    lines += [f"- `{LOSS_CURVE}.png` / `{LOSS_CURVE}.pdf`: the loss curve",
              f"- `{TRAINING_LOG}`: settings, the loss of every step, evaluations, wall time, package versions"]
    if is_hf:
        lines += ["", "## Loading", "", "```python", f"from {cls.__module__} import {cls.__qualname__}", "",
                  f"model = {cls.__qualname__}.from_pretrained(\"<this folder>\")", "```"]
    return "\n".join(lines) + "\n"


# --- a classifier on fixed features (PreTrainedModel, defined on first use) ----------------------

@functools.cache
def _feature_classifier_classes() -> dict[str, type]:
    import torch  # heavy optional dependency: imported on call, not with the module
    from transformers import PretrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import SequenceClassifierOutput

    class FeatureClassifierConfig(PretrainedConfig):
        """``n_features`` inputs → optional hidden layer (``hidden_size``, 0 = none; ReLU, ``dropout``)
        → ``num_labels`` logits. ``problem_type`` as transformers: ``single_label_classification``
        (cross-entropy), ``multi_label_classification`` (BCE with logits) or ``regression`` (MSE); unset,
        it follows the labels as transformers does."""

        model_type = "radaudit_feature_classifier"

        def __init__(self, n_features: int = 2048, hidden_size: int = 0, dropout: float = 0.0, **kwargs: Any) -> None:
            self.n_features = int(n_features)
            self.hidden_size = int(hidden_size)
            self.dropout = float(dropout)
            super().__init__(**kwargs)

    class FeatureClassifier(PreTrainedModel):
        """A small classifier on fixed feature vectors (e.g. Inception/RadDino image features)."""

        config_class = FeatureClassifierConfig
        base_model_prefix = "feature_classifier"
        main_input_name = "features"

        def __init__(self, config: FeatureClassifierConfig) -> None:
            super().__init__(config)
            n, h = config.n_features, config.hidden_size
            # standardisation of the inputs, saved with the weights (set_standardization)
            self.register_buffer("feature_mean", torch.zeros(n))
            self.register_buffer("feature_std", torch.ones(n))
            layers: list[torch.nn.Module] = []
            if h > 0:
                layers += [torch.nn.Linear(n, h), torch.nn.ReLU(), torch.nn.Dropout(config.dropout)]
            layers.append(torch.nn.Linear(h if h > 0 else n, config.num_labels))
            self.head = torch.nn.Sequential(*layers)
            self.post_init()

        def set_standardization(self, features: Any) -> None:
            """Store the per-feature mean and std (floored at 1e-6) of the training features."""
            x = torch.as_tensor(features, dtype=torch.float32)
            with torch.no_grad():
                self.feature_mean.copy_(x.mean(dim=0))
                self.feature_std.copy_(x.std(dim=0, unbiased=False).clamp_min(1e-6))

        def forward(self, features: Any, labels: Any = None, **kwargs: Any) -> Any:
            x = (features.to(self.feature_mean.dtype) - self.feature_mean) / self.feature_std
            logits = self.head(x)
            loss = None
            if labels is not None:
                problem = self.config.problem_type
                if problem is None:
                    problem = ("regression" if self.config.num_labels == 1 else
                               "single_label_classification" if not labels.dtype.is_floating_point else
                               "multi_label_classification")
                if problem == "regression":
                    loss = torch.nn.functional.mse_loss(logits.reshape(labels.shape), labels.float())
                elif problem == "multi_label_classification":
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.float())
                else:
                    loss = torch.nn.functional.cross_entropy(logits, labels.long())
            return SequenceClassifierOutput(loss=loss, logits=logits)

    for cls in (FeatureClassifierConfig, FeatureClassifier):
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return {"FeatureClassifierConfig": FeatureClassifierConfig, "FeatureClassifier": FeatureClassifier}


def __getattr__(name: str) -> Any:  # PEP 562: FeatureClassifier(Config) are built (importing torch) on first access
    if name in ("FeatureClassifier", "FeatureClassifierConfig"):
        return _feature_classifier_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
