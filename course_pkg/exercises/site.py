"""The student edition of the book: the chapters without solution text, built with Jupyter Book.

``python -m course_pkg.exercises site --out DIR [--root .]`` calls :func:`build_site`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..common.files import atomic_write
from .catalog import BOOK_SEED
from .notebooks import ExerciseError, find_chapters, make_edition, read_notebook, write_json


def _student_config(text) -> str:
    import yaml

    config = yaml.safe_load(text)
    config["title"] = f"{config.get('title', 'The course')} (student edition)"
    config.pop("launch_buttons", None)  # Colab would open the instructors' notebooks
    html = config.setdefault("html", {})
    html["use_repository_button"] = False
    html["use_edit_page_button"] = False
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def stage_site(root, stage, seed=BOOK_SEED):
    """Copy the book under ``stage`` with every chapter turned into its ``site`` edition."""
    root, stage = Path(root), Path(stage)
    for name in ("_config.yml", "_toc.yml", "course_pkg"):
        if not (root / name).exists():
            raise ExerciseError(f"{root} has no {name}: pass --root with the repository's top folder")
    notebooks = find_chapters(root / "book")
    editions = {path.name: write_json(make_edition(read_notebook(path), path, seed, "site"))
                for path in notebooks}  # all checked before anything is copied
    shutil.copytree(root / "book", stage / "book",
                    ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "*.ipynb"))
    for path in (root / "book").glob("*.ipynb"):
        text = editions.get(path.name)
        if text is None:
            text = path.read_text(encoding="utf-8")
        atomic_write(stage / "book" / path.name, text)
    # the chapters show the package's real source (literalinclude ../course_pkg/...)
    shutil.copytree(root / "course_pkg", stage / "course_pkg",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    atomic_write(stage / "_toc.yml", (root / "_toc.yml").read_text(encoding="utf-8"))
    atomic_write(stage / "_config.yml", _student_config((root / "_config.yml").read_text(encoding="utf-8")))


def build_site(root, out, seed=BOOK_SEED, force=False, quiet=False):
    """Build the student edition of the book (no solution text anywhere) into ``out``."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise ExerciseError(f"{out} is not empty; choose a new --out or pass --force")
    with tempfile.TemporaryDirectory(prefix="course-student-site-") as stage:
        stage_site(root, stage, seed)
        command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
                   "build", stage, "-W", "-n", "--keep-going", "--all"]
        result = subprocess.run(command, capture_output=quiet, text=True)
        if result.returncode != 0:
            detail = (result.stdout or "")[-3000:] + (result.stderr or "")[-3000:] if quiet else ""
            raise ExerciseError(f"jupyter-book failed on the student edition (exit {result.returncode})"
                                f"{': ' + detail if detail else ''}")
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(Path(stage) / "_build" / "html", out)
    return out
