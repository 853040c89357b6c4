"""Grade a student's chapter notebook: run its exercises in a fresh kernel and score each answer.

What runs: the notebook's set-up cell (tagged ``course-setup``) and every code cell of the
``## Exercises`` section, in a temporary folder, on a copy (the student's file is only read).
The parameters and check cells are reset to their canonical source for the notebook's seed
(``course_pkg_exercises`` metadata; the book's seed otherwise), so editing them changes nothing.

Grades come from a state the student's code cannot reach: after an exercise's cells, the
grader sends the kernel the exercise's parameters (serialised, drawn afresh from the seed), has
it call the student's function on them and write the result to a file, and compares that
result with :mod:`course_pkg.reference` itself, outside the kernel (:mod:`.probe`). Whatever the
notebook does to ``check``, its parameters, the package, ``print``, exception handlers or IPython,
only the function's result counts; an honest wrong answer is told what differs, as ``check`` does.

Crash isolation: a cell that raises does not stop the others (``allow_errors``); a cell over
the time limit, or a dead kernel, ends that kernel (killed, even if it ignores interrupts): a
new one runs the set-up again and grading goes on with the next exercise, the one that was
running scoring 0.

A malformed notebook (wrong types in its metadata or cells, another chapter's notebook) raises
:class:`ExerciseError` naming it before any kernel starts.
"""

from __future__ import annotations

import copy
import json
import secrets
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .catalog import BOOK_SEED, EXERCISES, for_chapter, get
from .notebooks import (
    METADATA_KEY,
    ROLES,
    ExerciseError,
    exercise_of,
    read_notebook,
    section_start,
    source_text,
)
from .probe import PROBE_KEY, probe_cell, score_probe, short_message


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


CHAPTERS = {exercise.chapter for exercise in EXERCISES}


def _malformed(path, what):
    return ExerciseError(f"{path}: malformed notebook: {what}")


def _type(value):
    return type(value).__name__


def validate(notebook, path):
    """Raise :class:`ExerciseError` naming ``path`` where the notebook's types are not Jupyter's."""
    meta = notebook.get("metadata", {})
    if not isinstance(meta, dict):
        raise _malformed(path, f"its metadata is a {_type(meta)}, not a mapping")
    ours = meta.get(METADATA_KEY, {})
    if not isinstance(ours, dict):
        raise _malformed(path, f"metadata {METADATA_KEY!r} is a {_type(ours)}, not a mapping")
    if "chapter" in ours and not isinstance(ours["chapter"], str):
        raise _malformed(path, f"metadata {METADATA_KEY}.chapter is a {_type(ours['chapter'])}, not text")
    seed = ours.get("seed", BOOK_SEED)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _malformed(path, f"metadata {METADATA_KEY}.seed must be an integer >= 0, got {seed!r}")
    for index, cell in enumerate(notebook["cells"]):
        place = f"cell {index}"
        if not isinstance(cell, dict):
            raise _malformed(path, f"{place} is a {_type(cell)}, not a mapping")
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise _malformed(path, f"{place} has cell_type {cell.get('cell_type')!r}")
        source = cell.get("source", "")
        if not (isinstance(source, str) or isinstance(source, list)
                and all(isinstance(line, str) for line in source)):
            raise _malformed(path, f"{place}'s source is a {_type(source)}, not text")
        cell_meta = cell.get("metadata", {})
        if not isinstance(cell_meta, dict):
            raise _malformed(path, f"{place}'s metadata is a {_type(cell_meta)}, not a mapping")
        tags = cell_meta.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise _malformed(path, f"{place}'s tags are not a list of text: {tags!r}")
        exercise = cell_meta.get("exercise")
        if exercise is not None and not (isinstance(exercise, dict) and isinstance(exercise.get("id"), str)
                                         and exercise.get("role") in ROLES):
            raise _malformed(path, f"{place}'s exercise metadata {exercise!r} is not "
                                   f"{{'id': '3.1', 'role': one of {ROLES}}}")


def _chapter_of(notebook, path):
    """``(chapter, seed)``; ``ExerciseError`` for a chapter's notebook handed in as another's."""
    ours = notebook.get("metadata", {}).get(METADATA_KEY, {})
    stem = Path(path).stem
    chapter = ours.get("chapter", stem)
    if stem in CHAPTERS and chapter != stem:
        raise ExerciseError(f"{path}: this is chapter {chapter}'s notebook, handed in as {stem} "
                            f"(its metadata says {chapter})")
    ids = sorted({exercise_of(cell)[0] for cell in notebook["cells"]} & {e.id for e in EXERCISES})
    found = sorted({get(ex_id).chapter for ex_id in ids})
    if found and chapter not in found:
        raise ExerciseError(f"{path}: holds the exercises of {', '.join(found)} ({', '.join(ids)}), "
                            f"not those of {chapter}: another chapter's notebook")
    return chapter, ours.get("seed", BOOK_SEED)


def _error_of(cell):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            value = short_message(output.get("evalue", ""))
            return f"{output.get('ename', 'Error')}: {value}" if value else output.get("ename", "Error")
    return None


def prepare(notebook, path):
    """The cells to run (a new notebook) and, per cell, the exercise it belongs to.

    Raises :class:`ExerciseError` naming ``path`` for a notebook that cannot be graded.
    """
    import nbformat

    validate(notebook, path)
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
        cell.setdefault("metadata", {}).pop(PROBE_KEY, None)
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
    try:
        run = nbformat.v4.new_notebook(metadata=copy.deepcopy(notebook.get("metadata", {})))
        run.cells = [nbformat.from_dict(cell) for cell in cells]
    except (TypeError, ValueError, AttributeError) as error:
        raise _malformed(path, error) from None
    return run, owner, exercises, seed


