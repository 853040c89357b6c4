"""The book's sources, checked without building it (fast; part of the default suite).

* every notebook opens with the current set-up cell (``course_pkg.authoring.setup_cell``);
* every page of ``_toc.yml`` exists;
* every notebook is valid nbformat 4 with no stored error and no stderr output;
* every cell tagged ``nbval-ignore-output`` or ``nbval-skip`` says why, in a
  comment line of its source: ``# nbval: <reason>``;
* outputs are facts or measurements: at most 15% of the code cells are excluded from
  nbval's comparison, every section with a measurement has a claim cell (tag ``claim``)
  that nbval compares, and every stored claim holds;
* every ``literalinclude`` of the book points at an existing file, and at an
  existing class or function when it has ``:pyobject:``;
* ``python -m course_pkg.authoring stamp`` is idempotent.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import shutil
import warnings
from pathlib import Path

import pytest
import yaml

from course_pkg.authoring import setup_cell
from course_pkg.authoring.notebook_files import chapter_notebooks
from course_pkg.exercises.notebooks import APPENDICES

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
NOTEBOOKS = chapter_notebooks(ROOT)
NBVAL_TAGS = ("nbval-ignore-output", "nbval-skip")
NBVAL_REASON = re.compile(r"^\s*# nbval: \S", re.M)


def _ids(paths):
    return [p.stem for p in paths]


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def toc_files(toc_path=ROOT / "_toc.yml"):
    """Every ``file`` of a Jupyter Book 1 ``_toc.yml``, the root first."""
    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8"))
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts") or [{"chapters": toc.get("chapters")}]:
        walk(part.get("chapters"))
    return files


def test_there_are_nine_chapter_notebooks_and_the_appendix():
    assert [p.name[:3] for p in NOTEBOOKS] == ["01_", "02_", "03_", "04_", "05_", "06_", "07_", "08_", "09_",
                                               "10_"]
    assert NOTEBOOKS[-1].stem in APPENDICES  # no graded exercises: the exercises' tests leave it out


def test_first_code_cell_is_the_setup_cell():
    stale = setup_cell.check(NOTEBOOKS, ROOT)
    assert stale == [], f"stale set-up cell, run: python -m course_pkg.authoring stamp {' '.join(stale)}"


def test_toc_files_exist():
    files = toc_files()
    assert len(files) == len(set(files)), "a page is listed twice in _toc.yml"
    for name in files:
        stem = ROOT / re.sub(r"\.(md|ipynb)$", "", name)
        found = [s for s in (".md", ".ipynb") if stem.with_suffix(s).exists()]
        assert len(found) == 1, f"_toc.yml: {name} -> {found or 'no .md nor .ipynb'}"


def test_every_notebook_is_in_the_toc():
    listed = {re.sub(r"\.(md|ipynb)$", "", f) for f in toc_files()}
    for path in NOTEBOOKS:
        assert path.relative_to(ROOT).with_suffix("").as_posix() in listed, path


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_valid_nbformat4(path):
    import nbformat

    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert notebook.get("nbformat") == 4
    with warnings.catch_warnings():
        # Cells without an "id" are repaired (with a warning) by every Jupyter that opens them.
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        nbformat.validate(copy.deepcopy(notebook))  # validate() adds missing ids: not to ours


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_no_error_or_stderr_outputs(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            where = f"{path.name}, cell {index}"
            assert output.get("output_type") != "error", \
                f"{where}: stored error {output.get('ename')}: {output.get('evalue')}"
            assert not (output.get("output_type") == "stream" and output.get("name") == "stderr"), \
                f"{where}: stderr output (fix the warning or log line at its source):\n" \
                + _source({"source": output.get("text", "")})[:500]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_nbval_exclusions_say_why(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        tagged = [t for t in _tags(cell) if t in NBVAL_TAGS]
        if tagged:
            assert NBVAL_REASON.search(_source(cell)), (
                f"{path.name}, cell {index} is tagged {tagged[0]}: add a comment line "
                "'# nbval: <why its output cannot be compared>' to its source")


# ------------------------------------------------------------ facts, measurements, claims
CLAIM_TAG = "claim"
MAX_EXCLUDED = 0.15


def _excluded(cell):
    return (bool(set(_tags(cell)) & set(NBVAL_TAGS))
            or bool(re.search(r"NBVAL_(IGNORE_OUTPUT|SKIP)", _source(cell))))


def _sections(notebook):
    """The code cells of a notebook, grouped by the ``##`` heading they follow."""
    sections, current = [], []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown" and re.search(r"^## ", _source(cell), re.M):
            sections.append(current)
            current = []
        elif cell["cell_type"] == "code":
            current.append(cell)
    return sections + [current]


