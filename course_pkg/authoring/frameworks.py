"""One framework at a time: tag each chapter cell that needs one framework, and write the marker
comment its first line carries (what :mod:`course_pkg.notebook` reads at run time).

    python -m course_pkg.authoring frameworks          # split import cells, tag and mark framework cells
    python -m course_pkg.authoring frameworks --check  # change nothing; fail if a notebook needs it

:func:`mark_frameworks` does, for one notebook and in this order:

1. the changes :data:`~course_pkg.authoring.notebook_fixes.NOTEBOOK_FIXES` lists for it;
2. splits each import cell that imports both frameworks (:mod:`.import_cells`);
3. tags each untagged cell that reads what only one framework's cells define
   (:func:`tag_cells`, following names from cell to cell with :mod:`.cell_analysis`);
4. writes each tagged cell's marker comment (:func:`write_markers`).

See ``book/AUTHORING.md``, "One framework at a time". Imports no framework.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..notebook import marker
from .cell_analysis import CellNames, FrameworkMarkError, analyse
from .claims import PER_FRAMEWORK_TAG
from .import_cells import split_import_cell
from .notebook_files import cell_tags, load_notebook, save_notebook, source_text
from .notebook_fixes import apply_fixes
from .setup_cell import SETUP_TAG

__all__ = ["FRAMEWORK_MARKERS", "NEUTRAL_TAG", "FrameworkMarkError", "frameworks", "mark_frameworks",
           "split_import_cells", "tag_cells", "write_markers"]

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
_TF_NAMES = {"tf", "keras", "ctf"}  # what the import cells call the frameworks (a backstop)
_PT_NAMES = {"torch", "cpt"}
_FW_OF_TAG = {"tensorflow": {"tf"}, "tensorflow-only": {"tf"}, "pytorch": {"pt"},
              "pytorch-only": {"pt"}, "both-frameworks": {"tf", "pt"}}
_NAMES = {"tf": "TensorFlow", "pt": "PyTorch"}


def mark_frameworks(notebook: dict, where: str = "notebook", stem: str = "") -> list:
    """Split import cells, tag and mark the cells of one framework; return what changed.

    ``stem`` (the file's name without ``.ipynb``) selects the notebook's fixes. Idempotent;
    changes sources and tags only (never outputs). Raises :class:`FrameworkMarkError` for a
    cell it cannot decide.
    """
    cells = notebook.get("cells", [])
    changes = apply_fixes(notebook, stem, where) if stem else []
    changes += split_import_cells(cells, where)
    code = [c for c in cells if c.get("cell_type") == "code" and SETUP_TAG not in cell_tags(c)]
    changes += tag_cells(code, where)
    changes += write_markers(code, where)
    return changes


def split_import_cells(cells: list, where: str) -> list:
    """Split (in place) each untagged import cell that imports both frameworks; return what changed."""
    changes = []
    index = 0
    while index < len(cells):
        cell = cells[index]
        if (cell.get("cell_type") == "code" and SETUP_TAG not in cell_tags(cell)
                and not _framework_tags(cell)):
            split = split_import_cell(cell, f"{where} cell {cell.get('id')}")
            if split:
                cells[index:index + 1] = split
                changes.append(f"{where}: split the import cell {cell.get('id')} into neutral, "
                               "TensorFlow and PyTorch cells")
                index += len(split) - 1
        index += 1
    return changes


def _framework_tags(cell) -> list:
    return [t for t in cell_tags(cell) if t in FRAMEWORK_MARKERS]


def _cell_frameworks(cell) -> set:
    tags = _framework_tags(cell)
    if "both-frameworks" in tags:
        return {"tf", "pt"}
    return set(_FW_OF_TAG[tags[0]]) if tags else set()


def _analysed(cell, where: str) -> CellNames:
    """The names of ``cell``, once its framework tags are checked to agree."""
    tags = _framework_tags(cell)
    if len(tags) > 1 and not (len(tags) == 2 and "both-frameworks" in tags
                              and {"tensorflow", "pytorch"} & set(tags)):
        raise FrameworkMarkError(f"{where} cell {cell.get('id')}: framework tags {tags} (one, or a "
                                 "tab's tensorflow/pytorch with both-frameworks)")
    return analyse(source_text(cell))


def tag_cells(code: list, where: str) -> list:
    """Tag ``tensorflow-only``, ``pytorch-only`` or ``both-frameworks`` each untagged cell of
    ``code`` that needs a framework (its imports, or names that framework's cells define or
    change); return what changed.

    Two passes over the cells: the first learns which names each framework's cells define,
    the second checks every cell against them and tags.
    """
    analysed = [(cell, _analysed(cell, where)) for cell in code]
    imported = set()
    for _, names in analysed:
        if names.imports:
            imported |= names.defined
    defined_by = {"tf": set(), "pt": set()}
    changes = []
    for final in (False, True):
        tagging = _Tagging(where, final, imported, defined_by)
        for cell, names in analysed:
            fws = tagging.frameworks_of(cell, names, changes)
            tagging.record(cell, names, fws)
        defined_by = tagging.seen
    return changes


@dataclass
class _Tagging:
    """One pass of :func:`tag_cells` over a notebook's code cells, in order."""

    where: str
    final: bool  # the second pass: it knows every name each framework's cells define, and tags
    imported: set  # the names the import cells define
    defined_by: dict  # "tf" / "pt" -> the names that framework's cells defined in the first pass
    owner: dict = field(default_factory=dict)  # name -> the frameworks whose cells defined it
    touched: dict = field(default_factory=dict)  # name -> the frameworks whose cells changed it
    seen: dict = field(default_factory=lambda: {"tf": set(), "pt": set()})  # defined_by, this pass

    def frameworks_of(self, cell, names: CellNames, changes: list) -> set:
        """The frameworks ``cell`` runs with (``set()``: any); in the final pass an untagged cell
        that needs some is tagged (said in ``changes``)."""
        tags = _framework_tags(cell)
        needs, evidence, exists = set(names.imports), set(), set(names.imports)
        for name in names.free:
            if self.owner.get(name) or self.touched.get(name):
                evidence.add(name)
                needs |= self.owner.get(name, set()) | self.touched.get(name, set())
                exists |= self.owner.get(name, set())
        fws = _cell_frameworks(cell)
        if PER_FRAMEWORK_TAG in cell_tags(cell):
            self._check_per_framework(cell, tags, names.imports, evidence)
            return set()
        if NEUTRAL_TAG in cell_tags(cell):
            return set()
        if len(fws) == 1 and exists - fws and self.final:  # a name this framework never defines
            raise self._reads_the_other(cell, fws, names.imports, evidence)
        if not tags and needs:
            if self.final:
                changes.append(self._tag(cell, needs, evidence))
            return needs
        return fws

    def record(self, cell, names: CellNames, fws: set) -> None:
        """Note what ``cell`` (running with ``fws``) defines and changes, for the cells after it."""
        for name in names.defined:
            if name in names.functions and not fws:  # a neutral cell's function: what its body reads
                self.owner[name] = set().union(*(self.owner.get(n, set()) | self.touched.get(n, set())
                                                 for n in names.functions[name]), set())
                self.owner[name] |= {fw for fw, roots in (("tf", _TF_NAMES), ("pt", _PT_NAMES))
                                     if names.functions[name] & roots and not self.owner.get(name)}
            elif len(fws) == 1:
                (fw,) = fws
                self.seen[fw].add(name)
                other = "pt" if fw == "tf" else "tf"
                self.owner[name] = set() if name in self.defined_by[other] else {fw}
            else:
                self.owner[name] = set(fws)
        per_framework = PER_FRAMEWORK_TAG in cell_tags(cell)
        for name in names.defined:
            self.touched.pop(name, None)
            if per_framework:  # what it defines holds the frameworks that ran
                self.touched[name] = {"tf", "pt"}
        for name in names.mutated - self.imported:
            if fws:
                self.touched[name] = self.touched.get(name, set()) | fws

    def _tag(self, cell, fws: set, evidence: set) -> str:
        tag = "both-frameworks" if fws == {"tf", "pt"} else (
            "tensorflow-only" if fws == {"tf"} else "pytorch-only")
        cell.setdefault("metadata", {}).setdefault("tags", []).append(tag)
        why = ", ".join(sorted(evidence)) if evidence else "its imports"
        return f"{self.where}: tagged cell {cell.get('id')} {tag} (it reads {why})"

    def _check_per_framework(self, cell, tags, imports, evidence) -> None:
        """A ``per-framework`` cell is neutral: no framework tag, no framework import, and it reads
        what the frameworks' cells stored in dicts (changed in place), never a name that only
        one framework's cells define."""
        if tags:
            raise FrameworkMarkError(
                f"{self.where} cell {cell.get('id')}: tagged {PER_FRAMEWORK_TAG} and {tags[0]}: "
                f"a {PER_FRAMEWORK_TAG} cell runs under every choice (remove one tag)")
        own = sorted(n for n in evidence if self.owner.get(n))
        if self.final and (imports or own):
            what = ", ".join(own) if own else "a framework's import"
            raise FrameworkMarkError(
                f"{self.where} cell {cell.get('id')} ({PER_FRAMEWORK_TAG}) reads {what}, which only one "
                "framework's cells define: let those cells store it in a dict keyed by framework name "
                '(results["PyTorch"] = ...) and read the dict')

    def _reads_the_other(self, cell, fws, imports, evidence) -> FrameworkMarkError:
        bad = sorted(n for n in evidence if self.owner.get(n, set()) - fws) or [
            f"imports of {_NAMES[fw]}" for fw in sorted(imports - fws)]
        kind = "PyTorch's" if fws == {"tf"} else "TensorFlow's"
        return FrameworkMarkError(
            f"{self.where} cell {cell.get('id')} ({_NAMES[next(iter(fws))]}) reads {', '.join(bad)}, "
            f"which only {kind} cells or cells comparing both define: define them in a "
            "framework-neutral cell, or tag this cell both-frameworks too (it then runs only "
            "when both frameworks do)")


def write_markers(code: list, where: str) -> list:
    """Make each tagged cell's first line its tag's marker comment (in the cell's source and in
    its assignment edition's); return what changed. An untagged cell with a marker is an error."""
    changes = []
    for cell in code:
        changes += _write_marker(cell, where)
    return changes


def _write_marker(cell, where: str) -> list:
    tags = _framework_tags(cell)
    source = source_text(cell)
    if not tags:
        if marker(source.lstrip("\n").split("\n", 1)[0]) is not None:
            raise FrameworkMarkError(
                f"{where} cell {cell.get('id')}: starts with a framework marker but has no framework "
                f"tag: add one of {sorted(FRAMEWORK_MARKERS)} or remove the marker line")
        return []
    changes = []
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


def _with_marker(source: str, marker_line: str) -> str:
    first, newline, rest = source.partition("\n")
    if marker(first) is not None:
        if marker_line.startswith("# Both frameworks") and first.strip().startswith("# Both frameworks:"):
            return source
        return marker_line + ("\n" + rest if newline else "")
    return marker_line + "\n" + source


def frameworks(paths, write: bool = True) -> list:
    """:func:`mark_frameworks` on every notebook of ``paths``; with ``write``, save those changed.

    Returns the changes (empty when every notebook is already marked).
    """
    changes = []
    for path in paths:
        path = Path(path)
        notebook = load_notebook(path)
        changed = mark_frameworks(notebook, where=str(path), stem=path.stem)
        if changed and write:
            save_notebook(path, notebook)
        changes += changed
    return changes
