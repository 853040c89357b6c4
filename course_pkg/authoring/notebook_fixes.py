"""Changes to particular cells of the chapters that running one framework at a time needs,
made once by ``python -m course_pkg.authoring frameworks`` before it tags and marks the cells.

Each is a tuple:

* ``("hoist", notebook, cell, first, stop, new_id, extra)`` moves the cell's lines from the one
  starting with ``first`` up to the one starting with ``stop`` into a new framework-neutral cell
  ``new_id`` just before it (plus the lines ``extra``; an assignment edition moves with them);
* ``("replace", notebook, cell, old, new)`` replaces the text ``old`` of the cell (and of its
  assignment edition) with ``new``;
* ``("tag", notebook, cell, tag)`` adds a tag.

``notebook`` is the notebook file's stem (``06_training``), ``cell`` a cell id. A change whose
cell has changed since is reported as a warning, not made.

Imports no framework.
"""

from __future__ import annotations

from ..notebook import marker
from .notebook_files import source_text

#: The changes (see the module docstring), made in this order.
NOTEBOOK_FIXES = [
    # Chapter 2: the GRU baseline is PyTorch's, but both frameworks' cells call its train().
    ("hoist", "02_attention", "02-025", "def train(", "torch.manual_seed(0)", "02-025-train", ()),
    # Chapter 4: the TensorFlow layer is checked against torch.nn's, and the PyTorch attention
    # against Keras': comparisons, each in its tab.
    ("tag", "04_encoder", "04-073", "both-frameworks"),
    ("tag", "04_encoder", "04-077", "both-frameworks"),
    # Chapter 8: the configurations are shared; only the parameter count printed is PyTorch's.
    ("hoist", "08_families", "c08-19", "BERT_CONFIG = dict(", 'print(f"parameters of the tiny BERT',
     "c08-19-config", ()),
    ("hoist", "08_families", "c08-39", "GPT_CONFIG = dict(", 'print(f"parameters: GPT',
     "c08-39-config", ("scores = {}  # held-out exact match of each model, filled in below",)),
    # Chapter 6: each framework's error analysis finds its own wrong translations (the table
    # before it, which compares the two, runs only with both).
    ("replace", "06_training", "c06-58", 'for i in wrong["TensorFlow"]:',
     "tf_wrong = [i for i, (g, r) in enumerate(zip(tf_greedy, test_references)) if g != r]\n"
     "for i in tf_wrong:"),
    ("replace", "06_training", "c06-59", 'for i in wrong["PyTorch"]:',
     "pt_wrong = [i for i, (g, r) in enumerate(zip(pt_greedy, test_references)) if g != r]\n"
     "for i in pt_wrong:"),
    ("replace", "08_families", "c08-42",
     'scores = {"TensorFlow GPT": exact_match(tf_gpt_answers, test_references)}',
     'scores["TensorFlow GPT"] = exact_match(tf_gpt_answers, test_references)'),
    # Chapter 8: the TensorFlow GPT samples with the PyTorch GPT's weights, and PyTorch with its settings.
    ("tag", "08_families", "c08-50", "both-frameworks"),
    ("tag", "08_families", "c08-51", "both-frameworks"),
    # Chapter 8: the TensorFlow tab converts Hugging Face's checkpoints, which need PyTorch.
    ("tag", "08_families", "c08-68", "both-frameworks"),
]


def strip_marker(text: str) -> str:
    """``text`` without its first line when that line is a framework marker (``# PyTorch``)."""
    first, newline, rest = text.partition("\n")
    return rest if marker(first) is not None else text


def apply_fixes(notebook: dict, stem: str, where: str, fixes=None) -> list:
    """Make the changes of ``fixes`` (default :data:`NOTEBOOK_FIXES`) for the notebook ``stem``
    (its file's name without ``.ipynb``); return what changed, and a warning for each change
    that could not be made."""
    changes = []
    cells = notebook.get("cells", [])
    for fix in NOTEBOOK_FIXES if fixes is None else fixes:
        kind, name, cell_id = fix[:3]
        if name != stem:
            continue
        ids = {c.get("id"): i for i, c in enumerate(cells)}
        if cell_id not in ids:
            changes.append(f"{where}: warning: no cell {cell_id} for the fix {fix[:4]}")
            continue
        if kind == "tag":
            changes += _add_tag(cells[ids[cell_id]], fix, where)
        elif kind == "replace":
            changes += _replace(cells[ids[cell_id]], fix, where)
        elif kind == "hoist":
            changes += _hoist(cells, ids, fix, where)
    return changes


def _add_tag(cell, fix, where) -> list:
    tags = cell.setdefault("metadata", {}).setdefault("tags", [])
    if fix[3] in tags:
        return []
    tags.append(fix[3])
    return [f"{where}: tagged cell {fix[2]} {fix[3]} (NOTEBOOK_FIXES)"]


def _replace(cell, fix, where) -> list:
    cell_id, old, new = fix[2], fix[3], fix[4]
    changes = []
    source = source_text(cell)
    if old in source:
        cell["source"] = source.replace(old, new).splitlines(keepends=True)
        changes.append(f"{where}: changed cell {cell_id}: {new}")
    elif new not in source:
        changes.append(f"{where}: warning: cell {cell_id} has changed, fix {fix[3]!r} not made")
    assignment = cell.get("metadata", {}).get("assignment")
    if isinstance(assignment, dict) and old in source_text({"source": assignment.get("source", "")}):
        assignment["source"] = source_text({"source": assignment["source"]}).replace(old, new)
        changes.append(f"{where}: changed the assignment edition of cell {cell_id}: {new}")
    return changes


def _hoist(cells, ids, fix, where) -> list:
    cell_id = fix[2]
    first, stop, new_id, extra = fix[3:]
    if new_id in ids:
        return []
    cell = cells[ids[cell_id]]
    lines = strip_marker(source_text(cell)).split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.startswith(first)), None)
    end = next((i for i, ln in enumerate(lines) if start is not None and i > start
                and ln.startswith(stop)), None)
    if start is None or end is None:
        return [f"{where}: warning: cell {cell_id} has changed, fix {fix[:4]} not made"]
    moved = "\n".join(lines[start:end]).rstrip("\n").split("\n") + list(extra)
    kept = lines[:start] + lines[end:]
    new_cell = {"cell_type": "code", "execution_count": None, "id": new_id, "metadata": {},
                "outputs": [], "source": "\n".join(moved).splitlines(keepends=True)}
    cell["source"] = "\n".join(kept).splitlines(keepends=True)
    meta = cell.get("metadata", {})
    assignment = meta.get("assignment")
    if "assignment-replace" in meta.get("tags", []) and isinstance(assignment, dict):
        text = strip_marker(source_text({"source": assignment.get("source", "")}))
        alt = text.split("\n")
        cut = next((i for i, ln in enumerate(alt) if ln.startswith(stop)), len(alt))
        new_cell["metadata"] = {"tags": ["assignment-replace"],
                                "assignment": {"source": "\n".join(alt[:cut] + list(extra))}}
        meta["tags"].remove("assignment-replace")
        del meta["assignment"]
    cells.insert(ids[cell_id], new_cell)
    return [f"{where}: moved lines {first!r}... of cell {cell_id} into a new neutral cell "
            f"{new_id} before it (NOTEBOOK_FIXES)"]
