"""Run a notebook cell by cell under nbgrader's per-cell time limit and time every cell.

``python -m course_pkg.exercises time NOTEBOOK ...`` uses it to check that the assignment
editions (student notebooks and answer keys) run within nbgrader's default 30 s per cell, and
``tests/test_exercises.py`` does the same. Each cell's wall time is measured around its
execution; its CPU time is the kernel process's (all threads), read in the kernel before and
after the cell, so that a contended machine (long wall, short CPU) can be told from a slow cell.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .notebooks import CELL_TIME_LIMIT, exercise_of, read_notebook, source_text

# Runs first in the kernel (not part of the notebook): appends each cell's CPU seconds to a file.
_PROBE = '''\
import time as _t
def _course_timing(path):
    state = {}
    def pre(*args):
        state["cpu"] = _t.process_time()
    def post(*args):
        if "cpu" in state:  # not for this cell itself (registered while it ran)
            with open(path, "a") as f:
                f.write(f"{_t.process_time() - state.pop('cpu'):.3f}\\n")
    get_ipython().events.register("pre_run_cell", pre)
    get_ipython().events.register("post_run_cell", post)
_course_timing({path!r})
del _course_timing
'''


@dataclass
class CellRun:
    """One code cell's run: its index in the notebook, wall and CPU seconds, and its error."""

    index: int
    cell_id: str
    first_line: str
    wall: float
    cpu: float
    error: str = ""  # "" when it ran; "ename: message" or "timeout (> N s)"
    role: str = ""  # the exercise role ("params", "solution", "check") or ""


def run_timed(path, timeout=CELL_TIME_LIMIT, kernel_name="python3", indices=None) -> list:
    """Execute the code cells of ``path`` (or only those at ``indices``) in a fresh kernel.

    Every cell runs even after an error (nbgrader's autograde does the same); a cell over
    ``timeout`` seconds stops the run (its ``CellRun.error`` says so; later cells are not run).
    The notebook file is not modified. Returns the :class:`CellRun` of each cell that ran.
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    path = Path(path)
    notebook = nbformat.reads(json.dumps(read_notebook(path)), as_version=4)  # sources joined
    code = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"
            and (indices is None or i in indices)]
    runs = []
    with tempfile.TemporaryDirectory(prefix="course-timing-") as work:
        cpu_file = Path(work) / "cpu.txt"
        client = NotebookClient(notebook, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                                interrupt_on_timeout=False, shutdown_kernel="immediate",
                                resources={"metadata": {"path": str(path.parent.resolve())}})
        with client.setup_kernel(stderr=subprocess.DEVNULL):
            probe = nbformat.v4.new_code_cell(_PROBE.replace("{path!r}", repr(str(cpu_file))))
            notebook.cells.append(probe)  # its own place: nbclient stores an executed cell at its index
            client.execute_cell(probe, len(notebook.cells) - 1)
            for index in code:
                cell = notebook.cells[index]
                lines = source_text(cell).strip().splitlines()
                run = CellRun(index, str(cell.get("id", "")), lines[0][:90] if lines else "", 0.0, 0.0,
                              role=exercise_of(cell)[1] or "")
                start = time.monotonic()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    run.error = f"timeout (> {timeout} s)"
                except DeadKernelError:
                    run.error = "the kernel died"
                run.wall = time.monotonic() - start
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error" and not run.error:
                        run.error = f"{output.get('ename')}: {str(output.get('evalue', ''))[:160]}"
                runs.append(run)
                if run.error.startswith(("timeout", "the kernel")):
                    break
        cpu = cpu_file.read_text().split() if cpu_file.exists() else []
    for run, seconds in zip(runs, cpu):
        run.cpu = float(seconds)
    return runs


def expected_error(run) -> bool:
    """A student notebook's stub: ``NotImplementedError`` in an exercise's solution or check cell."""
    return run.role in ("solution", "check") and run.error.startswith("NotImplementedError")


def report(path, runs, show=3) -> str:
    """A few lines: the slowest cells of ``path`` and every unexpected error."""
    total_wall, total_cpu = sum(r.wall for r in runs), sum(r.cpu for r in runs)
    lines = [f"{path}: {len(runs)} code cells, {total_wall:.1f} s wall, {total_cpu:.1f} s CPU in all"]
    for run in sorted(runs, key=lambda r: -r.wall)[:show]:
        lines.append(f"  cell {run.index:3d} ({run.cell_id}): {run.wall:6.1f} s wall {run.cpu:6.1f} s CPU"
                     f"  {run.first_line}")
    for run in runs:
        if run.error and not expected_error(run):
            lines.append(f"  ERROR in cell {run.index} ({run.cell_id}): {run.error}")
    return "\n".join(lines)
