"""Student notebooks and answer keys, made from the chapters (the student site: :mod:`.site`).

Everything is computed in memory and checked first; files are written only when every notebook
is well-formed, so a malformed marker writes nothing. The chapter notebooks are only read.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from pathlib import Path

from ..authoring.notebook_files import source_text
from ..authoring.setup_cell import SETUP_TAG
from ..common.files import atomic_write
from .catalog import BOOK_SEED, for_chapter

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
ROLES = ("params", "solution", "check")
CHAPTER = re.compile(r"^\d\d_\w+\.ipynb$")
# Appendices are numbered notebooks of the book (toc, nbval, set-up cell) without graded exercises:
# no Exercises section, no assignment edition. Listed here so that the exemption is explicit.
APPENDICES = frozenset({"10_scaling"})
# Chapters being written: numbered chapters of the book (toc, nbval, set-up cell) whose exercises
# are not in the catalog yet. Like the appendices they are left out of build, grading and the
# student site's editions; a chapter leaves this list when its Exercises section is written.
DRAFTS = frozenset()
METADATA_KEY = "course_pkg_exercises"  # notebook metadata: chapter, seed, edition
# Assignment editions (student notebooks and answer keys) run every cell within nbgrader's default
# 30 s: a chapter marks the cells the assignment leaves out or replaces (book/AUTHORING.md).
REPLACE_TAG, SKIP_TAG = "assignment-replace", "assignment-skip"
ASSIGNMENT_KEY = "assignment"  # cell metadata: {"source": replacement source} (with REPLACE_TAG)
CELL_TIME_LIMIT = 30  # seconds: nbgrader's default per-cell timeout (ExecutePreprocessor.timeout)


class ExerciseError(ValueError):
    """A chapter notebook that cannot be turned into student notebooks (named with its cell)."""


# --------------------------------------------------------------------------- reading

def _set_source(cell, text):
    cell["source"] = text.splitlines(keepends=True)


def read_notebook(path) -> dict:
    path = Path(path)
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ExerciseError(f"{path}: cannot read the notebook: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ExerciseError(f"{path}: not a Jupyter notebook (no list of cells)")
    return notebook


def write_json(notebook) -> str:
    """The bytes Jupyter writes (nbformat's layout), so that output is byte-identical per seed."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def exercise_of(cell):
    """``(id, role)`` from a cell's ``exercise`` metadata, or ``(None, None)``."""
    meta = cell.get("metadata", {}).get("exercise")
    if not isinstance(meta, dict):
        return None, None
    return str(meta.get("id")), meta.get("role")


def where(path, index, cell) -> str:
    cell_id = f" (id {cell['id']})" if cell.get("id") else ""
    return f"{path}: cell {index}{cell_id}"


def solution_regions(text, place):
    """``[(begin_line, end_line)]`` (0-based) of the marked regions; ``ExerciseError`` if malformed."""
    regions, begin = [], None
    for number, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if begin is not None:
                raise ExerciseError(f"{place}: '{BEGIN}' on line {number + 1} inside the region "
                                    f"opened on line {begin + 1}; close it with '{END}' first")
            begin = number
        elif stripped.startswith(END):
            if begin is None:
                raise ExerciseError(f"{place}: '{END}' on line {number + 1} without a '{BEGIN}' before it")
            regions.append((begin, number))
            begin = None
    if begin is not None:
        raise ExerciseError(f"{place}: '{BEGIN}' on line {begin + 1} has no '{END}'")
    return regions


def stub_solutions(text, place) -> str:
    """Replace each marked region by nbgrader's stub, indented like its ``BEGIN`` line."""
    lines = text.splitlines()
    regions = solution_regions(text, place)
    for begin, end in reversed(regions):
        indent = lines[begin][:len(lines[begin]) - len(lines[begin].lstrip())]
        lines[begin:end + 1] = [indent + line for line in STUB]
    return "\n".join(lines)


def solution_lines(notebook) -> list:
    """The text inside every marked region (for tests that look for leaks)."""
    found = []
    for cell in notebook["cells"]:
        text = source_text(cell)
        lines = text.splitlines()
        for begin, end in solution_regions(text, "notebook"):
            found += [line.strip() for line in lines[begin + 1:end] if line.strip()]
    return found


def exercises_in(notebook, path) -> dict:
    """``{id: {role: cell index}}`` of a chapter notebook, checked against the catalog."""
    found = {}
    for index, cell in enumerate(notebook["cells"]):
        ex_id, role = exercise_of(cell)
        if ex_id is None:
            continue
        if role not in ROLES:
            raise ExerciseError(f"{where(path, index, cell)}: exercise role {role!r} is not one of {ROLES}")
        if role in found.setdefault(ex_id, {}):
            raise ExerciseError(f"{where(path, index, cell)}: a second {role} cell for exercise {ex_id}")
        found[ex_id][role] = index
    chapter = Path(path).stem
    expected = [exercise.id for exercise in for_chapter(chapter)]
    if sorted(found) != sorted(expected):
        raise ExerciseError(f"{path}: has exercises {sorted(found)}, the catalog lists {expected} "
                            f"for {chapter}")
    for ex_id, roles in found.items():
        missing = [role for role in ROLES if role not in roles]
        if missing:
            raise ExerciseError(f"{path}: exercise {ex_id} has no {' or '.join(missing)} cell")
    return found


def section_start(notebook) -> int:
    """Index of the cell tagged ``exercises`` (the section's first cell), or -1."""
    for index, cell in enumerate(notebook["cells"]):
        if "exercises" in cell.get("metadata", {}).get("tags", []):
            return index
    return -1


# --------------------------------------------------------------------------- assignment marks

def assignment_mark(cell, place):
    """``(action, replacement)`` of a chapter cell in the assignment editions.

    ``action`` is ``None`` (kept as is), ``"skip"`` (left out) or ``"replace"`` (its source
    becomes ``replacement``). Raises :class:`ExerciseError` naming the cell for a malformed mark:
    both tags, ``assignment-replace`` without a non-empty ``metadata.assignment.source`` (text or
    a list of lines), or ``metadata.assignment`` without the ``assignment-replace`` tag.
    """
    meta = cell.get("metadata", {})
    tags = meta.get("tags", [])
    replace, skip = REPLACE_TAG in tags, SKIP_TAG in tags
    spec = meta.get(ASSIGNMENT_KEY)
    if replace and skip:
        raise ExerciseError(f"{place}: tagged both '{REPLACE_TAG}' and '{SKIP_TAG}'; choose one")
    if spec is not None and not replace:
        raise ExerciseError(f"{place}: has metadata '{ASSIGNMENT_KEY}' but not the tag '{REPLACE_TAG}' "
                            f"(add the tag, or remove the metadata)")
    if skip:
        return "skip", None
    if not replace:
        return None, None
    source = spec.get("source") if isinstance(spec, dict) else None
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str) or not source.strip():
        raise ExerciseError(f"{place}: tagged '{REPLACE_TAG}' but its metadata has no "
                            f'"{ASSIGNMENT_KEY}": {{"source": "..."}} with the replacement source')
    return "replace", source


