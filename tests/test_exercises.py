"""The exercises (course_pkg.exercises): catalog, check, build, grading and the student site.

Fast tests run the book's solutions in-process; the grading tests start Jupyter kernels
(about 10 s per notebook) and the student-site test runs Jupyter Book once (about a minute).
Each exercise's own answers, draws and feedback are tested in test_exercise_answers.py (8.9's in
test_exercises_checkpoints.py; 4.4, 4.5 and 5.4's in test_exercises_attention.py).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import book_answer, book_solutions, quiet_check

from course_pkg import exercises
from course_pkg.exercises.__main__ import main as cli
from course_pkg.exercises.notebooks import (
    APPENDICES,
    BEGIN,
    DRAFTS,
    END,
    ExerciseError,
    exercise_of,
    find_chapters,
    make_edition,
    read_notebook,
    solution_lines,
    source_text,
)

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
CHAPTERS = find_chapters(BOOK)
SEED = 7


SOLUTIONS = book_solutions()


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- catalog and book

def test_every_chapter_has_three_checked_exercises():
    assert [p.stem for p in CHAPTERS] == sorted({e.chapter for e in exercises.EXERCISES})
    for path in CHAPTERS:
        assert len(exercises.for_chapter(path.stem)) >= 3, path.stem


def test_appendices_are_exempt_from_exercises_explicitly():
    """An appendix is a numbered notebook of the book without graded exercises: listed in
    APPENDICES, left out of find_chapters (so of build, grading and the tests above), with no
    exercise in the catalog and no Exercises section."""
    assert APPENDICES
    for stem in APPENDICES:
        path = BOOK / f"{stem}.ipynb"
        assert path.exists() and path not in CHAPTERS
        assert not exercises.for_chapter(stem)
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert not any("exercises" in c["metadata"].get("tags", []) or "exercise" in c["metadata"]
                       for c in cells)


def test_drafts_are_exempt_until_their_exercises_exist():
    """A chapter being written is a numbered notebook of the book whose exercises do not exist yet:
    listed in DRAFTS (never an appendix), left out of find_chapters, with no exercise in the
    catalog and no Exercises section. Once its exercises are written, it leaves DRAFTS."""
    assert not DRAFTS & APPENDICES
    for stem in DRAFTS:
        path = BOOK / f"{stem}.ipynb"
        assert path.exists() and path not in CHAPTERS
        assert not exercises.for_chapter(stem), f"{stem} has exercises in the catalog: take it out of DRAFTS"
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        assert not any("exercises" in c["metadata"].get("tags", []) or "exercise" in c["metadata"]
                       for c in cells), f"{stem} has an Exercises section: take it out of DRAFTS"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_book_cells_match_the_catalog(path):
    """Parameters cells hold the book seed's values, check cells the canonical call, answers hide."""
    notebook = read_notebook(path)
    roles = {}
    for cell in notebook["cells"]:
        ex_id, role = exercise_of(cell)
        if ex_id is None:
            continue
        roles.setdefault(ex_id, set()).add(role)
        exercise = exercises.get(ex_id)
        if role == "params":
            assert source_text(cell) == exercise.params_cell(exercises.BOOK_SEED)
        elif role == "check":
            assert source_text(cell) == exercise.check_source()
            text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
            assert text == (f"Exercise {ex_id} ({exercise.title}): correct, "
                            f"{exercise.points}/{exercise.points} points\n")
        else:
            assert BEGIN in source_text(cell) and END in source_text(cell)
            assert "hide-input" in cell["metadata"]["tags"]
            assert cell["metadata"]["mystnb"]["code_prompt_show"] == "Show solution"
    assert roles == {e.id: {"params", "solution", "check"} for e in exercises.for_chapter(path.stem)}


@pytest.mark.parametrize("ex_id", [e.id for e in exercises.EXERCISES])
def test_book_solutions_pass_for_every_seed(ex_id):
    answer, exercise = book_answer(ex_id), exercises.get(ex_id)
    for seed in range(25):
        out = quiet_check(ex_id, answer, exercise.params(seed))
        assert out.endswith(f"correct, {exercise.points}/{exercise.points} points\n")


def _perturbed(value):
    if isinstance(value, str):  # a name: another name
        return value + "_"
    if isinstance(value, list) and value and isinstance(value[0], str):
        return [_perturbed(value[0])] + value[1:]
    if isinstance(value, tuple):
        return (_perturbed(value[0]),) + tuple(value[1:])
    if isinstance(value, list) and value and isinstance(value[0], (list, tuple)):
        return [_perturbed(value[0])] + value[1:]
    array = np.array(value, dtype=np.float64)
    array.flat[-1] += 1.0
    return array


