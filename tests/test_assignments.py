"""The assignment editions (student notebooks and answer keys) under nbgrader 0.9.6's defaults.

- the chapters' assignment marks (``assignment-skip``, ``assignment-replace``: book/AUTHORING.md)
  are applied to the student and answer notebooks only, and refused where they do not belong;
- the grade, solution and locked cells carry the checksums nbgrader computes, so that
  ``nbgrader validate`` flags an edited locked cell;
- every cell of every chapter's answer key runs without an error, and the student notebooks'
  exercise cells fail only with their stubs' ``NotImplementedError``; no cell uses more than
  nbgrader's 30 s per cell in kernel CPU time (the assignment editions shorten the book's long
  runs). Wall time is not asserted: on a machine shared with other work a cell's wall time says
  more about the load than about the cell, so the cells run under a generous timeout (10 x 30 s,
  against a hung kernel only). ``python benchmarks/assignment_cells.py`` measures the margin:
  each notebook's slowest cells, wall and CPU seconds (3.5 minutes on the shared 2-core machine,
  about 100 s of kernel CPU; the test prints the slowest cells with ``-s``);
- nbgrader's own ``generate_assignment`` and ``autograde`` grade chapter 3 as ``check`` does
  (about a minute).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from course_pkg.exercises import catalog
from course_pkg.exercises.notebooks import (
    ASSIGNMENT_KEY,
    CELL_TIME_LIMIT,
    REPLACE_TAG,
    SKIP_TAG,
    assignment_mark,
    exercise_of,
    find_chapters,
    make_edition,
    nbgrader_checksum,
    plan_build,
    read_notebook,
    section_start,
    source_text,
    write_json,
)
from course_pkg.notebook import marker

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = find_chapters(BOOK)
IDS = [p.stem for p in CHAPTERS]
SEED = 11


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _marked(notebook):
    return [(cell, assignment_mark(cell, "test")) for cell in notebook["cells"]]


@pytest.fixture(scope="module")
def built():
    """{relative path: notebook} of one build of every chapter (in memory)."""
    return {name: json.loads(text) for name, text in plan_build(BOOK, SEED).items()
            if name.endswith(".ipynb")}


# --------------------------------------------------------------------------- the marks

@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_chapter_marks_are_well_formed(path):
    notebook = read_notebook(path)
    start = section_start(notebook)
    for index, (cell, (action, replacement)) in enumerate(_marked(notebook)):
        if action is None:
            continue
        assert index < start and "course-setup" not in _tags(cell), (path.name, index)
        if action == "replace" and cell["cell_type"] == "code":
            if marker(replacement.split("\n", 1)[0]):  # a framework's cell: its marker comes first
                replacement = replacement.split("\n", 1)[1]
            assert replacement.startswith("# Assignment edition:"), (
                f"{path.name} cell {cell.get('id')}: a replacement begins with a comment saying what differs")
            compile(replacement, f"{path.name}:{cell.get('id')}", "exec")


@pytest.mark.parametrize("edition", ["student", "answers"])
def test_marks_apply_to_the_assignments_only(built, edition):
    for path in CHAPTERS:
        book = read_notebook(path)
        out = built[f"{edition}/{path.name}"]
        by_id = {cell["id"]: cell for cell in out["cells"]}
        for cell, (action, replacement) in _marked(book):
            if action == "skip":
                assert cell["id"] not in by_id
            elif action == "replace":
                assert source_text(by_id[cell["id"]]) == replacement
            else:
                assert cell["id"] in by_id
        for cell in out["cells"]:  # the editions carry no marks
            assert ASSIGNMENT_KEY not in cell["metadata"]
            assert not {REPLACE_TAG, SKIP_TAG} & set(_tags(cell))
        # the exercises section is the book's, whatever the marks
        book_section = [source_text(c) for c in book["cells"][section_start(book):]
                        if exercise_of(c)[1] not in ("params", "solution")]
        out_section = [source_text(c) for c in out["cells"][section_start(out):]
                       if exercise_of(c)[1] not in ("params", "solution")]
        assert out_section == book_section


def test_site_edition_keeps_the_books_cells():
    path = BOOK / "06_training.ipynb"
    book = read_notebook(path)
    site = make_edition(book, path, 0, "site")
    assert [c["id"] for c in site["cells"]] == [c["id"] for c in book["cells"]]
    assert any(REPLACE_TAG in _tags(c) for c in book["cells"])  # chapter 6 shortens its training
    marked = [c for c in book["cells"] if REPLACE_TAG in _tags(c)]
    site_by_id = {c["id"]: c for c in site["cells"]}
    assert all(source_text(site_by_id[c["id"]]) == source_text(c) for c in marked)


def _damaged(tmp_path, damage):
    source = BOOK / "03_masks.ipynb"
    notebook = read_notebook(source)
    code = [c for c in notebook["cells"][:section_start(notebook)]
            if c["cell_type"] == "code" and "course-setup" not in _tags(c)]
    cell = code[3]
    meta = cell["metadata"]
    if damage == "both":
        meta["tags"] = _tags(cell) + [REPLACE_TAG, SKIP_TAG]
        meta[ASSIGNMENT_KEY] = {"source": "x = 1"}
    elif damage == "no_source":
        meta["tags"] = _tags(cell) + [REPLACE_TAG]
    elif damage == "empty_source":
        meta["tags"] = _tags(cell) + [REPLACE_TAG]
        meta[ASSIGNMENT_KEY] = {"source": "  \n"}
    elif damage == "no_tag":
        meta[ASSIGNMENT_KEY] = {"source": "x = 1"}
    elif damage == "setup":
        setup = next(c for c in notebook["cells"] if "course-setup" in _tags(c))
        setup["metadata"]["tags"].append(SKIP_TAG)
    elif damage == "exercise":
        check = next(c for c in notebook["cells"] if exercise_of(c)[1] == "check")
        check["metadata"].setdefault("tags", []).append(SKIP_TAG)
    folder = tmp_path / "book"
    folder.mkdir()
    (folder / source.name).write_text(write_json(notebook), encoding="utf-8")
    return folder


@pytest.mark.parametrize("damage", ["both", "no_source", "empty_source", "no_tag", "setup", "exercise"])
def test_malformed_or_misplaced_marks_stop_the_build(tmp_path, capsys, damage):
    from course_pkg.exercises.__main__ import main as cli

    folder = _damaged(tmp_path, damage)
    out = tmp_path / "out"
    assert cli(["build", "--source", str(folder), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert "03_masks.ipynb: cell" in message and ("assignment" in message or "Exercises" in message)
    assert not out.exists()


def test_mark_command_changes_only_the_cells_metadata(tmp_path, capsys):
    from course_pkg.exercises.__main__ import main as cli

    path = tmp_path / "03_masks.ipynb"
    shutil.copy(BOOK / "03_masks.ipynb", path)
    before = read_notebook(path)
    cell_id = next(c["id"] for c in before["cells"][5:] if c["cell_type"] == "code")
    replacement = tmp_path / "small.py"
    replacement.write_text("# Assignment edition: a stand-in\nx = 1\n", encoding="utf-8")
    assert cli(["mark", str(path), cell_id, "--replace", str(replacement)]) == 0
    marked = read_notebook(path)
    cell = next(c for c in marked["cells"] if c["id"] == cell_id)
    assert assignment_mark(cell, "t") == ("replace", "# Assignment edition: a stand-in\nx = 1")
    stripped = copy.deepcopy(marked)
    for c in stripped["cells"]:
        c["metadata"].pop(ASSIGNMENT_KEY, None)
        if REPLACE_TAG in _tags(c):
            c["metadata"]["tags"].remove(REPLACE_TAG)
            if not c["metadata"]["tags"]:
                del c["metadata"]["tags"]
    assert stripped == before
    assert cli(["mark", str(path), cell_id, "--skip"]) == 0
    cell = next(c for c in read_notebook(path)["cells"] if c["id"] == cell_id)
    assert assignment_mark(cell, "t") == ("skip", None)
    assert cli(["mark", str(path), cell_id, "--clear"]) == 0
    assert path.read_text(encoding="utf-8") == (BOOK / "03_masks.ipynb").read_text(encoding="utf-8")
    check_id = next(c["id"] for c in before["cells"] if exercise_of(c)[1] == "check")
    assert cli(["mark", str(path), check_id, "--skip"]) == 2
    assert "cannot be left out" in capsys.readouterr().err
    assert cli(["mark", str(path), "no-such-cell", "--skip"]) == 2
    assert path.read_text(encoding="utf-8") == (BOOK / "03_masks.ipynb").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- nbgrader checksums

def _node(source, **nbgrader):
    meta = {"grade": False, "locked": False, "solution": False, "schema_version": 3, "task": False}
    meta.update(nbgrader)
    return {"cell_type": "code", "metadata": {"nbgrader": meta}, "source": source, "outputs": [],
            "execution_count": None}


# Computed with nbgrader 0.9.6's nbgrader.utils.compute_checksum.
KNOWN = [
    (_node('check("3.2", look_ahead_mask, size=size)', grade=True, grade_id="ex_3_2", locked=True, points=1),
     "98bf20ca225482121eb973001d3e3169"),
    (_node("def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()", grade_id="ex_3_2_solution",
           solution=True), "d78f780200ec7ec58522d932bcfa7a68"),
    (_node(["size", " = 5"], grade_id="ex_3_2_params", locked=True), "e42328c9b248a08e18f739829648e24b"),
]


@pytest.mark.parametrize("cell, expected", KNOWN, ids=["grade", "solution", "locked"])
def test_checksum_matches_known_nbgrader_values(cell, expected):
    assert nbgrader_checksum(cell) == expected


def test_checksums_are_nbgraders_own(built):
    nbformat = pytest.importorskip("nbformat")
    utils = pytest.importorskip("nbgrader.utils")
    counted = 0
    for name, notebook in built.items():
        node = nbformat.reads(json.dumps(notebook), as_version=4)
        for cell in node.cells:
            if not (utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell)):
                continue
            assert cell.metadata.nbgrader["checksum"] == utils.compute_checksum(cell), (name, cell.id)
            assert cell.metadata.nbgrader["cell_type"] == cell.cell_type
            counted += 1
    # params, solution and check cell of every exercise, in both editions
    assert counted == 2 * 3 * sum(len(catalog.for_chapter(path.stem)) for path in CHAPTERS)


def test_nbgrader_validate_flags_an_edited_locked_cell(built):
    nbformat = pytest.importorskip("nbformat")
    validator = pytest.importorskip("nbgrader.validator")
    notebook = nbformat.reads(json.dumps(built["student/03_masks.ipynb"]), as_version=4)
    assert validator.Validator()._get_changed_cells(copy.deepcopy(notebook)) == []
    check = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade"))
    check.source = "print('Exercise 3.1: correct, 2/2 points')"
    changed = validator.Validator()._get_changed_cells(notebook)
    assert [c.metadata.nbgrader["grade_id"] for c in changed] == ["ex_3_1"]


# --------------------------------------------------------------------------- 30 s per cell

# Against a hung kernel only: far over nbgrader's 30 s, so that a busy machine does not fail the test.
STALL_TIMEOUT = 10 * CELL_TIME_LIMIT
# One thread per framework in the kernels (as benchmarks/assignment_cells.py): a cell's CPU seconds are
# then its work on one core; threads that spin while other programs hold the cores inflate them otherwise.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                                     "TF_NUM_INTEROP_THREADS")}


def _run(path, indices=None):
    from course_pkg.exercises.cell_times import report, run_timed

    runs = run_timed(path, timeout=STALL_TIMEOUT, indices=indices)
    print(report(path.relative_to(path.parent.parent), runs))
    return runs


def test_assignment_notebooks_run_without_errors_within_nbgraders_cpu_budget(tmp_path, monkeypatch):
    """Answer keys in full, student notebooks' set-up and exercise cells: no unexpected error, and
    no cell over 30 s of kernel CPU time (the process's, one thread per framework: its work on one
    core, which a busy machine inflates far less than wall time). The margin under nbgrader's 30 s
    is measured by benchmarks/assignment_cells.py.

    The student notebooks' other cells are the answer keys' (checked here), so they run once.
    """
    from course_pkg.exercises.cell_times import expected_error

    for name, value in ONE_THREAD.items():
        monkeypatch.setenv(name, value)  # the kernels inherit the environment
    files = plan_build(BOOK, SEED)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    problems = []
    for path in CHAPTERS:
        answers, student = tmp_path / "answers" / path.name, tmp_path / "student" / path.name
        a_cells, s_cells = read_notebook(answers)["cells"], read_notebook(student)["cells"]
        assert len(a_cells) == len(s_cells)
        for a, s in zip(a_cells, s_cells):
            if exercise_of(a)[1] != "solution":
                assert source_text(a) == source_text(s), (path.name, a["id"])
        answer_runs = _run(answers)
        for run in answer_runs:
            if run.error:
                problems.append(f"answers/{path.name} cell {run.index} ({run.cell_id}): {run.error}")
        start = section_start({"cells": s_cells})
        exercise_cells = [i for i, c in enumerate(s_cells) if "course-setup" in _tags(c) or i >= start]
        runs = _run(student, exercise_cells)
        for run in runs:
            if run.error and not expected_error(run):
                problems.append(f"student/{path.name} cell {run.index} ({run.cell_id}): {run.error}")
        assert any(expected_error(run) for run in runs)  # the stubs did run
        assert len(answer_runs) == sum(c["cell_type"] == "code" for c in a_cells)  # every cell ran
        assert sum(run.cpu for run in answer_runs) > 0  # the CPU probe reported
        for edition, edition_runs in (("answers", answer_runs), ("student", runs)):
            problems += [f"{edition}/{path.name} cell {run.index} ({run.cell_id}): {run.cpu:.1f} s of CPU, "
                         f"over nbgrader's {CELL_TIME_LIMIT} s per cell" for run in edition_runs
                         if run.cpu > CELL_TIME_LIMIT]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- nbgrader itself

def _nbgrader(course, *args):
    import os
    import subprocess
    import sys

    env = dict(os.environ)  # nbgrader runs the `alembic` command of its environment
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True,
                            text=True, timeout=600, env=env)
    assert result.returncode == 0, (args, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout + result.stderr


def test_nbgrader_generates_and_autogrades_like_check(tmp_path, capsys):
    """nbgrader 0.9.6 with its defaults (30 s per cell) on chapter 3: the answer key scores full
    marks, the untouched student notebook 0, as the course's ``check`` says."""
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook

    from course_pkg.exercises.__main__ import main as cli

    out = tmp_path / "term"
    assert cli(["build", "--source", str(BOOK), "--out", str(out), "--seed", str(SEED),
                "--chapters", "3"]) == 0
    name = "03_masks.ipynb"
    assert cli(["check", str(out / "answers" / name), str(out / "student" / name)]) == 1
    table = capsys.readouterr().out
    assert "Total: 6/6 points" in table and "Total: 0/6 points" in table
    course = tmp_path / "course"
    (course / "source" / "ps3").mkdir(parents=True)
    shutil.copy(out / "answers" / name, course / "source" / "ps3" / name)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'course'\n"
        "c.CourseDirectory.db_url = 'sqlite:///gradebook.db'\n", encoding="utf-8")
    _nbgrader(course, "generate_assignment", "ps3", "--force")
    released = read_notebook(course / "release" / "ps3" / name)
    student = read_notebook(out / "student" / name)
    assert [source_text(c) for c in released["cells"]] == [source_text(c) for c in student["cells"]]
    for who, notebook in [("alice", out / "answers" / name), ("bob", out / "student" / name)]:
        (course / "submitted" / who / "ps3").mkdir(parents=True)
        shutil.copy(notebook, course / "submitted" / who / "ps3" / name)
        _nbgrader(course, "db", "student", "add", who)
    _nbgrader(course, "autograde", "ps3", "--force")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {who: gradebook.find_submission("ps3", who).score for who in ("alice", "bob")}
    assert scores == {"alice": 6.0, "bob": 0.0}


