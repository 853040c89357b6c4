"""Exercises that instructors regenerate and grade.

Each chapter notebook ends with an ``## Exercises`` section (its first cell tagged ``exercises``).
Every automatically checked exercise has three code cells, marked in their metadata
(``{"exercise": {"id": "3.1", "role": "params" | "solution" | "check"}}``):

- parameters: ``tokens = [[7, 3, 0], ...]``, drawn from a seed (:mod:`.catalog`);
- solution: the student's function; the book's answer sits between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` (nbgrader's markers), hidden behind a toggle in the HTML;
- check: ``check("3.1", padding_mask, tokens=tokens)`` compares the function's result with
  :mod:`course_pkg.reference` and prints the points, or raises ``AssertionError`` saying what differs.

The section is self-contained: with the notebook's set-up cell it is all that the grader runs.
Solve in NumPy, TensorFlow or PyTorch: :func:`check` accepts arrays and tensors of all three.

The instructors' command (also installed as ``course-exercises``)::

    python -m course_pkg.exercises build --out DIR [--seed N] [--chapters 3 4]
    python -m course_pkg.exercises check NOTEBOOK [NOTEBOOK ...]
    python -m course_pkg.exercises site --out DIR [--seed N]
    python -m course_pkg.exercises mark CHAPTER CELL_ID (--skip | --replace FILE | --clear)
    python -m course_pkg.exercises time NOTEBOOK [NOTEBOOK ...]   # 30 s per cell, like nbgrader

Importing this module imports neither framework.
"""

from __future__ import annotations

import numpy as np

from .catalog import BOOK_SEED, EXERCISES, Exercise, _to_numpy, for_chapter, get

__all__ = ["BOOK_SEED", "EXERCISES", "Exercise", "check", "for_chapter", "get"]


def check(exercise_id, answer, **params):
    """Check the function ``answer`` for exercise ``exercise_id`` on ``params``.

    Prints ``Exercise 3.1 (The padding mask): correct, 2/2 points`` or raises ``AssertionError``
    saying what differs from the reference (shape, first differing value, or type).

    Shape:
        as the exercise asks; NumPy arrays, ``tf.Tensor`` and ``torch.Tensor`` all accepted.
    """
    exercise = get(exercise_id)
    if not callable(answer):
        raise AssertionError(f"Exercise {exercise.id}: {exercise.answer} must be a function, "
                             f"got {type(answer).__name__}")
    expected = exercise.expected(**params)
    got = exercise.result(answer, params)
    _compare(exercise, got, expected, exercise.answer + "(...)")
    print(f"Exercise {exercise.id} ({exercise.title}): correct, {exercise.points}/{exercise.points} points")


def _compare(exercise, got, expected, what):
    prefix = f"Exercise {exercise.id}: {what}"
    if got is None or (isinstance(got, (tuple, list)) and any(value is None for value in got)
                       and _is_numeric_list(expected)):
        raise AssertionError(f"{prefix} returned None; did the function forget its return?")
    if isinstance(expected, (tuple, list)) and not _is_numeric_list(expected):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            raise AssertionError(f"{prefix} should return {len(expected)} values, got "
                                 f"{len(got) if isinstance(got, (tuple, list)) else type(got).__name__}")
        for i, (g, e) in enumerate(zip(got, expected)):
            _compare(exercise, g, e, f"{what}[{i}]")
        return
    try:
        got = _to_numpy(got)
    except Exception as error:  # e.g. a tensor on a device or a ragged list
        name = getattr(got, "type_name", type(got).__name__)  # the grader's stand-in names the type
        raise AssertionError(f"{prefix} returned a {name} that is not an array: {error}")
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        raise AssertionError(f"{prefix} has shape {got.shape}, expected {expected.shape}")
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


def _is_numeric_list(values):
    """A list of numbers (one result per case) rather than several results."""
    return all(isinstance(v, (int, float, np.integer, np.floating)) for v in values)
