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
    ("course_pkg.data", ["torch", "tensorflow", "keras"]),
    ("course_pkg.subword", ["torch", "tensorflow", "keras", "numpy", "tokenizers", "transformers"]),
    ("course_pkg.exercises", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.notebooks", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.grading", ["torch", "tensorflow", "keras"]),
    ("course_pkg.exercises.cell_times", ["torch", "tensorflow", "keras"]),
    ("course_pkg.notebook", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.authoring.__main__", ["torch", "tensorflow", "keras", "numpy"]),
    ("course_pkg.tensorflow", ["torch"]),
    ("course_pkg.torch", ["tensorflow", "keras"]),
]
# Every module of course_pkg.common imports no framework (nor transformers); all but these, not NumPy either.
COMMON_WITH_NUMPY = {"causal_lm", "huggingface"}  # generate's sampling; the checkpoints' arrays


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


for _path in sorted((ROOT / "course_pkg" / "common").rglob("*.py")):
    _concern = _path.relative_to(ROOT / "course_pkg" / "common").parts[0].removesuffix(".py")
    CASES.append((_module_name(_path), ["torch", "tensorflow", "keras", "transformers"]
                  + ([] if _concern in COMMON_WITH_NUMPY else ["numpy"])))


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


# What one twin has and the other has not, for a framework reason; everything else must match.
FRAMEWORK_ONLY_NAMES = {
    "attention.check_input_dtypes": "torch: Keras layers cast floating inputs to their compute dtype",
    "base.Dropout": "torch: nn.Dropout with a faster CPU mask (Keras' Dropout is used as is)",
    "decoding.eval_mode": "torch: eval mode and no autograd (Keras layers take training=False)",
    "decoding.decoding_graphs": "tensorflow: decoding compiled with tf.function (torch runs eagerly)",
}
FRAMEWORK_ONLY_METHODS = {
    "base.Layer": {"from_config": "torch: Keras' Layer has it", "compute_mask": "tensorflow: Keras plumbing"},
    "base.Model": {"from_config": "torch: Model is Layer", "get_config": "torch: Model is Layer"},
}
FRAMEWORK_ONLY_ATTRIBUTES = {
    "built",  # Keras' flag, set by the layers built at construction
    "pe",  # the position table: a registered buffer in PyTorch, a constant in Keras
}
# Parameters only one framework has: Keras' training flag, layer name and dtype policy, **kwargs.
FRAMEWORK_PARAMETERS = {"training", "kwargs", "name", "dtype"}
# weights.py is each framework's half of course_pkg.interop: its functions follow the framework's tree.
DIFFERENT_SIGNATURES = {"weights.weight_slots"}


def _twin_modules():
    import pkgutil

    import course_pkg.tensorflow as ctf
    import course_pkg.torch as cpt

    return [sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)) for pkg in (cpt, ctf)]


def _parameters(function):
    import inspect

    function = getattr(function, "__func__", function)
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
            if p.name not in FRAMEWORK_PARAMETERS]


def _public(module):
    import inspect

    return {name: obj for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
            and obj.__module__ == module.__name__}


def _methods(cls):
    """Public methods (and ``__init__``) defined by ``cls``, Keras' ``call`` named ``forward``."""
    import inspect

    methods = {name: value for name, value in vars(cls).items()
               if (name == "__init__" or not name.startswith("_"))
               and (inspect.isfunction(value) or isinstance(value, (classmethod, staticmethod)))}
    if "call" in methods:
        methods["forward"] = methods.pop("call")
    return methods


def _assigned_attributes(path):
    """class name -> public attributes it assigns (``self.x = ...``), read from the source."""
    import ast

    classes = {}
    for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(cls, ast.ClassDef):
            continue
        names = set()
        for node in ast.walk(cls):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            for target in targets:
                for item in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if (isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name)
                            and item.value.id == "self" and not item.attr.startswith("_")):
                        names.add(item.attr)
        classes[cls.name] = names - FRAMEWORK_ONLY_ATTRIBUTES
    return classes


def test_twins_hold_the_same_modules():
    torch_modules, tf_modules = _twin_modules()
    assert sorted(set(torch_modules) ^ set(tf_modules)) == [], "modules in one twin only"


def test_twin_modules_define_the_same_functions_classes_and_methods():
    """Each pair of twin modules defines the same public functions and classes; the functions and
    the classes' public methods take the same parameters (names, order, defaults), Keras' ``call``
    standing for ``forward`` and Keras-only parameters aside; the classes assign the same public
    attributes."""
    import importlib

    problems = []
    for module in _twin_modules()[0]:
        a, b = (importlib.import_module(f"course_pkg.{fw}.{module}") for fw in ("torch", "tensorflow"))
        names_a, names_b = _public(a), _public(b)
        for name in sorted(set(names_a) ^ set(names_b)):
            if f"{module}.{name}" not in FRAMEWORK_ONLY_NAMES:
                problems.append(f"{module}.{name}: in one twin only")
        for name in sorted(set(names_a) & set(names_b)):
            where, x, y = f"{module}.{name}", names_a[name], names_b[name]
            if isinstance(x, type) != isinstance(y, type):
                problems.append(f"{where}: a class in one twin, a function in the other")
            elif not isinstance(x, type):
                if where not in DIFFERENT_SIGNATURES and _parameters(x) != _parameters(y):
                    problems.append(f"{where}: signatures differ")
            else:
                allowed = FRAMEWORK_ONLY_METHODS.get(where, {})
                methods_a, methods_b = _methods(x), _methods(y)
                for method in sorted((set(methods_a) ^ set(methods_b)) - set(allowed)):
                    problems.append(f"{where}.{method}: in one twin only")
                for method in sorted(set(methods_a) & set(methods_b)):
                    if _parameters(methods_a[method]) != _parameters(methods_b[method]):
                        problems.append(f"{where}.{method}: signatures differ")
        attributes_a, attributes_b = (_assigned_attributes(ROOT / "course_pkg" / fw / f"{module}.py")
                                      for fw in ("torch", "tensorflow"))
        for cls in sorted(set(attributes_a) & set(attributes_b) & set(names_a)):
            for attribute in sorted(attributes_a[cls] ^ attributes_b[cls]):
                problems.append(f"{module}.{cls}.{attribute}: assigned in one twin only")
    assert problems == []
