"""Tools for the book's notebooks: the set-up cell every chapter starts with.

Every chapter notebook opens with the same cell. On a fresh Colab runtime it
installs ``course_pkg`` from the repository named once, in ``_config.yml``
(``repository.url`` and ``repository.branch``); where ``course_pkg`` is
importable already (a local checkout, CI) it installs nothing. It chooses the
framework to run (a Colab form field, else ``$COURSE_FRAMEWORK``, else both),
and quiets TensorFlow's C++ log lines (they carry timestamps and process ids,
and would land in the stored outputs that nbval compares).

    python -m course_pkg.book check   # every notebook's first cell is the current one
    python -m course_pkg.book stamp   # rewrite it from _config.yml
    python -m course_pkg.book frameworks          # split import cells, tag and mark framework cells
    python -m course_pkg.book frameworks --check  # change nothing; fail if a notebook needs it

The set-up cell chooses the framework (``course_pkg.notebook``); a cell of one
framework says so on its first line (``# PyTorch``), written by ``frameworks``
from the cell's tag (see ``book/AUTHORING.md``, "One framework at a time").

Imports no framework.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .claims import PER_FRAMEWORK_TAG
from .common.files import atomic_write

ROOT = Path(__file__).resolve().parent.parent
SETUP_TAG = "course-setup"

SETUP_TEMPLATE = '''\
# Set-up: on Colab (or wherever course_pkg is missing) install the course package;
# elsewhere this cell changes nothing. Both frameworks use the GPU when there is one.
# The framework to run: "pytorch" or "tensorflow" runs its cells and skips the other's
# (only that one need be installed; the other is never imported); "both" runs both. Left
# empty: $COURSE_FRAMEWORK, else both where both are installed (as on Colab), else the one that is.
FRAMEWORK = ""  # @param ["", "pytorch", "tensorflow", "both"]
import importlib.util
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no TensorFlow C++ log lines
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # the same CPU numbers every run
if importlib.util.find_spec("course_pkg") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "course-pkg[data] @ git+{url}@{branch}"], check=True)
from course_pkg.notebook import use_frameworks

FRAMEWORK = use_frameworks(FRAMEWORK)  # cells marked for the other framework become no-ops'''


def read_repository(config_path=ROOT / "_config.yml") -> tuple:
    """``(url, branch)`` of the ``repository`` section of the book's ``_config.yml``."""
    import yaml  # Jupyter Book's dependency; only needed here

    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    repository = config.get("repository") or {}
    url, branch = repository.get("url"), repository.get("branch", "main")
    if not url:
        raise ValueError(f"{config_path}: no repository.url to install course_pkg from")
    return url.rstrip("/"), branch


def setup_source(config_path=ROOT / "_config.yml") -> str:
    """The source of the set-up cell, for the repository in ``config_path``."""
    url, branch = read_repository(config_path)
    return SETUP_TEMPLATE.format(url=url, branch=branch)


def setup_cell(config_path=ROOT / "_config.yml") -> dict:
    """The set-up cell as a notebook (nbformat 4) code cell, tagged, its input folded in the HTML."""
    source = setup_source(config_path)
    return {"cell_type": "code", "execution_count": None, "id": SETUP_TAG,
            "metadata": {"tags": [SETUP_TAG, "hide-input"]},
            "outputs": [], "source": source.splitlines(keepends=True)}


def chapter_notebooks(book_dir=ROOT / "book") -> list:
    """The chapter notebooks under ``book/`` (not build output nor checkpoints)."""
    return sorted(p for p in Path(book_dir).rglob("*.ipynb")
                  if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts)


def _load_notebook(path) -> dict:
    """A chapter notebook as JSON."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _save_notebook(path, notebook) -> None:
    """Save ``notebook`` in one rename, in the layout Jupyter writes (indent 1, UTF-8)."""
    atomic_write(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def cell_tags(cell) -> list:
    """A notebook cell's tags (``[]`` without any)."""
    return cell.get("metadata", {}).get("tags", [])


