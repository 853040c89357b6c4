"""Framework-free parts of the two trainers (constants, config comparison, progress bar, the fit loop).

:mod:`course_pkg.torch.trainer` and :mod:`course_pkg.tensorflow.trainer` (and
their ``schedule`` and ``checkpoint`` modules) share these, so that they save,
refuse and report alike; their argument checks are in :mod:`course_pkg.common.checks`.
"""

import contextlib
import gc
import json
import time

from .checks import check_batch, check_budget, check_positive, check_reiterable

ADAM_BETAS, ADAM_EPSILON = (0.9, 0.98), 1e-9  # Vaswani et al. (2017), section 5.3
CHECKPOINT_FORMAT = "course_pkg.training/1"  # both frameworks' Trainer.save
HISTORY_KEYS = ("step", "loss", "accuracy", "val_loss", "val_accuracy", "elapsed")  # Trainer.fit
_IGNORED_CONFIG_KEYS = ("name",)  # Keras numbers its models' names; not a configuration


def config_differences(expected, found):
    """``key: expected ..., found ...`` for every key where two configs differ."""
    expected = {k: v for k, v in expected.items() if k not in _IGNORED_CONFIG_KEYS}
    found = {k: v for k, v in found.items() if k not in _IGNORED_CONFIG_KEYS}
    missing = "<missing>"
    return [f"{key}: expected {expected.get(key, missing)!r}, found {found.get(key, missing)!r}"
            for key in sorted(set(expected) | set(found))
            if expected.get(key, missing) != found.get(key, missing)]


def check_checkpoint_config(expected, found, path):
    """Raise ``ValueError`` naming every differing value unless a checkpoint's config (``found``, with
    its ``model_class``) is the live model's (``expected``); ``path`` is the checkpoint."""
    differences = config_differences(expected, found)
    if differences:
        raise ValueError(f"checkpoint {path} was saved from a model with another configuration "
                         "(expected: this model, found: the checkpoint): " + "; ".join(differences))


def unreadable_checkpoint(where, reason):
    """The ``ValueError`` for checkpoint files that cannot be read at all; ``where`` names them,
    ``reason`` says what the reader raised (the error's class, at least)."""
    return ValueError(f"{where} is not a checkpoint written by Trainer.save: the file is empty, "
                      f"truncated, damaged or holds other objects ({reason})")


def damaged_checkpoint(where, problem):
    """The ``ValueError`` for a checkpoint that reads but does not fit the trainer (``problem`` says how),
    raised before anything is loaded."""
    return ValueError(f"{where} is a damaged checkpoint: {problem}; nothing was loaded")


def plain(config):
    """A config as JSON would give it back (tuples as lists), to compare saved and live configs."""
    return json.loads(json.dumps(config, default=str))


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