@pytest.mark.parametrize("ex_id", [e.id for e in exercises.EXERCISES])
def test_check_rejects_wrong_answers(ex_id):
    answer, exercise = book_answer(ex_id), exercises.get(ex_id)
    params = exercise.params(SEED)
    if exercise.call is None:
        def wrong(**kw):
            return _perturbed(answer(**kw))
    else:  # called once per case: the last case's answer is off by one
        results = list(exercise.result(answer, params))
        results[-1] = _perturbed(results[-1])  # a number + 1, or a tuple's first number + 1
        values = iter(results)

        def wrong(*args):
            return next(values)
    with pytest.raises(AssertionError, match=rf"^Exercise {re.escape(ex_id)}: "):
        quiet_check(ex_id, wrong, params)
    with pytest.raises(AssertionError, match="returned None"):
        quiet_check(ex_id, lambda *a, **k: None, params)


def test_check_messages_say_what_differs():
    params = exercises.get("3.2").params(0)
    size = params["size"]
    with pytest.raises(AssertionError,
                       match=rf"has shape \({size}, {size + 1}\), expected \({size}, {size}\)"):
        quiet_check("3.2", lambda size: np.zeros((size, size + 1)), params)
    with pytest.raises(AssertionError, match=r"values differ from the reference; first at index \(0, 1\): "
                                             r"got 0\.0, expected 1\.0"):
        quiet_check("3.2", lambda size: np.zeros((size, size)), params)
    with pytest.raises(AssertionError, match="must be a function"):
        quiet_check("3.2", np.zeros((size, size)), params)
    with pytest.raises(KeyError, match="no exercise '9.9'"):
        exercises.check("9.9", print)


@pytest.mark.parametrize("ex_id", ["3.3", "4.2", "5.1", "6.3", "8.1", "8.2", "8.3", "8.8"])
def test_check_accepts_framework_tensors(fw, ex_id):
    answer, exercise = book_answer(ex_id), exercises.get(ex_id)

    def as_tensor(value):
        return tuple(as_tensor(v) for v in value) if isinstance(value, tuple) else fw.tensor(value)

    out = quiet_check(ex_id, lambda **kw: as_tensor(answer(**kw)), exercise.params(SEED))
    assert "correct" in out


def test_parameters_depend_on_the_seed_only():
    for exercise in exercises.EXERCISES:
        assert exercise.params_source(3) == exercise.params_source(3)
    differ = [e.id for e in exercises.EXERCISES if e.params_source(3) != e.params_source(4)]
    assert len(differ) >= len(exercises.EXERCISES) - 1, differ  # 3.2 has few sizes to draw from


