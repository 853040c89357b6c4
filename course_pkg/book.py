"""Tools for the book's notebooks: the set-up cell every chapter starts with.

Every chapter notebook opens with the same cell. On a fresh Colab runtime it
installs ``course_pkg`` from the repository named once, in ``_config.yml``
(``repository.url`` and ``repository.branch``); where ``course_pkg`` is
importable already (a local checkout, CI) it installs nothing. It also quiets
TensorFlow's C++ log lines (they carry timestamps and process ids, and would
land in the stored outputs that nbval compares).

    python -m course_pkg.book check   # every notebook's first cell is the current one
    python -m course_pkg.book stamp   # rewrite it from _config.yml

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
import importlib.util
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no TensorFlow C++ log lines
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # the same CPU numbers every run
if importlib.util.find_spec("course_pkg") is None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "course-pkg[data] @ git+{url}@{branch}"], check=True)
# TensorFlow's start-up lines about CUDA ignore TF_CPP_MIN_LOG_LEVEL: import it and
# list its devices once with the process's stderr closed, so that they stay out of the notebook.
_stderr, _null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 2)
try:
    import tensorflow

    tensorflow.config.list_physical_devices()
finally:
    os.dup2(_stderr, 2)
    os.close(_stderr), os.close(_null)'''


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_pkg.book", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["check", "stamp"])
    parser.add_argument("notebooks", nargs="*", help="default: every notebook under book/")
    args = parser.parse_args(argv)
    paths = args.notebooks or chapter_notebooks()
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
