"""Shared test harness for ``course_pkg``.

One adapter per framework exposes the same small API, so every behavioural
test is written once and parametrized over ``fw`` (TensorFlow and PyTorch).
The NumPy oracle ``course_pkg.reference`` is the third party in parity tests.
"""

import os

# The site tests (tests/site) drive a browser over the built book: only
# .ci/build-book runs them, after the build, with COURSE_SITE_TESTS=1.
collect_ignore = [] if os.environ.get("COURSE_SITE_TESTS") else ["site"]

# Must happen before anything imports TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"

import numpy as np
import pytest

# ---------------------------------------------------------------------------
# Tiny model sizes used throughout the suite (keeps the suite fast on CPU).
# ---------------------------------------------------------------------------
D_MODEL = 16
NUM_HEADS = 2
DFF = 24  # != d_model so (in, out) kernel layouts are distinguishable
NUM_LAYERS = 2
SRC_VOCAB = 23
TGT_VOCAB = 29
MAX_LEN = 12
PARITY_ATOL = 1e-5

CLASS_NAMES = [
    "MultiHeadAttention",
    "PositionalEmbedding",
    "FeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
]


def class_args(name):
    """Positional constructor arguments for each course class (tiny sizes)."""
    return {
        "MultiHeadAttention": (D_MODEL, NUM_HEADS),
        "PositionalEmbedding": (SRC_VOCAB, D_MODEL, MAX_LEN),
        "FeedForward": (D_MODEL, DFF),
        "EncoderLayer": (D_MODEL, NUM_HEADS, DFF),
        "DecoderLayer": (D_MODEL, NUM_HEADS, DFF),
        "Encoder": (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, SRC_VOCAB, MAX_LEN),
        "Decoder": (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, TGT_VOCAB, MAX_LEN),
        "Transformer": (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, SRC_VOCAB, TGT_VOCAB, MAX_LEN),
    }[name]


# Token batches with padding (pad id 0) in several places, incl. mid-sequence.
SRC_TOKENS = np.array([[5, 9, 3, 7, 0, 0], [4, 22, 1, 0, 8, 2]], dtype=np.int64)
TGT_TOKENS = np.array([[1, 6, 28, 3, 0], [2, 0, 7, 11, 4]], dtype=np.int64)


def example_inputs(name, seed=0):
    """(args, kwargs) of NumPy inputs for calling class ``name`` (eval mode).

    Attention-returning classes are called with return_attention=True so all
    outputs get compared.
    """
    from course_pkg import reference as ref

    rng = np.random.default_rng(seed)
    b, s, t = SRC_TOKENS.shape[0], SRC_TOKENS.shape[1], TGT_TOKENS.shape[1]
    x = rng.normal(size=(b, t, D_MODEL)).astype(np.float32)
    enc = rng.normal(size=(b, s, D_MODEL)).astype(np.float32)
    src_pad = ref.create_padding_mask(SRC_TOKENS).astype(np.float32)
    tgt_comb = ref.create_combined_mask(TGT_TOKENS).astype(np.float32)
    if name == "MultiHeadAttention":
        return (x, enc, enc), {"mask": src_pad}
    if name == "PositionalEmbedding":
        return (SRC_TOKENS,), {}
    if name == "FeedForward":
        return (x,), {}
    if name == "EncoderLayer":
        return (x,), {"mask": tgt_comb, "return_attention": True}
    if name == "DecoderLayer":
        return (x, enc), {"look_ahead_mask": tgt_comb, "padding_mask": src_pad,
                          "return_attention": True}
    if name == "Encoder":
        return (SRC_TOKENS,), {"mask": src_pad, "return_attention": True}
    if name == "Decoder":
        return (TGT_TOKENS, enc), {"look_ahead_mask": tgt_comb, "padding_mask": src_pad,
                                   "return_attention": True}
    if name == "Transformer":
        return (SRC_TOKENS, TGT_TOKENS), {"return_attention": True}
    raise KeyError(name)


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
    if name == "MultiHeadAttention":
        return ref.multi_head_attention(p, *args, NUM_HEADS, **kw)
    if name == "PositionalEmbedding":
        return ref.positional_embedding(p, *args)
    if name == "FeedForward":
        return ref.feed_forward(p, *args)
    if name == "EncoderLayer":
        return ref.encoder_layer(p, *args, NUM_HEADS, **kw)
    if name == "DecoderLayer":
        return ref.decoder_layer(p, *args, NUM_HEADS, **kw)
    if name == "Encoder":
        return ref.encoder(p, *args, NUM_HEADS, **kw)
    if name == "Decoder":
        return ref.decoder(p, *args, NUM_HEADS, **kw)
    if name == "Transformer":
        return ref.transformer(p, *args, NUM_HEADS, pad_id=0)
    raise KeyError(name)


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