def source_text(cell) -> str:
    """A notebook cell's source as one string (Jupyter stores a string or a list of lines)."""
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _first_code_cell(notebook: dict):
    return next((c for c in notebook.get("cells", []) if c.get("cell_type") == "code"), None)


def check(paths, config_path=ROOT / "_config.yml") -> list:
    """Paths whose first code cell is not the current set-up cell."""
    want = setup_source(config_path)
    stale = []
    for path in paths:
        cell = _first_code_cell(_load_notebook(path))
        if cell is None or "".join(cell["source"]) != want:
            stale.append(str(path))
    return stale


def stamp(paths, config_path=ROOT / "_config.yml") -> list:
    """Make the set-up cell the first code cell of every notebook; return the paths changed.

    An existing set-up cell (tagged ``course-setup``) is replaced in place and
    keeps its stored outputs; otherwise a new one is inserted before the first
    code cell.
    """
    fresh = setup_cell(config_path)
    changed = []
    for path in paths:
        path = Path(path)
        notebook = _load_notebook(path)
        cells = notebook.setdefault("cells", [])
        old = next((c for c in cells if SETUP_TAG in cell_tags(c)), None)
        if old is not None:
            if "".join(old["source"]) == "".join(fresh["source"]) and old.get("id") == SETUP_TAG:
                continue
            old["source"], old["id"] = fresh["source"], SETUP_TAG
        else:
            index = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
            cells.insert(index, dict(fresh))
        _save_notebook(path, notebook)
        changed.append(str(path))
    return changed


# ---------------------------------------------------------------------------
# One framework at a time: the marker comments that course_pkg.notebook reads.
# ---------------------------------------------------------------------------
#: Cell tag -> the marker comment its first source line must be (see course_pkg.notebook).
FRAMEWORK_MARKERS = {
    "tensorflow": "# TensorFlow",
    "pytorch": "# PyTorch",
    "tensorflow-only": "# TensorFlow only",
    "pytorch-only": "# PyTorch only",
    "both-frameworks": "# Both frameworks: compares TensorFlow and PyTorch",
}
#: A human's decision that a cell the analysis flags runs under every choice.
NEUTRAL_TAG = "framework-neutral"
_TF_ROOTS = {"tensorflow", "keras", "tf_keras"}
_PT_ROOTS = {"torch", "torchvision", "torchaudio", "transformers"}
_TF_NAMES = {"tf", "keras", "ctf"}  # what the import cells call the frameworks (a backstop)
_PT_NAMES = {"torch", "cpt"}
_FW_OF_TAG = {"tensorflow": {"tf"}, "tensorflow-only": {"tf"}, "pytorch": {"pt"},
              "pytorch-only": {"pt"}, "both-frameworks": {"tf", "pt"}}


class FrameworkMarkError(ValueError):
    """A cell whose framework the script cannot decide, or whose tags contradict each other."""


def _framework_of_import(node) -> set:
    """The frameworks an import statement needs ({"tf"}, {"pt"}, both or none)."""
    import ast

    found = set()
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        modules = [node.module]
        if node.module == "course_pkg":
            modules = [f"course_pkg.{a.name}" for a in node.names]
    else:
        return found
    for module in modules:
        parts = module.split(".")
        if parts[0] == "course_pkg" and len(parts) > 1:
            parts = parts[1:]
            if parts[0] == "tensorflow":
                found.add("tf")
            elif parts[0] in ("torch", "huggingface"):
                found.add("pt")
        elif parts[0] in _TF_ROOTS:
            found.add("tf")
        elif parts[0] in _PT_ROOTS:
            found.add("pt")
    return found


