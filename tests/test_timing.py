"""course_pkg.timing.median_times: functions timed in turns, the median per call of each."""

import pytest

from course_pkg.timing import median_times


class FakeClock:
    """A clock that only moves when the timed functions say so."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_median_per_call_of_each_function_in_turns():
    clock, order = FakeClock(), []
    costs = {"slow": iter([5.0, 1.0, 3.0, 4.0, 2.0] * 10), "fast": iter([1.0] * 50)}

    def make(name):
        def run():
            order.append(name)
            clock.now += next(costs[name])
        return run

    times = median_times({"slow": make("slow"), "fast": make("fast")}, clock, rounds=5)
    assert times == {"slow": 3.0, "fast": 1.0}  # medians of [5, 1, 3, 4, 2] and of [1] * 5
    assert order == ["slow", "fast"] * 5  # in turns, not one after the other


def test_warmup_calls_are_not_timed_and_calls_are_averaged():
    clock, calls = FakeClock(), []

    def run():
        calls.append(clock.now)
        clock.now += 10.0 if len(calls) <= 2 else 1.0  # the first two calls are slow (tracing)

    assert median_times({"f": run}, clock, rounds=3, warmup=2, calls=4) == {"f": 1.0}
    assert len(calls) == 2 + 3 * 4


@pytest.mark.parametrize("kwargs, message", [
    ({"rounds": 0}, "rounds must be an int >= 1"),
    ({"calls": 1.5}, "calls must be an int >= 1"),
    ({"warmup": -1}, "warmup must be an int >= 0"),
])
def test_bad_counts_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        median_times({"f": lambda: None}, **kwargs)


def test_nothing_to_time_or_not_a_function_is_refused():
    with pytest.raises(ValueError, match="at least one function"):
        median_times({})
    with pytest.raises(TypeError, match=r"ways\['f'\] must be a function, got int"):
        median_times({"f": 3})
