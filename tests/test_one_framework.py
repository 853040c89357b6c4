"""One framework at a time: the set-up cell's choice, the input transformer that skips the
other framework's cells, and the marks (tags and first-line markers) of every notebook."""

import ast
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from framework_choice import FakeShell, restore_environment  # noqa: F401 (an autouse fixture)

from course_pkg import notebook
from course_pkg.authoring import frameworks as marking
from course_pkg.authoring import setup_cell
from course_pkg.authoring.__main__ import main as authoring_main
from course_pkg.authoring.notebook_files import cell_tags, chapter_notebooks, source_text

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = chapter_notebooks(ROOT)
TAB_TAGS = {"tensorflow": "tensorflow", "pytorch": "pytorch"}


# ------------------------------------------------------------ the choice
@pytest.mark.parametrize("given,env,want", [
    ("", None, "both"), ("", "pytorch", "pytorch"), ("", " TensorFlow ", "tensorflow"),
    ("pytorch", "tensorflow", "pytorch"), ("both", "pytorch", "both"), (None, "", "both"),
])
def test_resolve_uses_the_form_field_then_the_environment(monkeypatch, given, env, want):
    if env is None:
        monkeypatch.delenv(notebook.ENV, raising=False)
    else:
        monkeypatch.setenv(notebook.ENV, env)
    assert notebook.resolve(given) == want


@pytest.mark.parametrize("given,env", [("jax", None), ("", "torch"), ("py torch", None)])
def test_resolve_refuses_other_choices(monkeypatch, given, env):
    monkeypatch.delenv(notebook.ENV, raising=False)
    if env is not None:
        monkeypatch.setenv(notebook.ENV, env)
    with pytest.raises(ValueError, match="'both', 'pytorch', 'tensorflow'"):
        notebook.resolve(given)


def test_resolve_refuses_a_non_string():
    with pytest.raises(TypeError):
        notebook.resolve(1)


@pytest.mark.parametrize("line,want", [
    ("# TensorFlow", ("tab", "tensorflow")), ("# PyTorch", ("tab", "pytorch")),
    ("#PyTorch  ", ("tab", "pytorch")), ("# PyTorch only", ("only", "pytorch")),
    ("# TensorFlow only: no PyTorch twin", ("only", "tensorflow")),
    ("# Both frameworks: compares TensorFlow and PyTorch", ("both", None)),
    ("# Both frameworks", ("both", None)),
    ("# TensorFlow's start-up lines", None), ("# PyTorch: moves the model", ("tab", "pytorch")),
    ("# pytorch", None), ("x = 1  # PyTorch", None), ("", None), ("# Both", None),
])
def test_marker(line, want):
    assert notebook.marker(line) == want


@pytest.mark.parametrize("choice", notebook.CHOICES)
def test_skip_reason(choice):
    tf_cell, pt_cell = "# TensorFlow\nx = 1", "# PyTorch\nx = 2"
    tf_only, both, plain = "# TensorFlow only\nx = 3", "# Both frameworks: compares\nx = 4", "x = 5"
    reasons = {s: notebook.skip_reason(s, choice) for s in (tf_cell, pt_cell, tf_only, both, plain)}
    assert reasons[plain] is None
    if choice == "both":
        assert set(reasons.values()) == {None}
        return
    other = "pytorch" if choice == "tensorflow" else "tensorflow"
    assert reasons[tf_cell if choice == "tensorflow" else pt_cell] is None
    assert reasons[tf_cell if other == "tensorflow" else pt_cell] == ""  # its twin runs: silent
    assert reasons[both].startswith("skipped: this cell compares TensorFlow and PyTorch")
    assert f"COURSE_FRAMEWORK={choice}" in reasons[both]
    if choice == "tensorflow":
        assert reasons[tf_only] is None
    else:
        assert reasons[tf_only].startswith("skipped: this cell needs TensorFlow")


