"""GPU check: every chapter run top to bottom on the GPU, chapter 6's training step and recipe timed.

One command for anyone with a GPU:

    python benchmarks/gpu_check.py                      # every chapter: PyTorch, TensorFlow if it sees a GPU
    python benchmarks/gpu_check.py --chapters 3 6 --frameworks pytorch --json gpu_check.json
    python benchmarks/gpu_check.py --device cpu --quick --json out.json   # the tests' short CPU run

What it does, in order:

1. Runs each chapter notebook (``book/NN_*.ipynb``) top to bottom, once per framework mode, with a
   per-cell timeout (``--cell-timeout``): ``chapter_runs.run_chapter``, a copy executed with nbclient in
   a fresh kernel of this interpreter (``COURSE_FRAMEWORK=pytorch`` or ``tensorflow``; ``book/`` is
   never written). Per chapter and mode it records the wall time (the kernel's start-up included),
   the kernel's CPU seconds (``time.process_time()``, all its threads, from the set-up cell to the
   last cell: the start-up left out), the slowest cell (its id and wall seconds, from the timestamps
   nbclient records), the peak GPU memory ("n/a" on a CPU), the cells that raised (errors), and the
   claim lines: output lines ending in ": True" or ": False". A ": False" in a cell tagged ``claim``
   is a failed claim (listed; it fails the check); one in another cell is listed only.
2. Times chapter 6's training step (the chapter's Transformer and batch of 128 number pairs, one
   ``course_pkg.torch.Trainer.train_step``) against a model of the same size built on
   ``torch.nn.Transformer`` (``training_speed.torch_nn_transformer``), in fp32 and bf16
   (``Trainer(precision=...)``), the two alternating (``training_speed.time_pair``): median ms per
   step (wall time on a GPU, CPU time of the process on a CPU, where PyTorch gets one thread as in
   translation_accuracy.py: ``--torch-threads``) and the peak GPU memory.
3. Trains chapter 6's recipe in PyTorch (``translation_accuracy.train_transformer``, seed 0) on the
   device, decoding the 3 000 held-out numbers after every 25 steps (not timed), and reports when
   it first reached >= 99% exact match: the step and the seconds of training until then.

It prints one markdown table under a line naming the device (``torch.cuda.get_device_name`` or
"CPU"), the date and the torch / TensorFlow versions, writes the same results as JSON with
``--json FILE``, and exits 1 when a chapter had an error or a claim printed False (the timings and the
recipe are reported, not judged). ``--quick`` (meant with ``--device cpu``): chapter 3 in PyTorch mode,
one round of timed steps, and 100 steps of the recipe (its exact match reported, no 99% expected).

TensorFlow is imported only in the kernels that run TensorFlow mode, and only when it is installed
and asked for (``--frameworks tensorflow``, or by default where a probe process finds it sees a GPU):
the check runs where PyTorch has CUDA and TensorFlow is absent. ``--device cpu`` hides the GPUs
(``CUDA_VISIBLE_DEVICES=""``) from this process and the kernels.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # chapter_runs (and, in main, training_speed, translation_accuracy)
from chapter_runs import (  # noqa: E402
    BOOK,
    FRAMEWORK_NAMES,
    ROOT,
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

PRECISIONS = ("fp32", "bf16")
QUICK_CHAPTERS = (3,)
QUICK_RECIPE_STEPS = 100
TARGET_EXACT = 0.99
# --------------------------------------------------------------------------- set-up
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto: CUDA when PyTorch sees it (default); cpu hides the GPUs")
    parser.add_argument("--frameworks", nargs="+", choices=["pytorch", "tensorflow"], default=None,
                        help="modes to run the chapters in (default: pytorch, and tensorflow where it is "
                             "installed and sees a GPU)")
    parser.add_argument("--chapters", nargs="+", type=int, default=None,
                        help="chapter numbers (default: all; 3 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: chapter 3, one round of timed steps, 100 recipe steps")
    parser.add_argument("--cell-timeout", type=int, default=None,
                        help="seconds per cell (default 1800; 300 with --quick)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="timed rounds per model and precision (default 5 of 10 steps after 5 untimed; "
                             "with --quick 1 of 3 steps after 1)")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads of the timings and the recipe (default: 1 on a CPU, "
                             "as translation_accuracy.py; torch's own with CUDA)")
    parser.add_argument("--recipe-steps", type=int, default=None,
                        help="steps of chapter 6's recipe (default: the chapter's 200; 100 with --quick)")
    parser.add_argument("--skip-notebooks", action="store_true", help="only the timings and the recipe")
    parser.add_argument("--skip-timings", action="store_true", help="only the notebooks")
    parser.add_argument("--keep", type=Path, default=None, help="folder for the executed copies")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the results to this file (rewritten after each step, so that a run "
                             "stopped part-way keeps what it measured)")
    parser.add_argument("--report", type=Path, nargs="+", default=None, metavar="JSON",
                        help="print the table of earlier runs' JSON files (merged in order) and exit")
    args = parser.parse_args(argv)
    if args.keep is not None and BOOK.resolve() in [args.keep.resolve(), *args.keep.resolve().parents]:
        parser.error(f"--keep {args.keep}: the executed copies do not go under {BOOK}")
    args.cell_timeout = args.cell_timeout or (300 if args.quick else 1800)
    args.rounds = args.rounds or (1 if args.quick else 5)
    return args


# --------------------------------------------------------------------------- 2. chapter 6's step
def recipe_model_size(recipe, src_vocab, tgt_vocab, max_len):
    return dict(num_layers=recipe["num_layers"], d_model=recipe["d_model"], num_heads=recipe["num_heads"],
                dff=recipe["dff"], dropout=recipe["dropout"], input_vocab_size=len(src_vocab),
                target_vocab_size=len(tgt_vocab), max_len=max_len)


def chapter6_step_inputs():
    """Chapter 6's recipe, its batch of number pairs as the chapter times it, and its model size."""
    import translation_accuracy

    from course_pkg.data import encode_pairs

    recipe = translation_accuracy.RECIPE
    corpus, src_vocab, tgt_vocab = translation_accuracy.number_data()
    batch = encode_pairs(corpus.train[:recipe["batch"]], src_vocab, tgt_vocab)
    return recipe, batch, recipe_model_size(recipe, src_vocab, tgt_vocab, translation_accuracy.MAX_LEN)


