"""A learner's wait on a CPU: every chapter run top to bottom, one framework at a time, against a budget.

    python benchmarks/chapter_wait.py                      # every chapter, PyTorch then TensorFlow
    python benchmarks/chapter_wait.py --chapters 3 --frameworks pytorch --json wait.json

Each chapter notebook runs once per framework mode (all chapters in PyTorch mode, then all in
TensorFlow mode; ``--frameworks`` to choose), one at a time, as a learner would run it: the GPUs
hidden (``CUDA_VISIBLE_DEVICES=""``), each framework with its default number of threads (the
variables that set them, such as ``OMP_NUM_THREADS``, are removed from the kernels' environment and
named in the JSON), through ``chapter_runs.run_chapter`` (a copy in a fresh kernel; ``book/`` is
never written). No training step is timed and no recipe trained: that is ``gpu_check.py``'s.

Per chapter and framework the table gives the wait from the set-up cell to the last cell: wall seconds
(from nbclient's per-cell timestamps) and the kernel's CPU seconds (all its threads, its start-up left
out), the slowest cell (id and wall seconds), errors and claim lines, and a verdict against the
budget (``--budget``, default 180 s of wall time per chapter and framework): ``within 180 s`` or
``OVER 180 s``; then the total per framework. Wall time is what a learner waits and depends on the
machine's load: the header gives the load average before and after, so measure on a quiet machine.
``--json FILE`` keeps the results (rewritten after each chapter). Exits 1 when a chapter run is over
the budget, had an error, or a claim printed False.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # chapter_runs, gpu_check
from chapter_runs import (  # noqa: E402
    FRAMEWORK_NAMES,
    choose_frameworks,
    claims_text,
    find_chapters,
    problems_text,
    progress_line,
    run_chapter,
    seconds,
    slowest_text,
    version,
)
from gpu_check import save  # noqa: E402

BUDGET_S = 180
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                    "TF_NUM_INTEROP_THREADS")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", nargs="+", choices=["pytorch", "tensorflow"],
                        default=["pytorch", "tensorflow"], help="modes, in order (default: both)")
    parser.add_argument("--chapters", nargs="+", type=int, default=None,
                        help="chapter numbers (default: all)")
    parser.add_argument("--budget", type=float, default=BUDGET_S,
                        help=f"wall seconds allowed per chapter and framework (default {BUDGET_S})")
    parser.add_argument("--cell-timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the results to this file (rewritten after each chapter)")
    return parser.parse_args(argv)


def cpu_name():
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average():
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def verdict(run, budget):
    """``within 180 s`` or ``OVER 180 s`` (the set-up cell to the last cell), then any failure."""
    wall = run["cells_wall_s"]
    text = "not measured" if wall is None else f"{'within' if wall <= budget else 'OVER'} {budget:g} s"
    return text if run["ok"] else f"{text}; FAILED: {problems_text(run)}"


def table(results):
    """The markdown report: a line naming the CPU, date, versions and load, then one table."""
    v, budget = results["versions"], results["budget_s"]
    lines = [f"**Learner's wait** · CPU: {results['cpu']} ({results['cpus']} cores) · "
             f"date: {results['date']} · "
             f"torch {v['torch'] or 'not installed'} · TensorFlow {v['tensorflow'] or 'not installed'} · "
             f"Python {v['python']} · load average {results['load_before']} before, "
             f"{results['load_after']} after · budget {budget:g} s per chapter and framework", "",
             "| chapter | framework | wall s | CPU s | slowest cell | errors | claims | budget |",
             "|---|---|---:|---:|---|---:|---|---|"]
    for framework in results["frameworks"]:
        runs = [c for c in results["chapters"] if c["framework"] == framework]
        name = FRAMEWORK_NAMES[framework]
        for c in runs:
            lines.append(f"| {c['chapter']} | {name} | {seconds(c['cells_wall_s'])} | "
                         f"{seconds(c['cpu_s'])} | {slowest_text(c)} | {len(c['errors'])} | "
                         f"{claims_text(c)} | {c['budget']} |")
        if runs:
            wall = sum(c["cells_wall_s"] or 0 for c in runs)
            cpu = sum(c["cpu_s"] or 0 for c in runs)
            lines.append(f"| total, {len(runs)} chapters | {name} | {wall:.1f} | {cpu:.1f} | | "
                         f"{sum(len(c['errors']) for c in runs)} | | |")
    over = sum(c["budget"].startswith("OVER") for c in results["chapters"])
    failed = sum(not c["ok"] for c in results["chapters"])
    lines += ["", f"Result: {'ok' if results['ok'] else 'FAILED'} ({over} chapter run(s) over {budget:g} s, "
              f"{failed} with errors or failed claims; {results['total_s']:.0f} s in all)"]
    return "\n".join(lines)


def finish(results, started):
    """Fill in the totals of ``results`` (after each chapter: a run stopped part-way keeps what it has)."""
    results["ok"] = all(c["ok"] and c["budget"].startswith("within") for c in results["chapters"])
    results["total_s"] = round(time.perf_counter() - started, 1)
    results["load_after"] = load_average()
    return results


def main(argv=None):
    args = parse_args(argv)
    os.environ["CUDA_VISIBLE_DEVICES"] = ""  # a learner's CPU: the kernels see no GPU
    removed = {name: os.environ.pop(name) for name in THREAD_VARIABLES if name in os.environ}
    frameworks = choose_frameworks(args.frameworks)  # TensorFlow asked for on a CPU runs
    chapters = find_chapters(args.chapters)
    started = time.perf_counter()
    results = {
        "device": "CPU", "cpu": cpu_name(), "cpus": os.cpu_count(), "host": platform.node(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "versions": {"python": platform.python_version(), "torch": version("torch"),
                     "tensorflow": version("tensorflow")},
        "threads": "each framework's default", "thread_variables_removed": removed,
        "budget_s": args.budget, "load_before": load_average(), "frameworks": frameworks, "chapters": [],
        "complete": False,
    }
    for framework in frameworks:
        for path in chapters:
            print(f"running {path.name} in {FRAMEWORK_NAMES[framework]} mode ...", flush=True)
            run = run_chapter(path, framework, args.cell_timeout)
            run["budget"] = verdict(run, args.budget)
            results["chapters"].append(run)
            print(f"{progress_line(run)}: {run['budget']}", flush=True)
            save(finish(results, started), args.json)
    results["complete"] = True
    save(finish(results, started), args.json)
    print()
    print(table(results))
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
