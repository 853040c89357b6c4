"""Half precision: no NaN anywhere, even with fully padded sequences."""

import numpy as np
import pytest
from helpers import D_MODEL, NUM_HEADS, TGT_VOCAB, class_args, flatten, random_params

DTYPES = ["float16", "bfloat16", "mixed_float16"]  # mixed is TF-only (skipped for torch)

# batch 3 (!= NUM_HEADS, NUM_LAYERS), source length 5, target length 4
SRC = np.array([[5, 9, 3, 0, 0], [0, 0, 0, 0, 0], [4, 7, 0, 0, 0]])  # row 1: fully padded source
TGT = np.array([[1, 6, 8, 0], [0, 0, 0, 0], [2, 5, 0, 0]])           # row 1: fully padded target


@pytest.mark.parametrize("dtype", DTYPES)
def test_transformer_half_precision_no_nan(fw, dtype):
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"), dtype=dtype)
    logits, attn = fw.call(model, SRC, TGT, return_attention=True)
    assert logits.shape == (3, 4, TGT_VOCAB)
    for a in flatten((logits, attn)):
        assert np.all(np.isfinite(a.astype(np.float32))), f"non-finite values in {dtype}"
    # fully masked rows produce all-zero attention, never NaN
    for w in attn["encoder_self"] + attn["decoder_cross"]:
        np.testing.assert_array_equal(w[1].astype(np.float32), 0.0)
    for w in attn["decoder_self"]:
        np.testing.assert_array_equal(w[1].astype(np.float32), 0.0)
    # the non-padded row still has proper attention distributions
    for w in attn["encoder_self"]:
        np.testing.assert_allclose(w[0].astype(np.float32).sum(-1), 1.0, atol=2e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_transformer_half_precision_close_to_float32(fw, interop, dtype):
    """Half-precision model with the same weights stays near the float32 one."""
    fw.seed(0)
    m32 = fw.make("Transformer", *class_args("Transformer"))
    params = random_params(m32, seed=11, scale=0.1)
    interop.set_weights(m32, params)
    ref_logits = fw.call(m32, SRC[:1], TGT[:1])
    if fw.name == "torch":
        m16 = fw.make("Transformer", *class_args("Transformer"))
        interop.set_weights(m16, params)
        m16 = m16.to(fw._dtype(dtype))
    else:
        m16 = fw.make("Transformer", *class_args("Transformer"), dtype=dtype)
        interop.set_weights(m16, params)
    half = fw.call(m16, SRC[:1], TGT[:1]).astype(np.float32)
    tol = 0.05 if dtype == "float16" else 0.3
    np.testing.assert_allclose(half, ref_logits, atol=tol * max(1.0, np.abs(ref_logits).max()))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_mha_half_precision_fully_masked(fw, dtype):
    fw.seed(0)
    mha = fw.make("MultiHeadAttention", D_MODEL, NUM_HEADS, dtype=dtype)
    x = np.random.default_rng(0).normal(size=(3, 4, D_MODEL)).astype(np.float32)  # batch 3 != heads
    mask = np.zeros((3, 1, 1, 4), np.float32)
    mask[1] = 1.0
    out, w = fw.call(mha, fw.tensor(x, dtype), fw.tensor(x, dtype), fw.tensor(x, dtype),
                     mask=mask)
    assert w.shape == (3, NUM_HEADS, 4, 4)
    assert np.all(np.isfinite(out.astype(np.float32)))
    np.testing.assert_array_equal(w[1].astype(np.float32), 0.0)
    np.testing.assert_allclose(w[0].astype(np.float32).sum(-1), 1.0, atol=2e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sdpa_half_precision_large_scores(fw, dtype):
    """Large logits in half precision must not overflow into NaN/inf weights."""
    q = np.full((1, 2, 4), 30.0, np.float32)
    k = np.full((1, 3, 4), 30.0, np.float32)
    v = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    mask = np.array([[[0, 0, 1], [1, 1, 1]]], np.float32)
    out, w = fw.cp.scaled_dot_product_attention(fw.tensor(q, dtype), fw.tensor(k, dtype),
                                                fw.tensor(v, dtype), fw.tensor(mask))
    out = fw.to_numpy(out).astype(np.float32)
    w = fw.to_numpy(w).astype(np.float32)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    np.testing.assert_allclose(w[0, 0], [0.5, 0.5, 0.0], atol=1e-2)
    np.testing.assert_array_equal(w[0, 1], 0.0)


def test_tf_dtype_propagates_to_sublayers(tf_fw):
    for dt in ("float16", "bfloat16"):
        model = tf_fw.make("Transformer", *class_args("Transformer"), dtype=dt)
        dtypes = {v.dtype for v in model.weights}
        assert dtypes == {dt}, dtypes
        assert model.decoder.layers[1].ffn.w2.compute_dtype == dt
    mixed = tf_fw.make("Transformer", *class_args("Transformer"), dtype="mixed_float16")
    assert mixed.encoder.layers[0].self_attn.wq.compute_dtype == "float16"
    assert mixed.encoder.layers[0].self_attn.wq.variable_dtype == "float32"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_large_activations_do_not_overflow_half_precision_logits(fw, dtype):
    """q·k = 90000 overflows float16 (max 65504); scaling q by 1/sqrt(dk) first keeps it finite."""
    q = fw.tensor(np.full((1, 2, 4), 150.0, np.float32), dtype)
    _, weights = fw.cp.scaled_dot_product_attention(q, q, q)
    w = fw.to_numpy(weights).astype(np.float32)
    assert np.isfinite(w).all()
    np.testing.assert_allclose(w, 0.5, atol=1e-2)