def _analyse(source: str):
    """``(free, defined, imports, mutated, functions)`` of a cell: names it reads from earlier
    cells as it runs, names it leaves defined, the frameworks its import statements need, the
    earlier names it changes in place (``scores["PyTorch"] = ...``), and the names each
    function or class it defines reads when called."""
    import ast

    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError as error:
        raise FrameworkMarkError(f"cannot parse the cell: {error}") from None
    loaded, stored, defined, imports, mutated = set(), set(), set(), set(), set()

    def visit(node, top):
        if top and isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                while isinstance(target, (ast.Subscript, ast.Attribute)):
                    target = target.value
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Load):
                    mutated.add(target.id)
        if top and isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func  # results.append(...), measured.update(...)
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in (
                    "append", "extend", "update", "setdefault", "insert", "add"):
                mutated.add(func.value.id)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.update(_framework_of_import(node))
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                stored.add(name)
                if top:
                    defined.add(name)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
            if top:
                defined.add(node.name)
            top = False
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            top = False
        if isinstance(node, ast.arg):
            stored.add(node.arg)
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.add(node.id)
            else:
                stored.add(node.id)
                if top:
                    defined.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, top)

    functions = {}  # a function or class defined here -> the names its body reads
    outer = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            before_loaded, before_stored = set(loaded), set(stored)
            loaded.clear()
            stored.clear()
            visit(statement, True)
            functions[statement.name] = loaded - stored
            loaded |= before_loaded
            stored |= before_stored | {statement.name}
        else:
            before = set(loaded)
            visit(statement, True)
            outer |= loaded - before
    # Only what runs now counts for the cell itself: a function's body runs when it is called.
    return outer - stored, defined, imports, mutated - defined, functions


def _framework_tags(cell) -> list:
    return [t for t in cell_tags(cell) if t in FRAMEWORK_MARKERS]


def _split_import_cell(cell, where):
    """The cells an import cell that imports both frameworks becomes: the neutral part (the
    cell itself, same id), then a TensorFlow and a PyTorch cell; ``None`` if nothing to split."""
    import ast

    source = source_text(cell)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body[:1]):
        return None
    imported = set()
    for statement in tree.body:
        imported |= _framework_of_import(statement)
    if imported != {"tf", "pt"}:
        return None
    if cell.get("outputs"):
        raise FrameworkMarkError(f"{where}: the import cell prints something; split it by hand")
    lines = source.splitlines()
    parts = {"": [], "tf": [], "pt": []}
    names = {"tf": set(), "pt": set()}
    start = 0  # first line (0-based) not yet given to a part: comments go with the next statement
    previous_end = 0
    for statement in tree.body:
        begin, end = statement.lineno - 1, statement.end_lineno
        chunk = lines[start:end]
        blank_before = start > previous_end or (chunk and not chunk[0].strip())
        chunk = [ln for ln in chunk if ln.strip()]
        if isinstance(statement, ast.ImportFrom) and statement.module == "course_pkg":
            by = {"": [], "tf": [], "pt": []}
            for alias in statement.names:
                fw = "tf" if alias.name == "tensorflow" else "pt" if alias.name == "torch" else ""
                by[fw].append(alias)
                if fw:
                    names[fw].add(alias.asname or alias.name)
            for fw, aliases in by.items():
                if aliases:
                    text = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in aliases)
                    parts[fw].append((blank_before, [f"from course_pkg import {text}"], True))
            start = previous_end = end
            continue
        fws = _framework_of_import(statement)
        if not fws:
            used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            fws = {fw for fw in ("tf", "pt") if used & names[fw]}
        if len(fws) > 1:
            raise FrameworkMarkError(f"{where}: line {begin + 1} of the import cell uses both frameworks")
        fw = fws.pop() if fws else ""
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and fw:
            names[fw].update((a.asname or a.name).split(".")[0] for a in statement.names)
        parts[fw].append((blank_before, chunk, isinstance(statement, (ast.Import, ast.ImportFrom))))
        start = previous_end = end
    cells = []
    for fw, tag in (("", None), ("tf", "tensorflow"), ("pt", "pytorch")):
        out, after_import = [], False
        for blank_before, chunk, is_import in parts[fw]:
            if out and out[-1] and (blank_before or (after_import and not is_import)):
                out.append("")  # a blank line where there was one, and after the imports
            out.extend(chunk)
            after_import = is_import
        text = "\n".join(out)
        if fw == "":
            new = cell
            new["source"] = text.splitlines(keepends=True)
        else:
            new = {"cell_type": "code", "execution_count": None,
                   "id": f"{cell.get('id', 'imports')}-{tag}", "metadata": {"tags": [tag]},
                   "outputs": [], "source": text.splitlines(keepends=True)}
        cells.append(new)
    return cells