def chapter6_models(size):
    """The course's Transformer and one of the same size on torch.nn.Transformer, seeded alike."""
    import torch
    import training_speed

    from course_pkg import torch as cp

    torch.manual_seed(0)
    return {"course": cp.Transformer(**size),
            "reference": training_speed.torch_nn_transformer(
                size["input_vocab_size"], size["target_vocab_size"], size["max_len"], size["d_model"],
                size["num_heads"], size["num_layers"], size["dff"], size["dropout"])}


def time_training_step(precisions, rounds, warmup, calls):
    """Median seconds per training step of the course's Transformer and of torch.nn.Transformer."""
    import torch
    import training_speed

    from course_pkg import torch as cp

    recipe, batch, size = chapter6_step_inputs()
    cuda = torch.cuda.is_available()
    clock = "wall" if cuda else "cpu"
    rows = []
    for precision in precisions:
        row = {"precision": precision, "clock": clock, "batch": recipe["batch"], "rounds": rounds,
               "steps_per_round": calls}
        if precision == "bf16" and cuda and not torch.cuda.is_bf16_supported():
            rows.append(dict(row, skipped="this GPU has no bfloat16"))
            continue
        models = chapter6_models(size)
        steps = {}
        for name, model in models.items():
            trainer = cp.Trainer(model, peak_learning_rate=recipe["peak_learning_rate"],
                                 warmup_steps=recipe["warmup"],
                                 label_smoothing=recipe["label_smoothing"], seed=0, precision=precision)
            steps[name] = lambda trainer=trainer: trainer.train_step(*batch)  # a float: waits for the GPU
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        course_s, reference_s = training_speed.time_pair(steps["course"], steps["reference"], clock, rounds,
                                                         warmup, calls)
        row.update(course_ms=round(1e3 * course_s, 3), reference_ms=round(1e3 * reference_s, 3),
                   ratio=round(course_s / reference_s, 3),
                   params=[sum(p.numel() for p in m.parameters()) for m in models.values()],
                   peak_gpu_bytes=torch.cuda.max_memory_allocated() if cuda else None)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- 3. chapter 6's recipe
