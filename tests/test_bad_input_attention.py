"""Bad input to the attention functions and layers gives a clear error, never a broadcast;
NaN stored at a blocked position never reaches the output (both frameworks)."""

import numpy as np
import pytest

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(2, 3, 4)).astype(np.float32)  # (batch, Tq, depth)
KV = RNG.normal(size=(2, 5, 4)).astype(np.float32)  # (batch, Tk, depth)
PAD_MASK = np.zeros((2, 1, 5), np.float32)  # (batch, 1, Tk): the last key of each row is padding
PAD_MASK[:, :, 4] = 1.0


def _poisoned(value=np.nan):
    """KV with ``value`` stored at the blocked (padding) key."""
    kv = KV.copy()
    kv[:, 4] = value
    return kv


# ---------------------------------------------------------------------- key/value batch
@pytest.mark.parametrize("key_batch,value_batch", [(1, 2), (2, 1)])
def test_sdpa_refuses_keys_and_values_of_different_batch_sizes(fw, key_batch, value_batch):
    with pytest.raises(ValueError, match=r"key leading axes \(%d,\) differ from value leading axes \(%d,\): "
                                         r"each key needs exactly one value" % (key_batch, value_batch)):
        fw.cp.scaled_dot_product_attention(fw.tensor(Q), fw.tensor(KV[:key_batch]),
                                           fw.tensor(KV[:value_batch]))


def test_sdpa_still_broadcasts_shared_keys_over_query_heads(fw):
    q = RNG.normal(size=(2, 3, 6, 4)).astype(np.float32)  # (batch, heads, Tq, depth)
    kv = RNG.normal(size=(2, 1, 5, 4)).astype(np.float32)  # one key/value head shared by all
    out, weights = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(kv), fw.tensor(kv))
    assert tuple(out.shape) == (2, 3, 6, 4) and tuple(weights.shape) == (2, 3, 6, 5)


@pytest.mark.parametrize("query_batch,key_batch,value_batch,name,found,expected",
                         [(3, 1, 3, "key", 1, 3), (3, 3, 1, "value", 1, 3), (1, 3, 3, "key", 3, 1)])
def test_multi_head_attention_refuses_batch_sizes_that_differ(fw, query_batch, key_batch, value_batch, name,
                                                              found, expected):
    mha = fw.make("MultiHeadAttention", 4, 2)
    x = RNG.normal(size=(3, 5, 4)).astype(np.float32)
    with pytest.raises(ValueError, match=r"%s has batch size %d, expected %d \(that of the first input\)"
                       % (name, found, expected)):
        fw.call(mha, x[:query_batch, :2], x[:key_batch], x[:value_batch])


@pytest.mark.parametrize("layer", ["BahdanauAttention", "LuongAttention"])
def test_rnn_attention_refuses_query_and_keys_of_different_batch_sizes(fw, layer):
    attention = fw.make(layer, 4)
    with pytest.raises(ValueError, match=r"keys has batch size 1, expected 2 \(that of the first input\)"):
        fw.call(attention, Q[:, :1], KV[:1])


# -------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("query_dtype,key_dtype", [("float16", "float32"), ("float32", "float16")])
def test_sdpa_refuses_query_and_key_of_different_dtypes(fw, query_dtype, key_dtype):
    with pytest.raises(TypeError, match=f"query and key must have the same dtype, got {query_dtype} "
                                        f"and {key_dtype}"):
        fw.cp.scaled_dot_product_attention(fw.tensor(Q, query_dtype), fw.tensor(KV, key_dtype), fw.tensor(KV))


# ------------------------------------------------------------------ NaN at blocked keys
@pytest.mark.parametrize("poison", [np.nan, np.inf], ids=["nan", "inf"])
def test_sdpa_keeps_nan_values_at_blocked_keys_out_of_the_output(fw, poison):
    kv = fw.tensor(_poisoned(poison))
    out, weights = fw.cp.scaled_dot_product_attention(fw.tensor(Q), kv, kv, fw.tensor(PAD_MASK))
    clean, clean_weights = fw.cp.scaled_dot_product_attention(fw.tensor(Q), fw.tensor(KV[:, :4]),
                                                              fw.tensor(KV[:, :4]))
    out, weights = fw.to_numpy(out), fw.to_numpy(weights)
    assert np.isfinite(out).all()
    assert (weights[..., 4] == 0).all()
    np.testing.assert_allclose(out, fw.to_numpy(clean), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(weights[..., :4], fw.to_numpy(clean_weights), rtol=1e-6, atol=1e-7)


def test_sdpa_with_a_fully_blocked_row_and_nan_values_gives_zeros(fw):
    mask = np.ones((2, 1, 5), np.float32)
    kv = fw.tensor(_poisoned())
    out, weights = fw.cp.scaled_dot_product_attention(fw.tensor(Q), kv, kv, fw.tensor(mask))
    # keys 0-3 are blocked too but hold numbers: the output of a fully blocked row is exactly 0
    np.testing.assert_array_equal(fw.to_numpy(out), np.zeros_like(Q))


def test_multi_head_attention_keeps_nan_in_padded_keys_out_of_the_output(fw):
    mha = fw.make("MultiHeadAttention", 4, 2)
    mask = PAD_MASK[:, None]  # (batch, 1, 1, Tk)
    out = fw.call(mha, Q, _poisoned(), _poisoned(), mask=mask)[0]
    clean = fw.call(mha, Q, KV[:, :4], KV[:, :4])[0]
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, clean, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer,args", [("BahdanauAttention", (4,)), ("LuongAttention", (4,)),
                                        ("LuongAttention", (4, "general"))])
def test_rnn_attention_keeps_nan_in_padded_keys_out_of_the_context(fw, layer, args):
    fw.seed(0)
    attention = fw.make(layer, *args)
    context, weights = fw.call(attention, Q, _poisoned(), mask=PAD_MASK)
    clean, clean_weights = fw.call(attention, Q, KV[:, :4])
    assert np.isfinite(context).all() and (weights[..., 4] == 0).all()
    np.testing.assert_allclose(context, clean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights[..., :4], clean_weights, rtol=1e-5, atol=1e-7)


def test_valid_attention_numbers_are_unchanged_by_the_blocked_value_guard(fw):
    """With finite values the output is bit for bit weights @ values, as before the guard."""
    q, kv = fw.tensor(Q), fw.tensor(KV)
    for mask in (PAD_MASK, np.triu(np.ones((3, 5), np.float32), 1), None):
        mask = None if mask is None else fw.tensor(mask)
        out, weights = fw.cp.scaled_dot_product_attention(q, kv, kv, mask)
        np.testing.assert_array_equal(fw.to_numpy(out), fw.to_numpy(weights @ kv))