def _with_marker(source: str, marker_line: str) -> str:
    from .notebook import marker

    first, _, rest = source.partition("\n")
    if marker(first) is not None:
        if marker_line.startswith("# Both frameworks") and first.strip().startswith("# Both frameworks:"):
            return source
        return marker_line + ("\n" + rest if _ else "")
    return marker_line + "\n" + source


#: Changes to particular cells that running one framework at a time needs, applied (once) by
#: ``frameworks`` before it tags and marks: ``("hoist", notebook, cell, first, stop, new_id,
#: extra)`` moves the cell's lines from the one starting with ``first`` up to the one starting
#: with ``stop`` into a new framework-neutral cell ``new_id`` just before it (plus the lines
#: ``extra``; an assignment edition moves with them); ``("replace", notebook, cell, old, new)``;
#: ``("tag", notebook, cell, tag)``. A change whose cell has changed since is reported, not made.
NOTEBOOK_FIXES = [
    # Chapter 2: the GRU baseline is PyTorch's, but both frameworks' cells call its train().
    ("hoist", "02_attention", "02-025", "def train(", "torch.manual_seed(0)", "02-025-train", ()),
    # Chapter 4: the TensorFlow layer is checked against torch.nn's, and the PyTorch attention
    # against Keras': comparisons, each in its tab.
    ("tag", "04_encoder", "04-073", "both-frameworks"),
    ("tag", "04_encoder", "04-077", "both-frameworks"),
    # Chapter 7: the configurations are shared; only the parameter count printed is PyTorch's.
    ("hoist", "07_families", "c07-19", "BERT_CONFIG = dict(", 'print(f"parameters of the tiny BERT',
     "c07-19-config", ()),
    ("hoist", "07_families", "c07-39", "GPT_CONFIG = dict(", 'print(f"parameters: GPT',
     "c07-39-config", ("scores = {}  # held-out exact match of each model, filled in below",)),
    # Chapter 6: each framework's error analysis finds its own wrong translations (the table
    # before it, which compares the two, runs only with both).
    ("replace", "06_training", "c06-58", 'for i in wrong["TensorFlow"]:',
     "tf_wrong = [i for i, (g, r) in enumerate(zip(tf_greedy, test_references)) if g != r]\n"
     "for i in tf_wrong:"),
    ("replace", "06_training", "c06-59", 'for i in wrong["PyTorch"]:',
     "pt_wrong = [i for i, (g, r) in enumerate(zip(pt_greedy, test_references)) if g != r]\n"
     "for i in pt_wrong:"),
    ("replace", "07_families", "c07-42",
     'scores = {"TensorFlow GPT": exact_match(tf_gpt_answers, test_references)}',
     'scores["TensorFlow GPT"] = exact_match(tf_gpt_answers, test_references)'),
    # Chapter 7: the TensorFlow GPT samples with the PyTorch GPT's weights, and PyTorch with its settings.
    ("tag", "07_families", "c07-50", "both-frameworks"),
    ("tag", "07_families", "c07-51", "both-frameworks"),
    # Chapter 7: the TensorFlow tab converts Hugging Face's checkpoints, which need PyTorch.
    ("tag", "07_families", "c07-68", "both-frameworks"),
]


def _strip_marker(text: str) -> str:
    from .notebook import marker

    first, newline, rest = text.partition("\n")
    return rest if marker(first) is not None else text


