"""One chapter notebook run top to bottom in a fresh kernel, in one framework's mode, and what it measured.

Shared by ``gpu_check.py`` (every chapter on the GPU) and ``chapter_wait.py`` (a learner's wait on a
CPU). ``run_chapter`` executes a copy of ``book/NN_*.ipynb`` (``book/`` is never written) with
nbclient in a fresh ``python3`` kernel of this interpreter, working in a temporary folder, with
``COURSE_FRAMEWORK`` set in the kernel's environment (the set-up cell skips the other framework's
cells), and records:

- ``wall_s``: the whole run, from starting the kernel to its last cell's reply (the kernel's
  start-up included);
- ``cells_wall_s``: from the set-up cell (the first code cell) starting to the chapter's last cell
  replying, from the timestamps nbclient records in each cell's ``metadata.execution``
  (``iopub.execute_input``, ``shell.execute_reply``): what a learner waits after "run all";
- ``cpu_s``: the kernel process's CPU seconds (``time.process_time()``: user and system, all its
  threads) over the same cells: a reading taken by a probe cell run before the set-up cell (put
  first in the copy, taken out again before the results are read) subtracted from one taken by a
  cell appended after the last, so that the kernel's start-up is left out;
- ``slowest_cell``: the chapter's code cell with the longest wall time by those timestamps (its
  index in the notebook, id and seconds);
- ``peak_gpu_bytes``: the peak GPU memory, printed by the appended cell
  (``torch.cuda.max_memory_allocated()`` in PyTorch mode,
  ``tf.config.experimental.get_memory_info("GPU:0")["peak"]`` in TensorFlow mode; None on a CPU);
- the cells that raised (errors), and the claim lines: output lines ending in ": True" or ": False".
  A ": False" in a cell tagged ``claim`` is a failed claim (it fails the run); one in another cell
  is listed only.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BOOK = ROOT / "book"
FRAMEWORK_NAMES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow"}
MARK = "GPU_CHECK"  # the probe's and the appended cell's lines start with it

# Run before the set-up cell (not part of the notebook): the kernel's CPU seconds so far.
PROBE_CELL = 'print("{mark} cpu_start", __import__("time").process_time())\n'

# The last cell of each copy: the kernel's CPU seconds, the peak GPU memory of the mode's framework,
# and the kernel's Python.
PEAK_CELL = {
    "pytorch": """\
print("{mark} cpu", __import__("time").process_time())
import sys as _sys
_torch = _sys.modules.get("torch")
if _torch is not None and _torch.cuda.is_available():
    print("{mark} peak", _torch.cuda.max_memory_allocated())
else:
    print("{mark} peak n/a")
print("{mark} python", _sys.executable)
""",
    "tensorflow": """\
print("{mark} cpu", __import__("time").process_time())
import sys as _sys
_tf = _sys.modules.get("tensorflow")
if _tf is not None and _tf.config.list_physical_devices("GPU"):
    print("{mark} peak", _tf.config.experimental.get_memory_info("GPU:0")["peak"])
else:
    print("{mark} peak n/a")