def _protected(notebook, exercise_cells):
    """Cells no assignment mark may touch: the set-up cell and the whole Exercises section."""
    start = section_start(notebook)
    protected = set(exercise_cells)
    for index, cell in enumerate(notebook["cells"]):
        if SETUP_TAG in cell.get("metadata", {}).get("tags", []) or (start >= 0 and index >= start):
            protected.add(index)
    return protected


def _unmark(meta):
    """Drop the assignment marks from a cell's metadata (the editions carry none)."""
    meta.pop(ASSIGNMENT_KEY, None)
    if "tags" in meta:
        tags = [tag for tag in meta["tags"] if tag not in (REPLACE_TAG, SKIP_TAG)]
        if tags:
            meta["tags"] = tags
        else:
            meta.pop("tags")


def mark_cell(path, cell_id, action, source=None):
    """Set (``"skip"``, ``"replace"`` with ``source``) or remove (``"clear"``) a cell's assignment mark.

    The chapter notebook at ``path`` is rewritten in Jupyter's layout; only the cell with id
    ``cell_id`` changes (its tags and ``metadata.assignment``), never its source or outputs.
    """
    if action not in ("skip", "replace", "clear"):
        raise ValueError(f"action must be 'skip', 'replace' or 'clear', got {action!r}")
    notebook = read_notebook(path)
    found = [i for i, cell in enumerate(notebook["cells"]) if cell.get("id") == cell_id]
    if not found:
        raise ExerciseError(f"{path}: no cell with id {cell_id!r}")
    index = found[0]
    cell = notebook["cells"][index]
    meta = cell.setdefault("metadata", {})
    _unmark(meta)
    if action != "clear":
        if action == "replace":
            if not isinstance(source, str) or not source.strip():
                raise ExerciseError(f"{path}: the replacement source of cell {cell_id} is empty")
            meta[ASSIGNMENT_KEY] = {"source": source.rstrip("\n").splitlines(keepends=True)}
        meta.setdefault("tags", []).append(REPLACE_TAG if action == "replace" else SKIP_TAG)
        exercise_cells = {i for roles in exercises_in(notebook, path).values() for i in roles.values()}
        if index in _protected(notebook, exercise_cells):
            raise ExerciseError(f"{where(path, index, cell)}: the set-up cell and the Exercises section "
                                f"cannot be left out of or replaced in the assignments")
    atomic_write(path, write_json(notebook))


