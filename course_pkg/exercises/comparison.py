"""How a student's result is compared with the reference's: :func:`compare` says what differs.

Used by :func:`course_pkg.exercises.check` in the notebook and by the grader
(:mod:`.grading`) outside it. Results may be NumPy arrays, ``tf.Tensor`` or ``torch.Tensor``;
no framework is imported here.
"""

from __future__ import annotations

import numpy as np


def to_numpy(value):
    """NumPy, TensorFlow and PyTorch results alike (no framework is imported here)."""
    if hasattr(value, "detach"):  # torch.Tensor
        value = value.detach().cpu().numpy()
    elif hasattr(value, "numpy") and not isinstance(value, np.ndarray):  # tf.Tensor
        value = value.numpy()
    return np.asarray(value)


def compare(exercise, got, expected, what, params=None) -> None:
    """Raise ``AssertionError`` saying how ``got`` (``what``, e.g. ``padding_mask(...)``) differs
    from the reference's ``expected`` for ``exercise``: None returned, the number of results,
    not an array, shape, type of values, or the first value outside the exercise's tolerance.
    Several results (a tuple or list that is not one number per case) are compared one by one;
    texts (names) are compared exactly.

    Whether ``got`` is right is decided here alone. Where it is wrong and the exercise has an
    ``explain`` (``explain(params, got) -> str or None``), that message says what differs in the
    exercise's own terms (a word and its split, a name); ``None``, or an ``explain`` that cannot
    read ``got``, leaves the message above."""
    try:
        _compare(exercise, got, expected, what)
    except AssertionError:
        message = _explained(exercise, params, got)
        if message is None:
            raise
        raise AssertionError(f"Exercise {exercise.id}: {message}") from None


def _explained(exercise, params, got):
    """The exercise's own account of a wrong ``got``, or ``None`` (none, or ``got`` unreadable)."""
    explain = getattr(exercise, "explain", None)
    if explain is None or params is None:
        return None
    try:
        return explain(params, got)
    except Exception:  # a result of any shape from the student's code: the general message says it
        return None


def _compare(exercise, got, expected, what) -> None:
    prefix = f"Exercise {exercise.id}: {what}"
    if got is None or (isinstance(got, (tuple, list)) and any(value is None for value in got)
                       and is_numeric_list(expected)):
        raise AssertionError(f"{prefix} returned None; did the function forget its return?")
    if isinstance(expected, (tuple, list)) and not is_numeric_list(expected):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise AssertionError(f"{prefix} should return {len(expected)} values, got "
                                 f"{len(got) if isinstance(got, (tuple, list)) else type(got).__name__}")
        for i, (g, e) in enumerate(zip(got, expected)):
            _compare(exercise, g, e, f"{what}[{i}]")
        return
    try:
        got = to_numpy(got)
    except Exception as error:  # e.g. a tensor on a device or a ragged list
        name = getattr(got, "type_name", type(got).__name__)  # the grader's stand-in names the type
        raise AssertionError(f"{prefix} returned a {name} that is not an array: {error}")
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise AssertionError(f"{prefix} has shape {got.shape}, expected {expected.shape}")
    if expected.dtype.kind == "U":  # names
        if got.dtype.kind != "U":
            raise AssertionError(f"{prefix} holds {got.dtype} values, expected text")
        if (got != expected).any():
            where = tuple(int(i) for i in np.argwhere(got != expected)[0])
            raise AssertionError(f"{prefix}: got {got[where].item()!r}, expected {expected[where].item()!r}")
        return
    if got.dtype.kind not in "biuf":
        raise AssertionError(f"{prefix} holds {got.dtype} values, expected numbers")
    if exercise.exact:
        wrong = got != expected
    else:
        wrong = ~np.isclose(got.astype(np.float64), expected, rtol=exercise.rtol, atol=exercise.atol)
    if wrong.any():
        where = tuple(int(i) for i in np.argwhere(wrong)[0])
        raise AssertionError(
            f"{prefix}: {int(wrong.sum())} of {wrong.size} values differ from the reference; "
            f"first at index {where}: got {got[where].item()!r}, expected {expected[where].item()!r}")


def is_numeric_list(values):
    """A list of numbers (one result per case) rather than several results."""
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)
