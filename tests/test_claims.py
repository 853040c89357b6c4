"""The claims a chapter prints, and what a learner with one framework sees of them.

``course_pkg.authoring.claims`` reads the stored outputs; ``book/conftest.py`` uses it in CI's
single-framework nbval passes. Here: its rules on small notebooks, each chapter's
coverage (at least 90% of its claims about one framework or neither, per framework), and
the conftest in a real nbval run.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_pkg.authoring import claims
from course_pkg.authoring.frameworks import FrameworkMarkError, mark_frameworks
from course_pkg.authoring.notebook_files import chapter_notebooks

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = chapter_notebooks(ROOT)


def code(source, outputs="", tags=(), cell_id=None):
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {"tags": list(tags)},
            "source": source, "outputs": []}
    if outputs:
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": outputs}]
    if cell_id:
        cell["id"] = cell_id
    return cell


def notebook(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


PER_FRAMEWORK = code('for name, v in runs.items():\n    print(f"{name}: positive: {v > 0}")\n',
                     "TensorFlow: positive: True\nPyTorch: positive: True\n", ["per-framework", "claim"])


@pytest.mark.parametrize("line,want", [
    ("TensorFlow: at least 99% exact match: True", {"tensorflow"}),
    ("PyTorch    vs NumPy  : max abs error < 1e-5: True", {"pytorch"}),
    ("course vs keras.ops.dot_product_attention: max abs error < 1e-5: True", {"tensorflow"}),
    ("torch.nn.MultiheadAttention, True = blocked: max abs error < 1e-5: True", {"pytorch"}),
    ("TensorFlow vs PyTorch: max abs error < 1e-5: True", {"tensorflow", "pytorch"}),
    ("identical in both frameworks: True", {"tensorflow", "pytorch"}),
    ("no source is longer than 9 tokens: True", set()),
])
def test_what_a_claim_line_is_about(line, want):
    assert claims.is_claim(line)
    assert claims.concerns(line) == want


def test_only_lines_ending_in_colon_true_are_claims():
    assert not claims.is_claim("True True True")
    assert not claims.is_claim("at least 99%: False")
    assert claims.is_claim("at least 99%: True  ")


def test_a_per_framework_cell_expects_the_chosen_frameworks_lines_only():
    cell = code("...", "TensorFlow: a: True\n  detail\nPyTorch: b: True\nboth: c: True\n", ["per-framework"])
    text = lambda outputs: "".join(o["text"] for o in outputs)  # noqa: E731
    assert text(claims.expected_outputs(cell, "pytorch")) == "  detail\nPyTorch: b: True\nboth: c: True\n"
    tf_lines = "TensorFlow: a: True\n  detail\nboth: c: True\n"
    assert text(claims.expected_outputs(cell, "tensorflow")) == tf_lines
    assert claims.expected_outputs(cell, "both") is cell["outputs"]
    plain = code("...", "TensorFlow: a: True\n")  # not per-framework: every line expected
    assert claims.expected_outputs(plain, "pytorch") is plain["outputs"]


def test_coverage_counts_the_claims_a_single_run_prints():
    nb = notebook(
        code("runs = {}\n"),
        code("# TensorFlow\nruns['TensorFlow'] = 1\n", "blocked weights zero: True\n", ["tensorflow"]),
        code("# PyTorch\nruns['PyTorch'] = 2\n", "blocked weights zero: True\ncourse vs F.sdpa: True\n",
             ["pytorch"]),
        PER_FRAMEWORK,
        code("# Both frameworks: compares TensorFlow and PyTorch\n",
             "TensorFlow vs PyTorch agree: True\nneither framework named: True\n", ["both-frameworks"]),
    )
    # PyTorch: its tab line, its twin's shared line, its per-framework line, the neutral line lost
    printed, wanted, missing = claims.coverage(nb, "pytorch")
    assert (printed, wanted, missing) == (3, 4, ["neither framework named: True"])
    printed, wanted, missing = claims.coverage(nb, "tensorflow")
    assert (printed, wanted) == (2, 3)  # "course vs F.sdpa" is printed by a PyTorch cell: not TensorFlow's
    assert "TensorFlow: 2/3 claims (67%)" in claims.coverage_report(nb)
    with pytest.raises(ValueError, match="one framework"):
        claims.coverage(nb, "both")


@pytest.mark.parametrize("choice", ["pytorch", "tensorflow"])
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_each_chapter_shows_a_learner_with_one_framework_its_claims(path, choice):
    printed, wanted, missing = claims.coverage(path, choice)
    assert wanted == 0 or printed / wanted >= claims.MIN_COVERAGE, (
        f"{path.name} with {choice} only prints {printed}/{wanted} claims; missing: {missing}")


# ------------------------------------------------------------------ the marking script
def test_the_script_keeps_a_per_framework_cell_neutral_and_its_readers_out():
    nb = notebook(code("runs = {}\n", cell_id="a"), code("runs['TensorFlow'] = tf.constant(1)\n",
                                                         tags=["tensorflow"], cell_id="b"),
                  code("import tensorflow as tf\n", tags=["tensorflow"], cell_id="i"),
                  code("runs['PyTorch'] = torch.ones(1)\n", tags=["pytorch"], cell_id="c"),
                  code("table = {name: float(v) for name, v in runs.items()}\nprint(table)\n",
                       tags=["per-framework"], cell_id="d"),
                  code("print(table)\n", cell_id="e"))
    mark_frameworks(nb)
    tags = {c["id"]: c["metadata"]["tags"] for c in nb["cells"]}
    assert tags["d"] == ["per-framework"]  # runs under every choice, no marker
    assert not "".join(nb["cells"][4]["source"]).startswith("#")
    assert "both-frameworks" in tags["e"]  # reads what the per-framework cell made, untagged: skipped


def test_the_script_refuses_a_per_framework_cell_that_reads_one_frameworks_name():
    nb = notebook(code("tf_losses = [1.0]\n", tags=["tensorflow"], cell_id="a"),
                  code("print(tf_losses)\n", tags=["per-framework"], cell_id="b"))
    with pytest.raises(FrameworkMarkError, match="cell b .per-framework. reads tf_losses"):
        mark_frameworks(nb)
    nb = notebook(code("x = 1\n", tags=["per-framework", "pytorch"], cell_id="c"))
    with pytest.raises(FrameworkMarkError, match="runs under every choice"):
        mark_frameworks(nb)


# ------------------------------------------------------------------ book/conftest.py in nbval
SETUP = "from course_pkg.notebook import use_frameworks\nFRAMEWORK = use_frameworks('')\n"


def run_nbval(tmp_path, nb, choice):
    shutil.copy(ROOT / "book" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "chapter.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    env = dict(os.environ, COURSE_FRAMEWORK=choice)
    return subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p",
                           "no:cacheprovider", "-q", "--rootdir", str(tmp_path), "chapter.ipynb"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def chapter(claim_cell):
    cells = [code(SETUP), code("runs = {}\n"),
             code("# TensorFlow\nruns['TensorFlow'] = 1\n", tags=["tensorflow"]),
             code("# PyTorch\nruns['PyTorch'] = 2\n", tags=["pytorch"]), claim_cell]
    for number, cell in enumerate(cells, 1):
        cell["execution_count"], cell["id"] = number, f"c{number}"
    return notebook(*cells)


def test_nbval_with_one_framework_compares_that_frameworks_lines(tmp_path):
    result = run_nbval(tmp_path, chapter(dict(PER_FRAMEWORK)), "pytorch")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "5 passed" in result.stdout
    wrong = dict(PER_FRAMEWORK, outputs=[{"output_type": "stream", "name": "stdout",
                                          "text": "TensorFlow: positive: True\nPyTorch: positive: False\n"}])
    result = run_nbval(tmp_path, chapter(wrong), "pytorch")
    assert result.returncode == 1 and "1 failed" in result.stdout, result.stdout[-3000:]


def test_nbval_with_one_framework_fails_a_chapter_that_skips_its_claims(tmp_path):
    skipped = code("# Both frameworks: compares TensorFlow and PyTorch\n"
                   'for name, v in runs.items():\n    print(f"{name}: positive: {v > 0}")\n',
                   "TensorFlow: positive: True\nPyTorch: positive: True\n", ["both-frameworks", "claim"])
    result = run_nbval(tmp_path, chapter(skipped), "tensorflow")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "prints 0 of its 1 claims" in result.stdout and "TensorFlow: positive: True" in result.stdout