def _cell_errors(run, owner, probes):
    """{exercise id: the first error among its own cells}: the solution and any cell the student
    added, not the parameters and check cells that the grader resets, nor its probes."""
    errors = {}
    for i, ex_id in enumerate(owner):
        reset = exercise_of(run.cells[i])[1] in ("params", "check")
        if ex_id is None or ex_id in errors or i in probes or reset:
            continue
        error = _error_of(run.cells[i])
        if error:
            errors[ex_id] = error
    return errors


# --------------------------------------------------------------------------- grading

def grade(path, timeout=60, kernel_name="python3") -> Report:
    """Execute ``path``'s exercises in a new kernel and score them; the file is not modified.

    ``timeout``: seconds any one cell may run (> 0); a cell over it has its kernel killed.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    path = Path(path)
    notebook = read_notebook(path)
    run, owner, exercises, seed = prepare(notebook, path)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as folder, \
            tempfile.TemporaryDirectory(prefix="course-grade-results-") as results:
        outs = _insert_probes(run, owner, exercises, seed, results)
        probes = {i: cell.metadata[PROBE_KEY] for i, cell in enumerate(run.cells)
                  if PROBE_KEY in cell.metadata}
        execution = _Execution(run, owner, probes, outs, path, timeout)
        broken = execution.all_cells(folder, kernel_name)
        reports = execution.reports
    cell_errors = _cell_errors(run, owner, probes)
    results = []
    for ex_id, exercise in exercises.items():
        reason = broken.get(ex_id)
        if reason is None:
            report = reports.get(ex_id)
            if report is None:
                reason = "its cells are missing"
            elif isinstance(report, str):
                reason = report
            else:
                reason = score_probe(exercise, seed, report, cell_errors.get(ex_id))
        score = 0 if reason else exercise.points
        results.append(Result(exercise.id, exercise.title, exercise.points, score, reason or ""))
    return Report(str(path), seed, results)


def _insert_probes(run, owner, exercises, seed, results):
    """Put a probe after each exercise's last cell (``owner`` kept in step with ``run.cells``);
    returns {exercise id: the file in ``results`` its probe writes}."""
    outs, lasts = {}, []
    for ex_id in exercises:
        last = max([i for i, e in enumerate(owner) if e == ex_id], default=None)
        if last is not None:
            lasts.append((last, ex_id))
            outs[ex_id] = Path(results) / f"{secrets.token_hex(16)}.json"
    for last, ex_id in sorted(lasts, reverse=True):
        run.cells.insert(last + 1, probe_cell(exercises[ex_id], seed, outs[ex_id]))
        owner.insert(last + 1, ex_id)
    return outs


class _Execution:
    """The run of a notebook's exercise cells (``run``, with ``owner`` the exercise of each cell
    and ``None`` for the set-up cells), a new kernel after one dies or runs over ``timeout``."""

    def __init__(self, run, owner, probes, outs, path, timeout):
        self.run, self.owner, self.probes, self.outs = run, owner, probes, outs
        self.path, self.timeout = path, timeout
        self.order = [i for i in range(len(run.cells)) if owner[i] is not None]
        self.reports = {}  # exercise id -> its probe's report (or why there is none)

    def all_cells(self, folder, kernel_name):
        """Execute the exercises' cells in ``folder``: {exercise id: why its kernel stopped}.
        A cell that kills its kernel or runs over the limit ends that exercise; a new kernel
        runs the set-up cells and goes on with the next one."""
        from nbclient import NotebookClient

        client = NotebookClient(self.run, timeout=self.timeout, kernel_name=kernel_name,
                                allow_errors=True, interrupt_on_timeout=False,
                                shutdown_kernel="immediate", resources={"metadata": {"path": folder}})
        broken, position, order, owner = {}, 0, self.order, self.owner
        while True:
            position, died = self.in_one_kernel(client, position)
            if died is None:
                break
            i, reason = died
            broken.setdefault(owner[i], reason)
            while position < len(order) and owner[order[position]] == owner[i]:
                position += 1  # skip the rest of that exercise; a new kernel runs the set-up first
            if position >= len(order):
                break
            client.km, client.kc = None, None
        return broken

    def in_one_kernel(self, client, position):
        """Start a kernel, run the set-up cells, then the exercises' cells from ``position`` until
        one kills the kernel or times out. Returns ``(position, died)``: where it stopped and
        ``(cell, reason)``, or ``None`` when every cell ran."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        run, probes = self.run, self.probes
        setup = [i for i, ex in enumerate(self.owner) if ex is None]
        with client.setup_kernel(stderr=subprocess.DEVNULL):  # the kernel's own start-up lines
            for i in setup:  # the set-up cell and the section's imports, in every new kernel
                try:
                    client.execute_cell(run.cells[i], i)
                except (DeadKernelError, CellTimeoutError):
                    raise ExerciseError(f"{self.path}: the set-up cells do not run") from None
            while position < len(self.order):
                i = self.order[position]
                position += 1
                try:
                    client.execute_cell(run.cells[i], i)
                except (DeadKernelError, CellTimeoutError) as error:
                    return position, (i, "the kernel died" if isinstance(error, DeadKernelError) else
                                      f"no answer within the {self.timeout}-s limit (the kernel was stopped)")
                if i in probes:
                    self.reports[probes[i]] = _read_report(self.outs[probes[i]], run.cells[i])
        return position, None


def _read_report(out, cell):
    """The probe's report, or the reason there is none (a string)."""
    try:
        report = json.loads(Path(out).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        error = _error_of(cell)
        return ("the grader got no result from the student's function"
                + (f" ({error})" if error else " (did the notebook change how cells run?)"))
    finally:
        Path(out).unlink(missing_ok=True)
    return report if isinstance(report, dict) else "the grader got no result from the student's function"
