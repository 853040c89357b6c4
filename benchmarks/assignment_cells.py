"""Assignment cells against nbgrader's 30-s limit: the slowest cells of every assignment notebook.

nbgrader stops any cell that runs over 30 s (its default ``ExecutePreprocessor.timeout``). This
benchmark builds the assignment editions (``plan_build``: the student notebooks and the answer keys,
as ``python -m course_pkg.exercises build`` writes them) in a temporary folder and runs, cell by cell
in a fresh kernel (``course_pkg.exercises.cell_times.run_timed``), every answer key in full and each
student notebook's set-up and exercise cells (its other cells are the answer key's), under a generous
per-cell timeout (``--timeout``, 300 s) so that a slow cell is measured, not cut off, and with one
thread per framework in the kernels (``--threads``). It prints, per notebook, the slowest cells with
their wall seconds and their kernel's CPU seconds (with one thread: the cell's work on one core,
which a machine busy with other work inflates far less than wall time), and says whether each is well
under the limit: "ok" when its CPU time and its wall time are both at most limit / margin (10 s by
default), "busy?" when only the wall time is over that (the machine was shared: rerun on an idle one),
"SLOW" when the CPU time is over it. The load average is printed before and after. Exit status 1 when
a cell is SLOW or a cell raised an error that is not a student stub's ``NotImplementedError``.

    python benchmarks/assignment_cells.py                   # all chapters (about 4 minutes on 2 cores)
    python benchmarks/assignment_cells.py --chapters 5 6 --show 5
    python benchmarks/assignment_cells.py --margin 2        # "well under" = at most 15 s

The tests (tests/test_assignments.py) run the same notebooks under a generous timeout and assert
that no cell raised and that no cell used more than 30 CPU seconds; this benchmark keeps the
margin honest with the numbers.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from course_pkg.exercises.cell_times import expected_error, run_timed
from course_pkg.exercises.notebooks import (
    CELL_TIME_LIMIT,
    find_chapters,
    plan_build,
    read_notebook,
    section_start,
)

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
SEED = 11  # the seed of tests/test_assignments.py; the cells' cost does not depend on it


# The kernels' thread pools: one thread each by default (--threads), so that a cell's CPU seconds are
# its work on one core, not inflated by threads spinning while another program holds the cores (a
# 2-thread PyTorch kernel on a busy 2-core machine burns several times its work). tests/test_assignments.py
# runs its kernels with the same settings.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")


def load():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (AttributeError, OSError):
        return "n/a"


def verdict(run, bound):
    if run.cpu > bound:
        return "SLOW"
    return "busy?" if run.wall > bound else "ok"


def student_cells(path):
    """The set-up cell and the exercises section of a student notebook (the rest is the answer key's)."""
    cells = read_notebook(path)["cells"]
    start = section_start({"cells": cells})
    return [i for i, c in enumerate(cells)
            if "course-setup" in c.get("metadata", {}).get("tags", []) or i >= start]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", nargs="+", type=int, default=None,
                        help="chapter numbers (default: all)")
    parser.add_argument("--editions", nargs="+", choices=["answers", "student"],
                        default=["answers", "student"])
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell before a cell is cut off")
    parser.add_argument("--limit", type=float, default=CELL_TIME_LIMIT, help="nbgrader's limit (30 s)")
    parser.add_argument("--margin", type=float, default=3.0, help="well under = at most limit / margin")
    parser.add_argument("--show", type=int, default=3, help="slowest cells shown per notebook")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of the kernels' PyTorch and TensorFlow (default 1; 0: theirs)")
    args = parser.parse_args(argv)
    if args.threads:
        os.environ.update({name: str(args.threads) for name in THREAD_VARIABLES})
    bound = args.limit / args.margin
    chapters = find_chapters(BOOK)
    if args.chapters:
        chapters = [p for p in chapters if int(p.name[:2]) in args.chapters]
    print(f"nbgrader's limit {args.limit:g} s per cell; well under = CPU and wall <= {bound:g} s "
          f"(margin {args.margin:g}); {os.cpu_count()} CPUs; kernel threads "
          f"{args.threads or 'as the frameworks choose'}; load average {load()}")
    worst, failed = [], False
    with tempfile.TemporaryDirectory(prefix="assignment-cells-") as folder:
        folder = Path(folder)
        for name, text in plan_build(BOOK, SEED).items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        for path in chapters:
            for edition in args.editions:
                notebook = folder / edition / path.name
                indices = student_cells(notebook) if edition == "student" else None
                runs = run_timed(notebook, timeout=args.timeout, indices=indices)
                print(f"\n{edition}/{path.name}: {len(runs)} code cells, "
                      f"{sum(r.wall for r in runs):.1f} s wall, {sum(r.cpu for r in runs):.1f} s CPU in all")
                print(f"  {'cell':>4s} {'id':14s} {'wall s':>7s} {'CPU s':>7s}  verdict")
                for run in sorted(runs, key=lambda r: -max(r.wall, r.cpu))[:args.show]:
                    print(f"  {run.index:4d} {run.cell_id[:14]:14s} {run.wall:7.1f} {run.cpu:7.1f}  "
                          f"{verdict(run, bound):6s} {run.first_line[:60]}")
                for run in runs:
                    if run.error and not expected_error(run):
                        print(f"  ERROR in cell {run.index} ({run.cell_id}): {run.error}")
                        failed = True
                    worst.append((run, f"{edition}/{path.name}"))
    print(f"\nload average at the end {load()}")
    slowest_cpu = max(worst, key=lambda w: w[0].cpu, default=None)
    slowest_wall = max(worst, key=lambda w: w[0].wall, default=None)
    if slowest_cpu:
        for label, (run, where) in (("most CPU", slowest_cpu), ("longest wall", slowest_wall)):
            print(f"{label:12s}: {where} cell {run.index} ({run.cell_id}): {run.wall:.1f} s wall, "
                  f"{run.cpu:.1f} s CPU ({run.cpu / args.limit:.0%} of the limit)")
    slow = [(run, where) for run, where in worst if verdict(run, bound) == "SLOW"]
    busy = [(run, where) for run, where in worst if verdict(run, bound) == "busy?"]
    print(f"{len(worst)} cells: {len(worst) - len(slow) - len(busy)} ok, {len(busy)} busy? (wall only), "
          f"{len(slow)} SLOW (CPU over {bound:g} s)")
    return 1 if slow or failed else 0


if __name__ == "__main__":
    sys.exit(main())
