"""The grader cannot be cheated (course_pkg.exercises check), and refuses bad input before work.

The tests that grade notebooks start Jupyter kernels (10 to 30 s each): each builds one or two
notebooks full of hostile cells and grades them once.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from course_pkg import exercises
from course_pkg.exercises.__main__ import main as cli
from course_pkg.exercises.grading import grade, prepare, score_probe
from course_pkg.exercises.notebooks import ExerciseError, exercise_of, read_notebook

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
SEED = 5


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """``build --seed 5`` of chapters 3 and 4 (student notebooks and answer keys)."""
    out = tmp_path_factory.mktemp("edition")
    assert cli(["build", "--source", str(BOOK), "--out", str(out), "--seed", str(SEED),
                "--chapters", "3", "4"]) == 0
    return out


def _notebook(edition, name, folder="student"):
    return read_notebook(edition / folder / name)


def _solution(edition, ex_id):
    """The answer key's solution cell of ``ex_id``."""
    chapter = exercises.get(ex_id).chapter
    key = _notebook(edition, f"{chapter}.ipynb", "answers")
    return "".join(next(c for c in key["cells"] if exercise_of(c) == (ex_id, "solution"))["source"])


def _set(notebook, ex_id, role, text):
    cell = next(c for c in notebook["cells"] if exercise_of(c) == (ex_id, role))
    cell["source"] = text


def _write(path, notebook):
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def _rows(out):
    """{exercise id: its line of the table}."""
    return {line.split()[0]: line for line in out.splitlines() if re.match(r"  \d\.\d ", line)}


# --------------------------------------------------------------------------- 1. tampering

WRONG_MASK = """\
def padding_mask(tokens):
    tokens = np.asarray(tokens)
    return (tokens != 0).astype(np.float32)[:, np.newaxis, np.newaxis, :]  # inverted: wrong
"""

SWALLOW_EVERYTHING = """
import builtins
import sys


def check(exercise_id, answer, **params):  # redefined: always full marks
    print("Exercise 3.1 (The padding mask): correct, 2/2 points")


def _swallow(shell, etype, value, tb, tb_offset=None):
    print("Exercise 3.1 (The padding mask): correct, 2/2 points")


get_ipython().set_custom_exc((BaseException,), _swallow)  # no error output for any cell
sys.excepthook = lambda *args: None
builtins.print = lambda *args, **kwargs: None
del tokens
"""

PATCH_THE_PACKAGE = """\
def look_ahead_mask(size):
    return np.zeros((size, size), dtype=np.float32)  # wrong


import dataclasses

import course_pkg.exercises as exercises_module
import course_pkg.exercises.catalog as catalog_module
import course_pkg.exercises.comparison as comparison_module
import course_pkg.reference as reference_module

exercises_module.compare = comparison_module.compare = lambda *args: None
catalog_module._BY_ID["3.2"] = dataclasses.replace(catalog_module._BY_ID["3.2"],
                                                 expected=lambda size: look_ahead_mask(size))
reference_module.create_look_ahead_mask = look_ahead_mask
builtins.AssertionError = type("AssertionError", (Exception,), {})
size = 1
"""

REWRITE_LATER_CELLS = """\
def positional_encoding(length, d_model):
    return np.zeros((length, d_model))  # wrong


def _every_check_passes(lines):
    return ["print('Exercise 4.1 (The positional encoding): correct, 2/2 points')\\n"]


get_ipython().input_transformers_cleanup.append(_every_check_passes)
get_ipython().events.register("post_run_cell", lambda result: None)
"""


