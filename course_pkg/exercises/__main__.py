"""``python -m course_pkg.exercises`` (also ``course-exercises``): build, grade, student site.

    build --out DIR [--seed N] [--chapters 3 4] [--source book] [--force]
        DIR/student/NN_name.ipynb   solutions replaced by stubs, outputs cleared, nbgrader metadata
        DIR/answers/NN_name.ipynb   the answer keys (same parameters)
        DIR/exercises.json          exercises, points and parameters of this edition
    check NOTEBOOK [NOTEBOOK ...] [--timeout S] [--json FILE]
        run each notebook's exercises and print a table per notebook and a total;
        exit 1 when any exercise fails, 2 when a notebook cannot be graded (it is named, the
        others are graded and --json lists them); an unwritable --json is refused first
    site --out DIR [--seed N] [--root .] [--force]
        the book without solution text (pages, _sources, downloads), built with Jupyter Book
    mark CHAPTER CELL_ID (--skip | --replace FILE | --clear)
        leave a chapter's cell out of the assignments, or give it FILE's source there
        (book/AUTHORING.md, "Assignment editions"); the book's cell itself is unchanged
    time NOTEBOOK [NOTEBOOK ...] [--timeout S]
        run each notebook with a per-cell limit (default 30 s, nbgrader's) and print the
        slowest cells (wall and CPU seconds); exit 1 on a timeout or an unexpected error
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..common.files import atomic_write
from .catalog import BOOK_SEED
from .notebooks import CELL_TIME_LIMIT, ExerciseError


def _seed(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"the seed must be >= 0, got {value}")
    return value


def _timeout(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the timeout must be a whole number of seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the timeout must be > 0 seconds, got {value}")
    return value


def _default_source():
    """``./book`` if there is one, else the book beside an editable install of course_pkg."""
    here = Path("book")
    if here.is_dir():
        return here
    return Path(__file__).resolve().parents[2] / "book"


def parser():
    main = argparse.ArgumentParser(prog="python -m course_pkg.exercises",
                                   description="Exercises that instructors regenerate and grade.")
    commands = main.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="student notebooks and answer keys for one seed")
    build.add_argument("--out", required=True, type=Path, help="folder to write into")
    build.add_argument("--seed", type=_seed, default=BOOK_SEED,
                       help=f"draws the exercises' parameters (default {BOOK_SEED}: the book's)")
    build.add_argument("--chapters", nargs="+", help="numbers or names (3, 03, 03_masks); default all")
    build.add_argument("--source", type=Path, default=None, help="the chapter notebooks' folder (./book)")
    build.add_argument("--force", action="store_true", help="replace files already in --out")

    check = commands.add_parser("check", help="grade student notebooks")
    check.add_argument("notebooks", nargs="+", type=Path)
    check.add_argument("--timeout", type=_timeout, default=120,
                       help="seconds any one cell may run (default 120); a cell over it has its "
                            "kernel killed and its exercise scores 0")
    check.add_argument("--json", type=Path, help="also write the grades to this JSON file")

    site = commands.add_parser("site", help="the student edition of the book (HTML)")
    site.add_argument("--out", required=True, type=Path)
    site.add_argument("--seed", type=_seed, default=BOOK_SEED)
    site.add_argument("--root", type=Path, default=Path("."), help="folder with _config.yml (.)")
    site.add_argument("--force", action="store_true", help="replace a non-empty --out")

    mark = commands.add_parser("mark", help="leave a chapter's cell out of the assignments or replace it")
    mark.add_argument("notebook", type=Path, help="the chapter notebook (book/NN_name.ipynb)")
    mark.add_argument("cell_id", help="the cell's id (its 'id' field)")
    action = mark.add_mutually_exclusive_group(required=True)
    action.add_argument("--skip", action="store_true", help="leave the cell out (tag assignment-skip)")
    action.add_argument("--replace", type=Path, metavar="FILE",
                        help="the assignments run FILE's source instead (tag assignment-replace)")
    action.add_argument("--clear", action="store_true", help="remove the cell's mark")

    timing = commands.add_parser("time", help="run notebooks with nbgrader's per-cell limit, timing cells")
    timing.add_argument("notebooks", nargs="+", type=Path)
    timing.add_argument("--timeout", type=_timeout, default=CELL_TIME_LIMIT,
                        help=f"seconds any one cell may run (default {CELL_TIME_LIMIT}, nbgrader's)")
    return main


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "build":
            from .notebooks import build

            written = build(args.source or _default_source(), args.out, args.seed, args.chapters, args.force)
            print(f"wrote {len(written)} files to {args.out} (seed {args.seed}):")
            for name in written:
                print(f"  {name}")
            return 0
        if args.command == "site":
            from .site import build_site

            out = build_site(args.root, args.out, args.seed, args.force)
            print(f"student edition (seed {args.seed}): {out / 'index.html'}")
            return 0
        if args.command == "mark":
            from .notebooks import mark_cell

            source = None
            if args.replace is not None:
                try:
                    source = args.replace.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as error:
                    raise ExerciseError(f"--replace {args.replace}: {error}") from None
            action = "skip" if args.skip else "replace" if args.replace is not None else "clear"
            mark_cell(args.notebook, args.cell_id, action, source)
            print(f"{args.notebook}: cell {args.cell_id}: {action}")
            return 0
        if args.command == "time":
            return _time(args)
        return _check(args)
    except ExerciseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _time(args) -> int:
    from .cell_times import expected_error, report, run_timed

    failed = False
    for path in args.notebooks:
        runs = run_timed(path, timeout=args.timeout)
        print(report(path, runs))
        failed |= any(run.error and not expected_error(run) for run in runs)
    return 1 if failed else 0


def _check(args) -> int:
    from .grading import grade
    from .notebooks import check_writable

    if args.json:
        check_writable(args.json, "--json", folder=False)
    reports, unreadable = [], 0
    for path in args.notebooks:
        try:
            report = grade(path, timeout=args.timeout)
        except ExerciseError as error:
            print(f"error: {error}", file=sys.stderr)
            unreadable += 1
            continue
        reports.append(report)
        print(report.table())
        print()
    if len(reports) > 1:
        print(f"All notebooks: {sum(r.score for r in reports)}/{sum(r.total for r in reports)} points")
    if args.json:
        try:
            atomic_write(args.json, json.dumps([r.as_dict() for r in reports], indent=1) + "\n")
        except OSError as error:
            raise ExerciseError(f"--json: {error}") from None
    if unreadable:
        return 2
    return 0 if all(r.passed for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
