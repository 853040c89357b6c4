"""GPU check: every chapter run top to bottom on the GPU, chapter 6's training step and recipe timed.

One command for anyone with a GPU:

    python benchmarks/gpu_check.py                      # every chapter: PyTorch, TensorFlow if it sees a GPU
    python benchmarks/gpu_check.py --chapters 3 6 --frameworks pytorch --json gpu_check.json
    python benchmarks/gpu_check.py --device cpu --quick --json out.json   # the tests' short CPU run

What it does, in order:

1. Executes a copy of each chapter notebook (``book/NN_*.ipynb``; ``book/`` is never written) with
   nbclient in a fresh ``python3`` kernel of this interpreter, working in a temporary folder, once per
   framework mode (``COURSE_FRAMEWORK=pytorch`` or ``tensorflow`` in the kernel's environment: the
   set-up cell skips the other framework's cells), with a per-cell timeout (``--cell-timeout``).
   A last cell appended to the copy prints the peak GPU memory (``torch.cuda.max_memory_allocated()``
   in PyTorch mode, ``tf.config.experimental.get_memory_info("GPU:0")["peak"]`` in TensorFlow mode;
   "n/a" on a CPU). Per chapter and mode it records the wall time, the peak GPU memory, the cells that
   raised (errors), and the claim lines: output lines ending in ": True" or ": False". A ": False" in
   a cell tagged ``claim`` is a failed claim (listed; it fails the check); one in another cell is
   listed only.
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
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BOOK = ROOT / "book"
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}
PRECISIONS = ("fp32", "bf16")
QUICK_CHAPTERS = (3,)
QUICK_RECIPE_STEPS = 100
TARGET_EXACT = 0.99
MARK = "GPU_CHECK"  # the appended cell's lines start with it

# The last cell of each copy: the peak GPU memory of the mode's framework, and the kernel's Python.
PEAK_CELL = {
    "pytorch": """\
import sys as _sys
_torch = _sys.modules.get("torch")
if _torch is not None and _torch.cuda.is_available():
    print("{mark} peak", _torch.cuda.max_memory_allocated())
else:
    print("{mark} peak n/a")
print("{mark} python", _sys.executable)
""",
    "tensorflow": """\
import sys as _sys
_tf = _sys.modules.get("tensorflow")
if _tf is not None and _tf.config.list_physical_devices("GPU"):
    print("{mark} peak", _tf.config.experimental.get_memory_info("GPU:0")["peak"])
else:
    print("{mark} peak n/a")
print("{mark} python", _sys.executable)
""",
}


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


def version(package):
    """The installed version of ``package`` (without importing it), or None."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def tensorflow_sees_gpu():
    """Whether TensorFlow, imported in a separate process, lists a GPU (False where it is absent)."""
    if importlib.util.find_spec("tensorflow") is None:
        return False
    probe = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
    try:
        result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0 and result.stdout.strip().splitlines()[-1:] not in ([], ["0"])


def choose_frameworks(args):
    """The modes to run: the ones asked for, else PyTorch and, where it sees a GPU, TensorFlow."""
    if args.frameworks:
        missing = [f for f in args.frameworks
                   if importlib.util.find_spec("torch" if f == "pytorch" else "tensorflow") is None]
        if missing:
            raise SystemExit(f"gpu_check: {', '.join(FRAMEWORK_NAMES[f] for f in missing)} is not installed")
        return list(dict.fromkeys(args.frameworks))
    return ["pytorch"] + (["tensorflow"] if not args.quick and tensorflow_sees_gpu() else [])


def find_chapters(numbers):
    chapters = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
    if numbers is None:
        return chapters
    chosen = [p for p in chapters if int(p.name[:2]) in numbers]
    unknown = sorted(set(numbers) - {int(p.name[:2]) for p in chosen})
    if unknown:
        raise SystemExit(f"gpu_check: no chapter {', '.join(map(str, unknown))} under {BOOK}")
    return chosen


# --------------------------------------------------------------------------- 1. the chapters
def kernel_manager(folder):
    """A KernelManager whose ``python3`` kernel is this interpreter (a kernelspec written in ``folder``,
    so that another ``python3`` kernelspec installed on the machine is not used)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = Path(folder) / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (gpu_check)", "language": "python"}), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec.parent)], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def cell_text(cell):
    """The text a code cell printed (streams and plain-text results)."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def read_results(notebook):
    """Errors, claims and the appended cell's lines of an executed notebook."""
    errors, claims, failed, other_false = [], [0, 0], [], []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append({"cell": index, "id": cell.get("id", ""),
                               "error": f"{output.get('ename')}: {str(output.get('evalue', ''))[:200]}"})
        tagged = "claim" in cell.get("metadata", {}).get("tags", [])
        for line in cell_text(cell).splitlines():
            line = line.rstrip()
            if line.endswith((": True", ": False")):
                claims[line.endswith(": True")] += 1
            if line.endswith(": False"):
                (failed if tagged else other_false).append({"cell": index, "id": cell.get("id", ""),
                                                            "line": line})
    extra = {}
    for line in cell_text(notebook.cells[-1]).splitlines():
        if line.startswith(MARK + " "):
            key, _, value = line[len(MARK) + 1:].partition(" ")
            extra[key] = value
    return errors, {"lines": sum(claims), "true": claims[1]}, failed, other_false, extra