def test_solution_cells_cannot_change_their_grade(edition, capsys, tmp_path):
    masks = _notebook(edition, "03_masks.ipynb")
    _set(masks, "3.1", "solution", WRONG_MASK + SWALLOW_EVERYTHING)
    _set(masks, "3.2", "solution", PATCH_THE_PACKAGE)
    # an honest answer still scores although check, its parameters and print are gone
    _set(masks, "3.3", "solution", _solution(edition, "3.3") + "\ndel check\ntarget_tokens = [[1]]\n")
    encoder = _notebook(edition, "04_encoder.ipynb")
    _set(encoder, "4.1", "solution", REWRITE_LATER_CELLS)
    paths = [_write(tmp_path / "03_masks.ipynb", masks), _write(tmp_path / "04_encoder.ipynb", encoder)]
    code = cli(["check", *map(str, paths), "--timeout", "60"])
    out = capsys.readouterr().out
    rows = _rows(out)
    assert code == 1
    assert "0/2" in rows["3.1"]
    assert "differ from the reference" in rows["3.1"]  # an honest wrong answer says what differs
    assert "0/1" in rows["3.2"] and "differ from the reference" in rows["3.2"]
    assert "3/3" in rows["3.3"] and "passed" in rows["3.3"]
    assert "Total: 3/6 points (1 of 3 exercises passed)" in out
    chapter_4 = exercises.for_chapter("04_encoder")  # every exercise of the notebook fails with 4.1's cell
    assert all(f"0/{e.points}" in rows[e.id] for e in chapter_4), out
    assert f"Total: 0/{sum(e.points for e in chapter_4)} points" in out


# --------------------------------------------------------------------------- the cell's own error

FAILS_BEFORE_DEF = """\
raise MemoryError("out of memory while building the table")


def padding_mask(tokens):
    return (np.asarray(tokens) == 0).astype(np.float32)[:, np.newaxis, np.newaxis, :]
"""

IMPORT_FAILS = """\
import course_pkg_no_such_module


def look_ahead_mask(size):
    return np.triu(np.ones((size, size), dtype=np.float32), k=1)
"""


def test_the_grader_reports_the_error_of_a_cell_that_failed_before_def(edition, capsys, tmp_path):
    masks = _notebook(edition, "03_masks.ipynb")
    _set(masks, "3.1", "solution", FAILS_BEFORE_DEF)
    _set(masks, "3.2", "solution", IMPORT_FAILS)
    # an error after a correct def still passes: the grade comes from the function
    _set(masks, "3.3", "solution", _solution(edition, "3.3") + "\nraise RuntimeError('a demo line fails')\n")
    code = cli(["check", str(_write(tmp_path / "03_masks.ipynb", masks)), "--timeout", "60"])
    rows = _rows(capsys.readouterr().out)
    assert code == 1
    assert rows["3.1"].split("FAILED: ", 1)[1] == (
        "MemoryError: out of memory while building the table (the error of exercise 3.1's cell; "
        "then: NameError: name 'padding_mask' is not defined)")
    assert rows["3.2"].split("FAILED: ", 1)[1] == (
        "ModuleNotFoundError: No module named 'course_pkg_no_such_module' (the error of exercise 3.2's "
        "cell; then: NameError: name 'look_ahead_mask' is not defined)")
    assert "3/3" in rows["3.3"] and "passed" in rows["3.3"]


def test_score_probe_puts_the_cells_error_first_only_when_the_function_gave_no_result():
    exercise = exercises.get("3.1")
    cause = "ImportError: cannot import name 'x'"
    assert score_probe(exercise, SEED, {"undefined": True}) == "NameError: name 'padding_mask' is not defined"
    assert score_probe(exercise, SEED, {"undefined": True}, cause) == (
        f"{cause} (the error of exercise 3.1's cell; then: NameError: name 'padding_mask' is not defined)")
    assert score_probe(exercise, SEED, {"raised": ["NameError", "name 'helper' is not defined"]}, cause) == (
        f"{cause} (the error of exercise 3.1's cell; then: NameError: name 'helper' is not defined)")
    assert score_probe(exercise, SEED, {"not_callable": "int"}, cause).startswith(cause + " (the error of")
    assert score_probe(exercise, SEED, {"raised": ["ValueError", "bad"]}) == "ValueError: bad"


