"""Tools for the book's notebooks: the set-up cell every chapter starts with, and its framework cells.

    python -m course_pkg.authoring check   # every notebook's first cell is the current set-up cell
    python -m course_pkg.authoring stamp   # rewrite it from _config.yml
    python -m course_pkg.authoring frameworks          # split import cells, tag and mark framework cells
    python -m course_pkg.authoring frameworks --check  # change nothing; fail if a notebook needs it

Without notebooks named, every notebook under ``book/`` of the checkout (``--root``, by
default the one holding the current directory, else the one ``course_pkg`` lives in).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .frameworks import FrameworkMarkError, frameworks
from .notebook_files import chapter_notebooks
from .setup_cell import check, stamp


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m course_pkg.authoring",
                                   description=__doc__.split("\n")[0])
    main.add_argument("command", choices=["check", "stamp", "frameworks"])
    main.add_argument("--check", action="store_true",
                      help="frameworks: change nothing, fail if a notebook needs marking")
    main.add_argument("--root", type=Path, default=None,
                      help="the repository's top folder (default: the checkout holding the current "
                           "directory, else the one course_pkg lives in)")
    main.add_argument("notebooks", nargs="*", help="default: every notebook under book/")
    return main


def main(argv=None) -> int:
    args = parser().parse_intermixed_args(argv)
    paths = args.notebooks or chapter_notebooks(args.root)
    if args.command == "frameworks":
        try:
            changes = frameworks(paths, write=not args.check)
        except FrameworkMarkError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        for change in changes:
            print(change)
        if args.check and changes:
            print("(run: python -m course_pkg.authoring frameworks)")
            return 1
        return 0
    if args.command == "check":
        stale = check(paths, args.root)
        for path in stale:
            print(f"{path}: first code cell is not the set-up cell of _config.yml "
                  "(run: python -m course_pkg.authoring stamp)")
        return 1 if stale else 0
    for path in stamp(paths, args.root):
        print(f"stamped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