def run_chapter(path, framework, cell_timeout, keep=None):
    """Execute a copy of one chapter in ``framework``'s mode; its results as a dict."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_CELL[framework].replace("{mark}", MARK)))
    # The repository's course_pkg first (not another one installed, and no install from the set-up cell).
    path_entries = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, COURSE_FRAMEWORK=framework, MPLBACKEND="agg",
               PYTHONPATH=os.pathsep.join(path_entries))
    stopped = None
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        work = Path(folder) / "work"
        work.mkdir()
        client = NotebookClient(notebook, km=kernel_manager(folder), kernel_name="python3",
                                timeout=cell_timeout, allow_errors=True, interrupt_on_timeout=False,
                                shutdown_kernel="immediate", resources={"metadata": {"path": str(work)}})
        start = time.perf_counter()
        try:
            client.execute(env=env, stderr=subprocess.DEVNULL)
        except CellTimeoutError:
            stopped = f"a cell ran over the {cell_timeout}-s timeout"
        except DeadKernelError:
            stopped = "the kernel died"
        wall = time.perf_counter() - start
    errors, claims, failed, other_false, extra = read_results(notebook)
    if stopped:
        errors.append({"cell": None, "id": "", "error": stopped})
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, keep / f"{path.stem}.{framework}.ipynb")
    peak = extra.get("peak", "n/a")
    return {"chapter": path.stem, "framework": framework, "wall_s": round(wall, 2),
            "peak_gpu_bytes": int(peak) if peak.isdigit() else None,
            "errors": errors, "claim_lines": claims["lines"], "claims_true": claims["true"],
            "failed_claims": failed, "false_lines_untagged": other_false,
            "kernel_python": extra.get("python"), "ok": not errors and not failed}


# --------------------------------------------------------------------------- 2. chapter 6's step
def recipe_model_size(recipe, src_vocab, tgt_vocab, max_len):
    return dict(num_layers=recipe["num_layers"], d_model=recipe["d_model"], num_heads=recipe["num_heads"],
                dff=recipe["dff"], dropout=recipe["dropout"], input_vocab_size=len(src_vocab),
                target_vocab_size=len(tgt_vocab), max_len=max_len)


def time_training_step(precisions, rounds, warmup, calls):
    """Median seconds per training step of the course's Transformer and of torch.nn.Transformer."""
    import torch
    import training_speed
    import translation_accuracy

    from course_pkg import torch as cp
    from course_pkg.data import encode_pairs

    recipe = translation_accuracy.RECIPE
    corpus, src_vocab, tgt_vocab = translation_accuracy.number_data()
    batch = encode_pairs(corpus.train[:recipe["batch"]], src_vocab, tgt_vocab)  # as chapter 6 times it
    size = recipe_model_size(recipe, src_vocab, tgt_vocab, translation_accuracy.MAX_LEN)
    cuda = torch.cuda.is_available()
    clock = "wall" if cuda else "cpu"
    rows = []
    for precision in precisions:
        row = {"precision": precision, "clock": clock, "batch": recipe["batch"], "rounds": rounds,
               "steps_per_round": calls}
        if precision == "bf16" and cuda and not torch.cuda.is_bf16_supported():
            rows.append(dict(row, skipped="this GPU has no bfloat16"))
            continue
        torch.manual_seed(0)
        models = {"course": cp.Transformer(**size),
                  "reference": training_speed.torch_nn_transformer(
                      size["input_vocab_size"], size["target_vocab_size"], size["max_len"], size["d_model"],
                      size["num_heads"], size["num_layers"], size["dff"], size["dropout"])}
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
             "| check | framework | wall s | peak GPU memory | errors | claims | result |",
             "|---|---|---:|---:|---:|---|---|"]
    for c in results["chapters"]:
        claims = f"{c['claims_true']}/{c['claim_lines']} True"
        if c["false_lines_untagged"]:
            claims += f" ({len(c['false_lines_untagged'])} False outside `claim` cells)"
        problems = [f"cell {e['cell']} ({e['id']}): {e['error']}" for e in c["errors"][:3]]
        problems += [f"cell {f['cell']} ({f['id']}): {f['line']}" for f in c["failed_claims"]]
        result = "ok" if c["ok"] else "FAILED: " + "; ".join(problems).replace("|", "\\|")
        lines.append(f"| chapter {c['chapter']} | {FRAMEWORK_NAMES[c['framework']]} | {c['wall_s']:.1f} | "
                     f"{memory(c['peak_gpu_bytes'])} | {len(c['errors'])} | {claims} | {result} |")
    for s in results["training_step"]:
        name = f"ch. 6 training step, {s['precision']}, batch {s['batch']}"
        if "skipped" in s:
            lines.append(f"| {name} | PyTorch | | | | | skipped: {s['skipped']} |")
            continue
        lines.append(f"| {name} | PyTorch | | {memory(s['peak_gpu_bytes'])} | | | course "
                     f"{s['course_ms']:.2f} ms, torch.nn.Transformer {s['reference_ms']:.2f} ms "
                     f"({s['clock']} time): ratio {s['ratio']:.2f} |")
    r = results["recipe"]
    if r:
        reached = r["reached"]
        when = (f"reached {100 * r['target_exact']:g}% at step {reached['step']} "
                f"({reached['wall_s']:.1f} s wall, {reached['cpu_s']:.1f} s CPU of training)" if reached
                else f"did not reach {100 * r['target_exact']:g}%")
        lines.append(f"| ch. 6 recipe, {r['steps']} steps, seed {r['seed']} | PyTorch | {r['wall_s']:.1f} | "
                     f"{memory(r['peak_gpu_bytes'])} | | | exact match {100 * r['exact']:.2f}%; {when} |")
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
    frameworks = choose_frameworks(args) if not args.skip_notebooks else []
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
            print(f"  {run['wall_s']:.1f} s, {len(run['errors'])} errors, {run['claims_true']}/"
                  f"{run['claim_lines']} claim lines True, {len(run['failed_claims'])} failed claims",
                  flush=True)
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
