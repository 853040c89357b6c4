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

from ._files import atomic_write

ROOT = Path(__file__).resolve().parent.parent
SETUP_TAG = "course-setup"

SETUP_TEMPLATE = '''\
# Set-up: on Colab (or wherever course_pkg is missing) install the course package;
# elsewhere this cell changes nothing. Both frameworks use the GPU when there is one.
# The framework to run: "pytorch" or "tensorflow" runs its cells and skips the other's
# (only that one need be installed); "both" runs both; empty: $COURSE_FRAMEWORK, else both.
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


def _first_code_cell(notebook: dict):
    return next((c for c in notebook.get("cells", []) if c.get("cell_type") == "code"), None)


def check(paths, config_path=ROOT / "_config.yml") -> list:
    """Paths whose first code cell is not the current set-up cell."""
    want = setup_source(config_path)
    stale = []
    for path in paths:
        cell = _first_code_cell(json.loads(Path(path).read_text(encoding="utf-8")))
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
        notebook = json.loads(path.read_text(encoding="utf-8"))
        cells = notebook.setdefault("cells", [])
        old = next((c for c in cells if SETUP_TAG in c.get("metadata", {}).get("tags", [])), None)
        if old is not None:
            if "".join(old["source"]) == "".join(fresh["source"]) and old.get("id") == SETUP_TAG:
                continue
            old["source"], old["id"] = fresh["source"], SETUP_TAG
        else:
            index = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
            cells.insert(index, dict(fresh))
        atomic_write(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
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
    """``(free, defined, imports)`` of a cell: names it reads from earlier cells, names it
    leaves defined, and the frameworks its import statements need."""
    import ast

    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError as error:
        raise FrameworkMarkError(f"cannot parse the cell: {error}") from None
    loaded, stored, defined, imports = set(), set(), set(), set()

    def visit(node, top):
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

    for statement in tree.body:
        visit(statement, True)
    return loaded - stored, defined, imports


def _tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


def _framework_tags(cell) -> list:
    return [t for t in _tags(cell) if t in FRAMEWORK_MARKERS]


def _source(cell) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def _split_import_cell(cell, where):
    """The cells an import cell that imports both frameworks becomes: the neutral part (the
    cell itself, same id), then a TensorFlow and a PyTorch cell; ``None`` if nothing to split."""
    import ast

    source = _source(cell)
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


def mark_frameworks(notebook: dict, where: str = "notebook") -> list:
    """Split import cells, tag and mark the cells of one framework; return what changed.

    Idempotent; changes sources and tags only (never outputs). Raises
    :class:`FrameworkMarkError` for a cell it cannot decide.
    """
    from .notebook import marker

    cells = notebook.get("cells", [])
    changes = []
    # 1. Split the import cells that import both frameworks.
    index = 0
    while index < len(cells):
        cell = cells[index]
        if (cell.get("cell_type") == "code" and SETUP_TAG not in _tags(cell)
                and not _framework_tags(cell)):
            split = _split_import_cell(cell, f"{where} cell {cell.get('id')}")
            if split:
                cells[index:index + 1] = split
                changes.append(f"{where}: split the import cell {cell.get('id')} into neutral, "
                               "TensorFlow and PyTorch cells")
                index += len(split) - 1
        index += 1
    code = [c for c in cells if c.get("cell_type") == "code" and SETUP_TAG not in _tags(c)]
    # 2. Tag the untagged cells that need a framework (names read from framework cells).
    analysed = []
    for cell in code:
        free, defined, imports = _analyse(_source(cell))
        analysed.append((cell, free, defined, imports))
    defs = {"tf": set(), "pt": set()}
    owner = {}
    for _round in range(2):  # the second round knows every name a framework's cells define
        owner = {}
        seen = {"tf": set(), "pt": set()}
        for cell, free, defined, imports in analysed:
            tags = _framework_tags(cell)
            if len(tags) > 1:
                raise FrameworkMarkError(f"{where} cell {cell.get('id')}: two framework tags {tags}")
            needs = set(imports)
            evidence = {}
            for name in free:
                for fw in owner.get(name, ()):
                    evidence.setdefault(fw, set()).add(name)
                    needs.add(fw)
            if NEUTRAL_TAG in _tags(cell):
                fws = set()
            elif tags:
                fws = set(_FW_OF_TAG[tags[0]])
                if tags[0].endswith("-only") and needs - fws:
                    raise FrameworkMarkError(
                        f"{where} cell {cell.get('id')}: tagged {tags[0]} but reads "
                        f"{sorted(set().union(*evidence.values()) or imports)} of the other framework: "
                        "tag it both-frameworks (or framework-neutral if it runs under either)")
            else:
                fws = needs
                if _round == 1 and fws:
                    tag = "both-frameworks" if fws == {"tf", "pt"} else (
                        "tensorflow-only" if fws == {"tf"} else "pytorch-only")
                    cell.setdefault("metadata", {}).setdefault("tags", []).append(tag)
                    why = ", ".join(sorted(set().union(*evidence.values()))) if evidence else "its imports"
                    changes.append(f"{where}: tagged cell {cell.get('id')} {tag} (it reads {why})")
            for name in defined:
                if len(fws) == 1:
                    (fw,) = fws
                    seen[fw].add(name)
                    other = "pt" if fw == "tf" else "tf"
                    owner[name] = set() if name in defs[other] else {fw}
                else:
                    owner[name] = set(fws)
        defs = seen
    # 3. The marker comments, from the tags (the cell source and its assignment edition's).
    for cell in code:
        tags = _framework_tags(cell)
        source = _source(cell)
        if not tags:
            if marker(source.lstrip("\n").split("\n", 1)[0]) is not None:
                raise FrameworkMarkError(
                    f"{where} cell {cell.get('id')}: starts with a framework marker but has no framework "
                    f"tag: add one of {sorted(FRAMEWORK_MARKERS)} or remove the marker line")
            continue
        want = FRAMEWORK_MARKERS[tags[0]]
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
        notebook = json.loads(path.read_text(encoding="utf-8"))
        changed = mark_frameworks(notebook, where=str(path))
        if changed and write:
            atomic_write(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
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
