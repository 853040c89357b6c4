"""benchmarks/gpu_check.py: its quick CPU run end to end, and how it reads a chapter's results
(benchmarks/chapter_runs.py, shared with benchmarks/chapter_wait.py, whose table and verdicts are
checked on made-up runs).

``python benchmarks/gpu_check.py --device cpu --quick --json FILE`` runs once per session, in a
subprocess (about a minute on a busy 2-core machine: chapter 3 in PyTorch mode, a few training
steps of chapter 6's model timed, 100 steps of chapter 6's recipe). Nothing here asserts a time:
the timings are reported by the check, not judged.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def _script_module(name="gpu_check"):
    spec = importlib.util.spec_from_file_location(f"course_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """(the completed process, the JSON results) of one quick CPU run."""
    out = tmp_path_factory.mktemp("gpu_check") / "results.json"
    env = {k: v for k, v in os.environ.items() if k != "COURSE_FRAMEWORK"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--json", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    return done, json.loads(out.read_text(encoding="utf-8"))


def test_quick_run_prints_one_table_naming_device_versions_and_every_check(quick):
    done, results = quick
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("**GPU check**"))
    assert "device: CPU" in header and f"date: {results['date']}" in header
    assert f"torch {results['versions']['torch']}" in header and "TensorFlow" in header
    rows = [line for line in lines if line.startswith("|")]
    assert rows[0] == ("| check | framework | wall s | CPU s | slowest cell | peak GPU memory | errors "
                       "| claims | result |")
    assert rows[1] == "|---|---|---:|---:|---|---:|---:|---|---|"
    chapter = next(row for row in rows if row.startswith("| chapter 03_masks | PyTorch |"))
    cells = [cell.strip() for cell in chapter.strip("|").split("|")]
    run = results["chapters"][0]
    slowest = run["slowest_cell"]
    assert cells[2:5] == [f"{run['wall_s']:.1f}", f"{run['cpu_s']:.1f}",
                          f"{slowest['id']} ({slowest['wall_s']:.1f} s)"]
    assert cells[5:] == ["n/a", "0", f"{run['claim_lines']}/{run['claim_lines']} True", "ok"]
    for precision in ("fp32", "bf16"):
        row = next(row for row in rows if row.startswith(f"| ch. 6 training step, {precision}, batch 128 |"))
        assert "course" in row and "torch.nn.Transformer" in row and "ratio" in row
    assert any(row.startswith("| ch. 6 recipe, 100 steps, seed 0 | PyTorch |") and "exact match" in row
               for row in rows)
    assert len(rows) == 2 + 1 + 2 + 1  # header, separator, the chapter, two precisions, the recipe
    assert lines[-1].startswith("Result: ok")


def test_quick_run_ran_chapter_3_in_pytorch_mode_without_errors_and_its_claims_true(quick):
    _, results = quick
    assert results["device"] == "CPU" and results["cuda"] is False and results["quick"] is True
    assert results["frameworks"] == ["pytorch"]  # --quick: PyTorch mode only, TensorFlow not asked for
    assert results["ok"] is True and results["failed_chapters"] == 0
    [chapter] = results["chapters"]
    assert chapter["chapter"] == "03_masks" and chapter["framework"] == "pytorch"
    assert chapter["errors"] == [] and chapter["failed_claims"] == []
    assert chapter["false_lines_untagged"] == []
    assert chapter["claim_lines"] >= 4 and chapter["claims_true"] == chapter["claim_lines"]
    assert chapter["peak_gpu_bytes"] is None  # "n/a": no GPU
    assert chapter["ok"] is True and chapter["wall_s"] > 0
    # the kernel's CPU seconds and the wall of the chapter's cells were measured; the slowest cell is
    # one of chapter 3's code cells, at its index in the notebook
    assert chapter["cpu_s"] > 0 and chapter["cells_wall_s"] > 0 and chapter["slowest_cell"]["wall_s"] > 0
    notebook = json.loads((ROOT / "book" / "03_masks.ipynb").read_text(encoding="utf-8"))
    slowest = notebook["cells"][chapter["slowest_cell"]["cell"]]
    assert slowest["cell_type"] == "code" and slowest["id"] == chapter["slowest_cell"]["id"]
    # the kernel was this interpreter (the check's own kernelspec), with the GPUs hidden
    assert os.path.samefile(chapter["kernel_python"], sys.executable)


def test_quick_run_times_both_models_in_both_precisions_and_trains_the_recipe(quick):
    _, results = quick
    steps = results["training_step"]
    assert [s["precision"] for s in steps] == ["fp32", "bf16"]
    for s in steps:
        assert s["clock"] == "cpu" and s["batch"] == 128 and s["peak_gpu_bytes"] is None
        assert s["course_ms"] > 0 and s["reference_ms"] > 0
        assert math.isclose(s["ratio"], s["course_ms"] / s["reference_ms"], rel_tol=0.01)
        course, reference = s["params"]
        assert course > 0 and reference > 0
    recipe = results["recipe"]
    assert recipe["steps"] == 100 and recipe["seed"] == 0 and recipe["target_exact"] == 0.99
    assert [point["step"] for point in recipe["curve"]] == [25, 50, 75, 100]
    assert 0.0 <= recipe["exact"] <= 1.0 and recipe["curve"][-1]["exact"] == recipe["exact"]
    assert recipe["wrong"] == round(3000 * (1 - recipe["exact"]))
    assert math.isfinite(recipe["loss"]) and recipe["wall_s"] > 0 and recipe["cpu_s"] > 0
    reached = recipe["reached"]
    assert reached is None or reached["exact"] >= 0.99
    assert set(results["versions"]) == {"python", "torch", "cuda", "tensorflow"}


def _cell(source, lines, tags=(), error=None, execution=None):
    outputs = [{"output_type": "stream", "name": "stdout", "text": "".join(f"{line}\n" for line in lines)}]
    if error:
        outputs.append({"output_type": "error", "ename": error, "evalue": "boom", "traceback": []})
    metadata = {"tags": list(tags), **({"execution": execution} if execution else {})}
    return {"cell_type": "code", "id": source, "metadata": metadata, "source": source,
            "outputs": outputs, "execution_count": 1}


def test_failed_claims_and_errors_are_found_and_fail_the_check():
    import nbformat

    gpu_check, runs = _script_module(), _script_module("chapter_runs")
    notebook = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        _cell("a", ["masks agree: True", "shapes agree: False"], tags=["claim"]),
        _cell("b", ["is the mask causal: False"]),  # not a claim cell: reported, not a failure
        _cell("c", [], error="ValueError"),
        _cell("d", [f"{runs.MARK} cpu 12.5", f"{runs.MARK} peak 1048576", f"{runs.MARK} python /x/python"]),
    ]})
    errors, claims, failed, other_false, extra = runs.read_results(notebook)
    assert claims == {"lines": 3, "true": 1}
    assert [f["line"] for f in failed] == ["shapes agree: False"] and failed[0]["id"] == "a"
    assert [f["line"] for f in other_false] == ["is the mask causal: False"]
    assert errors == [{"cell": 2, "id": "c", "error": "ValueError: boom"}]
    assert extra == {"cpu": "12.5", "peak": "1048576", "python": "/x/python"}
    chapter = {"chapter": "05_decoder", "framework": "tensorflow", "wall_s": 1.0, "peak_gpu_bytes": 2**20,
               "cpu_s": 0.5, "slowest_cell": {"cell": 7, "id": "05-007", "wall_s": 0.4},
               "errors": errors, "claim_lines": 3, "claims_true": 1, "failed_claims": failed,
               "false_lines_untagged": other_false, "ok": False}
    results = {"device": "GPU X", "date": "today", "frameworks": ["tensorflow"], "chapters": [chapter],
               "versions": {"python": "3", "torch": "2", "cuda": None, "tensorflow": None},
               "training_step": [], "recipe": None, "ok": False, "failed_chapters": 1, "total_s": 1.0}
    text = gpu_check.table(results)
    row = next(line for line in text.splitlines() if line.startswith("| chapter 05_decoder"))
    assert ("| TensorFlow | 1.0 | 0.5 | 05-007 (0.4 s) | 1 MiB | 1 | 1/3 True (1 False outside `claim` "
            "cells) | FAILED:") in row
    assert "cell 2 (c): ValueError: boom" in row and "cell 0 (a): shapes agree: False" in row
    assert "TensorFlow not installed" in text and text.splitlines()[-1].startswith("Result: FAILED")


def test_quick_run_json_says_complete_and_report_merges_runs(quick, tmp_path):
    _, results = quick
    assert results["complete"] is True
    chapters_only = dict(results, training_step=[], recipe=None, total_s=10.0)
    timings_only = dict(results, chapters=[], frameworks=[], total_s=5.0)
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, run in zip(paths, (chapters_only, timings_only)):
        path.write_text(json.dumps(run), encoding="utf-8")
    gpu_check = _script_module()
    merged = gpu_check.merge(paths)
    assert merged["chapters"] == results["chapters"] and merged["frameworks"] == ["pytorch"]
    assert merged["training_step"] == results["training_step"] and merged["recipe"] == results["recipe"]
    assert merged["total_s"] == 15.0 and merged["ok"] is True
    done = subprocess.run([sys.executable, str(SCRIPT), "--report", *map(str, paths)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("Result: ok")
    # a run stopped part-way (its JSON written before the end) is reported so, and fails the report
    paths[1].write_text(json.dumps(dict(timings_only, complete=False)), encoding="utf-8")
    merged = gpu_check.merge(paths)
    assert merged["ok"] is False and merged["complete"] is False
    text = gpu_check.table(dict(results, complete=False))
    assert text.splitlines()[-1].startswith("Result: INCOMPLETE")


def _stamps(start, end):
    """nbclient's record of a cell run from ``start`` to ``end`` seconds past 12:00."""
    def stamp(seconds):
        return f"2026-11-28T12:{int(seconds) // 60:02d}:{seconds % 60:09.6f}Z"
    return {"iopub.status.busy": stamp(start), "iopub.execute_input": stamp(start),
            "shell.execute_reply": stamp(end), "iopub.status.idle": stamp(end)}