# --------------------------------------------------------------------------- nbgrader checksums

def nbgrader_checksum(cell) -> str:
    """The checksum nbgrader 0.9.6 stores in ``metadata.nbgrader.checksum``.

    The same computation as ``nbgrader.utils.compute_checksum`` (MD5 of the source, the cell
    type, whether it is a grade, solution and locked cell, its ``grade_id`` and, for a grade
    cell, its points as a float), so that ``nbgrader validate`` and ``autograde`` recognise
    untouched locked cells and flag edited ones.
    """
    meta = cell["metadata"]["nbgrader"]
    grade, solution = bool(meta.get("grade", False)), bool(meta.get("solution", False))
    locked = False if solution else (True if grade else bool(meta.get("locked", False)))
    digest = hashlib.md5()
    for part in (source_text(cell), cell["cell_type"], str(grade), str(solution), str(locked),
                 meta["grade_id"]):
        digest.update(part.encode("utf-8"))
    if grade:
        digest.update(str(float(meta["points"])).encode("utf-8"))
    return digest.hexdigest()


def add_checksums(notebook):
    """Store ``checksum`` and ``cell_type`` in every grade, solution and locked cell (nbgrader's
    ``ComputeChecksums``), in place."""
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta and (meta.get("grade") or meta.get("solution") or meta.get("locked")):
            meta["checksum"] = nbgrader_checksum(cell)
            meta["cell_type"] = cell["cell_type"]


# --------------------------------------------------------------------------- editions