# ---------------------------------------------------------------------------
# Framework adapters
# ---------------------------------------------------------------------------
def assert_disjoint_splits(corpus, total):
    """Every item of a Corpus sits in exactly one split, and no training source is tested."""
    sets = {k: set(v) for k, v in corpus.numbers.items()}
    assert sum(len(s) for s in sets.values()) == total  # no item twice
    assert not sets["train"] & sets["valid"]
    assert not sets["train"] & sets["test"]
    assert not sets["valid"] & sets["test"]
    train_src = {s for s, _ in corpus.train}
    assert not train_src & {s for s, _ in corpus.test}


class _Adapter:
    """What both framework adapters do the same way, on top of their tensor/to_numpy/call_raw."""

    def _conv(self, a):
        return self.tensor(a) if isinstance(a, np.ndarray) else a

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

    def to_numpy(self, t):
        if isinstance(t, dict):
            return {k: self.to_numpy(v) for k, v in t.items()}
        if isinstance(t, (list, tuple)):
            return type(t)(self.to_numpy(v) for v in t)
        if t is None:
            return None
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

    def to_numpy(self, t):
        torch = self.torch
        if isinstance(t, dict):
            return {k: self.to_numpy(v) for k, v in t.items()}
        if isinstance(t, (list, tuple)):
            return type(t)(self.to_numpy(v) for v in t)
        if t is None:
            return None
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


_ADAPTERS = {}


def get_adapter(name):
    if name not in _ADAPTERS:
        _ADAPTERS[name] = TFAdapter() if name == "tensorflow" else TorchAdapter()
    return _ADAPTERS[name]


FRAMEWORKS = ["tensorflow", "torch"]


@pytest.fixture(params=FRAMEWORKS)
def fw(request):
    """The framework adapter under test (parametrized: tensorflow, torch)."""
    return get_adapter(request.param)


@pytest.fixture
def tf_fw():
    return get_adapter("tensorflow")


@pytest.fixture
def torch_fw():
    return get_adapter("torch")


@pytest.fixture
def ref():
    from course_pkg import reference

    return reference


@pytest.fixture
def interop():
    from course_pkg import interop as _interop

    return _interop


# ---------------------------------------------------------------------------
# Parity error log, printed at the end of the run.
# ---------------------------------------------------------------------------
_PARITY_LOG = []


@pytest.fixture
def record_error(request):
    def _record(label, err):
        _PARITY_LOG.append((f"{request.node.name}: {label}", float(err)))
        print(f"[max abs err] {label}: {err:.3e}")
        return err

    return _record


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _PARITY_LOG:
        return
    terminalreporter.section("parity: max abs errors (float32)")
    worst = sorted(_PARITY_LOG, key=lambda kv: -kv[1])
    for label, err in worst[:15]:
        terminalreporter.write_line(f"{err:.3e}  {label}")
    terminalreporter.write_line(
        f"overall max over {len(_PARITY_LOG)} comparisons: {worst[0][1]:.3e}")
