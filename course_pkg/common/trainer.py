"""Framework-free parts of the two trainers (``trainer``): precision, budgets, the fit loop with its
progress bar and history, a batch's shapes, evaluation logs.

:mod:`course_pkg.torch.trainer` and :mod:`course_pkg.tensorflow.trainer` share these, so that they
train, refuse and report alike; their checkpoints' half is :mod:`course_pkg.common.checkpoint`.
"""

import contextlib
import gc
import time

from .arguments import check_batch, check_positive

PRECISIONS = ("fp32", "bf16", "fp16")  # Trainer(precision=...)

HISTORY_KEYS = ("step", "loss", "accuracy", "val_loss", "val_accuracy", "elapsed")  # Trainer.fit


def check_precision(precision) -> str:
    """Raise ``ValueError`` unless ``precision`` is ``"fp32"``, ``"bf16"`` or ``"fp16"``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    return precision


def check_reiterable(batches, epochs, what) -> None:
    """Raise ``ValueError`` for a one-shot iterator that ``epochs > 1`` would pass over again."""
    if epochs > 1 and iter(batches) is batches:
        raise ValueError(
            f"{what} is a one-shot iterator (e.g. a generator), but epochs={epochs} passes over "
            "it several times; pass a list, a DataLoader or a tf.data.Dataset"
        )


def check_budget(max_steps, time_budget) -> None:
    """Raise ``ValueError`` for ``max_steps`` < 1 or a ``time_budget`` that is not a finite number
    of seconds >= 0 (NaN, inf, negative; ``None``: no limit)."""
    if max_steps is not None:
        check_positive(max_steps=max_steps)
    if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(
            time_budget, (int, float)) or not 0 <= time_budget < float("inf")):
        raise ValueError(f"time_budget must be a number of seconds >= 0, got {time_budget!r}")


class NoBar:
    """Stands in for a tqdm bar when ``progress=False``."""

    def set_description(self, *args, **kwargs):
        pass

    def set_postfix(self, *args, **kwargs):
        pass

    def update(self, *args, **kwargs):
        pass

    def close(self):
        pass


def progress_bar(progress, train_batches, epochs, max_steps):
    if not progress:
        return NoBar()
    from tqdm.auto import tqdm  # renders as a widget in notebooks, as text elsewhere

    try:
        total = epochs * len(train_batches)
    except TypeError:  # no len(): a generator
        total = None
    if max_steps is not None:
        total = max_steps if total is None else min(total, max_steps)
    return tqdm(total=total, unit="step", dynamic_ncols=True)


@contextlib.contextmanager
def frozen_gc():
    """Spare the objects that exist now (model, optimizer, data) the cyclic GC's full passes.

    A full collection walks every tracked object; a Keras model holds so many
    that one pass stalled training for over 5 s (and slowed every epoch by a
    fifth) in the course's benchmark. Objects made during training are still
    collected as usual; the frozen ones are unfrozen at the end.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def fit_loop(trainer, train_batches, valid_batches, epochs, max_steps, time_budget, progress,
             checkpoint_path):
    """The body of both frameworks' ``Trainer.fit`` (see there): ``trainer`` brings ``train_step``,
    ``evaluate``, ``save``, ``step``, ``is_chief`` (which process shows the bar) and ``any_process``
    (a flag or-ed over the processes, for the time budget); this loop brings the budgets, the progress
    bar and the history."""
    check_positive(epochs=epochs)
    check_budget(max_steps, time_budget)
    check_reiterable(train_batches, epochs, "train_batches")
    if valid_batches is not None:
        check_reiterable(valid_batches, epochs, "valid_batches")
    history = {key: [] for key in HISTORY_KEYS}
    start, steps, stop = time.perf_counter(), 0, False
    bar = progress_bar(progress and trainer.is_chief, train_batches, epochs, max_steps)
    with frozen_gc():
        try:
            for epoch in range(epochs):
                bar.set_description(f"epoch {epoch + 1}/{epochs}")
                loss_sum = accuracy_sum = 0.0
                epoch_steps = 0
                for src, tgt_in, tgt_out in train_batches:
                    logs = trainer.train_step(src, tgt_in, tgt_out)
                    steps, epoch_steps = steps + 1, epoch_steps + 1
                    loss_sum, accuracy_sum = loss_sum + logs["loss"], accuracy_sum + logs["accuracy"]
                    shown = {"loss": f"{loss_sum / epoch_steps:.4f}",
                             "accuracy": f"{accuracy_sum / epoch_steps:.4f}"}
                    bar.set_postfix(shown, refresh=False)
                    bar.update(1)
                    stop = max_steps is not None and steps >= max_steps
                    if time_budget is not None and not stop:  # every process stops at the same step
                        stop = trainer.any_process(time.perf_counter() - start >= time_budget)
                    if stop:
                        break
                if epoch_steps == 0:
                    if steps == 0:
                        raise ValueError("train_batches yielded no batch to train on")
                    break  # a re-iterable that came back empty
                val = trainer.evaluate(valid_batches) if valid_batches is not None else {}
                if val:
                    bar.set_postfix({**shown, "val_loss": f"{val['loss']:.4f}",
                                     "val_accuracy": f"{val['accuracy']:.4f}"})
                row = {"step": trainer.step, "loss": loss_sum / epoch_steps,
                       "accuracy": accuracy_sum / epoch_steps, "val_loss": val.get("loss"),
                       "val_accuracy": val.get("accuracy"), "elapsed": time.perf_counter() - start}
                for key in HISTORY_KEYS:
                    history[key].append(row[key])
                if stop:
                    break
        finally:
            bar.close()
    if checkpoint_path is not None:
        trainer.save(checkpoint_path)
    return history


def check_batch_shapes(src_shape, tgt_in_shape, tgt_out_shape):
    """Raise ``ValueError`` unless ``src``, ``tgt_in`` and ``tgt_out`` share their batch size and
    ``tgt_out`` has the shape of ``tgt_in`` (one label per decoder input), before any computation:
    a batch of 1 would otherwise broadcast against the others."""
    check_batch(src_shape[0], tgt_in=tgt_in_shape, tgt_out=tgt_out_shape)
    if tuple(tgt_out_shape) != tuple(tgt_in_shape):
        raise ValueError(f"tgt_out has shape {tuple(tgt_out_shape)}, expected {tuple(tgt_in_shape)} "
                         "(that of tgt_in): teacher forcing scores one label per decoder input")


def evaluation_logs(totals, seen):
    """``{"loss", "accuracy"}`` from summed loss, correct predictions and counted tokens."""
    if not seen:
        raise ValueError("batches yielded no batch to evaluate (an exhausted generator?)")
    loss_sum, hits, count = (float(t) for t in totals)
    return {"loss": loss_sum / max(count, 1.0), "accuracy": hits / max(count, 1.0)}