def _stdout(cell):
    return "".join(_source({"source": o.get("text", "")}) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def test_at_most_15_percent_of_the_code_cells_are_excluded():
    code = [c for path in NOTEBOOKS for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
            if c["cell_type"] == "code"]
    excluded = sum(map(_excluded, code))
    assert excluded <= MAX_EXCLUDED * len(code), f"{excluded} of {len(code)} code cells excluded from nbval"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_every_measurement_has_a_claim_in_its_section(path):
    for section in _sections(json.loads(path.read_text(encoding="utf-8"))):
        measured = [c for c in section if "nbval-ignore-output" in _tags(c)]
        if measured:
            assert any(CLAIM_TAG in _tags(c) for c in section), (
                f"{path.name}: the section of the measurement cell {measured[0].get('id')} has no cell "
                f"tagged {CLAIM_TAG!r} that checks what the text claims about it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_claims_are_compared_and_hold(path):
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if CLAIM_TAG not in _tags(cell):
            continue
        where = f"{path.name}, cell {cell.get('id')}"
        assert not _excluded(cell), f"{where}: a claim cell is never excluded from nbval"
        lines = _stdout(cell).splitlines()
        assert lines, f"{where}: a claim cell prints its checks"
        for line in lines:
            assert line.endswith("True") and "False" not in line, f"{where}: the stored claim fails: {line}"


def test_the_checks_above_can_fail():
    failing = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "## 1.1 A section"},
        {"cell_type": "code", "metadata": {"tags": ["nbval-ignore-output"]}, "outputs": [],
         "source": "# nbval: timings\nprint(time.time())"},
        {"cell_type": "markdown", "metadata": {}, "source": "## 1.2 Another"},
        {"cell_type": "code", "metadata": {"tags": [CLAIM_TAG]}, "source": "print(...)",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "fast enough: False\n"}]}]}
    sections = _sections(failing)
    assert [len(s) for s in sections] == [0, 1, 1]
    assert not any(CLAIM_TAG in _tags(c) for c in sections[1])
    assert _stdout(failing["cells"][3]).strip().endswith("False")
    assert _excluded(failing["cells"][1]) and not _excluded(failing["cells"][3])


# ------------------------------------------------------------ literalinclude
_DIRECTIVE = re.compile(
    r"^[ \t]*(?:(?:```+|:::+)\{literalinclude\}|\.\.\s+literalinclude::)[ \t]+(?P<path>\S+)[ \t]*\n"
    r"(?P<options>(?:[ \t]*:[\w-]+:.*\n?)*)", re.M)


def literalincludes(text):
    """``(path, {option: value})`` of every literalinclude directive in MyST or rST text."""
    found = []
    for match in _DIRECTIVE.finditer(text if text.endswith("\n") else text + "\n"):
        options = dict(re.findall(r"^[ \t]*:([\w-]+):[ \t]*(.*?)[ \t]*$", match["options"], re.M))
        found.append((match["path"], options))
    return found


def pyobject_exists(tree, dotted):
    """Whether ``Class.method`` (or a top-level class or function) is defined in ``tree``."""
    body = tree.body
    for name in dotted.split("."):
        node = next((n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == name), None)
        if node is None:
            return False
        body = node.body
    return True


def _book_texts():
    """``(label, folder, markdown)`` of every markdown cell and Markdown page of the book."""
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(notebook["cells"]):
            if cell["cell_type"] == "markdown":
                yield f"{path.name}, cell {index}", path.parent, _source(cell)
    for path in sorted(BOOK.glob("*.md")):
        yield path.name, path.parent, path.read_text(encoding="utf-8")


