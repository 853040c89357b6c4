"""Import hygiene: each framework is only imported where it is needed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    ("course_pkg", ["torch", "tensorflow", "keras"]),
    ("course_pkg.reference", ["torch", "tensorflow", "keras"]),
    ("course_pkg.interop", ["torch", "tensorflow", "keras"]),
    ("course_pkg.common.search", ["torch", "tensorflow", "keras"]),
    ("course_pkg.common.training", ["torch", "tensorflow", "keras"]),
    ("course_pkg.common.checks", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.common.image_checks", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.common.generation", ["torch", "tensorflow", "keras"]),
    ("course_pkg.common.files", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.common.huggingface", ["torch", "tensorflow", "keras", "transformers"]),
    ("course_pkg.data", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.notebooks", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.grading", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.cell_times", ["torch", "tensorflow", "keras"]),
    ("course_pkg.notebook", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.authoring.__main__", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.tensorflow", ["torch"]),
    ("course_pkg.torch", ["tensorflow", "keras"]),
]


@pytest.mark.parametrize("module,forbidden", CASES, ids=[c[0] for c in CASES])
def test_import_does_not_pull_other_framework(module, forbidden):
    code = (
        "import sys, importlib\n"
        f"importlib.import_module({module!r})\n"
        f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
        "print('LOADED:', bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{module} imported {res.stdout.strip()}\n{res.stderr[-2000:]}"


def test_framework_subpackages_export_api():
    import course_pkg.tensorflow as ctf
    import course_pkg.torch as cpt

    names = ["create_padding_mask", "create_look_ahead_mask", "create_combined_mask",
             "to_attend_mask", "to_blocked_mask", "from_attend_mask", "from_blocked_mask",
             "scaled_dot_product_attention", "positional_encoding", "MultiHeadAttention",
             "fused_attention", "set_fused_attention",
             "PositionalEmbedding", "FeedForward", "EncoderLayer", "DecoderLayer", "Encoder",
             "Decoder", "Transformer", "PatchEmbedding", "ViT", "vit_from_huggingface"]
    for mod in (ctf, cpt):
        missing = [n for n in names if not hasattr(mod, n)]
        assert not missing, f"{mod.__name__} lacks {missing}"


def test_framework_subpackages_export_the_same_names_and_function_signatures():
    """The two subpackages mirror each other: the same ``__all__``, and each function there
    takes the same parameters (names, order, defaults) in both."""
    import inspect

    import course_pkg.tensorflow as ctf
    import course_pkg.torch as cpt

    assert ctf.__all__ == cpt.__all__
    for name in cpt.__all__:
        a, b = getattr(ctf, name), getattr(cpt, name)
        if inspect.isfunction(a):
            assert inspect.signature(a) == inspect.signature(b), name
