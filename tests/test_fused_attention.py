"""The fused attention kernel (used when no weights are requested) against the explicit path
the book teaches: same outputs and gradients in float32 over a table of shapes and masks, no NaN
in half precision, zeros on fully blocked rows, and the models taking the fused path in training."""

import numpy as np
import pytest
from helpers import D_MODEL, NUM_HEADS, SRC_TOKENS, TGT_TOKENS, class_args

FUSED_ATOL = 1e-5

# (batch, heads, Tq, Tk, depth): square, one query (decoding), more queries than keys, one head
SHAPES = [(2, 2, 5, 6, 8), (1, 4, 1, 7, 16), (2, 3, 7, 3, 8), (3, 1, 9, 9, 4)]
MASKS = ["none", "padding", "look_ahead", "combined", "blocked_rows", "all_blocked"]


def make_mask(kind, batch, tq, tk):
    """A course mask (1.0 = blocked) of the given kind, in the shape the models build."""
    rng = np.random.default_rng(tq * 10 + tk)
    padding = np.zeros((batch, 1, 1, tk), np.float32)
    padding[0, ..., tk - max(1, tk // 3):] = 1.0  # the first sequence ends in padding
    look_ahead = np.triu(np.ones((tq, tk), np.float32), 1)  # (Tq, Tk): key j > query i blocked
    if kind == "none":
        return None
    if kind == "padding":
        return padding
    if kind == "look_ahead":
        return look_ahead
    if kind == "combined":
        return np.maximum(padding, look_ahead)  # (batch, 1, Tq, Tk)
    if kind == "blocked_rows":  # random blocks, one query of the last sequence sees nothing
        mask = (rng.random((batch, 1, tq, tk)) < 0.3).astype(np.float32)
        mask[-1, 0, tq // 2] = 1.0
        return mask
    if kind == "all_blocked":
        return np.ones((batch, 1, tq, tk), np.float32)
    raise AssertionError(kind)


def qkv(shape, seed=0):
    batch, heads, tq, tk, depth = shape
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(batch, heads, tq, depth)).astype(np.float32),
            rng.normal(size=(batch, heads, tk, depth)).astype(np.float32),
            rng.normal(size=(batch, heads, tk, depth)).astype(np.float32))


def fully_blocked_rows(mask, shape):
    """(batch, heads, Tq) bool: the queries that attend to no key."""
    batch, heads, tq, tk, _ = shape
    if mask is None:
        return np.zeros((batch, heads, tq), bool)
    return np.broadcast_to(mask, (batch, heads, tq, tk)).all(axis=-1)


def gradients(fw, fn, arrays, mask, cotangent):
    """d sum(fn(q, k, v, mask) * cotangent) / d(q, k, v), as NumPy."""
    if fw.name == "torch":
        torch = fw.torch
        leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*leaves, None if mask is None else torch.tensor(mask))
        (out * torch.tensor(cotangent)).sum().backward()
        return [leaf.grad.numpy() for leaf in leaves]
    tf = fw.tf
    leaves = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(leaves)
        out = fn(*leaves, None if mask is None else tf.constant(mask))
        loss = tf.reduce_sum(out * cotangent)
    return [g.numpy() for g in tape.gradient(loss, leaves)]


def explicit(fw):
    return lambda q, k, v, mask: fw.cp.scaled_dot_product_attention(q, k, v, mask)[0]


def fused(fw):
    return fw.cp.attention.fused_attention


@pytest.fixture(params=["guards_when_needed", "guards_always"])
def guards(request, fw):
    """The kernel's guards run only where needed (torch on the CPU, TensorFlow in a tf.cond) or
    always (torch on accelerators): both variants are tested here (``set_fused_guards``)."""
    previous = fw.cp.attention.set_fused_guards(request.param == "guards_always")
    yield request.param
    fw.cp.attention.set_fused_guards(previous)


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fused_equals_explicit_in_float32(fw, shape, mask_kind, guards, record_error):
    q, k, v = qkv(shape)
    mask = make_mask(mask_kind, shape[0], shape[2], shape[3])
    args = [fw.tensor(t) for t in (q, k, v)] + [None if mask is None else fw.tensor(mask)]
    a, b = fw.to_numpy(fused(fw)(*args)), fw.to_numpy(explicit(fw)(*args))
    assert a.shape == b.shape == (*shape[:3], shape[4])
    err = record_error(f"fused vs explicit {mask_kind} {shape} {fw.name}", np.abs(a - b).max())
    assert err <= FUSED_ATOL
    blocked = fully_blocked_rows(mask, shape)
    assert np.all(a[blocked] == 0.0), "a fully blocked row must give exact zeros"
    assert np.all(np.isfinite(a))