def test_the_transformer_makes_the_other_frameworks_cells_no_ops(monkeypatch):
    monkeypatch.delenv(notebook.ENV, raising=False)
    shell = FakeShell()
    assert notebook.use_frameworks("pytorch", shell=shell) == "pytorch"
    assert os.environ[notebook.ENV] == "pytorch"
    namespace, out = shell.run("# TensorFlow\nimport tensorflow_that_is_not_installed\nx = 1\n")
    assert "x" not in namespace and out == ""
    namespace, out = shell.run("# PyTorch\nx = 2\nprint(x)\n")
    assert namespace["x"] == 2 and out == "2\n"
    namespace, out = shell.run("# Both frameworks: compares TensorFlow and PyTorch\nx = 3\n")
    assert "x" not in namespace
    assert out == "skipped: this cell compares TensorFlow and PyTorch " \
                  "(running PyTorch only, COURSE_FRAMEWORK=pytorch)\n"
    namespace, out = shell.run("# TensorFlow only\nx = 4\n")
    assert "x" not in namespace and out.startswith("skipped: this cell needs TensorFlow")
    namespace, _ = shell.run("\n# TensorFlow\nx = 5\n")  # leading blank lines do not hide the marker
    assert "x" not in namespace
    namespace, _ = shell.run("x = 6  # TensorFlow\n# TensorFlow\n")  # only the first line counts
    assert namespace["x"] == 6


def test_choosing_again_replaces_the_transformer(monkeypatch):
    monkeypatch.delenv(notebook.ENV, raising=False)
    shell = FakeShell()
    notebook.use_frameworks("pytorch", shell=shell)
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    notebook.use_frameworks("tensorflow", shell=shell)
    ours = [t for t in shell.input_transformers_cleanup if type(t).__module__ == notebook.__name__]
    assert len(ours) == 1
    namespace, _ = shell.run("# TensorFlow\nx = 1\n")
    assert namespace["x"] == 1
    namespace, _ = shell.run("# PyTorch\nx = 2\n")
    assert "x" not in namespace


def test_both_refuses_a_missing_framework(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    with pytest.raises(ModuleNotFoundError, match="FRAMEWORK = 'tensorflow'"):
        notebook.use_frameworks("both", shell=FakeShell())


@pytest.mark.parametrize("missing,want", [("torch", "tensorflow"), ("tensorflow", "pytorch")])
def test_an_empty_choice_runs_the_one_framework_installed(monkeypatch, capsys, missing, want):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == missing else real(name, *a))
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    monkeypatch.delenv(notebook.ENV, raising=False)
    assert notebook.use_frameworks("", shell=FakeShell()) == want
    other = "PyTorch" if want == "tensorflow" else "TensorFlow"
    assert capsys.readouterr().out.startswith(f"{other} is not installed: running ")
    assert os.environ[notebook.ENV] == want
    monkeypatch.setenv(notebook.ENV, "both")  # a choice made on purpose is never overridden
    with pytest.raises(ModuleNotFoundError, match="is not installed"):
        notebook.use_frameworks("", shell=FakeShell())


def test_an_empty_choice_refuses_when_no_framework_is_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torch", "tensorflow") else real(name, *a))
    monkeypatch.delenv(notebook.ENV, raising=False)
    with pytest.raises(ModuleNotFoundError, match="neither TensorFlow nor PyTorch"):
        notebook.use_frameworks("", shell=FakeShell())