def _nbgrader(grade_id, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def _checked_solution_markers(cell, text, place):
    """The cell's ``(exercise id, role)``; ``ExerciseError`` for solution markers outside a code
    cell or an exercise's solution cell, or a solution cell without them."""
    regions = solution_regions(text, place)
    if regions and cell.get("cell_type") != "code":
        raise ExerciseError(f"{place}: solution markers are supported in code cells only")
    ex_id, role = exercise_of(cell)
    if regions and role != "solution":
        raise ExerciseError(f"{place}: solution markers outside an exercise's solution cell")
    if role == "solution" and not regions:
        raise ExerciseError(f"{place}: the solution cell of exercise {ex_id} has no "
                            f"'{BEGIN}' ... '{END}' region")
    return ex_id, role


def _edit_exercise_cell(cell, exercise, role, text, place, seed, edition):
    """An exercise's cell as the edition has it: parameters drawn from ``seed``, the canonical
    check, the solution stubbed (but in the answer key); each with its nbgrader metadata."""
    meta = cell["metadata"]
    grade_id = "ex_" + exercise.id.replace(".", "_")
    if role == "params":
        _set_source(cell, exercise.params_cell(seed))
        meta["nbgrader"] = _nbgrader(grade_id + "_params", locked=True)
    elif role == "check":
        _set_source(cell, exercise.check_source())
        meta["nbgrader"] = _nbgrader(grade_id, grade=True, locked=True, points=exercise.points)
    else:
        if edition != "answers":
            _set_source(cell, stub_solutions(text, place))
            tags = [tag for tag in meta.get("tags", []) if tag != "hide-input"]
            if tags:
                meta["tags"] = tags
            else:
                meta.pop("tags", None)
            meta.pop("mystnb", None)
        meta["nbgrader"] = _nbgrader(grade_id + "_solution", solution=True)


def make_edition(notebook, path, seed, edition) -> dict:
    """One edition of a chapter notebook.

    ``edition``: ``"student"`` (solutions stubbed, every output cleared), ``"answers"`` (the
    answer key: solutions kept, outputs cleared) or ``"site"`` (solutions stubbed, outputs of
    the exercise cells cleared, the others kept for the student edition of the book).
    Parameters are drawn from ``seed``; check cells get their canonical source; grade, solution
    and locked cells carry nbgrader's checksums. In the student and answer editions (the
    assignments) cells tagged ``assignment-skip`` are left out and cells tagged
    ``assignment-replace`` get the source in their ``metadata.assignment.source``
    (:func:`assignment_mark`); the site edition keeps the book's cells.
    """
    if edition not in ("student", "answers", "site"):
        raise ValueError(f"edition must be 'student', 'answers' or 'site', got {edition!r}")
    chapter = Path(path).stem
    exercises = {exercise.id: exercise for exercise in for_chapter(chapter)}
    cells = exercises_in(notebook, path)
    out = copy.deepcopy(notebook)
    in_exercise = {index for roles in cells.values() for index in roles.values()}
    protected = _protected(notebook, in_exercise)
    assignment = edition != "site"
    left_out = set()
    for index, cell in enumerate(out["cells"]):
        place = where(path, index, cell)
        action, replacement = assignment_mark(cell, place)
        if action and index in protected:
            raise ExerciseError(f"{place}: the set-up cell and the Exercises section (which the grader "
                                f"runs) cannot be tagged '{REPLACE_TAG}' or '{SKIP_TAG}'")
        if assignment:
            _unmark(cell.setdefault("metadata", {}))
            if action == "skip":
                left_out.add(index)
            elif action == "replace":
                _set_source(cell, replacement)
        text = source_text(cell)
        ex_id, role = _checked_solution_markers(cell, text, place)
        meta = cell.setdefault("metadata", {})
        meta.pop("execution", None)  # run timestamps: not part of an edition
        if cell.get("cell_type") == "code":
            if edition != "site" or index in in_exercise:
                cell["outputs"], cell["execution_count"] = [], None
        if ex_id is not None:
            _edit_exercise_cell(cell, exercises[ex_id], role, text, place, seed, edition)
    out["cells"] = [cell for index, cell in enumerate(out["cells"]) if index not in left_out]
    add_checksums(out)
    out.setdefault("metadata", {})[METADATA_KEY] = {"chapter": chapter, "seed": seed, "edition": edition}
    return out


# --------------------------------------------------------------------------- build

def find_chapters(source, chapters=None) -> list:
    """The chapter notebooks under ``source`` (``NN_name.ipynb``, not the ``APPENDICES`` nor the
    ``DRAFTS``), optionally only some.

    ``chapters``: numbers or names (``3``, ``"03"``, ``"03_masks"``).
    """
    source = Path(source)
    notebooks = sorted(p for p in source.glob("*.ipynb")
                       if CHAPTER.match(p.name) and p.stem not in APPENDICES | DRAFTS)
    if not notebooks:
        raise ExerciseError(f"no chapter notebooks (NN_name.ipynb) in {source}; pass --source "
                            "with the book's folder")
    if not chapters:
        return notebooks
    chosen = []
    for wanted in chapters:
        wanted = str(wanted)
        match = [p for p in notebooks if p.stem == wanted
                 or (wanted.isdigit() and int(p.stem[:2]) == int(wanted))]
        if not match:
            raise ExerciseError(f"no chapter {wanted!r} in {source}; the chapters are "
                                f"{', '.join(p.stem for p in notebooks)}")
        chosen += [p for p in match if p not in chosen]
    return chosen


def manifest(notebooks, seed) -> dict:
    return {"seed": seed, "chapters": {
        path.stem: [{"id": exercise.id, "title": exercise.title, "points": exercise.points,
                     "answer": exercise.answer, "parameters": exercise.params_source(seed)}
                    for exercise in for_chapter(path.stem)]
        for path in notebooks}}


def plan_build(source, seed=BOOK_SEED, chapters=None) -> dict:
    """``{relative path: text}`` of everything ``build`` writes; raises before anything is written."""
    notebooks = find_chapters(source, chapters)
    files = {}
    for path in notebooks:
        notebook = read_notebook(path)
        for edition, folder in (("student", "student"), ("answers", "answers")):
            files[f"{folder}/{path.name}"] = write_json(make_edition(notebook, path, seed, edition))
    files["exercises.json"] = json.dumps(manifest(notebooks, seed), indent=1, ensure_ascii=False) + "\n"
    return files


def check_writable(path, option="--out", folder=True):
    """Raise ``ExerciseError`` unless files can be written at ``path`` (nothing is created).

    ``folder``: ``path`` is a folder to write into (else a file to write). Every existing part of
    the path must be a folder, and the nearest existing one writable.
    """
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise ExerciseError(f"{option} {path} is a file, not a folder")
    if not folder and path.is_dir():
        raise ExerciseError(f"{option} {path} is a folder; name a file")
    parent = path if folder else path.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ExerciseError(f"{option} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ExerciseError(f"{option} {path}: cannot write in {parent}")


def write_files(out, files, force=False):
    """Write ``files`` under ``out``; refuse to replace existing files unless ``force``.

    Everything is checked before the first file is written: ``out`` and the folders inside it
    must be folders (or not exist yet) and writable.
    """
    out = Path(out)
    check_writable(out)
    for name in files:
        for part in list(reversed((out / name).relative_to(out).parents))[1:]:
            if os.path.lexists(out / part) and not (out / part).is_dir():
                raise ExerciseError(f"--out {out}: {out / part} is not a folder")
        if (out / name).is_dir():
            raise ExerciseError(f"--out {out}: {out / name} is a folder, not a file")
    existing = [name for name in files if (out / name).exists()]
    if existing and not force:
        raise ExerciseError(f"{out} already holds {', '.join(existing[:3])}"
                            f"{' ...' if len(existing) > 3 else ''}; choose a new --out or pass --force")
    for name, text in files.items():
        try:
            atomic_write(out / name, text)
        except OSError as error:
            raise ExerciseError(f"--out {out}: {error}") from None


def build(source, out, seed=BOOK_SEED, chapters=None, force=False) -> list:
    """Write ``out/student/*.ipynb``, ``out/answers/*.ipynb`` and ``out/exercises.json``."""
    files = plan_build(source, seed, chapters)
    write_files(out, files, force)
    return sorted(files)