@pytest.mark.parametrize("mask_kind", ["none", "padding", "combined", "blocked_rows", "all_blocked"])
@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: "x".join(map(str, s)))
def test_fused_gradients_equal_explicit(fw, shape, mask_kind, guards, record_error):
    arrays = qkv(shape, seed=1)
    mask = make_mask(mask_kind, shape[0], shape[2], shape[3])
    cotangent = np.random.default_rng(2).normal(size=(*shape[:3], shape[4])).astype(np.float32)
    got = gradients(fw, fused(fw), arrays, mask, cotangent)
    want = gradients(fw, explicit(fw), arrays, mask, cotangent)
    for name, g, w in zip("qkv", got, want):
        assert np.all(np.isfinite(g)), f"d/d{name}: non-finite gradient"
        err = record_error(f"grad {name} {mask_kind} {shape} {fw.name}", np.abs(g - w).max())
        assert err <= FUSED_ATOL, f"d/d{name}"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("mask_kind", ["none", "combined", "blocked_rows", "all_blocked"])
def test_fused_half_precision_has_no_nan(fw, dtype, mask_kind, guards):
    """bfloat16 and float16 on the CPU: finite, zeros on fully blocked rows, near float32."""
    shape = SHAPES[0]
    q, k, v = qkv(shape)
    mask = make_mask(mask_kind, shape[0], shape[2], shape[3])
    m = None if mask is None else fw.tensor(mask)
    out = fw.to_numpy(fused(fw)(*(fw.tensor(t, dtype) for t in (q, k, v)), m)).astype(np.float32)
    want = fw.to_numpy(explicit(fw)(*(fw.tensor(t) for t in (q, k, v)), m))
    assert np.all(np.isfinite(out))
    assert np.all(out[fully_blocked_rows(mask, shape)] == 0.0)
    tol = {"bfloat16": 5e-2, "float16": 5e-3}[dtype]  # inputs rounded to 8 / 11 significant bits
    assert np.abs(out - want).max() <= tol


@pytest.mark.parametrize("mask_kind", ["padding", "look_ahead"])
def test_fused_keeps_the_nan_guarantees_of_the_explicit_path(fw, mask_kind, guards):
    """A NaN stored at a key reaches exactly the queries that attend to it, in both paths."""
    shape = (2, 2, 6, 6, 8)
    q, k, v = qkv(shape)
    mask = make_mask(mask_kind, 2, 6, 6)
    v[0, :, 5] = np.nan  # padded in sequence 0; a future key for all but the last query
    v[1, :, 2] = np.inf  # attended by every query of sequence 1 under padding
    args = [fw.tensor(t) for t in (q, k, v)] + [fw.tensor(mask)]
    a = fw.to_numpy(fused(fw)(*args))
    b = fw.to_numpy(explicit(fw)(*args))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    assert np.isnan(a).any() and not np.isnan(a).all()
    finite = ~np.isnan(b)
    assert np.abs(a[finite] - b[finite]).max() <= FUSED_ATOL


@pytest.mark.parametrize("mask_kind", ["none", "combined", "blocked_rows"])
def test_mha_without_weights_equals_mha_with_weights(fw, mask_kind):
    fw.seed(0)
    mha = fw.make("MultiHeadAttention", D_MODEL, NUM_HEADS)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, D_MODEL)).astype(np.float32)
    mask = make_mask(mask_kind, 2, 5, 5)
    kw = {} if mask is None else {"mask": mask}
    out, weights = fw.call(mha, x, x, x, need_weights=False, **kw)
    want, want_weights = fw.call(mha, x, x, x, **kw)
    assert weights is None and want_weights.shape == (2, NUM_HEADS, 5, 5)
    assert np.abs(out - want).max() <= FUSED_ATOL


def _count_explicit_calls(fw, monkeypatch):
    module = fw.cp.attention
    calls = []
    original = module.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, "scaled_dot_product_attention", counting)
    return calls


