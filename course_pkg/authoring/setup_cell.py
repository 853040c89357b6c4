"""The set-up cell every chapter notebook starts with: its text, stamping it, checking it.

Every chapter notebook opens with the same cell. On a fresh Colab runtime it
installs ``course_pkg`` from the repository named once, in ``_config.yml``
(``repository.url`` and ``repository.branch``); where ``course_pkg`` is
importable already (a local checkout, CI) it installs nothing. It chooses the
framework to run (a Colab form field, else ``$COURSE_FRAMEWORK``, else both; see
:mod:`course_pkg.notebook`), and quiets TensorFlow's C++ log lines (they carry
timestamps and process ids, and would land in the stored outputs that nbval compares).

    python -m course_pkg.authoring check   # every notebook's first cell is the current one
    python -m course_pkg.authoring stamp   # rewrite it from _config.yml

Each function takes the repository's top folder as ``root`` (default: see
:func:`~course_pkg.authoring.notebook_files.find_root`). Imports no framework.
"""

from __future__ import annotations

from pathlib import Path

from .notebook_files import cell_tags, find_root, load_notebook, save_notebook

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


def config_path(root=None) -> Path:
    """The book's ``_config.yml`` in the checkout ``root``."""
    return find_root(root) / "_config.yml"


def read_repository(root=None) -> tuple:
    """``(url, branch)`` of the ``repository`` section of the book's ``_config.yml``."""
    import yaml  # Jupyter Book's dependency; only needed here

    path = config_path(root)
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    repository = config.get("repository") or {}
    url, branch = repository.get("url"), repository.get("branch", "main")
    if not url:
        raise ValueError(f"{path}: no repository.url to install course_pkg from")
    return url.rstrip("/"), branch


def setup_source(root=None) -> str:
    """The source of the set-up cell, for the repository in ``root``'s ``_config.yml``."""
    url, branch = read_repository(root)
    return SETUP_TEMPLATE.format(url=url, branch=branch)


def setup_cell(root=None) -> dict:
    """The set-up cell as a notebook (nbformat 4) code cell, tagged, its input folded in the HTML."""
    source = setup_source(root)
    return {"cell_type": "code", "execution_count": None, "id": SETUP_TAG,
            "metadata": {"tags": [SETUP_TAG, "hide-input"]},
            "outputs": [], "source": source.splitlines(keepends=True)}


def _first_code_cell(notebook: dict):
    return next((c for c in notebook.get("cells", []) if c.get("cell_type") == "code"), None)


def check(paths, root=None) -> list:
    """Paths whose first code cell is not the current set-up cell."""
    want = setup_source(root)
    stale = []
    for path in paths:
        cell = _first_code_cell(load_notebook(path))
        if cell is None or "".join(cell["source"]) != want:
            stale.append(str(path))
    return stale


def stamp(paths, root=None) -> list:
    """Make the set-up cell the first code cell of every notebook; return the paths changed.

    An existing set-up cell (tagged ``course-setup``) is replaced in place and
    keeps its stored outputs; otherwise a new one is inserted before the first
    code cell.
    """
    fresh = setup_cell(root)
    changed = []
    for path in paths:
        path = Path(path)
        notebook = load_notebook(path)
        cells = notebook.setdefault("cells", [])
        old = next((c for c in cells if SETUP_TAG in cell_tags(c)), None)
        if old is not None:
            if "".join(old["source"]) == "".join(fresh["source"]) and old.get("id") == SETUP_TAG:
                continue
            old["source"], old["id"] = fresh["source"], SETUP_TAG
        else:
            index = next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), len(cells))
            cells.insert(index, dict(fresh))
        save_notebook(path, notebook)
        changed.append(str(path))
    return changed