def run_recipe(steps=None, seed=0):
    """Chapter 6's recipe in PyTorch on the device: exact match after every 25 steps, and when it first
    reached >= 99% (the step, and the seconds of training until then)."""
    import torch
    import translation_accuracy

    recipe = dict(translation_accuracy.RECIPE)
    steps = recipe["steps"] = steps or recipe["steps"]  # default: the chapter's
    corpus, src_vocab, tgt_vocab = translation_accuracy.number_data()
    every = recipe["log_every"]
    eval_at = set(range(every, steps, every))
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    r = translation_accuracy.train_transformer("torch", seed, recipe, corpus, src_vocab, tgt_vocab,
                                               torch.get_num_threads(), eval_at)
    curve = [{"step": s, "exact": e, "cpu_s": round(c, 2), "wall_s": round(w, 2)}
             for s, e, c, w in r["curve"]]
    curve.append({"step": r["steps"], "exact": r["exact"], "cpu_s": round(r["cpu_s"], 2),
                  "wall_s": round(r["wall_s"], 2)})
    reached = next((point for point in curve if point["exact"] >= TARGET_EXACT), None)
    return {"seed": seed, "steps": r["steps"], "exact": r["exact"], "wrong": r["wrong"],
            "loss": round(r["loss"], 4), "wall_s": round(r["wall_s"], 2), "cpu_s": round(r["cpu_s"], 2),
            "target_exact": TARGET_EXACT, "reached": reached, "curve": curve,
            "peak_gpu_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else None}


# --------------------------------------------------------------------------- the report
def memory(peak_bytes):
    return "n/a" if peak_bytes is None else f"{peak_bytes / 2**20:,.0f} MiB"


def table(results):
    """The markdown report: a line naming the device, date and versions, then one table."""
    v = results["versions"]
    tf = v["tensorflow"] or "not installed"
    lines = [f"**GPU check** · device: {results['device']} · date: {results['date']} · torch {v['torch']} · "
             f"TensorFlow {tf} · Python {v['python']} · frameworks run: "
             f"{', '.join(FRAMEWORK_NAMES[f] for f in results['frameworks']) or 'none'}", "",
             "| check | framework | wall s | CPU s | slowest cell | peak GPU memory | errors | claims "
             "| result |",
             "|---|---|---:|---:|---|---:|---:|---|---|"]
    for c in results["chapters"]:
        result = "ok" if c["ok"] else "FAILED: " + problems_text(c)
        lines.append(f"| chapter {c['chapter']} | {FRAMEWORK_NAMES[c['framework']]} | {c['wall_s']:.1f} | "
                     f"{seconds(c.get('cpu_s'))} | {slowest_text(c)} | {memory(c['peak_gpu_bytes'])} | "
                     f"{len(c['errors'])} | {claims_text(c)} | {result} |")
    for s in results["training_step"]:
        name = f"ch. 6 training step, {s['precision']}, batch {s['batch']}"
        if "skipped" in s:
            lines.append(f"| {name} | PyTorch | | | | | | | skipped: {s['skipped']} |")
            continue
        lines.append(f"| {name} | PyTorch | | | | {memory(s['peak_gpu_bytes'])} | | | course "
                     f"{s['course_ms']:.2f} ms, torch.nn.Transformer {s['reference_ms']:.2f} ms "
                     f"({s['clock']} time): ratio {s['ratio']:.2f} |")
    r = results["recipe"]
    if r:
        reached = r["reached"]
        when = (f"reached {100 * r['target_exact']:g}% at step {reached['step']} "
                f"({reached['wall_s']:.1f} s wall, {reached['cpu_s']:.1f} s CPU of training)" if reached
                else f"did not reach {100 * r['target_exact']:g}%")
        lines.append(f"| ch. 6 recipe, {r['steps']} steps, seed {r['seed']} | PyTorch | {r['wall_s']:.1f} | "
                     f"{r['cpu_s']:.1f} | | {memory(r['peak_gpu_bytes'])} | | | exact match "
                     f"{100 * r['exact']:.2f}%; {when} |")
    verdict = "ok" if results["ok"] else "FAILED"
    if not results.get("complete", True):
        verdict = "INCOMPLETE (stopped part-way)"
    lines += ["", f"Result: {verdict} ({results['failed_chapters']} chapter "
              f"run(s) with errors or failed claims; total {results['total_s']:.0f} s)"]
    return "\n".join(lines)


def finish(results, started):
    """Fill in the totals of ``results`` (after each step: a run stopped part-way is reported as such)."""
    results["failed_chapters"] = sum(not c["ok"] for c in results["chapters"])
    results["ok"] = results["failed_chapters"] == 0
    results["total_s"] = round(time.perf_counter() - started, 1)
    return results


def save(results, path):
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


def merge(paths):
    """One report from several runs' JSON files (say, the chapters in one run and the timings in
    another): the first file's device line, every file's chapters, the last timings and recipe found."""
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in paths]
    merged = dict(runs[0], chapters=[c for r in runs for c in r["chapters"]])
    merged["frameworks"] = sorted({f for r in runs for f in r["frameworks"]})
    for r in runs:
        merged["training_step"] = r["training_step"] or merged["training_step"]
        merged["recipe"] = r["recipe"] or merged["recipe"]
    merged["failed_chapters"] = sum(not c["ok"] for c in merged["chapters"])
    merged["complete"] = all(r.get("complete", True) for r in runs)
    merged["ok"] = merged["failed_chapters"] == 0 and merged["complete"]
    merged["total_s"] = sum(r["total_s"] for r in runs)
    return merged