def test_training_call_takes_the_fused_path_and_the_switch_forces_the_explicit_one(fw, monkeypatch):
    """A Transformer called without return_attention forms no attention weights; with
    ``set_fused_attention(False)`` or ``return_attention=True`` it does, and the logits agree."""
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"))
    calls = _count_explicit_calls(fw, monkeypatch)
    fused_logits = fw.call(model, SRC_TOKENS, TGT_TOKENS)
    assert not calls, "the training path formed attention weights"
    logits, _ = fw.call(model, SRC_TOKENS, TGT_TOKENS, return_attention=True)
    assert len(calls) == 3 * 2  # encoder self, decoder self and cross, in each of 2 layers
    assert np.abs(fused_logits - logits).max() <= FUSED_ATOL
    previous = fw.cp.attention.set_fused_attention(False)
    try:
        assert previous is True
        calls.clear()
        explicit_logits = fw.call(model, SRC_TOKENS, TGT_TOKENS)
        assert len(calls) == 3 * 2
    finally:
        fw.cp.attention.set_fused_attention(previous)
    assert np.abs(fused_logits - explicit_logits).max() <= FUSED_ATOL


def test_switch_refuses_a_non_boolean(fw):
    with pytest.raises((TypeError, ValueError)):
        fw.cp.attention.set_fused_attention("no")
    with pytest.raises((TypeError, ValueError)):
        fw.cp.attention.set_fused_guards("always")
    assert fw.cp.attention.set_fused_guards(False) is False  # the default, kept


@pytest.mark.parametrize("mask_kind", ["combined", "blocked_rows"])
def test_fused_path_compiles_as_one_graph(fw, mask_kind):
    """The fused kernel compiles without a graph break (torch.compile with fullgraph=True;
    XLA via tf.function(jit_compile=True)), guards included, and equals the eager result."""
    shape = SHAPES[0]
    arrays, mask = qkv(shape), make_mask(mask_kind, shape[0], shape[2], shape[3])
    eager = fw.to_numpy(fused(fw)(*(fw.tensor(a) for a in arrays), fw.tensor(mask)))
    if fw.name == "torch":
        compiled = fw.torch.compile(fused(fw), fullgraph=True, backend="eager")
    else:
        compiled = fw.tf.function(fused(fw), jit_compile=True)
    out = fw.to_numpy(compiled(*(fw.tensor(a) for a in arrays), fw.tensor(mask)))
    assert np.abs(out - eager).max() <= FUSED_ATOL
    assert not np.any(np.isnan(out))
    assert np.all(out[fully_blocked_rows(mask, shape)] == 0)


@pytest.mark.parametrize("mask_kind", ["none", "padding", "combined"])
def test_fused_equals_the_frameworks_kernel(fw, mask_kind):
    """Where no row is fully blocked, the course's fused_attention is the framework's kernel:
    torch's F.scaled_dot_product_attention; on TensorFlow keras.ops.dot_product_attention
    (a composition there, in the (batch, T, heads, depth) layout), with the mask's polarity
    flipped (True = may attend)."""
    shape = SHAPES[0]
    arrays, mask = qkv(shape), make_mask(mask_kind, shape[0], shape[2], shape[3])
    assert not fully_blocked_rows(mask, shape).any()
    ours = fw.to_numpy(fused(fw)(*(fw.tensor(a) for a in arrays),
                                 None if mask is None else fw.tensor(mask)))
    attend = None if mask is None else mask == 0
    if fw.name == "torch":
        torch = fw.torch
        theirs = torch.nn.functional.scaled_dot_product_attention(
            *(torch.tensor(a) for a in arrays), attn_mask=None if attend is None else torch.tensor(attend))
        theirs = theirs.numpy()
    else:
        import keras

        q, k, v = (np.transpose(a, (0, 2, 1, 3)) for a in arrays)  # (batch, T, heads, depth)
        theirs = keras.ops.dot_product_attention(q, k, v, mask=attend)
        theirs = np.transpose(fw.to_numpy(theirs), (0, 2, 1, 3))
    assert np.abs(ours - theirs).max() <= FUSED_ATOL


def test_fused_with_large_finite_values_equals_explicit(fw, guards):
    """Finite values whose sum overflows float32 (the torch CPU check asks with one sum): no
    NaN, and the same output as the explicit path."""
    shape = SHAPES[0]
    q, k, v = qkv(shape)
    v = (np.abs(v) + 1).astype(np.float32) * np.float32(1e37)  # finite, positive, their sum is not
    mask = make_mask("combined", shape[0], shape[2], shape[3])
    args = [fw.tensor(a) for a in (q, k, v)] + [fw.tensor(mask)]
    ours = fw.to_numpy(fused(fw)(*args))
    reference = fw.to_numpy(explicit(fw)(*args))
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(ours, reference, rtol=1e-5)