def _apply_fixes(notebook: dict, stem: str, where: str) -> list:
    changes = []
    cells = notebook.get("cells", [])
    ids = {c.get("id"): i for i, c in enumerate(cells)}
    for fix in NOTEBOOK_FIXES:
        kind, name, cell_id = fix[:3]
        if name != stem:
            continue
        if cell_id not in ids:
            changes.append(f"{where}: warning: no cell {cell_id} for the fix {fix[:4]}")
            continue
        cell = cells[ids[cell_id]]
        source = source_text(cell)
        if kind == "tag":
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if fix[3] not in tags:
                tags.append(fix[3])
                changes.append(f"{where}: tagged cell {cell_id} {fix[3]} (NOTEBOOK_FIXES)")
        elif kind == "replace":
            old, new = fix[3], fix[4]
            if old in source:
                cell["source"] = source.replace(old, new).splitlines(keepends=True)
                changes.append(f"{where}: changed cell {cell_id}: {new}")
            elif new not in source:
                changes.append(f"{where}: warning: cell {cell_id} has changed, fix {fix[3]!r} not made")
            assignment = cell.get("metadata", {}).get("assignment")
            if isinstance(assignment, dict) and old in source_text({"source": assignment.get("source", "")}):
                assignment["source"] = source_text({"source": assignment["source"]}).replace(old, new)
                changes.append(f"{where}: changed the assignment edition of cell {cell_id}: {new}")
        elif kind == "hoist":
            first, stop, new_id, extra = fix[3:]
            if new_id in ids:
                continue
            lines = _strip_marker(source).split("\n")
            start = next((i for i, ln in enumerate(lines) if ln.startswith(first)), None)
            end = next((i for i, ln in enumerate(lines) if start is not None and i > start
                        and ln.startswith(stop)), None)
            if start is None or end is None:
                changes.append(f"{where}: warning: cell {cell_id} has changed, fix {fix[:4]} not made")
                continue
            moved = "\n".join(lines[start:end]).rstrip("\n").split("\n") + list(extra)
            kept = lines[:start] + lines[end:]
            new_cell = {"cell_type": "code", "execution_count": None, "id": new_id, "metadata": {},
                        "outputs": [], "source": "\n".join(moved).splitlines(keepends=True)}
            cell["source"] = "\n".join(kept).splitlines(keepends=True)
            meta = cell.get("metadata", {})
            assignment = meta.get("assignment")
            if "assignment-replace" in meta.get("tags", []) and isinstance(assignment, dict):
                text = _strip_marker(source_text({"source": assignment.get("source", "")}))
                alt = text.split("\n")
                cut = next((i for i, ln in enumerate(alt) if ln.startswith(stop)), len(alt))
                new_cell["metadata"] = {"tags": ["assignment-replace"],
                                        "assignment": {"source": "\n".join(alt[:cut] + list(extra))}}
                meta["tags"].remove("assignment-replace")
                del meta["assignment"]
            cells.insert(ids[cell_id], new_cell)
            ids = {c.get("id"): i for i, c in enumerate(cells)}
            changes.append(f"{where}: moved lines {first!r}... of cell {cell_id} into a new neutral cell "
                           f"{new_id} before it (NOTEBOOK_FIXES)")
    return changes


def _check_per_framework(cell, tags, imports, owner, evidence, where, final) -> None:
    """A ``per-framework`` cell is neutral: no framework tag, no framework import, and it reads
    what the frameworks' cells stored in dicts (changed in place), never a name that only
    one framework's cells define."""
    if tags:
        raise FrameworkMarkError(f"{where} cell {cell.get('id')}: tagged {PER_FRAMEWORK_TAG} and {tags[0]}: "
                                 f"a {PER_FRAMEWORK_TAG} cell runs under every choice (remove one tag)")
    own = sorted(n for n in evidence if owner.get(n))
    if final and (imports or own):
        what = ", ".join(own) if own else "a framework's import"
        raise FrameworkMarkError(
            f"{where} cell {cell.get('id')} ({PER_FRAMEWORK_TAG}) reads {what}, which only one framework's "
            "cells define: let those cells store it in a dict keyed by framework name "
            '(results["PyTorch"] = ...) and read the dict')


