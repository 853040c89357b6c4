"""Constants, example inputs, oracles and framework adapters shared by the test modules, and the
book's exercise solutions (``book_answer``, ``quiet_check``) for the exercise tests.

Test modules import from here (``from helpers import ...``); ``conftest.py`` holds only
the fixtures and pytest hooks. ``tests/`` is on ``sys.path`` because pytest (import mode
"prepend") inserts the folder of ``tests/conftest.py``, a folder without ``__init__.py``.

Each course class has one row in ``CLASS_SPECS``: its constructor arguments, the inputs
it is called with in the parity tests, and its NumPy oracle. Adding a class is adding a row.

One adapter per framework exposes the same small API, so every behavioural test is
written once and parametrized over ``fw`` (TensorFlow and PyTorch). The NumPy oracle
``course_pkg.reference`` is the third party in parity tests.
"""

import contextlib
import functools
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, NamedTuple

import numpy as np
import pytest

# ---------------------------------------------------------------------------
# Tiny model sizes used throughout the suite (keeps the suite fast on CPU).
# ---------------------------------------------------------------------------
D_MODEL = 16
NUM_HEADS = 2  # depth = D_MODEL // NUM_HEADS = 8 != NUM_HEADS
DFF = 24  # != d_model so (in, out) kernel layouts are distinguishable
NUM_LAYERS = 2
SRC_VOCAB = 23
TGT_VOCAB = 29
MAX_LEN = 12
PARITY_ATOL = 1e-5

# The default value of every constructor argument named in CLASS_SPECS.
SIZES = {
    "num_layers": NUM_LAYERS,
    "d_model": D_MODEL,
    "num_heads": NUM_HEADS,
    "dff": DFF,
    "src_vocab": SRC_VOCAB,
    "tgt_vocab": TGT_VOCAB,
    "max_len": MAX_LEN,
}

# Token batches with padding (pad id 0) in several places, incl. mid-sequence.
SRC_TOKENS = np.array([[5, 9, 3, 7, 0, 0], [4, 22, 1, 0, 8, 2]], dtype=np.int64)
TGT_TOKENS = np.array([[1, 6, 28, 3, 0], [2, 0, 7, 11, 4]], dtype=np.int64)


def _example_arrays(seed):
    """The arrays every row of CLASS_SPECS draws its inputs from (drawn in this order)."""
    from course_pkg import reference as ref

    rng = np.random.default_rng(seed)
    b, s, t = SRC_TOKENS.shape[0], SRC_TOKENS.shape[1], TGT_TOKENS.shape[1]
    return SimpleNamespace(
        x=rng.normal(size=(b, t, D_MODEL)).astype(np.float32),  # (batch, tgt_len, d_model)
        enc=rng.normal(size=(b, s, D_MODEL)).astype(np.float32),  # (batch, src_len, d_model)
        src_pad=ref.create_padding_mask(SRC_TOKENS).astype(np.float32),  # (batch, 1, 1, src_len)
        tgt_comb=ref.create_combined_mask(TGT_TOKENS).astype(np.float32),  # (batch, 1, tgt_len, tgt_len)
    )


class ClassSpec(NamedTuple):
    """How the tests build, call and check one course class."""

    args: tuple  # constructor parameter names, in order (keys of SIZES)
    inputs: Callable  # arrays of _example_arrays -> (args, kwargs) of the call
    oracle: Callable  # (reference module, float64 params, args, kwargs) -> expected outputs