def test_literalinclude_parser():
    text = ("```{literalinclude} ../course_pkg/torch/masks.py\n:pyobject: create_padding_mask\n"
            ":emphasize-lines: 2\n```\n\n.. literalinclude:: /course_pkg/reference/masks.py\n")
    assert literalincludes(text) == [
        ("../course_pkg/torch/masks.py", {"pyobject": "create_padding_mask", "emphasize-lines": "2"}),
        ("/course_pkg/reference/masks.py", {})]
    tree = ast.parse((ROOT / "course_pkg" / "torch" / "attention.py").read_text(encoding="utf-8"))
    assert pyobject_exists(tree, "MultiHeadAttention.split_heads")
    assert not pyobject_exists(tree, "MultiHeadAttention.no_such_method")


def test_literalincludes_point_at_real_code():
    for label, folder, text in _book_texts():
        for target, options in literalincludes(text):
            # Sphinx: an absolute path is relative to the book's root (the repository root)
            path = ROOT / target.lstrip("/") if target.startswith("/") else (folder / target).resolve()
            assert path.is_file(), f"{label}: literalinclude {target}: no such file"
            source = path.read_text(encoding="utf-8")
            if "pyobject" in options:
                assert pyobject_exists(ast.parse(source), options["pyobject"]), \
                    f"{label}: {target} has no class or function {options['pyobject']}"
            for key in ("start-after", "end-before", "start-at", "end-at"):
                if key in options:
                    assert options[key] in source, f"{label}: {target}: :{key}: {options[key]!r} not found"


# ------------------------------------------------------------ stamp
def test_stamp_is_idempotent(tmp_path):
    copies = []
    for path in NOTEBOOKS:
        shutil.copy(path, tmp_path / path.name)
        copies.append(tmp_path / path.name)
    bare = tmp_path / "bare.ipynb"  # no set-up cell yet: stamp inserts one before the first code cell
    bare.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["print(1)"]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    stale = tmp_path / "stale.ipynb"  # an outdated set-up cell: stamp replaces it in place
    notebook = json.loads(copies[0].read_text(encoding="utf-8"))
    setup = next(c for c in notebook["cells"] if setup_cell.SETUP_TAG in _tags(c))
    setup["source"] = ["# an old set-up cell\n"]
    stale.write_text(json.dumps(notebook), encoding="utf-8")
    paths = copies + [bare, stale]

    changed = set(setup_cell.stamp(paths, ROOT))
    assert {str(bare), str(stale)} <= changed
    if not setup_cell.check(NOTEBOOKS, ROOT):  # the real notebooks are current: their copies did not change
        assert not changed & {str(c) for c in copies}
    assert setup_cell.check(paths, ROOT) == []
    first = {p: p.read_bytes() for p in paths}
    assert setup_cell.stamp(paths, ROOT) == []
    assert {p: p.read_bytes() for p in paths} == first
    cells = json.loads(bare.read_text(encoding="utf-8"))["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code"]
    assert setup_cell.SETUP_TAG in _tags(cells[1]) and _source(cells[2]) == "print(1)"


def test_the_authoring_tools_find_the_checkout_or_take_root(tmp_path, monkeypatch, capsys):
    from course_pkg.authoring.__main__ import main
    from course_pkg.authoring.notebook_files import find_root

    monkeypatch.chdir(BOOK)  # from a folder inside the checkout: its top folder
    assert find_root() == ROOT and chapter_notebooks() == NOTEBOOKS
    monkeypatch.chdir(tmp_path)  # outside any checkout: the one named, else course_pkg's own
    assert find_root(ROOT) == ROOT and find_root() == ROOT
    assert main(["check", "--root", str(ROOT)]) == 0
    (tmp_path / "book").mkdir()  # a checkout without _config.yml: the set-up cell cannot be made
    with pytest.raises(FileNotFoundError):
        main(["check", "--root", str(tmp_path), str(NOTEBOOKS[0])])
    assert capsys.readouterr().out == ""
