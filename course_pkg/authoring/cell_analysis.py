"""Static analysis of a chapter's code cell: which frameworks its imports need, and which names
it reads, defines and changes (what ``python -m course_pkg.authoring frameworks`` follows from
cell to cell to tag the cells that need one framework, see :mod:`.frameworks`).

Imports no framework (it reads source with :mod:`ast`, never runs it).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

TF_MODULES = {"tensorflow", "keras", "tf_keras"}  # top-level modules that need TensorFlow
PT_MODULES = {"torch", "torchvision", "torchaudio", "transformers"}  # ... and PyTorch


class FrameworkMarkError(ValueError):
    """A cell whose framework the script cannot decide, or whose tags contradict each other."""


class CellNames(NamedTuple):
    """What a cell's source does with names (see :func:`analyse`)."""

    free: set  # names it reads from earlier cells as it runs
    defined: set  # names it leaves defined
    imports: set  # the frameworks its import statements need: "tf", "pt"
    mutated: set  # earlier names it changes in place (scores["PyTorch"] = ..., runs.append(...))
    functions: dict  # each function or class it defines -> the names its body reads when called


def framework_of_import(node) -> set:
    """The frameworks an import statement needs ({"tf"}, {"pt"}, both or none)."""
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
        elif parts[0] in TF_MODULES:
            found.add("tf")
        elif parts[0] in PT_MODULES:
            found.add("pt")
    return found


class _NameVisitor:
    """The names seen so far by :meth:`visit`: read (``loaded``), bound anywhere (``stored``),
    left defined by the cell (``defined``), changed in place (``mutated``), and the frameworks
    imported (``imports``)."""

    def __init__(self):
        self.loaded, self.stored, self.defined, self.imports, self.mutated = set(), set(), set(), set(), set()

    def note_changes(self, node):
        """A top-level statement that changes an earlier name in place: ``scores["PyTorch"] = ...``,
        ``total += ...``, ``results.append(...)``."""
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                while isinstance(target, (ast.Subscript, ast.Attribute)):
                    target = target.value
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Load):
                    self.mutated.add(target.id)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func  # results.append(...), measured.update(...)
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in (
                    "append", "extend", "update", "setdefault", "insert", "add"):
                self.mutated.add(func.value.id)

    def visit(self, node, top):
        """Record ``node`` and its children; ``top``: the node runs as the cell runs (not inside a
        function, class, lambda or comprehension)."""
        if top:
            self.note_changes(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports.update(framework_of_import(node))
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                self.stored.add(name)
                if top:
                    self.defined.add(name)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.stored.add(node.name)
            if top:
                self.defined.add(node.name)
            top = False
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            top = False
        if isinstance(node, ast.arg):
            self.stored.add(node.arg)
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.loaded.add(node.id)
            else:
                self.stored.add(node.id)
                if top:
                    self.defined.add(node.id)
        for child in ast.iter_child_nodes(node):
            self.visit(child, top)


def analyse(source: str) -> CellNames:
    """The names a cell's ``source`` reads, defines and changes, and the frameworks it imports.

    IPython's ``%magic`` and ``!shell`` lines are left out. Raises :class:`FrameworkMarkError`
    for a cell that is not Python.
    """
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError as error:
        raise FrameworkMarkError(f"cannot parse the cell: {error}") from None
    names = _NameVisitor()
    loaded, stored = names.loaded, names.stored
    functions = {}  # a function or class defined here -> the names its body reads
    outer = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            before_loaded, before_stored = set(loaded), set(stored)
            loaded.clear()
            stored.clear()
            names.visit(statement, True)
            functions[statement.name] = loaded - stored
            loaded |= before_loaded
            stored |= before_stored | {statement.name}
        else:
            before = set(loaded)
            names.visit(statement, True)
            outer |= loaded - before
    # Only what runs now counts for the cell itself: a function's body runs when it is called.
    return CellNames(outer - stored, names.defined, names.imports, names.mutated - names.defined, functions)