def _cell_frameworks(cell) -> set:
    tags = _framework_tags(cell)
    if "both-frameworks" in tags:
        return {"tf", "pt"}
    return set(_FW_OF_TAG[tags[0]]) if tags else set()


def mark_frameworks(notebook: dict, where: str = "notebook", stem: str = "") -> list:
    """Split import cells, tag and mark the cells of one framework; return what changed.

    Idempotent; changes sources and tags only (never outputs). Raises
    :class:`FrameworkMarkError` for a cell it cannot decide.
    """
    from .notebook import marker

    cells = notebook.get("cells", [])
    changes = _apply_fixes(notebook, stem, where) if stem else []
    # 1. Split the import cells that import both frameworks.
    index = 0
    while index < len(cells):
        cell = cells[index]
        if (cell.get("cell_type") == "code" and SETUP_TAG not in cell_tags(cell)
                and not _framework_tags(cell)):
            split = _split_import_cell(cell, f"{where} cell {cell.get('id')}")
            if split:
                cells[index:index + 1] = split
                changes.append(f"{where}: split the import cell {cell.get('id')} into neutral, "
                               "TensorFlow and PyTorch cells")
                index += len(split) - 1
        index += 1
    code = [c for c in cells if c.get("cell_type") == "code" and SETUP_TAG not in cell_tags(c)]
    # 2. Tag the untagged cells that need a framework (names read from framework cells).
    analysed = []
    imported = set()
    for cell in code:
        tags = _framework_tags(cell)
        if len(tags) > 1 and not (len(tags) == 2 and "both-frameworks" in tags
                                  and {"tensorflow", "pytorch"} & set(tags)):
            raise FrameworkMarkError(f"{where} cell {cell.get('id')}: framework tags {tags} (one, or a "
                                     "tab's tensorflow/pytorch with both-frameworks)")
        free, defined, imports, mutated, functions = _analyse(source_text(cell))
        analysed.append((cell, free, defined, imports, mutated, functions))
        if imports:
            imported |= defined
    defs = {"tf": set(), "pt": set()}
    names = {"tf": "TensorFlow", "pt": "PyTorch"}
    for final in (False, True):  # the second round knows every name a framework's cells define
        owner, touched = {}, {}  # name -> the frameworks whose cells defined / changed it
        seen = {"tf": set(), "pt": set()}
        for cell, free, defined, imports, mutated, functions in analysed:
            tags = _framework_tags(cell)
            needs, evidence, exists = set(imports), set(), set(imports)
            for name in free:
                if owner.get(name) or touched.get(name):
                    evidence.add(name)
                    needs |= owner.get(name, set()) | touched.get(name, set())
                    exists |= owner.get(name, set())
            fws = _cell_frameworks(cell)
            per_framework = PER_FRAMEWORK_TAG in cell_tags(cell)
            if per_framework:
                _check_per_framework(cell, tags, imports, owner, evidence, where, final)
                fws = set()
            elif NEUTRAL_TAG in cell_tags(cell):
                fws = set()
            elif len(fws) == 1 and exists - fws and final:  # a name this framework never defines
                bad = sorted(n for n in evidence if owner.get(n, set()) - fws) or [
                    f"imports of {names[fw]}" for fw in sorted(imports - fws)]
                kind = "PyTorch's" if fws == {"tf"} else "TensorFlow's"
                raise FrameworkMarkError(
                    f"{where} cell {cell.get('id')} ({names[next(iter(fws))]}) reads {', '.join(bad)}, "
                    f"which only {kind} cells or cells comparing both define: define them in a "
                    "framework-neutral cell, or tag this cell both-frameworks too (it then runs only "
                    "when both frameworks do)")
            elif not tags and needs:
                fws = needs
                if final:
                    tag = "both-frameworks" if fws == {"tf", "pt"} else (
                        "tensorflow-only" if fws == {"tf"} else "pytorch-only")
                    cell.setdefault("metadata", {}).setdefault("tags", []).append(tag)
                    why = ", ".join(sorted(evidence)) if evidence else "its imports"
                    changes.append(f"{where}: tagged cell {cell.get('id')} {tag} (it reads {why})")
            for name in defined:
                if name in functions and not fws:  # a neutral cell's function: what its body reads
                    owner[name] = set().union(*(owner.get(n, set()) | touched.get(n, set())
                                                for n in functions[name]), set())
                    owner[name] |= {fw for fw, roots in (("tf", _TF_NAMES), ("pt", _PT_NAMES))
                                    if functions[name] & roots and not owner.get(name)}
                elif len(fws) == 1:
                    (fw,) = fws
                    seen[fw].add(name)
                    other = "pt" if fw == "tf" else "tf"
                    owner[name] = set() if name in defs[other] else {fw}
                else:
                    owner[name] = set(fws)
            for name in defined:
                touched.pop(name, None)
                if per_framework:  # what it defines holds the frameworks that ran
                    touched[name] = {"tf", "pt"}
            for name in mutated - imported:
                if fws:
                    touched[name] = touched.get(name, set()) | fws
        defs = seen
    # 3. The marker comments, from the tags (the cell source and its assignment edition's).
    for cell in code:
        tags = _framework_tags(cell)
        source = source_text(cell)
        if not tags:
            if marker(source.lstrip("\n").split("\n", 1)[0]) is not None:
                raise FrameworkMarkError(
                    f"{where} cell {cell.get('id')}: starts with a framework marker but has no framework "
                    f"tag: add one of {sorted(FRAMEWORK_MARKERS)} or remove the marker line")
            continue
        want = FRAMEWORK_MARKERS["both-frameworks" if "both-frameworks" in tags else tags[0]]
        new = _with_marker(source, want)
        if new != source:
            cell["source"] = new.splitlines(keepends=True)
            changes.append(f"{where}: marked cell {cell.get('id')} '{new.split(chr(10))[0]}'")
        assignment = cell.get("metadata", {}).get("assignment")
        if isinstance(assignment, dict) and assignment.get("source"):
            old = assignment["source"]
            text = old if isinstance(old, str) else "".join(old)
            fixed = _with_marker(text, new.split("\n")[0])
            if fixed != text:
                assignment["source"] = fixed if isinstance(old, str) else fixed.splitlines(keepends=True)
                changes.append(f"{where}: marked the assignment edition of cell {cell.get('id')}")
    return changes