# --------------------------------------------------------------------------- build

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``build --seed 7`` of every chapter, and the instructors' sources' digest before it."""
    before = _digest(BOOK)
    out = tmp_path_factory.mktemp("edition")
    assert cli(["build", "--source", str(BOOK), "--out", str(out), "--seed", str(SEED)]) == 0
    return out, before


def test_build_writes_student_notebooks_without_solutions(built):
    out, _ = built
    for path in CHAPTERS:
        source = read_notebook(path)
        source_outside = "\n".join(source_text(c) for c in source["cells"] if exercise_of(c)[1] != "solution")
        secret = [line for line in solution_lines(source) if line not in source_outside]
        student = read_notebook(out / "student" / path.name)
        student_text = _readable(out / "student" / path.name)
        assert "BEGIN SOLUTION" not in student_text and "END SOLUTION" not in student_text
        leaks = [line for line in secret if line in student_text]
        assert not leaks, f"{path.name}: solution text in the student notebook: {leaks[:3]}"
        grade_ids = []
        for cell in student["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None
            ex_id, role = exercise_of(cell)
            if ex_id is None:
                continue
            nbgrader = cell["metadata"]["nbgrader"]
            grade_ids.append(nbgrader["grade_id"])
            exercise = exercises.get(ex_id)
            if role == "solution":
                assert nbgrader["solution"] and not nbgrader["locked"]
                assert "raise NotImplementedError()" in source_text(cell)
                assert "hide-input" not in cell["metadata"].get("tags", [])
            elif role == "check":
                assert nbgrader["grade"] and nbgrader["locked"] and nbgrader["points"] == exercise.points
            else:
                assert source_text(cell) == exercise.params_cell(SEED) and nbgrader["locked"]
        assert len(grade_ids) == len(set(grade_ids)) == 3 * len(exercises.for_chapter(path.stem))
        assert student["metadata"]["course_pkg_exercises"] == {"chapter": path.stem, "seed": SEED,
                                                                "edition": "student"}


def test_build_writes_answer_keys_and_manifest(built):
    out, _ = built
    manifest = json.loads((out / "exercises.json").read_text())
    assert manifest["seed"] == SEED and list(manifest["chapters"]) == [p.stem for p in CHAPTERS]
    for path in CHAPTERS:
        key = read_notebook(out / "answers" / path.name)
        assert set(solution_lines(key)) == set(solution_lines(read_notebook(path)))
        assert key["metadata"]["course_pkg_exercises"]["edition"] == "answers"


def test_build_is_byte_identical_per_seed(built, tmp_path):
    out, _ = built
    again, other = tmp_path / "again", tmp_path / "other"
    assert cli(["build", "--source", str(BOOK), "--out", str(again), "--seed", str(SEED)]) == 0
    assert _digest(again) == _digest(out)
    assert cli(["build", "--source", str(BOOK), "--out", str(other), "--seed", str(SEED + 1),
                "--chapters", "3", "04_encoder"]) == 0
    assert sorted(p.name for p in (other / "student").iterdir()) == ["03_masks.ipynb", "04_encoder.ipynb"]
    for name in ("03_masks.ipynb", "04_encoder.ipynb"):
        assert (other / "student" / name).read_bytes() != (out / "student" / name).read_bytes()


def test_build_refuses_to_overwrite(built, capsys):
    out, _ = built
    before = _digest(out)
    assert cli(["build", "--source", str(BOOK), "--out", str(out), "--seed", "99"]) == 2
    assert "already holds" in capsys.readouterr().err
    assert _digest(out) == before


def test_build_names_unknown_chapters(tmp_path, capsys):
    assert cli(["build", "--source", str(BOOK), "--out", str(tmp_path / "x"), "--chapters", "99"]) == 2
    assert "no chapter '99'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("damage", ["no_end", "no_begin", "markdown"])
def test_malformed_markers_stop_build_and_write_nothing(tmp_path, capsys, damage):
    source = tmp_path / "book"
    shutil.copytree(BOOK, source, ignore=shutil.ignore_patterns("_static", "_build"))
    path = source / "03_masks.ipynb"
    notebook = read_notebook(path)
    index = next(i for i, c in enumerate(notebook["cells"]) if exercise_of(c) == ("3.2", "solution"))
    cell = notebook["cells"][index]
    marker = END if damage == "no_end" else BEGIN
    if damage == "markdown":
        index = next(i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "markdown" and i > 3)
        cell = notebook["cells"][index]
        cell["source"] = source_text(cell) + f"\n{BEGIN}\nsecret\n{END}\n"
    else:
        cell["source"] = [line for line in cell["source"] if marker not in line]
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    out = tmp_path / "out"
    assert cli(["build", "--source", str(source), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"03_masks.ipynb: cell {index} (id {cell['id']})" in err
    assert not out.exists()


def test_make_edition_rejects_unknown_editions():
    path = CHAPTERS[2]
    with pytest.raises(ValueError, match="edition must be"):
        make_edition(read_notebook(path), path, 0, "teacher")
    with pytest.raises(ExerciseError, match="no chapter notebooks"):
        find_chapters(ROOT / "tests")


# --------------------------------------------------------------------------- grading (kernels)

def _grade(capsys, *args):
    code = cli(["check", *map(str, args)])
    return code, capsys.readouterr()


def test_answer_keys_score_full_marks(built, capsys, tmp_path):
    out, _ = built
    report = tmp_path / "grades.json"
    code, captured = _grade(capsys, *sorted((out / "answers").glob("*.ipynb")), "--json", report)
    assert code == 0, captured.out + captured.err
    grades = json.loads(report.read_text())
    assert [Path(g["notebook"]).stem for g in grades] == [p.stem for p in CHAPTERS]
    for g in grades:
        assert g["seed"] == SEED and g["score"] == g["total"] > 0
    total = sum(e.points for e in exercises.EXERCISES)
    assert f"All notebooks: {total}/{total} points" in captured.out


def test_untouched_student_notebooks_score_zero(built, capsys):
    out, before = built
    code, captured = _grade(capsys, *sorted((out / "student").glob("*.ipynb")))
    assert code == 1
    total = sum(e.points for e in exercises.EXERCISES)
    assert f"All notebooks: 0/{total} points" in captured.out
    assert captured.out.count("FAILED: NotImplementedError") == len(exercises.EXERCISES)
    assert _digest(BOOK) == before  # build and check never touch the instructors' sources


def _student(built, name):
    return read_notebook(built[0] / "student" / name)


def _set(notebook, ex_id, role, text):
    cell = next(c for c in notebook["cells"] if exercise_of(c) == (ex_id, role))
    cell["source"] = text


def test_grader_isolates_crashes_timeouts_and_tampering(built, capsys, tmp_path):
    notebook = _student(built, "03_masks.ipynb")
    _set(notebook, "3.1", "solution", "def padding_mask(tokens):\n    while True:\n        pass\n")
    _set(notebook, "3.2", "solution", "import os\nos._exit(1)  # the kernel dies\n")
    _set(notebook, "3.3", "solution", SOLUTIONS["3.3"])
    _set(notebook, "3.3", "params", "target_tokens = [[5, 0]]  # edited: the grader resets it\n")
    _set(notebook, "3.3", "check", "print('nothing checked')\n")
    path = tmp_path / "03_masks.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    before = path.read_bytes()
    code, captured = _grade(capsys, path, "--timeout", "15")  # per cell: the set-up imports both frameworks
    assert code == 1
    lines = {line.split()[0]: line for line in captured.out.splitlines() if re.match(r"  3\.\d ", line)}
    assert "0/2" in lines["3.1"] and "15-s" in lines["3.1"]
    assert "0/1" in lines["3.2"] and "kernel died" in lines["3.2"]
    assert "3/3" in lines["3.3"] and "passed" in lines["3.3"]
    assert "Total: 3/6 points (1 of 3 exercises passed)" in captured.out
    assert path.read_bytes() == before


def test_grader_resets_check_cells(built, capsys, tmp_path):
    notebook = _student(built, "04_encoder.ipynb")
    exercise = exercises.get("4.1")
    fake = f"print('Exercise 4.1 ({exercise.title}): correct, 2/2 points')\n"
    _set(notebook, "4.1", "check", fake)
    path = tmp_path / "04_encoder.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    code, captured = _grade(capsys, path)
    total = sum(e.points for e in exercises.for_chapter("04_encoder"))
    assert code == 1 and f"Total: 0/{total} points" in captured.out


def test_grader_refuses_notebooks_without_exercises(capsys, tmp_path):
    path = tmp_path / "other.ipynb"
    path.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    code, captured = _grade(capsys, path, tmp_path / "missing.ipynb")
    assert code == 2
    assert "has no exercises to grade" in captured.err and "cannot read the notebook" in captured.err


# --------------------------------------------------------------------------- the student site

def test_student_site_has_no_solution_text(tmp_path):
    from course_pkg.exercises.site import build_site

    before = _digest(BOOK)
    site = build_site(ROOT, tmp_path / "site", seed=SEED, quiet=True)
    assert (site / "book" / "03_masks.html").is_file()
    secret = set()
    for path in CHAPTERS:
        source = read_notebook(path)
        outside = "\n".join(source_text(c) for c in source["cells"] if exercise_of(c)[1] != "solution")
        secret |= {line for line in solution_lines(source) if line not in outside and len(line) > 12}
    assert len(secret) > 40
    files = [p for p in site.rglob("*")
             if p.is_file() and p.suffix in {".html", ".ipynb", ".js", ".txt", ".md"}]
    assert any(p.suffix == ".ipynb" for p in files)  # _sources: the student notebooks
    for path in files:
        text = _readable(path)
        assert "BEGIN SOLUTION" not in text, path
        leaks = [line for line in secret if line in text]
        assert not leaks, f"{path.relative_to(site)}: {leaks[:3]}"
    page = (site / "book" / "03_masks.html").read_text(encoding="utf-8")
    assert "NotImplementedError" in page and "(student edition)" in page
    assert "colab.research.google.com" not in page
    assert _digest(BOOK) == before


def _readable(path):
    """A file's text as a reader sees it: notebook sources and outputs, HTML without its markup
    (syntax highlighting splits code lines into spans), anything else as it is."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        cells = json.loads(text)["cells"]
        return "\n".join(source_text(c) + "".join(str(o) for o in c.get("outputs", [])) for c in cells)
    if path.suffix == ".html":
        return html.unescape(re.sub(r"<[^>]+>", "", text))
    return text