# --------------------------------------------------------------------------- 2 and 3. timeouts, bad notebooks

@pytest.mark.parametrize("timeout", ["0", "-3", "abc"])
def test_check_refuses_a_timeout_that_is_not_positive(capsys, timeout, tmp_path):
    with pytest.raises(SystemExit, match="2"):
        cli(["check", str(tmp_path / "any.ipynb"), "--timeout", timeout])
    assert "--timeout" in capsys.readouterr().err


def test_grade_refuses_a_timeout_that_is_not_positive(tmp_path):
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds, got 0"):
        grade(tmp_path / "any.ipynb", timeout=0)


def _damaged(edition, damage):
    notebook = _notebook(edition, "03_masks.ipynb")
    if damage == "metadata_list":
        notebook["metadata"] = ["not", "a", "mapping"]
    elif damage == "seed_text":
        notebook["metadata"]["course_pkg_exercises"]["seed"] = "five"
    elif damage == "ours_text":
        notebook["metadata"]["course_pkg_exercises"] = "03_masks"
    elif damage == "cell_text":
        notebook["cells"][3] = "a cell"
    elif damage == "tags_text":
        notebook["cells"][0]["metadata"] = {"tags": "exercises"}
    elif damage == "source_number":
        next(c for c in notebook["cells"] if exercise_of(c) == ("3.1", "solution"))["source"] = 42
    elif damage == "exercise_list":
        cell = next(c for c in notebook["cells"] if exercise_of(c) == ("3.1", "solution"))
        cell["metadata"]["exercise"] = [1]
    elif damage == "no_cells":
        del notebook["cells"]
    return notebook


@pytest.mark.parametrize("damage", ["metadata_list", "seed_text", "ours_text", "cell_text", "tags_text",
                                    "source_number", "exercise_list", "no_cells"])
def test_malformed_notebooks_are_named_as_ungradable(edition, tmp_path, damage):
    path = _write(tmp_path / "03_masks.ipynb", _damaged(edition, damage))
    with pytest.raises(ExerciseError, match=re.escape(str(path))):
        prepare(read_notebook(path), path)


def test_another_chapters_notebook_is_recognised(edition, tmp_path):
    path = _write(tmp_path / "03_masks.ipynb", _notebook(edition, "04_encoder.ipynb"))
    with pytest.raises(ExerciseError, match="chapter 04_encoder's notebook, handed in as 03_masks"):
        prepare(read_notebook(path), path)
    relabelled = _notebook(edition, "04_encoder.ipynb")
    relabelled["metadata"]["course_pkg_exercises"]["chapter"] = "03_masks"
    path = _write(tmp_path / "alice.ipynb", relabelled)
    ids = ", ".join(e.id for e in exercises.for_chapter("04_encoder"))  # 4.1, 4.2, ...
    with pytest.raises(ExerciseError, match=re.escape(f"holds the exercises of 04_encoder ({ids})")):
        prepare(read_notebook(path), path)


# Ignores interrupts and spins for 600 s of CPU time, 100 times the 6-s limit of the test below, then
# leaves a mark: a grader that waited for it instead of killing its kernel would find the mark.
RUNAWAY = """\
import os
import signal
import time

signal.signal(signal.SIGINT, signal.SIG_IGN)
with open({pid!r}, "w") as f:
    f.write(str(os.getpid()))
while time.process_time() < 600:
    pass
with open({finished!r}, "w") as f:
    f.write("the loop ran to its end")
"""