def frameworks(paths, write: bool = True) -> list:
    """:func:`mark_frameworks` on every notebook of ``paths``; with ``write``, save those changed.

    Returns the changes (empty when every notebook is already marked).
    """
    changes = []
    for path in paths:
        path = Path(path)
        notebook = _load_notebook(path)
        changed = mark_frameworks(notebook, where=str(path), stem=path.stem)
        if changed and write:
            _save_notebook(path, notebook)
        changes += changed
    return changes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_pkg.book", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["check", "stamp", "frameworks"])
    parser.add_argument("--check", action="store_true",
                        help="frameworks: change nothing, fail if a notebook needs marking")
    parser.add_argument("notebooks", nargs="*", help="default: every notebook under book/")
    args = parser.parse_intermixed_args(argv)
    paths = args.notebooks or chapter_notebooks()
    if args.command == "frameworks":
        try:
            changes = frameworks(paths, write=not args.check)
        except FrameworkMarkError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for change in changes:
            print(change)
        if args.check and changes:
            print("(run: python -m course_pkg.book frameworks)")
            return 1
        return 0
    if args.command == "check":
        stale = check(paths)
        for path in stale:
            print(f"{path}: first code cell is not the set-up cell of _config.yml "
                  "(run: python -m course_pkg.book stamp)")
        return 1 if stale else 0
    for path in stamp(paths):
        print(f"stamped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
