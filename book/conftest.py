"""nbval in a single-framework run (``COURSE_FRAMEWORK=pytorch`` or ``tensorflow``).

The set-up cell makes the cells of the framework not chosen, and the cells that compare
the two, no-ops (``course_pkg.notebook``); their stored outputs were printed by a run
with both frameworks, so nbval does not compare them here. A ``per-framework`` cell runs
and prints the lines of the chosen framework only: nbval compares its output with the
stored one less the lines that begin with the other framework's name
(``course_pkg.authoring.claims.expected_outputs``). Every other cell's output is compared as usual.

A learner with one framework must see the chapter's claims: a notebook whose run prints
fewer than ``course_pkg.authoring.claims.MIN_COVERAGE`` of its stored claim lines about that
framework or neither fails (its first cell reports the lines missing). With
``COURSE_FRAMEWORK`` unset or ``both`` this changes nothing.
"""

import copy
import os

import pytest

from course_pkg.authoring.claims import MIN_COVERAGE, coverage, expected_outputs
from course_pkg.notebook import resolve, skip_reason

_SHORT = {}  # the first item of a notebook that prints too few claims -> why


def pytest_collection_modifyitems(config, items):
    choice = resolve(os.environ.get("COURSE_FRAMEWORK", ""))
    if choice == "both":
        return
    first_of = {}
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is None or not hasattr(item, "options"):
            continue
        first_of.setdefault(str(item.fspath), item)
        if skip_reason(cell.source, choice) is not None:
            item.options["check"] = False
            continue
        expected = expected_outputs(cell, choice)
        if expected is not cell.get("outputs", []):
            cell = copy.deepcopy(cell)
            cell.outputs = expected
            item.cell = cell
    for path, item in first_of.items():
        printed, wanted, missing = coverage(path, choice)
        if wanted and printed / wanted < MIN_COVERAGE:
            _SHORT[item.nodeid] = (
                f"{os.path.basename(path)} with {choice} only prints {printed} of its {wanted} claims about "
                f"{choice} or neither framework (at least {MIN_COVERAGE:.0%} wanted); missing:\n"
                + "\n".join(f"  {line}" for line in missing))


def pytest_runtest_setup(item):
    if item.nodeid in _SHORT:
        pytest.fail(_SHORT[item.nodeid], pytrace=False)
