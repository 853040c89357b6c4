"""Mutation testing of the core modules with mutmut: which deliberate slips do the tests catch?

mutmut changes one thing at a time in a copy of the code (an operator, a constant, an argument
dropped, a comparison turned round) and runs the tests that cover the changed function. A mutant
the tests fail on is *killed*; one they pass on *survived*: a slip no test would notice.

    python benchmarks/mutation_testing.py                 # the core modules (below), ~1-2 h on 2 CPUs
    python benchmarks/mutation_testing.py --modules course_pkg/reference/masks.py --tests tests/test_masks.py
    python benchmarks/mutation_testing.py --report        # the table of the last run, without running

It works in a copy (``--workdir``, default ``/tmp/course-mutation``) of the committed tree
(``git archive HEAD``), installs nothing (mutmut must be importable: ``pip install mutmut``), and
runs PyTorch's tests only (``-k "not tensorflow"``): the TensorFlow twins are not mutated (forking
a process that has TensorFlow loaded is not safe) and each NumPy reference is covered by its
PyTorch comparisons. Results stay in the workdir, so a second run resumes. Not part of CI: a
benchmark-style figure, recorded in the README with the date.
"""

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULES = [f"course_pkg/{twin}/{concept}.py" for twin in ("reference", "torch")
           for concept in ("attention", "masks", "positional", "losses", "schedule", "decoding")]
MODULES += ["course_pkg/common/decoding.py", "course_pkg/subword/bpe.py", "course_pkg/subword/wordpiece.py",
            "course_pkg/exercises/grading.py", "course_pkg/exercises/probe.py",
            "course_pkg/exercises/comparison.py"]
TESTS = ["tests/test_masks.py", "tests/test_attention.py", "tests/test_parity.py", "tests/test_losses.py",
         "tests/test_schedule.py", "tests/test_decoding.py", "tests/test_search.py",
         "tests/test_bad_input_decoding.py", "tests/test_exercise_answers.py",
         "tests/test_subword_parity.py", "tests/test_bad_input_subword.py", "tests/test_subword_bad_args.py",
         "tests/test_exercises.py", "tests/test_grader_hardening.py",
         "tests/test_grader_tolerances.py"]
KILLED = {"killed", "timeout", "segfault"}


def prepare(workdir, modules, tests):
    """A fresh copy of the committed tree in ``workdir`` with mutmut's settings in setup.cfg."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive, check=True)
    settings = ["[mutmut]", "source_paths=course_pkg", "only_mutate=" + "\n    ".join(modules),
                "pytest_add_cli_args_test_selection=" + "\n    ".join(tests),
                "pytest_add_cli_args=-p\n    no:cacheprovider\n    -q\n    -k\n    not tensorflow",
                "process_isolation=forkserver", ""]
    with open(workdir / "setup.cfg", "a", encoding="utf-8") as out:
        out.write("\n".join(settings))


def results(workdir):
    """``{mutant name: status}`` from ``mutmut results --all true``."""
    shown = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=workdir,
                           capture_output=True, text=True, check=True).stdout
    pairs = (line.strip().rsplit(": ", 1) for line in shown.splitlines() if ": " in line)
    return {name: status for name, status in pairs}


def table(statuses):
    """One row per module: mutants, killed, survived, not covered, and the score (killed over covered)."""
    by_module = {}
    for name, status in statuses.items():
        module = name.split(".x_")[0].split(".xǁ")[0]
        by_module.setdefault(module, Counter())[status] += 1
    rows = []
    for module, counts in sorted(by_module.items()):
        killed = sum(counts[s] for s in KILLED)
        covered = killed + counts["survived"]
        rows.append({"module": module, "mutants": sum(counts.values()), "killed": killed,
                     "survived": counts["survived"], "no tests": counts["no tests"],
                     "score": round(killed / covered, 3) if covered else None})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", nargs="+", default=MODULES)
    parser.add_argument("--tests", nargs="+", default=TESTS)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/course-mutation"))
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="print the last run's table only")
    parser.add_argument("--json", type=Path, help="write the table and the survivors' names here")
    args = parser.parse_args()
    if not args.report:
        prepare(args.workdir, args.modules, args.tests)
        with open(args.workdir / "mutmut-run.log", "w", encoding="utf-8") as log:  # its progress spinner
            command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)]
            run = subprocess.run(command, cwd=args.workdir, check=False, stdout=log, stderr=subprocess.STDOUT)
        if run.returncode:
            sys.exit(f"mutmut failed (exit {run.returncode}): see {args.workdir / 'mutmut-run.log'}")
    statuses = results(args.workdir)
    rows = table(statuses)
    print("| module | mutants | killed | survived | no tests | score |\n|---|---|---|---|---|---|")
    for row in rows:
        print("| {module} | {mutants} | {killed} | {survived} | {no tests} | {score} |".format(**row))
    survivors = sorted(name for name, status in statuses.items() if status == "survived")
    print(f"\n{len(survivors)} survived; `cd {args.workdir} && mutmut show NAME` shows one")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "survived": survivors}, indent=1) + "\n")


if __name__ == "__main__":
    main()