def test_time_command_reports_timeouts_and_errors(tmp_path, capsys):
    from course_pkg.exercises.__main__ import main as cli

    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
              "source": source} for i, source in enumerate(["x = 1", "raise NotImplementedError()",
                                                            "import time\ntime.sleep(30)", "print(x)"])]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "slow.ipynb"
    path.write_text(write_json(notebook), encoding="utf-8")
    assert cli(["time", str(path), "--timeout", "2"]) == 1
    out = capsys.readouterr().out
    assert "ERROR in cell 1 (c1): NotImplementedError" in out  # outside an exercise: unexpected
    assert "ERROR in cell 2 (c2): timeout (> 2 s)" in out
    assert "3 code cells" in out  # the run stops at the timeout


def test_timed_run_runs_every_code_cell_including_a_last_one(tmp_path):
    """run_timed's CPU probe runs in a cell of its own: a notebook that ends with a code cell (as
    chapter 7 does) has that cell run and timed, not replaced by the probe (nbclient stores an
    executed cell at the index it is given)."""
    import nbformat

    from course_pkg.exercises.cell_times import run_timed

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("text"),
                      nbformat.v4.new_code_cell("print('last', x)\nraise ValueError('seen')")]
    path = tmp_path / "ends_with_code.ipynb"
    nbformat.write(notebook, path)
    runs = run_timed(path, timeout=STALL_TIMEOUT)
    assert [(r.index, r.first_line) for r in runs] == [(0, "x = 1"), (2, "print('last', x)")]
    assert runs[-1].error == "ValueError: seen" and runs[0].error == ""
    assert all(r.cpu >= 0 for r in runs) and len(nbformat.read(path, as_version=4).cells) == 3
