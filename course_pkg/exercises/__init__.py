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

from .catalog import BOOK_SEED, EXERCISES, Exercise, for_chapter, get
from .comparison import compare

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
    compare(exercise, got, expected, exercise.answer + "(...)", params)
    print(f"Exercise {exercise.id} ({exercise.title}): correct, {exercise.points}/{exercise.points} points")
