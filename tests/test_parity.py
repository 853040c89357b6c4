"""Three-way parity: NumPy reference vs TensorFlow vs PyTorch, shared weights.

Weights are random (~N(0, 0.3)) and set through ``interop.set_weights`` on
both framework instances; the oracle gets exactly ``interop.get_weights``.
All comparisons in float32 with max abs err <= 1e-5.
"""

import numpy as np
import pytest
from helpers import (
    CLASS_NAMES,
    D_MODEL,
    PARITY_ATOL,
    class_args,
    example_inputs,
    flatten,
    max_abs_diff,
    random_params,
    reference_call,
)


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_class_three_way_parity(name, tf_fw, torch_fw, interop, record_error):
    args = class_args(name)
    tf_layer = tf_fw.make(name, *args)
    pt_layer = torch_fw.make(name, *args)
    params = random_params(tf_layer, seed=CLASS_NAMES.index(name))
    interop.set_weights(tf_layer, params)
    interop.set_weights(pt_layer, params)
    # the weights read back are exactly what was set, in both frameworks
    for layer in (tf_layer, pt_layer):
        got = interop.get_weights(layer)
        assert sorted(got) == sorted(params)
        for k in params:
            np.testing.assert_array_equal(np.asarray(got[k]), params[k], err_msg=k)

    inputs, kw = example_inputs(name)
    expected = reference_call(name, params, inputs, kw)
    out_tf = tf_fw.call(tf_layer, *inputs, **kw)
    out_pt = torch_fw.call(pt_layer, *inputs, **kw)

    e_tf = record_error(f"{name} tf vs ref", max_abs_diff(out_tf, expected))
    e_pt = record_error(f"{name} torch vs ref", max_abs_diff(out_pt, expected))
    e_x = record_error(f"{name} tf vs torch", max_abs_diff(out_tf, out_pt))
    # parity must not be trivial: outputs are O(1)
    assert float(np.max(np.abs(flatten(expected)[0]))) > 0.1, "the reference's output is near zero"
    assert e_tf <= PARITY_ATOL, f"TensorFlow vs the NumPy reference: max abs err {e_tf:.3e}"
    assert e_pt <= PARITY_ATOL, f"PyTorch vs the NumPy reference: max abs err {e_pt:.3e}"
    assert e_x <= PARITY_ATOL, f"TensorFlow vs PyTorch: max abs err {e_x:.3e}"


def test_sdpa_three_way_parity(tf_fw, torch_fw, ref, record_error):
    rng = np.random.default_rng(0)
    # batch 2, heads 3, q_len 5, k_len 6, value width 7, depth 8: the (batch, 1, 1, k_len) mask
    # broadcasts over heads, and a mask applied along the wrong axis changes the numbers
    q = rng.normal(size=(2, 3, 5, 8)).astype(np.float32) * 2
    k = rng.normal(size=(2, 3, 6, 8)).astype(np.float32) * 2
    v = rng.normal(size=(2, 3, 6, 7)).astype(np.float32)
    mask = ref.create_padding_mask(np.array([[1, 2, 0, 3, 4, 0], [5, 5, 5, 5, 5, 5]])).astype(np.float32)
    expected = ref.scaled_dot_product_attention(q.astype(np.float64), k.astype(np.float64),
                                                v.astype(np.float64), mask.astype(np.float64))
    outs = {}
    for fw in (tf_fw, torch_fw):
        o = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(v),
                                               fw.tensor(mask))
        outs[fw.name] = fw.to_numpy(o)
    e_tf = record_error("sdpa tensorflow vs ref", max_abs_diff(outs["tensorflow"], expected))
    e_pt = record_error("sdpa torch vs ref", max_abs_diff(outs["torch"], expected))
    e_x = record_error("sdpa tf vs torch", max_abs_diff(outs["tensorflow"], outs["torch"]))
    assert e_tf <= PARITY_ATOL, f"TensorFlow vs the NumPy reference: max abs err {e_tf:.3e}"
    assert e_pt <= PARITY_ATOL, f"PyTorch vs the NumPy reference: max abs err {e_pt:.3e}"
    assert e_x <= PARITY_ATOL, f"TensorFlow vs PyTorch: max abs err {e_x:.3e}"


def test_sdpa_fully_masked_reference(ref):
    q = np.ones((1, 2, 3)); k = np.ones((1, 4, 3)); v = np.ones((1, 4, 5))  # q_len 2 != width 5
    mask = np.zeros((1, 2, 4)); mask[0, 0] = 1
    out, w = ref.scaled_dot_product_attention(q, k, v, mask)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    np.testing.assert_array_equal(w[0, 0], 0)
    np.testing.assert_array_equal(out[0, 0], 0)
    np.testing.assert_allclose(w[0, 1], 0.25)