def test_tensorflow_is_told_to_grow_its_gpu_memory_and_compute_float32_exactly(monkeypatch):
    """TensorFlow would reserve nearly all of a GPU at its first operation: the set-up lets it
    grow instead, so that PyTorch shares the GPU ("both"); set before TensorFlow touches it.
    On Ampere or newer GPUs it would compute float32 products in TF32: turned off."""
    import types

    calls, tf32 = [], []
    experimental = types.SimpleNamespace(set_memory_growth=lambda gpu, on: calls.append((gpu, on)),
                                         enable_tensor_float_32_execution=tf32.append)
    config = types.SimpleNamespace(list_physical_devices=lambda kind=None: ["GPU:0", "GPU:1"],
                                   experimental=experimental)
    monkeypatch.setitem(sys.modules, "tensorflow", types.SimpleNamespace(config=config))
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    notebook.quiet_tensorflow()
    assert calls == [("GPU:0", True), ("GPU:1", True)] and tf32 == [False]
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"

    def in_use(gpu, on):
        raise RuntimeError("Physical devices cannot be modified after being initialized")

    experimental.set_memory_growth = in_use
    notebook.quiet_tensorflow()  # a second run of the set-up cell: no error


@pytest.mark.parametrize("choice,forbidden", [
    ("pytorch", ["tensorflow", "keras", "torch"]), ("tensorflow", ["torch"])])