def test_the_slowest_cell_and_the_wall_of_the_cells_come_from_nbclients_timestamps():
    import nbformat

    runs = _script_module("chapter_runs")
    markdown = {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "text"}
    notebook = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        markdown,
        _cell("setup", [], execution=_stamps(1.0, 3.5)),
        _cell("quick", [], execution=_stamps(3.6, 3.7)),
        _cell("slow", [], execution=_stamps(3.8, 70.3)),  # over a minute boundary
        _cell("not-run", []),  # no timestamps: left out
        _cell("last", [], execution=_stamps(70.4, 71.0)),
    ]})
    timings = runs.cell_timings(notebook.cells)
    assert timings["slowest_cell"] == {"cell": 3, "id": "slow", "wall_s": 66.5}
    assert timings["cells_wall_s"] == 70.0  # the set-up cell's input to the last reply
    assert runs.slowest_text(timings) == "slow (66.5 s)"
    assert runs.cell_timings(notebook.cells[:1] + notebook.cells[4:5]) == {"cells_wall_s": None,
                                                                          "slowest_cell": None}
    # a run from an earlier JSON, without these columns: their cells are left empty
    assert runs.slowest_text({}) == "" and runs.seconds(None) == ""
    assert runs.slowest_text({"slowest_cell": {"cell": 4, "id": "", "wall_s": 2.0}}) == "cell 4 (2.0 s)"


