"""Splitting an import cell that imports both frameworks into a neutral, a TensorFlow and a
PyTorch cell (the first step of ``python -m course_pkg.authoring frameworks``).

Imports no framework.
"""

from __future__ import annotations

import ast

from .cell_analysis import FrameworkMarkError, framework_of_import
from .notebook_files import source_text


def split_import_cell(cell, where):
    """The cells an import cell that imports both frameworks becomes: the neutral part (the
    cell itself, same id), then a TensorFlow and a PyTorch cell; ``None`` if nothing to split."""
    source = source_text(cell)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body[:1]):
        return None
    imported = set()
    for statement in tree.body:
        imported |= framework_of_import(statement)
    if imported != {"tf", "pt"}:
        return None
    if cell.get("outputs"):
        raise FrameworkMarkError(f"{where}: the import cell prints something; split it by hand")
    parts = _parts_by_framework(tree, source.splitlines(), where)
    return [_cell_of_part(cell, fw, tag, parts[fw])
            for fw, tag in (("", None), ("tf", "tensorflow"), ("pt", "pytorch"))]


def _parts_by_framework(tree, lines, where):
    """``{"": [...], "tf": [...], "pt": [...]}``: each statement's lines (with the comments above
    it) given to the framework it needs, as ``(blank line before, lines, is an import)``."""
    parts = {"": [], "tf": [], "pt": []}
    names = {"tf": set(), "pt": set()}  # the names each framework's imports bind
    start = 0  # first line (0-based) not yet given to a part: comments go with the next statement
    previous_end = 0
    for statement in tree.body:
        begin, end = statement.lineno - 1, statement.end_lineno
        chunk = lines[start:end]
        blank_before = start > previous_end or (chunk and not chunk[0].strip())
        chunk = [ln for ln in chunk if ln.strip()]
        start = previous_end = end
        if isinstance(statement, ast.ImportFrom) and statement.module == "course_pkg":
            _split_course_import(statement, blank_before, parts, names)
            continue
        fws = framework_of_import(statement)
        if not fws:
            used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            fws = {fw for fw in ("tf", "pt") if used & names[fw]}
        if len(fws) > 1:
            raise FrameworkMarkError(f"{where}: line {begin + 1} of the import cell uses both frameworks")
        fw = fws.pop() if fws else ""
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and fw:
            names[fw].update((a.asname or a.name).split(".")[0] for a in statement.names)
        parts[fw].append((blank_before, chunk, isinstance(statement, (ast.Import, ast.ImportFrom))))
    return parts


def _split_course_import(statement, blank_before, parts, names):
    """``from course_pkg import tensorflow, torch, data``: one import per framework (and one of
    the rest), added to ``parts``; the framework modules' names added to ``names``."""
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


def _cell_of_part(cell, fw, tag, part):
    """The cell of one framework's ``part`` (the neutral one is ``cell`` itself, its source
    replaced): a blank line where there was one, and after the imports."""
    out, after_import = [], False
    for blank_before, chunk, is_import in part:
        if out and out[-1] and (blank_before or (after_import and not is_import)):
            out.append("")
        out.extend(chunk)
        after_import = is_import
    text = "\n".join(out)
    if fw == "":
        cell["source"] = text.splitlines(keepends=True)
        return cell
    return {"cell_type": "code", "execution_count": None,
            "id": f"{cell.get('id', 'imports')}-{tag}", "metadata": {"tags": [tag]},
            "outputs": [], "source": text.splitlines(keepends=True)}
