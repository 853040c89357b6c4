"""Timing in turns: how the book and the benchmarks compare two ways of doing the same thing.

Framework-free. The functions compared run one after the other, round after round, so that a
change in the machine's load (another program, a CPU that heats up) falls on all of them alike,
and each one's median time is reported::

    from course_pkg.timing import median_times

    times = median_times({"cached": decode_cached, "uncached": decode_uncached}, time.process_time)
    speed_up = times["uncached"] / times["cached"]

On a CPU, time the process's CPU time (``time.process_time``, all its threads), which other work
on a shared machine inflates less than wall time; on a GPU, wall time (``time.perf_counter``)
with functions that wait for the device before they return (``torch.cuda.synchronize()``).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Mapping

from .common.arguments import check_count


def median_times(ways: Mapping[str, Callable[[], object]], clock: Callable[[], float] = time.process_time,
                 rounds: int = 3, warmup: int = 0, calls: int = 1) -> dict:
    """Each function's median seconds per call, the functions run in turns.

    Args:
        ways: ``{name: function}``; each function is called without arguments.
        clock: the clock read around each round of calls: ``time.process_time`` (CPU
            seconds of the process, the default) or ``time.perf_counter`` (wall time).
        rounds: how many times each function is timed; the median is reported.
        warmup: untimed calls of each function first (tracing, caches, lazy set-up).
        calls: calls per timed round (their mean), for functions too quick to time alone.

    Returns:
        ``{name: seconds per call}``, the median over the rounds, in the order of ``ways``.

    Raises:
        ValueError: no functions, or ``rounds`` or ``calls`` below 1, or ``warmup`` below 0.
        TypeError: a function that cannot be called.
    """
    if not ways:
        raise ValueError("median_times needs at least one function to time")
    rounds, calls = check_count("rounds", rounds, 1), check_count("calls", calls, 1)
    warmup = check_count("warmup", warmup, 0)
    for name, function in ways.items():
        if not callable(function):
            raise TypeError(f"ways[{name!r}] must be a function, got {type(function).__name__}")
    for _ in range(warmup):
        for function in ways.values():
            function()
    times = {name: [] for name in ways}
    for _ in range(rounds):
        for name, function in ways.items():
            start = clock()
            for _ in range(calls):
                function()
            times[name].append((clock() - start) / calls)
    return {name: statistics.median(seconds) for name, seconds in times.items()}