def main(argv=None):
    args = parse_args(argv)
    if args.report:
        results = merge(args.report)
        print(table(results))
        return 0 if results["ok"] else 1
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # this process (before torch is imported) and the kernels
    sys.path[:0] = [str(HERE), str(ROOT)]  # training_speed, translation_accuracy; the repository's course_pkg
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: --device cuda, but PyTorch sees no CUDA device")
    started = time.perf_counter()
    frameworks = [] if args.skip_notebooks else choose_frameworks(args.frameworks, probe_gpu=not args.quick)
    chapters = find_chapters(args.chapters or (list(QUICK_CHAPTERS) if args.quick else None))
    cuda = torch.cuda.is_available()
    if args.torch_threads or not cuda:
        torch.set_num_threads(args.torch_threads or 1)
    results = {
        "device": torch.cuda.get_device_name(0) if cuda else "CPU", "cuda": cuda,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": platform.node(), "cpus": os.cpu_count(), "quick": args.quick,
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "cuda": torch.version.cuda, "tensorflow": version("tensorflow")},
        "frameworks": frameworks, "chapters": [], "training_step": [], "recipe": None, "complete": False,
    }
    save(finish(results, started), args.json)
    for path in chapters if frameworks else []:
        for framework in frameworks:
            print(f"running {path.name} in {FRAMEWORK_NAMES[framework]} mode ...", flush=True)
            run = run_chapter(path, framework, args.cell_timeout, args.keep)
            results["chapters"].append(run)
            print(progress_line(run), flush=True)
            save(finish(results, started), args.json)
    if not args.skip_timings:
        print("timing chapter 6's training step ...", flush=True)
        warmup, calls = (1, 3) if args.quick else (5, 10)
        results["training_step"] = time_training_step(PRECISIONS, args.rounds, warmup, calls)
        save(finish(results, started), args.json)
        print("training chapter 6's recipe ...", flush=True)
        results["recipe"] = run_recipe(args.recipe_steps or (QUICK_RECIPE_STEPS if args.quick else None))
    results["complete"] = True
    save(finish(results, started), args.json)
    print()
    print(table(results))
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