CLASS_SPECS = {
    "MultiHeadAttention": ClassSpec(
        ("d_model", "num_heads"),
        lambda a: ((a.x, a.enc, a.enc), {"mask": a.src_pad}),
        lambda ref, p, args, kw: ref.multi_head_attention(p, *args, NUM_HEADS, **kw)),
    "PositionalEmbedding": ClassSpec(
        ("src_vocab", "d_model", "max_len"),
        lambda a: ((SRC_TOKENS,), {}),
        lambda ref, p, args, kw: ref.positional_embedding(p, *args)),
    "FeedForward": ClassSpec(
        ("d_model", "dff"),
        lambda a: ((a.x,), {}),
        lambda ref, p, args, kw: ref.feed_forward(p, *args)),
    "EncoderLayer": ClassSpec(
        ("d_model", "num_heads", "dff"),
        lambda a: ((a.x,), {"mask": a.tgt_comb, "return_attention": True}),
        lambda ref, p, args, kw: ref.encoder_layer(p, *args, NUM_HEADS, **kw)),
    "DecoderLayer": ClassSpec(
        ("d_model", "num_heads", "dff"),
        lambda a: ((a.x, a.enc), {"look_ahead_mask": a.tgt_comb, "padding_mask": a.src_pad,
                                  "return_attention": True}),
        lambda ref, p, args, kw: ref.decoder_layer(p, *args, NUM_HEADS, **kw)),
    "Encoder": ClassSpec(
        ("num_layers", "d_model", "num_heads", "dff", "src_vocab", "max_len"),
        lambda a: ((SRC_TOKENS,), {"mask": a.src_pad, "return_attention": True}),
        lambda ref, p, args, kw: ref.encoder(p, *args, NUM_HEADS, **kw)),
    "Decoder": ClassSpec(
        ("num_layers", "d_model", "num_heads", "dff", "tgt_vocab", "max_len"),
        lambda a: ((TGT_TOKENS, a.enc), {"look_ahead_mask": a.tgt_comb, "padding_mask": a.src_pad,
                                         "return_attention": True}),
        lambda ref, p, args, kw: ref.decoder(p, *args, NUM_HEADS, **kw)),
    "Transformer": ClassSpec(
        ("num_layers", "d_model", "num_heads", "dff", "src_vocab", "tgt_vocab", "max_len"),
        lambda a: ((SRC_TOKENS, TGT_TOKENS), {"return_attention": True}),
        lambda ref, p, args, kw: ref.transformer(p, *args, NUM_HEADS, pad_id=0)),
}

CLASS_NAMES = list(CLASS_SPECS)


def class_args(name, **sizes):
    """Positional constructor arguments of class ``name`` (tiny sizes).

    Keyword arguments override entries of SIZES, e.g. ``class_args("Encoder", num_layers=3)``.
    """
    unknown = set(sizes) - set(SIZES)
    if unknown:
        raise KeyError(f"unknown sizes {sorted(unknown)}; known: {sorted(SIZES)}")
    values = {**SIZES, **sizes}
    return tuple(values[arg] for arg in CLASS_SPECS[name].args)


def example_inputs(name, seed=0):
    """(args, kwargs) of NumPy inputs for calling class ``name`` (eval mode).

    Attention-returning classes are called with return_attention=True so all
    outputs get compared.
    """
    return CLASS_SPECS[name].inputs(_example_arrays(seed))


def reference_call(name, params, args, kwargs):
    """Run the NumPy oracle for class ``name`` on the inputs of example_inputs."""
    from course_pkg import reference as ref

    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}

    def f64(a):
        a = np.asarray(a)
        return a.astype(np.float64) if a.dtype.kind == "f" else a

    args = [f64(a) for a in args]
    kw = {k: (f64(v) if isinstance(v, np.ndarray) else v)
          for k, v in kwargs.items() if k != "return_attention"}
    return CLASS_SPECS[name].oracle(ref, p, args, kw)


# ---------------------------------------------------------------------------
# Comparing outputs
# ---------------------------------------------------------------------------
def flatten(out):
    """Flatten nested tuples/lists/dicts (dicts by sorted key) into arrays."""
    if isinstance(out, dict):
        res = []
        for k in sorted(out):
            res.extend(flatten(out[k]))
        return res
    if isinstance(out, (list, tuple)):
        res = []
        for o in out:
            res.extend(flatten(o))
        return res
    return [np.asarray(out)]


