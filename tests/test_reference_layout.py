"""The NumPy oracle's layout: ``course_pkg/reference/`` mirrors the twins, and keeps its old names.

* every public name of the former single module ``course_pkg/reference.py`` is still
  ``course_pkg.reference.<name>`` (and no other public name is), so ``ref.anything`` and
  ``from course_pkg.reference import ...`` read as before;
* every module of ``course_pkg/reference/`` has a twin of the same name in both
  ``course_pkg/torch/`` and ``course_pkg/tensorflow/``, and its docstring names them;
* every module stays under the 500-line limit and imports no underscore name of another module.

Checked on the files and on ``course_pkg.reference`` alone: no framework is imported.
"""

import ast
import types
from pathlib import Path

import pytest

import course_pkg.reference as ref

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "course_pkg" / "reference"
TWINS = [ROOT / "course_pkg" / "torch", ROOT / "course_pkg" / "tensorflow"]
MAX_LINES = 500

# The public names of course_pkg/reference.py before it became a package (its imported modules
# ``math`` and ``np`` and the ``annotations`` of ``from __future__`` left out).
PUBLIC_NAMES = [
    "ACTIVATIONS", "LAYER_NORM_EPSILON", "attention_decoder", "attention_rollout", "bahdanau_attention",
    "bert", "combine_heads", "conv_stem", "create_combined_mask", "create_look_ahead_mask",
    "create_padding_mask", "decoder", "decoder_layer", "decoder_layer_parameters", "dense", "encoder",
    "encoder_layer", "encoder_layer_parameters", "feed_forward", "gelu", "gelu_tanh", "gpt", "greedy_step",
    "gru", "gru_cell", "gru_parameters", "layer_norm", "learned_positional_encoding", "log_softmax",
    "luong_attention", "masked_loss", "masked_softmax", "mlm_inputs", "multi_head_attention",
    "noam_learning_rate", "patch_embedding", "patchify", "positional_embedding", "positional_encoding",
    "prefix_lm_mask", "scaled_dot_product_attention", "seq2seq", "seq2seq_decoder", "seq2seq_encoder",
    "sigmoid", "smoothed_targets", "softmax", "split_heads", "sub", "teacher_forcing", "top_k_filter",
    "top_k_probabilities", "top_p_filter", "top_p_probabilities", "transformer", "vit",
    "vit_embedding_parameters", "vit_features",
]
# Public names added since, each in the module of its twins: Llama's components (issue 28).
PUBLIC_NAMES += ["apply_rotary", "rms_norm", "rotary_cos_sin", "rotate_half", "silu"]
PUBLIC_NAMES += ["llama", "llama_block"]  # the Llama model (issue 28)
PUBLIC_NAMES += ["kv_cache_bytes", "repeat_kv", "rope_rotate"]  # answers of exercises 8.4 to 8.6 (issue 28)
PUBLIC_NAMES += ["perplexity"]  # the answer of exercise 8.7 (issue 34)
PUBLIC_NAMES += ["grouped_query_attention"]  # today's options, apart from the paper's attention (issue 36)
# The decoder-only plumbing that GPT and Llama share, in causal_lm.py and masks.py as in the twins (issue 39).
PUBLIC_NAMES += ["causal_lm_inputs", "causal_padding_mask", "lm_logits", "real_token_positions"]

# Modules of course_pkg/reference/ without a twin of the same name, each with its reason. None today:
# the building blocks (dense, layer norm, sub) live in _layers.py as the twins' leaf layers do.
NO_TWIN = {}

MODULES = sorted(path.stem for path in REFERENCE.glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_every_former_name_is_still_reachable(name):
    assert hasattr(ref, name), f"course_pkg.reference.{name} is gone"
    assert name in ref.__all__


def test_the_package_exports_exactly_the_former_names():
    public = {name for name in dir(ref) if not name.startswith("_")
              and not isinstance(getattr(ref, name), types.ModuleType)}
    assert public == set(PUBLIC_NAMES)
    assert sorted(ref.__all__) == sorted(PUBLIC_NAMES)


def test_the_reexports_are_the_modules_functions():
    for name in PUBLIC_NAMES:
        value = getattr(ref, name)
        if isinstance(value, types.FunctionType):
            module = value.__module__
            assert module.startswith("course_pkg.reference."), f"{name} comes from {module}"
            assert getattr(__import__(module, fromlist=[name]), name) is value


def test_the_no_twin_list_names_real_modules():
    assert set(NO_TWIN) <= set(MODULES), f"stale NO_TWIN entries: {set(NO_TWIN) - set(MODULES)}"


@pytest.mark.parametrize("module", MODULES)
def test_every_module_has_twins_of_the_same_name(module):
    if module in NO_TWIN:
        pytest.skip(NO_TWIN[module])
    for twins in TWINS:
        assert (twins / f"{module}.py").is_file(), \
            f"course_pkg/reference/{module}.py has no twin course_pkg/{twins.name}/{module}.py"


@pytest.mark.parametrize("module", MODULES)
def test_every_module_is_short_names_its_twins_and_imports_no_private_name(module):
    source = (REFERENCE / f"{module}.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_LINES
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree)
    assert docstring, f"course_pkg/reference/{module}.py has no module docstring"
    if module not in NO_TWIN:
        for twins in TWINS:
            assert f"course_pkg.{twins.name}.{module}" in docstring, \
                f"the docstring of course_pkg/reference/{module}.py does not name its {twins.name} twin"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            private = [alias.name for alias in node.names if alias.name.startswith("_")]
            assert not private, f"course_pkg/reference/{module}.py imports {private} from {node.module}"
