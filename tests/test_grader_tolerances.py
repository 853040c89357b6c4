"""The grader holds each numeric exercise to its own tolerance (``Exercise.rtol`` / ``atol``, read by
``comparison.compare`` as ``numpy.isclose``): a result off by twice that tolerance at one value
fails, one off by half of it at every value passes. A looser tolerance (0.1 instead of the
exercise's own), which an answer off by 1.0 does not reveal, fails here.

The near misses are the reference's own results moved by a known amount, so "just inside" and
"just outside" do not depend on how the book's solution rounds. They go through the grader's
probe and ``score_probe`` as a student's kernel would (``helpers.probe_reason``) and through
``check``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import probe_reason, quiet_check

from course_pkg.exercises import EXERCISES
from course_pkg.exercises.probe import call_plan

NUMERIC = [exercise for exercise in EXERCISES if not exercise.exact]
SEEDS = (0, 5)


def _per_call(layout, expected, out):
    """``out[i]``: the reference's result of the ``i``-th call of the student's function, read from
    the result's layout (``call_plan``: a slot with an ``index``, or a list or tuple of them)."""
    if isinstance(layout, (list, tuple)):
        for part, value in zip(layout, expected):
            _per_call(part, value, out)
    else:
        out[layout.index] = expected
    return out


def _floats(result):
    """The float arrays of one call's result (a number, an array, or a tuple or list of them)."""
    if isinstance(result, (tuple, list)) and not np.isscalar(result[0]):
        return [array for part in result for array in _floats(part)]
    array = np.asarray(result)
    return [array] if array.dtype.kind == "f" else []


def _moved(result, exercise, factor, one_value, state):
    """``result`` with ``factor`` times the exercise's tolerance (``atol + rtol * |value|``) added
    to each float value (as float64), or, with ``one_value``, to the value of widest tolerance
    of the first float array only (``state["moved"]`` says it is done)."""
    if isinstance(result, (tuple, list)) and not np.isscalar(result[0]):
        return type(result)(_moved(part, exercise, factor, one_value, state) for part in result)
    array = np.asarray(result)
    if array.dtype.kind != "f" or (one_value and state["moved"]):
        return result
    array = array.astype(np.float64)
    tolerance = exercise.atol + exercise.rtol * np.abs(array)
    step = factor * tolerance
    if one_value:
        widest = np.arange(array.size).reshape(array.shape) == np.argmax(tolerance)
        step = np.where(widest, step, 0.0)
        state["moved"] = True
    return array + step


def _near_miss(exercise, seed, factor, one_value):
    """A student's function that returns the reference's results moved by ``factor`` times the
    tolerance: at every value, or (``one_value``) at one value alone."""
    params = exercise.params(seed)
    calls, layout = call_plan(exercise, params)
    expected = _per_call(layout, exercise.expected(**params), {})
    state = {"moved": False}
    results = [_moved(expected[i], exercise, factor, one_value, state) for i in range(len(calls))]
    counter = iter(range(len(calls)))

    def answer(*args, **kwargs):
        return results[next(counter)]  # the grader and check call in call_plan's order

    return answer


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("exercise", NUMERIC, ids=lambda exercise: exercise.id)
def test_the_grader_refuses_a_near_miss_just_outside_the_tolerance(exercise, seed, tmp_path):
    reason = probe_reason(exercise.id, _near_miss(exercise, seed, 2.0, True), seed, tmp_path)
    assert reason.startswith(f"AssertionError: Exercise {exercise.id}: "), reason
    with pytest.raises(AssertionError, match=rf"^Exercise {exercise.id}: "):
        quiet_check(exercise.id, _near_miss(exercise, seed, 2.0, True), exercise.params(seed))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("exercise", NUMERIC, ids=lambda exercise: exercise.id)
def test_the_grader_accepts_a_result_just_inside_the_tolerance(exercise, seed, tmp_path):
    assert probe_reason(exercise.id, _near_miss(exercise, seed, 0.5, False), seed, tmp_path) == ""
    assert "correct" in quiet_check(exercise.id, _near_miss(exercise, seed, 0.5, False),
                                    exercise.params(seed))


def test_every_numeric_exercise_has_a_float_result_to_move():
    """The near misses above move float values: every exercise compared within a tolerance has
    some, and a tolerance that is not zero where they are."""
    assert len(NUMERIC) >= 10
    for exercise in NUMERIC:
        params = exercise.params(SEEDS[0])
        calls, layout = call_plan(exercise, params)
        expected = _per_call(layout, exercise.expected(**params), {})
        arrays = [a for i in range(len(calls)) for a in _floats(expected[i])]
        assert arrays and any((exercise.atol + exercise.rtol * np.abs(a) > 0).any() for a in arrays), \
            exercise.id