def test_frameworks_asked_for_run_on_a_cpu_and_a_missing_one_is_refused(monkeypatch):
    runs = _script_module("chapter_runs")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    if importlib.util.find_spec("tensorflow") is not None:
        assert runs.choose_frameworks(["tensorflow"], probe_gpu=False) == ["tensorflow"]
    assert runs.choose_frameworks(["pytorch", "pytorch"]) == ["pytorch"]
    assert runs.choose_frameworks(None, probe_gpu=False) == ["pytorch"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name: None if name == "tensorflow" else real(name))
    with pytest.raises(SystemExit, match="TensorFlow is not installed"):
        runs.choose_frameworks(["pytorch", "tensorflow"])


def test_chapter_wait_gives_each_run_a_budget_verdict_and_each_framework_a_total():
    wait = _script_module("chapter_wait")

    def run(chapter, framework, cells_wall, ok=True):
        return {"chapter": chapter, "framework": framework, "wall_s": cells_wall + 1,
                "cells_wall_s": cells_wall, "cpu_s": cells_wall / 2,
                "slowest_cell": {"cell": 5, "id": f"{chapter[:2]}-005", "wall_s": 1.5},
                "peak_gpu_bytes": None, "claim_lines": 2, "claims_true": 2, "false_lines_untagged": [],
                "failed_claims": [], "ok": ok,
                "errors": [] if ok else [{"cell": 5, "id": "x", "error": "ValueError: boom"}]}

    chapters = [run("03_masks", "pytorch", 12.0), run("06_training", "pytorch", 200.0),
                run("03_masks", "tensorflow", 20.0, ok=False)]
    for c in chapters:
        c["budget"] = wait.verdict(c, 180)
    assert [c["budget"] for c in chapters] == ["within 180 s", "OVER 180 s",
                                               "within 180 s; FAILED: cell 5 (x): ValueError: boom"]
    results = {"cpu": "a CPU", "cpus": 2, "date": "today", "load_before": [0.1, 0.1, 0.1],
               "load_after": [0.2, 0.1, 0.1], "versions": {"python": "3", "torch": "2", "tensorflow": None},
               "budget_s": 180, "frameworks": ["pytorch", "tensorflow"], "chapters": chapters,
               "ok": False, "total_s": 250.0}
    lines = wait.table(results).splitlines()
    assert lines[0].startswith("**Learner's wait** · CPU: a CPU (2 cores)")
    assert "TensorFlow not installed" in lines[0] and "load average [0.1, 0.1, 0.1] before" in lines[0]
    rows = [line for line in lines if line.startswith("|")]
    assert rows[:2] == ["| chapter | framework | wall s | CPU s | slowest cell | errors | claims | budget |",
                        "|---|---|---:|---:|---|---:|---|---|"]
    assert rows[2] == "| 03_masks | PyTorch | 12.0 | 6.0 | 03-005 (1.5 s) | 0 | 2/2 True | within 180 s |"
    assert rows[3].endswith("| OVER 180 s |")
    assert rows[4] == "| total, 2 chapters | PyTorch | 212.0 | 106.0 | | 0 | | |"
    assert rows[5].startswith("| 03_masks | TensorFlow |")
    assert rows[6].startswith("| total, 1 chapters | TensorFlow |") and len(rows) == 7
    assert lines[-1] == ("Result: FAILED (1 chapter run(s) over 180 s, 1 with errors or failed claims; "
                         "250 s in all)")
