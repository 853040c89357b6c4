"""Framework-free parts of the two trainers (checks, config comparison, progress bar).

:mod:`course_pkg.torch.training` and :mod:`course_pkg.tensorflow.training`
share these, so that they check and report alike.
"""

import contextlib
import gc
import json

from ._checks import check_positive

_IGNORED_CONFIG_KEYS = ("name",)  # Keras numbers its models' names; not a configuration


def check_label_smoothing(label_smoothing):
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= float(label_smoothing) < 1.0:
        raise ValueError(f"label_smoothing must be a float in [0, 1), got {label_smoothing!r}")


def check_loss_shapes(labels_shape, logits_shape):
    labels_shape, logits_shape = tuple(labels_shape), tuple(logits_shape)
    ok = len(labels_shape) == 2 and len(logits_shape) == 3 and all(
        a is None or b is None or a == b for a, b in zip(labels_shape, logits_shape))
    if not ok:
        raise ValueError(
            f"labels of shape {labels_shape} do not fit logits of shape {logits_shape}: "
            "expected labels (batch, tgt_len) and logits (batch, tgt_len, vocab)"
        )


def config_differences(expected, found):
    """``key: expected ..., found ...`` for every key where two configs differ."""
    expected = {k: v for k, v in expected.items() if k not in _IGNORED_CONFIG_KEYS}
    found = {k: v for k, v in found.items() if k not in _IGNORED_CONFIG_KEYS}
    missing = "<missing>"
    return [f"{key}: expected {expected.get(key, missing)!r}, found {found.get(key, missing)!r}"
            for key in sorted(set(expected) | set(found))
            if expected.get(key, missing) != found.get(key, missing)]


def plain(config):
    """A config as JSON would give it back (tuples as lists), to compare saved and live configs."""
    return json.loads(json.dumps(config, default=str))


def check_reiterable(batches, epochs, what):
    if epochs > 1 and iter(batches) is batches:
        raise ValueError(
            f"{what} is a one-shot iterator (e.g. a generator), but epochs={epochs} passes over "
            "it several times; pass a list, a DataLoader or a tf.data.Dataset"
        )


def check_budget(max_steps, time_budget):
    if max_steps is not None:
        check_positive(max_steps=max_steps)
    if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(
            time_budget, (int, float)) or time_budget < 0):
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
