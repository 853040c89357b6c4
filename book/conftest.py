"""nbval in a single-framework run (``COURSE_FRAMEWORK=pytorch`` or ``tensorflow``).

The set-up cell makes the cells of the framework not chosen, and the cells that compare
the two, no-ops (``course_pkg.notebook``); their stored outputs were printed by a run
with both frameworks, so nbval does not compare them here. Every other cell's output
is compared as usual. With ``COURSE_FRAMEWORK`` unset or ``both`` this changes nothing.
"""

import os

from course_pkg.notebook import resolve, skip_reason


def pytest_collection_modifyitems(config, items):
    choice = resolve(os.environ.get("COURSE_FRAMEWORK", ""))
    if choice == "both":
        return
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is None or not hasattr(item, "options"):
            continue
        if skip_reason(cell.source, choice) is not None:
            item.options["check"] = False
