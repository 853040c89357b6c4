"""The framework choice and Hugging Face ``transformers``: ``use_frameworks`` sets ``USE_TF`` and
``USE_TORCH`` for every choice (transformers 4.x reads them when it is imported), choosing again in
one runtime works, and a choice made after transformers was imported asks for a restart. The
compatibility job of .ci/test runs these (their names say tf or tensorflow) with transformers 4.57."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from framework_choice import FakeShell, restore_environment  # noqa: F401 (an autouse fixture)

from course_pkg import notebook

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("choice,variable", [("pytorch", "USE_TF"), ("tensorflow", "USE_TORCH")])
def test_one_framework_tells_transformers_not_to_import_the_other(monkeypatch, choice, variable):
    for name in (variable, notebook.ENV):  # restored afterwards: later notebooks' kernels inherit them
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    notebook.use_frameworks(choice, shell=FakeShell())
    assert os.environ[variable] == "0"


@pytest.mark.parametrize("choice,want", [
    ("pytorch", {"USE_TF": "0", "USE_TORCH": "1"}), ("tensorflow", {"USE_TF": "1", "USE_TORCH": "0"}),
    ("both", {"USE_TF": None, "USE_TORCH": None})])
def test_every_choice_sets_use_tf_and_use_torch(monkeypatch, capsys, choice, want):
    """Choosing again in one runtime leaves nothing of the previous choice: USE_TF=0 from "pytorch"
    with USE_TORCH=0 from "tensorflow" would hide both frameworks from transformers 4.x."""
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    for stale in ({"USE_TF": "0", "USE_TORCH": "0"}, {"USE_TF": "1", "USE_TORCH": "1"}, {}):
        for name in ("USE_TF", "USE_TORCH"):
            monkeypatch.delenv(name, raising=False)
        for name, value in stale.items():
            monkeypatch.setenv(name, value)
        notebook.use_frameworks(choice, shell=FakeShell())
        assert {name: os.environ.get(name) for name in want} == want, stale


def _fake_transformers(monkeypatch, **recorded):
    """A ``transformers`` in sys.modules whose import_utils recorded ``recorded`` (4.x), or nothing (5)."""
    import types

    import_utils = types.ModuleType("transformers.utils.import_utils")
    for name, value in recorded.items():
        setattr(import_utils, name, value)
    monkeypatch.setitem(sys.modules, "transformers", types.ModuleType("transformers"))
    monkeypatch.setitem(sys.modules, "transformers.utils.import_utils", import_utils)


def test_transformers_imported_with_other_tf_settings_asks_for_a_restart(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "quiet_tensorflow", lambda: None)
    _fake_transformers(monkeypatch, USE_TF="1", USE_TORCH="0")  # imported under "tensorflow"
    notebook.use_frameworks("tensorflow", shell=FakeShell())
    assert capsys.readouterr().out == ""  # the same settings: nothing to say
    for choice, wanted in (("pytorch", "USE_TF=0 USE_TORCH=1"), ("both", "USE_TF=AUTO USE_TORCH=AUTO")):
        notebook.use_frameworks(choice, shell=FakeShell())
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and out.startswith("restart the runtime"), out
        assert "imported with USE_TF=1 USE_TORCH=0" in out and f"needs {wanted}" in out, out
    _fake_transformers(monkeypatch)  # transformers 5 records neither (it reads neither)
    notebook.use_frameworks("pytorch", shell=FakeShell())
    assert capsys.readouterr().out == ""
    monkeypatch.delitem(sys.modules, "transformers")  # not imported yet: nothing to say
    notebook.use_frameworks("both", shell=FakeShell())
    assert capsys.readouterr().out == ""


def test_switching_from_tensorflow_to_pytorch_in_one_process_keeps_hugging_face_models():
    """The set-up run twice in one runtime, "tensorflow" then "pytorch", before transformers is
    imported: its PyTorch models load (under transformers 4.x a USE_TORCH=0 left behind made
    them fail, "requires the PyTorch library"); once it is imported, choosing again asks for a
    restart under 4.x. The compatibility job of .ci/test runs this with transformers 4.57."""
    code = (
        "import importlib.metadata, sys\nfrom course_pkg import notebook\n"
        "notebook.use_frameworks('tensorflow', shell=None)\n"
        "notebook.use_frameworks('pytorch', shell=None)\n"
        "print('BEFORE IMPORT')\n"
        "import transformers\nfrom transformers import BertConfig, BertModel\n"
        "model = BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, "
        "intermediate_size=8, vocab_size=10))\n"
        "print('BERT:', type(model).__name__, transformers.utils.is_torch_available())\n"
        "print('MAJOR:', importlib.metadata.version('transformers').split('.')[0])\n"
        "notebook.use_frameworks('pytorch', shell=None)\n"
        "print('AGAIN')\n"
        "notebook.use_frameworks('tensorflow', shell=None)\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in (notebook.ENV, "USE_TF", "USE_TORCH"):
        env.pop(name, None)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.strip().splitlines()
    assert lines[0] == "BEFORE IMPORT", lines  # two choices before the import: no restart line
    assert lines[1] == "BERT: BertModel True", lines
    major = int(lines[2].split(": ")[1])
    assert lines[3] == "AGAIN", lines  # the same choice again: nothing to say
    if major < 5:  # transformers 4.x read USE_TF and USE_TORCH at its import
        assert len(lines) == 5 and lines[4].startswith("restart the runtime, then run this cell first: "
                                                       "transformers was imported with USE_TF=0 "
                                                       "USE_TORCH=1"), lines
    else:  # transformers 5 reads neither
        assert len(lines) == 4, lines


def test_pytorch_mode_keeps_tensorflow_out_of_transformers():
    """transformers 4.x imports TensorFlow when it is installed unless USE_TF=0 (the compatibility
    job of .ci/test runs this with transformers 4.57 beside TensorFlow 2.19)."""
    code = ("import sys\nfrom course_pkg import notebook\n"
            "notebook.use_frameworks('pytorch', shell=None)\n"
            "import transformers\nfrom transformers import BertConfig, BertModel\n"
            "BertModel(BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, "
            "intermediate_size=8, vocab_size=10))\n"
            "print('TF:', 'tensorflow' in sys.modules, 'keras' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in (notebook.ENV, "USE_TF", "USE_TORCH"):
        env.pop(name, None)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("TF: False False"), res.stdout
    assert "tensorflow" not in res.stderr.lower(), res.stderr[-2000:]