def _running(pid):
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def test_kernels_that_ignore_interrupts_are_killed_and_bad_notebooks_skipped(edition, capsys, tmp_path):
    masks = _notebook(edition, "03_masks.ipynb")
    pid_file, finished = tmp_path / "runaway.pid", tmp_path / "runaway.finished"
    _set(masks, "3.1", "solution", RUNAWAY.format(pid=str(pid_file), finished=str(finished)))
    _set(masks, "3.2", "solution", _solution(edition, "3.2"))
    _set(masks, "3.3", "solution", _solution(edition, "3.3"))
    (tmp_path / "a").mkdir()
    bad = _write(tmp_path / "a" / "03_masks.ipynb", _damaged(edition, "seed_text"))
    foreign = _write(tmp_path / "04_encoder.ipynb", _notebook(edition, "03_masks.ipynb"))
    good = _write(tmp_path / "03_masks.ipynb", masks)
    report = tmp_path / "grades.json"
    # the timeout covers every cell, the set-up cell's TensorFlow import too (over 10 s on a busy
    # 2-core machine): 30 s, nbgrader's default, leaves that room; the runaway cell spins 600 s
    code = cli(["check", str(bad), str(good), str(foreign), "--timeout", "30", "--json", str(report)])
    captured = capsys.readouterr()
    rows = _rows(captured.out)
    assert code == 2
    assert f"error: {bad}" in captured.err and "seed" in captured.err
    assert f"error: {foreign}: this is chapter 03_masks's notebook, handed in as 04_encoder" in captured.err
    assert "0/2" in rows["3.1"] and "30-s" in rows["3.1"]
    assert "1/1" in rows["3.2"] and "3/3" in rows["3.3"]  # the quick cells after it, in a new kernel, pass
    # the runaway kernel was killed, not waited for: its loop never reached its end, its process is gone
    runaway = int(pid_file.read_text())
    assert not finished.exists()
    assert not _running(runaway), f"the runaway kernel (pid {runaway}) still runs"
    grades = json.loads(report.read_text())
    assert [g["notebook"] for g in grades] == [str(good)] and grades[0]["score"] == 4


def test_check_refuses_an_unwritable_json_path_before_grading(edition, capsys, tmp_path, monkeypatch):
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    from course_pkg.exercises import grading

    started = []  # grade calls and kernel starts: there must be none

    def refuse(what):
        def record(*args, **kwargs):
            started.append(what)
            raise AssertionError(f"{what} before the --json path was checked")
        return record

    monkeypatch.setattr(grading, "grade", refuse("grade"))
    for manager in (KernelManager, AsyncKernelManager):
        monkeypatch.setattr(manager, "start_kernel", refuse("a kernel start"))
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file\n")
    notebook = edition / "student" / "03_masks.ipynb"
    assert cli(["check", str(notebook), "--json", str(blocker / "grades.json")]) == 2
    captured = capsys.readouterr()
    assert f"{blocker} is not a folder" in captured.err and "--json" in captured.err
    assert captured.out == "" and started == []  # nothing was graded, no kernel was started
    assert cli(["check", str(notebook), "--json", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err and started == []


# --------------------------------------------------------------------------- 4. build's --out

def _build(out):
    return cli(["build", "--source", str(BOOK), "--out", str(out), "--chapters", "3"])


def test_build_over_a_file_says_so_and_writes_nothing(tmp_path, capsys):
    blocker = tmp_path / "file.txt"
    blocker.write_text("keep me\n")
    assert _build(blocker) == 2
    assert f"--out {blocker} is a file, not a folder" in capsys.readouterr().err
    assert _build(blocker / "edition") == 2
    assert f"{blocker} is not a folder" in capsys.readouterr().err
    out = tmp_path / "edition"
    out.mkdir()
    (out / "student").write_text("in the way\n")
    assert _build(out) == 2
    assert f"{out / 'student'} is not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["edition", "file.txt", "student"]
    assert blocker.read_text() == "keep me\n"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes in any folder")
def test_build_into_a_read_only_folder_says_so_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "locked"
    out.mkdir()
    out.chmod(0o555)
    try:
        assert _build(out / "edition") == 2
        assert f"cannot write in {out}" in capsys.readouterr().err
        assert list(out.iterdir()) == []
    finally:
        out.chmod(0o755)
