"""benchmarks/gpu_check.py: its quick CPU run end to end, and how it reads a chapter's results.

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


def _script_module():
    spec = importlib.util.spec_from_file_location("course_gpu_check", SCRIPT)
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
    assert rows[0] == "| check | framework | wall s | peak GPU memory | errors | claims | result |"
    assert rows[1] == "|---|---|---:|---:|---:|---|---|"
    chapter = next(row for row in rows if row.startswith("| chapter 03_masks | PyTorch |"))
    cells = [cell.strip() for cell in chapter.strip("|").split("|")]
    assert cells[3:] == ["n/a", "0", f"{results['chapters'][0]['claim_lines']}/"
                         f"{results['chapters'][0]['claim_lines']} True", "ok"]
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


def _cell(source, lines, tags=(), error=None):
    outputs = [{"output_type": "stream", "name": "stdout", "text": "".join(f"{line}\n" for line in lines)}]
    if error:
        outputs.append({"output_type": "error", "ename": error, "evalue": "boom", "traceback": []})
    return {"cell_type": "code", "id": source, "metadata": {"tags": list(tags)}, "source": source,
            "outputs": outputs, "execution_count": 1}


def test_failed_claims_and_errors_are_found_and_fail_the_check():
    import nbformat

    gpu_check = _script_module()
    notebook = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        _cell("a", ["masks agree: True", "shapes agree: False"], tags=["claim"]),
        _cell("b", ["is the mask causal: False"]),  # not a claim cell: reported, not a failure
        _cell("c", [], error="ValueError"),
        _cell("d", [f"{gpu_check.MARK} peak 1048576", f"{gpu_check.MARK} python /x/python"]),
    ]})
    errors, claims, failed, other_false, extra = gpu_check.read_results(notebook)
    assert claims == {"lines": 3, "true": 1}
    assert [f["line"] for f in failed] == ["shapes agree: False"] and failed[0]["id"] == "a"
    assert [f["line"] for f in other_false] == ["is the mask causal: False"]
    assert errors == [{"cell": 2, "id": "c", "error": "ValueError: boom"}]
    assert extra == {"peak": "1048576", "python": "/x/python"}
    chapter = {"chapter": "05_decoder", "framework": "tensorflow", "wall_s": 1.0, "peak_gpu_bytes": 2**20,
               "errors": errors, "claim_lines": 3, "claims_true": 1, "failed_claims": failed,
               "false_lines_untagged": other_false, "ok": False}
    results = {"device": "GPU X", "date": "today", "frameworks": ["tensorflow"], "chapters": [chapter],
               "versions": {"python": "3", "torch": "2", "cuda": None, "tensorflow": None},
               "training_step": [], "recipe": None, "ok": False, "failed_chapters": 1, "total_s": 1.0}
    text = gpu_check.table(results)
    row = next(line for line in text.splitlines() if line.startswith("| chapter 05_decoder"))
    assert "| TensorFlow | 1.0 | 1 MiB | 1 | 1/3 True (1 False outside `claim` cells) | FAILED:" in row
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