def _sinusoids(length, d_model):
    """The paper's table: sin at even columns 2i, cos at odd ones, of pos / 10000^(2i / d_model)."""
    pos = np.arange(length)[:, None].astype(np.float64)
    i = np.arange(d_model // 2)[None, :].astype(np.float64)
    angle = pos / np.power(10000.0, 2 * i / d_model)
    table = np.zeros((length, d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle)
    return table


PE_SIZES = [(1, 8), (10, 16), (50, 12)]


@pytest.mark.parametrize("length,d_model", PE_SIZES)
def test_positional_encoding_formula(fw, length, d_model, record_error):
    expected = _sinusoids(length, d_model)
    got = fw.to_numpy(fw.cp.positional_encoding(length, d_model))
    assert got.dtype == np.float32, got.dtype
    assert got.shape == (length, d_model)
    err = record_error(f"positional_encoding({length},{d_model}) {fw.name}",
                       max_abs_diff(got, expected))
    assert err <= PARITY_ATOL


@pytest.mark.parametrize("length,d_model", PE_SIZES)
def test_reference_positional_encoding_formula(ref, length, d_model):
    expected = _sinusoids(length, d_model)
    r = np.asarray(ref.positional_encoding(length, d_model))
    assert r.shape == (length, d_model)
    np.testing.assert_allclose(r, expected, atol=1e-6)


def test_positional_encoding_first_rows_are_sines_and_cosines(fw):
    pe = fw.to_numpy(fw.cp.positional_encoding(3, 4))
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1], atol=1e-7)
    np.testing.assert_allclose(pe[1], [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)], atol=1e-6)


def test_positional_embedding_formula(fw, interop):
    layer = fw.make("PositionalEmbedding", 20, D_MODEL, 10)
    params = random_params(layer, seed=3)
    interop.set_weights(layer, params)
    toks = np.array([[3, 0, 19, 7], [1, 2, 3, 4]])
    got = fw.call(layer, toks)
    emb = params["token_embedding.embeddings"]
    expected = emb[toks] * np.sqrt(D_MODEL) + fw.to_numpy(fw.cp.positional_encoding(4, D_MODEL))
    assert got.shape == (2, 4, D_MODEL)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_feed_forward_formula(fw, interop):
    layer = fw.make("FeedForward", D_MODEL, 24)
    params = random_params(layer, seed=4)
    interop.set_weights(layer, params)
    x = np.random.default_rng(0).normal(size=(2, 3, D_MODEL)).astype(np.float32)
    h = np.maximum(x @ params["w1.kernel"] + params["w1.bias"], 0)
    expected = h @ params["w2.kernel"] + params["w2.bias"]
    np.testing.assert_allclose(fw.call(layer, x), expected, atol=1e-5)


def test_reference_layer_norm(ref):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 8)) * 5 + 2
    gamma, beta = rng.normal(size=8), rng.normal(size=8)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-6) * gamma + beta
    np.testing.assert_allclose(ref.layer_norm({"gamma": gamma, "beta": beta}, x), expected, atol=1e-10)


def test_reference_encoder_layer_is_post_ln(ref, tf_fw, interop):
    """Cross-check the oracle itself against the spec formula built from its pieces."""
    layer = tf_fw.make("EncoderLayer", D_MODEL, 2, 24)
    p = {k: v.astype(np.float64) for k, v in random_params(layer, seed=5).items()}
    x = np.random.default_rng(1).normal(size=(3, 4, D_MODEL))  # batch 3 != 2 heads
    sub = lambda prefix: {k[len(prefix) + 1:]: v for k, v in p.items() if k.startswith(prefix + ".")}
    a, _ = ref.multi_head_attention(sub("self_attn"), x, x, x, 2)
    h = ref.layer_norm(sub("norm1"), x + a)
    expected = ref.layer_norm(sub("norm2"), h + ref.feed_forward(sub("ffn"), h))
    got, attn = ref.encoder_layer(p, x, 2)
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert attn.shape == (3, 2, 4, 4)


def test_reference_accepts_float32(tf_fw, ref, record_error):
    """The oracle gives the same numbers from float32 and float64 inputs."""
    model = tf_fw.make("Transformer", *class_args("Transformer"))
    p32 = random_params(model, seed=21)
    p64 = {k: v.astype(np.float64) for k, v in p32.items()}
    src, tgt = example_inputs("Transformer")[0]
    a = ref.transformer(p32, src, tgt, 2, pad_id=0)
    b = ref.transformer(p64, src, tgt, 2, pad_id=0)
    assert record_error("reference float32 vs float64", max_abs_diff(a, b)) <= PARITY_ATOL