def test_the_choice_imports_no_other_framework(choice, forbidden):
    code = ("import sys\nfrom course_pkg import notebook\n"
            f"notebook.use_frameworks({choice!r}, shell=None)\n"
            f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
            "print('LOADED:', bad)\nsys.exit(1 if bad else 0)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop(notebook.ENV, None)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, f"{choice}: {res.stdout.strip()}\n{res.stderr[-2000:]}"


def test_the_setup_cell_chooses_and_imports_no_framework():
    source = setup_cell.setup_source(ROOT)
    assert 'FRAMEWORK = ""  # @param ["", "pytorch", "tensorflow", "both"]' in source
    assert "use_frameworks(FRAMEWORK)" in source
    assert "import tensorflow" not in source and "import torch" not in source


# ------------------------------------------------------------ the notebooks' marks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_markers_and_tags_agree(path):
    """Every framework-tagged cell starts with its marker, every marker has its tag, the
    import cells are split and every cell that reads both frameworks is a comparison cell:
    ``python -m course_pkg.authoring frameworks`` has nothing left to do."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code" or setup_cell.SETUP_TAG in cell_tags(cell):
            continue
        tags = [t for t in cell_tags(cell) if t in marking.FRAMEWORK_MARKERS]
        first = source_text(cell).split("\n", 1)[0]
        found = notebook.marker(first)
        where = f"{path.name} cell {cell.get('id')}"
        assert len(tags) <= 1 or (len(tags) == 2 and "both-frameworks" in tags
                                  and {"tensorflow", "pytorch"} & set(tags)), f"{where}: tags {tags}"
        if not tags:
            assert found is None, f"{where}: marker {first!r} without a framework tag"
            continue
        tag = "both-frameworks" if "both-frameworks" in tags else tags[0]
        assert found is not None, f"{where}: tagged {tag} but its first line is {first!r}"
        assert first == marking.FRAMEWORK_MARKERS[tag] or (
            tag == "both-frameworks" and first.startswith("# Both frameworks:")), where
    changes = marking.mark_frameworks(copy.deepcopy(nb), where=path.name, stem=path.stem)
    assert changes == [], "run: python -m course_pkg.authoring frameworks\n" + "\n".join(changes)


def _imported_roots(source):
    """The top-level packages a cell's code imports (a script inside a string literal does not count)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]  # magics
    roots = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
            if node.module == "course_pkg":
                roots.update(alias.name for alias in node.names if alias.name in ("tensorflow", "torch"))
    return roots


def test_imported_roots_reads_code_not_strings():
    assert _imported_roots("import torch.nn.functional as F\nfrom keras import ops") == {"torch", "keras"}
    assert _imported_roots('SCRIPT = """\nimport torch\n"""\nprint(SCRIPT)') == set()
    assert _imported_roots("from course_pkg import tensorflow as ctf") == {"course_pkg", "tensorflow"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_framework_has_its_own_import_cell(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        roots, tags = _imported_roots(source_text(cell)), cell_tags(cell)
        if roots & {"tensorflow", "keras"}:
            assert {"tensorflow", "tensorflow-only", "both-frameworks"} & set(tags), \
                f"{path.name} cell {cell.get('id')} imports TensorFlow untagged"
        if "torch" in roots:
            assert {"pytorch", "pytorch-only", "both-frameworks"} & set(tags), \
                f"{path.name} cell {cell.get('id')} imports PyTorch untagged"


# ------------------------------------------------------------ the script
def _code(source, tags=(), outputs=(), cell_id=None):
    return {"cell_type": "code", "execution_count": None, "id": cell_id or f"c{abs(hash(source)) % 10**8}",
            "metadata": {"tags": list(tags)} if tags else {}, "outputs": list(outputs),
            "source": source}


def _notebook(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_the_script_splits_tags_marks_and_is_idempotent(tmp_path):
    stored = [{"output_type": "stream", "name": "stdout", "text": "0.5\n"}]
    nb = _notebook(
        {"cell_type": "markdown", "metadata": {}, "source": "# 9. Title", "id": "m"},
        _code(setup_cell.setup_source(ROOT), tags=[setup_cell.SETUP_TAG], cell_id=setup_cell.SETUP_TAG),
        _code("import numpy as np\nimport tensorflow as tf\nimport torch\n"
              "from course_pkg import data, tensorflow as ctf, torch as cpt\n\n"
              "np.set_printoptions(precision=4)\n# where tensors go\n"
              'device = "cuda" if torch.cuda.is_available() else "cpu"\ntf.random.set_seed(0)\n',
              cell_id="imports"),
        _code("tf_losses = ctf.train()", tags=["tensorflow"], cell_id="tf"),
        _code("pt_losses = cpt.train()", tags=["pytorch"], cell_id="pt"),
        _code("for name, losses in [('TF', tf_losses), ('PT', pt_losses)]:\n    print(losses)",
              outputs=stored, cell_id="compare"),
        _code("x = torch.ones(3, device=device)", cell_id="torch-only"),
        _code("def f(tf_losses):\n    return tf_losses\nprint(np.arange(3))", cell_id="neutral"),
        _code("print(losses)", cell_id="after"),  # reads what the comparison cell left
    )
    path = tmp_path / "09_x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    changes = marking.frameworks([path])
    assert changes
    cells = {c["id"]: c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]}
    assert list(cells) == ["m", setup_cell.SETUP_TAG, "imports", "imports-tensorflow", "imports-pytorch",
                           "tf", "pt", "compare", "torch-only", "neutral", "after"]
    assert source_text(cells["imports"]) == ("import numpy as np\nfrom course_pkg import data\n\n"
                                         "np.set_printoptions(precision=4)")
    assert source_text(cells["imports-tensorflow"]) == ("# TensorFlow\nimport tensorflow as tf\n"
                                                    "from course_pkg import tensorflow as ctf\n\n"
                                                    "tf.random.set_seed(0)")
    assert source_text(cells["imports-pytorch"]) == (
        "# PyTorch\nimport torch\nfrom course_pkg import torch as cpt\n\n# where tensors go\n"
        'device = "cuda" if torch.cuda.is_available() else "cpu"')
    assert cell_tags(cells["imports-tensorflow"]) == ["tensorflow"]
    assert source_text(cells["tf"]) == "# TensorFlow\ntf_losses = ctf.train()"
    assert cell_tags(cells["compare"]) == ["both-frameworks"]
    assert source_text(cells["compare"]).startswith("# Both frameworks: compares TensorFlow and PyTorch\n")
    assert cells["compare"]["outputs"] == stored
    assert cell_tags(cells["torch-only"]) == ["pytorch-only"]
    assert source_text(cells["torch-only"]).startswith("# PyTorch only\n")
    assert cell_tags(cells["neutral"]) == [] and source_text(cells["neutral"]).startswith("def f")
    assert cell_tags(cells["after"]) == ["both-frameworks"]
    assert source_text(cells[setup_cell.SETUP_TAG]) == setup_cell.setup_source(ROOT)
    before = path.read_bytes()
    assert marking.frameworks([path]) == []
    assert path.read_bytes() == before
    assert authoring_main(["frameworks", "--check", str(path)]) == 0


def test_the_script_respects_human_decisions(tmp_path):
    nb = _notebook(
        _code("import torch\nimport tensorflow as tf", cell_id="imports", outputs=[]),
        _code("# Both frameworks: the same weights, two frameworks\nprint(tf, torch)",
              tags=["both-frameworks"], cell_id="why"),
        _code("print(type(tf), type(torch))", tags=["framework-neutral"], cell_id="neutral"),
    )
    changes = marking.mark_frameworks(nb)
    assert all("cell why" not in c and "cell neutral" not in c for c in changes), changes
    assert source_text(nb["cells"][-2]).startswith("# Both frameworks: the same weights")
    assert cell_tags(nb["cells"][-1]) == ["framework-neutral"]


def test_the_script_marks_the_assignment_edition():
    cell = _code("x = tf.ones(3)", tags=["tensorflow", "assignment-replace"], cell_id="a")
    cell["metadata"]["assignment"] = {"source": "# Assignment edition: smaller\nx = tf.ones(1)"}
    marking.mark_frameworks(_notebook(cell))
    assert cell["metadata"]["assignment"]["source"].startswith("# TensorFlow\n# Assignment edition")


@pytest.mark.parametrize("cells,match", [
    ([_code("# PyTorch\nx = 1", cell_id="a")], "marker but has no framework tag"),
    ([_code("import tensorflow as tf", tags=["tensorflow"]),
      _code("y = tf.ones(1)", tags=["pytorch-only"], cell_id="b")], "reads tf, which only TensorFlow's"),
    ([_code("import tensorflow as tf", tags=["tensorflow"]),
      _code("y = 1\nz = tf.ones(y)", tags=["pytorch"])],
     r"\(PyTorch\) reads tf"),
    ([_code("x = 1", tags=["tensorflow", "pytorch"], cell_id="c")], "framework tags"),
    ([_code("import tensorflow as tf\nimport torch", outputs=[{"output_type": "stream", "name": "stdout",
                                                              "text": "hi"}])], "split it by hand"),
])
def test_the_script_fails_loudly(cells, match):
    with pytest.raises(marking.FrameworkMarkError, match=match):
        marking.mark_frameworks(_notebook(*cells))
    assert authoring_main  # the command line turns it into exit status 2 (below)


def test_the_command_line_exit_statuses(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text(json.dumps(_notebook(_code("# PyTorch\nx = 1", cell_id="a"))), encoding="utf-8")
    assert authoring_main(["frameworks", str(bad)]) == 2
    todo = tmp_path / "todo.ipynb"
    todo.write_text(json.dumps(_notebook(_code("x = 1", tags=["pytorch"], cell_id="a"))), encoding="utf-8")
    before = todo.read_bytes()
    assert authoring_main(["frameworks", "--check", str(todo)]) == 1
    assert todo.read_bytes() == before
    assert authoring_main(["frameworks", str(todo)]) == 0
    assert authoring_main(["frameworks", "--check", str(todo)]) == 0


def test_a_skipped_cell_that_needs_both_frameworks_gives_its_own_reason():
    source = "# Both frameworks: Keras downloads the data, PyTorch trains the ViT\nx = 1\n"
    assert notebook.skip_reason(source, "pytorch") == (
        "skipped: this cell needs both frameworks: Keras downloads the data, PyTorch trains the ViT "
        "(running PyTorch only, COURSE_FRAMEWORK=pytorch)")
    assert notebook.skip_reason(source, "both") is None