print("{mark} python", _sys.executable)
""",
}


# --------------------------------------------------------------------------- what to run
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


def choose_frameworks(asked, probe_gpu=True):
    """The modes to run: the ones ``asked`` for (refused only where not installed: TensorFlow asked for
    runs on a CPU too), else PyTorch and, where ``probe_gpu`` and TensorFlow sees a GPU, TensorFlow."""
    if asked:
        missing = [f for f in asked
                   if importlib.util.find_spec("torch" if f == "pytorch" else "tensorflow") is None]
        if missing:
            raise SystemExit(f"{', '.join(FRAMEWORK_NAMES[f] for f in missing)} is not installed "
                             "(asked for by --frameworks)")
        return list(dict.fromkeys(asked))
    return ["pytorch"] + (["tensorflow"] if probe_gpu and tensorflow_sees_gpu() else [])


def find_chapters(numbers):
    """The chapter notebooks ``book/NN_*.ipynb`` numbered ``numbers`` (all of them for None)."""
    chapters = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
    if numbers is None:
        return chapters
    chosen = [p for p in chapters if int(p.name[:2]) in numbers]
    unknown = sorted(set(numbers) - {int(p.name[:2]) for p in chosen})
    if unknown:
        raise SystemExit(f"no chapter {', '.join(map(str, unknown))} under {BOOK}")
    return chosen


# --------------------------------------------------------------------------- reading a run
def cell_text(cell):
    """The text a code cell printed (streams and plain-text results)."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif output.get("output_type") in ("execute_result", "display_data"):
            parts.append(output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def marked_lines(cell):
    """``{key: value}`` of the lines ``MARK key value`` a cell printed."""
    found = {}
    for line in cell_text(cell).splitlines():
        if line.startswith(MARK + " "):
            key, _, value = line[len(MARK) + 1:].partition(" ")
            found[key] = value
    return found


def read_results(notebook):
    """Errors, claims and the appended (last) cell's marked lines of an executed notebook."""
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
    claims = {"lines": sum(claims), "true": claims[1]}
    return errors, claims, failed, other_false, marked_lines(notebook.cells[-1])


def _moment(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def cell_timings(cells):
    """The wall time of ``cells`` by nbclient's timestamps: ``{"cells_wall_s"`` (the first code cell's
    ``iopub.execute_input`` to the last reply), ``"slowest_cell"`` (``{"cell", "id", "wall_s"}``: its
    index in ``cells``)``}``, None each where no cell has both timestamps."""
    runs, keys = [], {"iopub.execute_input", "shell.execute_reply"}
    for index, cell in enumerate(cells):
        execution = cell.get("metadata", {}).get("execution", {})
        if cell.get("cell_type") == "code" and keys <= set(execution):
            runs.append((index, str(cell.get("id", "")), _moment(execution["iopub.execute_input"]),
                         _moment(execution["shell.execute_reply"])))
    if not runs:
        return {"cells_wall_s": None, "slowest_cell": None}
    index, cell_id, began, ended = max(runs, key=lambda run: run[3] - run[2])
    span = max(run[3] for run in runs) - min(run[2] for run in runs)
    slowest = {"cell": index, "id": cell_id, "wall_s": round((ended - began).total_seconds(), 2)}
    return {"cells_wall_s": round(span.total_seconds(), 2), "slowest_cell": slowest}


# --------------------------------------------------------------------------- running one
def kernel_manager(folder):
    """A KernelManager whose ``python3`` kernel is this interpreter (a kernelspec written in ``folder``,
    so that another ``python3`` kernelspec installed on the machine is not used)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = Path(folder) / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (chapter run)", "language": "python"}), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(spec.parent)], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def execute(notebook, env, cell_timeout):
    """Run every cell of ``notebook`` in a fresh kernel (errors kept in the outputs); a message when the
    run stopped part-way (a cell over the timeout, a dead kernel), else None."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    with tempfile.TemporaryDirectory(prefix="chapter-run-") as folder:
        work = Path(folder) / "work"
        work.mkdir()
        client = NotebookClient(notebook, km=kernel_manager(folder), kernel_name="python3",
                                timeout=cell_timeout, allow_errors=True, interrupt_on_timeout=False,
                                shutdown_kernel="immediate", resources={"metadata": {"path": str(work)}})
        try:
            client.execute(env=env, stderr=subprocess.DEVNULL)
        except CellTimeoutError:
            return f"a cell ran over the {cell_timeout}-s timeout"
        except DeadKernelError:
            return "the kernel died"
    return None


def run_chapter(path, framework, cell_timeout, keep=None):
    """Execute a copy of one chapter in ``framework``'s mode; its results as a dict (module docstring)."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(PROBE_CELL.replace("{mark}", MARK)))
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_CELL[framework].replace("{mark}", MARK)))
    # The repository's course_pkg first (not another one installed, and no install from the set-up cell).
    path_entries = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, COURSE_FRAMEWORK=framework, MPLBACKEND="agg",
               PYTHONPATH=os.pathsep.join(path_entries))
    start = time.perf_counter()
    stopped = execute(notebook, env, cell_timeout)
    wall = time.perf_counter() - start
    probe = notebook.cells.pop(0)  # the chapter's cells keep their indices
    errors, claims, failed, other_false, extra = read_results(notebook)
    if stopped:
        errors.append({"cell": None, "id": "", "error": stopped})
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, keep / f"{path.stem}.{framework}.ipynb")
    peak, cpu_start = extra.get("peak", "n/a"), marked_lines(probe).get("cpu_start")
    cpu = float(extra["cpu"]) - float(cpu_start) if "cpu" in extra and cpu_start else None
    return {"chapter": path.stem, "framework": framework, "wall_s": round(wall, 2),
            **cell_timings(notebook.cells[:-1]), "cpu_s": None if cpu is None else round(cpu, 2),
            "peak_gpu_bytes": int(peak) if peak.isdigit() else None,
            "errors": errors, "claim_lines": claims["lines"], "claims_true": claims["true"],
            "failed_claims": failed, "false_lines_untagged": other_false,
            "kernel_python": extra.get("python"), "ok": not errors and not failed}


# --------------------------------------------------------------------------- table cells
def seconds(value):
    """A table cell of seconds: ``12.3``, or empty where not measured."""
    return "" if value is None else f"{value:.1f}"


def slowest_text(run):
    """The slowest cell as a table cell: ``06-041 (84.2 s)`` (its index where it has no id)."""
    slowest = run.get("slowest_cell")
    if not slowest:
        return ""
    return f"{slowest['id'] or 'cell ' + str(slowest['cell'])} ({slowest['wall_s']:.1f} s)"


def claims_text(run):
    """The claim lines as a table cell: ``4/4 True``, with the False lines outside ``claim`` cells."""
    text = f"{run['claims_true']}/{run['claim_lines']} True"
    if run["false_lines_untagged"]:
        text += f" ({len(run['false_lines_untagged'])} False outside `claim` cells)"
    return text


def problems_text(run):
    """A failed run's errors and failed claims as one table cell ("" for an ok run)."""
    problems = [f"cell {e['cell']} ({e['id']}): {e['error']}" for e in run["errors"][:3]]
    problems += [f"cell {f['cell']} ({f['id']}): {f['line']}" for f in run["failed_claims"]]
    return "; ".join(problems).replace("|", "\\|")


def progress_line(run):
    """One line on a finished run, printed as the chapters go."""
    return (f"  {run['wall_s']:.1f} s wall ({seconds(run['cells_wall_s'])} s of cells, "
            f"{seconds(run['cpu_s'])} s CPU; slowest cell {slowest_text(run) or 'n/a'}), "
            f"{len(run['errors'])} errors, {run['claims_true']}/{run['claim_lines']} claim lines True, "
            f"{len(run['failed_claims'])} failed claims")
