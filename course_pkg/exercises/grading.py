"""Grade a student's chapter notebook: run its exercises in a fresh kernel and score each check.

What runs: the notebook's set-up cell (tagged ``course-setup``) and every code cell of the
``## Exercises`` section, in a temporary folder, on a copy (the student's file is only read).
The parameters and check cells are reset to their canonical source for the notebook's seed
(``course_pkg_exercises`` metadata; the book's seed otherwise), so editing them changes nothing.

Crash isolation: a cell that raises does not stop the others (``allow_errors``); a cell over
the time limit is interrupted; if the kernel dies, a new one runs the set-up again and grading
goes on with the next exercise. An exercise scores its points when its check cell ran without
an error, and 0 otherwise, with the first error of its cells as the reason.
"""

from __future__ import annotations

import copy
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .catalog import BOOK_SEED, for_chapter
from .notebooks import METADATA_KEY, ExerciseError, exercise_of, read_notebook, section_start, source_text


@dataclass
class Result:
    """One exercise's grade."""

    id: str
    title: str
    points: int
    score: int
    reason: str = ""

    @property
    def passed(self):
        return self.score == self.points


@dataclass
class Report:
    """All grades of one notebook."""

    notebook: str
    seed: int
    results: list

    @property
    def score(self):
        return sum(result.score for result in self.results)

    @property
    def total(self):
        return sum(result.points for result in self.results)

    @property
    def passed(self):
        return all(result.passed for result in self.results)

    def table(self) -> str:
        width = max([len(r.title) for r in self.results] + [5])
        lines = [f"{self.notebook} (seed {self.seed})",
                 f"  {'exercise':8s}  {'title':{width}s}  {'points':>6s}  result"]
        for r in self.results:
            outcome = "passed" if r.passed else f"FAILED: {r.reason}"
            lines.append(f"  {r.id:8s}  {r.title:{width}s}  {f'{r.score}/{r.points}':>6s}  {outcome}")
        passed = sum(r.passed for r in self.results)
        lines.append(f"Total: {self.score}/{self.total} points "
                     f"({passed} of {len(self.results)} exercises passed)")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"notebook": self.notebook, "seed": self.seed, "score": self.score, "total": self.total,
                "exercises": [{"id": r.id, "title": r.title, "points": r.points, "score": r.score,
                               "passed": r.passed, "reason": r.reason} for r in self.results]}


def _chapter_of(notebook, path):
    meta = notebook.get("metadata", {}).get(METADATA_KEY, {})
    return meta.get("chapter", Path(path).stem), int(meta.get("seed", BOOK_SEED))


def _error_of(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            value = str(output.get("evalue", "")).strip().splitlines()
            message = f"{output.get('ename', 'Error')}: {value[0]}" if value else output.get("ename", "Error")
            return message if len(message) <= 160 else message[:157] + "..."
    return None


def prepare(notebook, path):
    """The cells to run (a new notebook) and, per cell, the exercise it belongs to."""
    import nbformat

    chapter, seed = _chapter_of(notebook, path)
    exercises = {exercise.id: exercise for exercise in for_chapter(chapter)}
    if not exercises:
        raise ExerciseError(f"{path}: chapter {chapter!r} has no exercises to grade")
    start = section_start(notebook)
    if start < 0:
        raise ExerciseError(f"{path}: no exercises section (a cell tagged 'exercises'): "
                            "is this one of the course's chapter notebooks?")
    cells, owner, current = [], [], None
    for index, cell in enumerate(notebook["cells"]):
        if cell.get("cell_type") != "code":
            continue
        setup = "course-setup" in cell.get("metadata", {}).get("tags", [])
        if index < start and not setup:
            continue
        cell = copy.deepcopy(cell)
        ex_id, role = exercise_of(cell)
        if ex_id in exercises:
            current = ex_id
            if role == "params":
                cell["source"] = exercises[ex_id].params_cell(seed)
            elif role == "check":
                cell["source"] = exercises[ex_id].check_source()
        cell["source"] = source_text(cell)
        cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
        owner.append(None if setup or index < start else current)
    run = nbformat.v4.new_notebook(metadata=copy.deepcopy(notebook.get("metadata", {})))
    run.cells = [nbformat.from_dict(cell) for cell in cells]
    return run, owner, exercises, seed


def grade(path, timeout=60, kernel_name="python3") -> Report:
    """Execute ``path``'s exercises in a new kernel and score them; the file is not modified."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    path = Path(path)
    notebook = read_notebook(path)
    run, owner, exercises, seed = prepare(notebook, path)
    checks = {i: exercise_of(cell)[0] for i, cell in enumerate(run.cells) if exercise_of(cell)[1] == "check"}
    setup = [i for i, ex in enumerate(owner) if ex is None]
    broken, ran = {}, set()
    with tempfile.TemporaryDirectory(prefix="course-grade-") as folder:
        client = NotebookClient(run, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                                interrupt_on_timeout=True, resources={"metadata": {"path": folder}})
        order = [i for i in range(len(run.cells)) if owner[i] is not None]
        position = 0
        while True:
            died = None
            with client.setup_kernel(stderr=subprocess.DEVNULL):  # the kernel's own start-up lines
                for i in setup:  # the set-up cell and the section's imports, in every new kernel
                    try:
                        client.execute_cell(run.cells[i], i)
                    except (DeadKernelError, CellTimeoutError):
                        raise ExerciseError(f"{path}: the set-up cells do not run") from None
                while position < len(order):
                    i = order[position]
                    position += 1
                    started = time.monotonic()
                    try:
                        client.execute_cell(run.cells[i], i)
                    except (DeadKernelError, CellTimeoutError) as error:
                        died = (i, "the kernel died" if isinstance(error, DeadKernelError)
                                else f"no answer within the {timeout}-s limit")
                        break
                    ran.add(i)
                    if time.monotonic() - started >= timeout:
                        broken.setdefault(owner[i], f"interrupted after the {timeout}-s time limit")
            if died is None:
                break
            i, reason = died
            broken.setdefault(owner[i], reason)
            while position < len(order) and owner[order[position]] == owner[i]:
                position += 1  # skip the rest of that exercise; a new kernel runs the set-up first
            if position >= len(order):
                break
            client.km, client.kc = None, None
    results = []
    for ex_id, exercise in exercises.items():
        check_cells = [i for i, e in checks.items() if e == ex_id]
        reason = broken.get(ex_id)
        if not check_cells:
            reason = reason or "its check cell is missing"
        elif not all(i in ran for i in check_cells):
            reason = reason or "its check cell did not run"
        elif any(_error_of(run.cells[i]) for i in check_cells):
            errors = [_error_of(run.cells[i]) for i, e in enumerate(owner) if e == ex_id]
            reason = reason or next(error for error in errors if error)
        score = 0 if reason else exercise.points
        results.append(Result(exercise.id, exercise.title, exercise.points, score, reason or ""))
    return Report(str(path), seed, results)