def max_abs_diff(a, b):
    """Largest absolute difference over two outputs of the same structure and shapes."""
    fa, fb = flatten(a), flatten(b)
    assert len(fa) == len(fb), f"output structures differ: {len(fa)} vs {len(fb)} arrays"
    err = 0.0
    for x, y in zip(fa, fb):
        assert x.shape == y.shape, f"shape mismatch {x.shape} vs {y.shape}"
        if x.size:
            err = max(err, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
    return err


def random_params(layer, seed=0, scale=0.3):
    """Random canonical weights (shapes from interop.get_weights), ~N(0, scale).

    LayerNorm gammas are 1 + N(0, scale) so normalisation stays well scaled.
    """
    from course_pkg import interop

    rng = np.random.default_rng(seed)
    params = {}
    for k, v in interop.get_weights(layer).items():
        v = np.asarray(v)
        r = rng.normal(0.0, scale, size=v.shape)
        if k.endswith("gamma"):
            r = r + 1.0
        params[k] = r.astype(np.float32)
    return params


def assert_disjoint_splits(corpus, total):
    """Every item of a Corpus sits in exactly one split, and no training source is tested."""
    sets = {k: set(v) for k, v in corpus.numbers.items()}
    assert sum(len(s) for s in sets.values()) == total  # no item twice
    assert not sets["train"] & sets["valid"]
    assert not sets["train"] & sets["test"]
    assert not sets["valid"] & sets["test"]
    train_src = {s for s, _ in corpus.train}
    assert not train_src & {s for s, _ in corpus.test}


# ---------------------------------------------------------------------------
# Framework adapters
# ---------------------------------------------------------------------------
class _Adapter:
    """What both framework adapters do the same way, on top of their tensor/leaf_to_numpy/call_raw."""

    def _conv(self, a):
        return self.tensor(a) if isinstance(a, np.ndarray) else a

    def to_numpy(self, t):
        """``t`` as NumPy arrays, nested dicts, lists and tuples kept (each leaf by ``leaf_to_numpy``)."""
        if isinstance(t, dict):
            return {k: self.to_numpy(v) for k, v in t.items()}
        if isinstance(t, (list, tuple)):
            return type(t)(self.to_numpy(v) for v in t)
        if t is None:
            return None
        return self.leaf_to_numpy(t)

    def call(self, layer, *args, **kw):
        """Inference-mode call (Keras training=False; torch eval + no_grad); returns NumPy
        (nested structures preserved)."""
        return self.to_numpy(self.call_raw(layer, *args, training=False, **kw))

    def call_train(self, layer, *args, **kw):
        return self.to_numpy(self.call_raw(layer, *args, training=True, **kw))


class TFAdapter(_Adapter):
    name = "tensorflow"

    def __init__(self):
        import keras
        import tensorflow as tf

        import course_pkg.tensorflow as cp

        self.tf = tf
        self.keras = keras
        self.cp = cp

    def tensor(self, a, dtype=None):
        tf = self.tf
        a = np.asarray(a)
        if dtype is None:
            if a.dtype == np.float64:
                dtype = "float32"
            else:
                return tf.constant(a)
        return tf.cast(tf.constant(a), dtype)

    def leaf_to_numpy(self, t):
        if hasattr(t, "dtype") and getattr(t.dtype, "name", "") == "bfloat16":
            t = self.tf.cast(t, "float32")
        return np.array(t)  # a writable copy

    def call_raw(self, layer, *args, training=False, **kw):
        args = [self._conv(a) for a in args]
        kw = {k: self._conv(v) for k, v in kw.items()}
        if isinstance(layer, self.keras.layers.Layer):
            return layer(*args, training=training, **kw)
        return layer(*args, **kw)

    def seed(self, n):
        self.keras.utils.set_random_seed(n)

    def make(self, cls, *args, dtype=None, **kw):
        """Construct a course class (by name or class), optionally in a dtype."""
        if isinstance(cls, str):
            cls = getattr(self.cp, cls)
        if dtype is not None:
            kw["dtype"] = dtype
        return cls(*args, **kw)

    cast_model = make

    def float_dtype_of(self, dtype):
        return {"mixed_float16": "float16"}.get(dtype, dtype)


class TorchAdapter(_Adapter):
    name = "torch"

    def __init__(self):
        import torch

        import course_pkg.torch as cp

        self.torch = torch
        self.cp = cp

    def _dtype(self, dtype):
        torch = self.torch
        if dtype is None or isinstance(dtype, torch.dtype):
            return dtype
        return {"float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "float64": torch.float64,
                "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}[dtype]

    def tensor(self, a, dtype=None):
        a = np.asarray(a)
        if dtype is None and a.dtype == np.float64:
            dtype = "float32"
        t = self.torch.from_numpy(np.ascontiguousarray(a).copy())
        return t.to(self._dtype(dtype)) if dtype is not None else t

    def leaf_to_numpy(self, t):
        torch = self.torch
        if isinstance(t, torch.Tensor):
            t = t.detach().cpu()
            if t.dtype == torch.bfloat16:
                t = t.to(torch.float32)
            return t.numpy()
        return np.asarray(t)

    def call_raw(self, layer, *args, training=False, **kw):
        torch = self.torch
        args = [self._conv(a) for a in args]
        kw = {k: self._conv(v) for k, v in kw.items()}
        if isinstance(layer, torch.nn.Module):
            layer.train(training)
            if training:
                return layer(*args, **kw)
        with torch.no_grad():
            return layer(*args, **kw)

    def seed(self, n):
        self.torch.manual_seed(n)

    def make(self, cls, *args, dtype=None, **kw):
        if isinstance(cls, str):
            cls = getattr(self.cp, cls)
        if dtype == "mixed_float16":
            pytest.skip("mixed_float16 is a Keras policy; no torch equivalent")
        m = cls(*args, **kw)
        if dtype is not None:
            m = m.to(self._dtype(dtype))
        return m

    cast_model = make

    def float_dtype_of(self, dtype):
        return dtype


ADAPTER_CLASSES = {adapter.name: adapter for adapter in (TFAdapter, TorchAdapter)}
FRAMEWORKS = list(ADAPTER_CLASSES)
_ADAPTERS = {}


def get_adapter(name):
    """The (cached) adapter of framework ``name``: "tensorflow" or "torch"."""
    if name not in _ADAPTERS:
        _ADAPTERS[name] = ADAPTER_CLASSES[name]()
    return _ADAPTERS[name]


# ---------------------------------------------------------------------------
# The exercises: the book's solutions, run in-process by exercises.check.
# ---------------------------------------------------------------------------
BOOK_DIR = Path(__file__).resolve().parent.parent / "book"


@functools.lru_cache(maxsize=None)
def book_solutions() -> dict:
    """{exercise id: the source of its solution cell} from the book's chapter notebooks."""
    from course_pkg.exercises.notebooks import exercise_of, find_chapters, read_notebook, source_text

    found = {}
    for path in find_chapters(BOOK_DIR):
        for cell in read_notebook(path)["cells"]:
            ex_id, role = exercise_of(cell)
            if role == "solution":
                found[ex_id] = source_text(cell)
    return found


def book_answer(ex_id):
    """The function that the book's solution of exercise ``ex_id`` defines."""
    from course_pkg import exercises

    namespace = {"np": np}
    exec(book_solutions()[ex_id], namespace)
    return namespace[exercises.get(ex_id).answer]


def quiet_check(ex_id, answer, params) -> str:
    """What ``exercises.check`` prints for ``answer`` on ``params`` (its AssertionError raised)."""
    from course_pkg import exercises

    with contextlib.redirect_stdout(io.StringIO()) as out:
        exercises.check(ex_id, answer, **params)
    return out.getvalue()


def probe_reason(ex_id, answer, seed, folder) -> str:
    """The grader's verdict on ``answer`` for ``seed``: why it fails, or ``""``. The grader's own
    probe cell runs here, in-process (no kernel), so the results reach ``score_probe`` serialised
    and read back as they do from a student's kernel; ``folder`` holds the probe's file."""
    import json

    from course_pkg.exercises import get, grading

    exercise = get(ex_id)
    out = Path(folder) / f"probe-{ex_id}.json"
    exec(grading.probe_cell(exercise, seed, out).source, {exercise.answer: answer})
    return grading.score_probe(exercise, seed, json.loads(out.read_text(encoding="utf-8")))
