"""The checkout's notebook files: the repository's top folder, its chapter notebooks, and a
notebook's JSON, read and written as Jupyter does, with its cells' source and tags.

Every tool of :mod:`course_pkg.authoring` takes the repository's top folder as ``root``;
left ``None``, :func:`find_root` finds it (the folder holding the current directory, else
the checkout this package lives in). No path is fixed when the module is imported.

Imports no framework.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..common.files import atomic_write


def is_root(folder) -> bool:
    """Whether ``folder`` is the top folder of a checkout of the course (``_config.yml``, ``book/``)."""
    folder = Path(folder)
    return (folder / "_config.yml").is_file() and (folder / "book").is_dir()


def find_root(root=None) -> Path:
    """The repository's top folder: ``root`` if given; else the current directory or the first
    folder above it that holds ``_config.yml`` and ``book/``; else the checkout this package
    lives in (an editable install). Raises ``FileNotFoundError`` when there is none."""
    if root is not None:
        return Path(root)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if is_root(folder):
            return folder
    package_checkout = Path(__file__).resolve().parents[2]
    if is_root(package_checkout):
        return package_checkout
    raise FileNotFoundError(
        f"no checkout of the course here ({here}) nor around course_pkg ({package_checkout}): "
        "run from the repository, or pass its top folder (--root)")


def chapter_notebooks(root=None) -> list:
    """The chapter notebooks under ``root/book`` (not build output nor checkpoints)."""
    book = find_root(root) / "book"
    return sorted(p for p in book.rglob("*.ipynb")
                  if "_build" not in p.parts and ".ipynb_checkpoints" not in p.parts)


def load_notebook(path) -> dict:
    """A notebook file as JSON."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def save_notebook(path, notebook) -> None:
    """Save ``notebook`` in one rename, in the layout Jupyter writes (indent 1, UTF-8)."""
    atomic_write(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def cell_tags(cell) -> list:
    """A notebook cell's tags (``[]`` without any)."""
    return cell.get("metadata", {}).get("tags", [])


def source_text(cell) -> str:
    """A notebook cell's source as one string (Jupyter stores a string or a list of lines)."""
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)
