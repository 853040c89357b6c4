"""Bad input to the attention functions and layers gives a clear error, never a broadcast;
NaN stored at a blocked position never reaches the output (both frameworks)."""

import re

import numpy as np
import pytest
from helpers import flatten

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


# ------------------------------------------------------------------ dtypes into the layers
DTYPE_LAYERS = [("MultiHeadAttention", (4, 2), ("query", "key", "value")),
                ("BahdanauAttention", (4,), ("query", "keys")),
                ("LuongAttention", (4, "general"), ("query", "keys"))]


@pytest.mark.parametrize("layer,args,names", DTYPE_LAYERS, ids=[f"{r[0]}-{r[1][-1]}" for r in DTYPE_LAYERS])
@pytest.mark.parametrize("which", [0, 1])
def test_attention_layers_refuse_or_cast_an_input_of_another_dtype(fw, layer, args, names, which):
    """torch refuses an input whose dtype is not the weights'; Keras casts it to the layer's dtype."""
    attention = fw.make(layer, *args)
    inputs = [fw.tensor(Q if i == 0 else KV, "float16" if i == which else "float32")
              for i in range(len(names))]
    if fw.name == "torch":
        with pytest.raises(TypeError, match=rf"^{names[which]} has dtype float16, expected float32 \(that of "
                                            r"the layer's weights\); cast it first$"):
            fw.call(attention, *inputs)
    else:
        out = fw.call_raw(attention, *inputs)[0]
        assert out.dtype.name == "float32"


def test_luong_dot_attention_refuses_keys_of_another_dtype_than_the_query(fw):
    """``score="dot"`` has no weights: in torch the keys must match the query's dtype."""
    attention = fw.make("LuongAttention", 4)
    query, keys = fw.tensor(Q), fw.tensor(KV, "float16")
    if fw.name == "torch":
        with pytest.raises(TypeError, match=r"^keys has dtype float16, expected float32 \(that of the first "
                                            r"input, query\); cast it first$"):
            fw.call(attention, query, keys)
    else:
        assert fw.call_raw(attention, query, keys)[0].dtype.name == "float32"


def test_torch_attention_layers_accept_mixed_dtypes_under_autocast(fw):
    if fw.name != "torch":
        pytest.skip("torch.autocast is torch's")
    torch = fw.torch
    mha = fw.make("MultiHeadAttention", 4, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fw.call_raw(mha, fw.tensor(Q), fw.tensor(KV, "bfloat16"), fw.tensor(KV))[0]
    assert out.dtype == torch.bfloat16 and tuple(out.shape) == Q.shape


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
    row_blocked = np.zeros((2, 3, 5), np.float32)  # (batch, Tq, Tk): one query blocked everywhere
    row_blocked[1, 2] = 1.0
    for mask in (PAD_MASK, np.triu(np.ones((3, 5), np.float32), 1), row_blocked, None):
        mask = None if mask is None else fw.tensor(mask)
        out, weights = fw.cp.scaled_dot_product_attention(q, kv, kv, mask)
        np.testing.assert_array_equal(fw.to_numpy(out), fw.to_numpy(weights @ kv))


# ----------------------------------------------- NaN at keys blocked for only some queries
SELF = RNG.normal(size=(2, 5, 4)).astype(np.float32)  # (batch, T, depth): self-attention
LOOK_AHEAD = np.triu(np.ones((5, 5), np.float32), 1)  # (Tq, Tk): query i sees keys 0..i
FUTURE = 3  # the key holding the bad value: blocked for queries 0-2, seen by queries 3 and 4


def _with_value_at(x, position, value, feature=1):
    """A copy of ``x`` (batch, T, depth) with ``value`` stored at one feature of ``position``."""
    x = x.copy()
    x[:, position, feature] = value
    return x


@pytest.mark.parametrize("poison", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_sdpa_keeps_a_bad_value_at_a_look_ahead_blocked_key_out_of_earlier_queries(fw, poison):
    q, k, mask = fw.tensor(SELF), fw.tensor(SELF), fw.tensor(LOOK_AHEAD)
    out, weights = fw.cp.scaled_dot_product_attention(q, k, fw.tensor(_with_value_at(SELF, FUTURE, poison)),
                                                      mask)
    zeroed, zeroed_weights = fw.cp.scaled_dot_product_attention(
        q, k, fw.tensor(_with_value_at(SELF, FUTURE, 0.0)), mask)
    out, zeroed = fw.to_numpy(out), fw.to_numpy(zeroed)
    assert np.isfinite(out[:, :FUTURE]).all()
    np.testing.assert_array_equal(out[:, :FUTURE], zeroed[:, :FUTURE])
    np.testing.assert_array_equal(fw.to_numpy(weights), fw.to_numpy(zeroed_weights))
    # the queries that attend to the bad key still see it: a genuine NaN is not hidden
    assert np.isnan(out[:, FUTURE:]).all()


def test_sdpa_gives_nan_for_every_query_that_attends_to_a_nan_value(fw):
    """A NaN at a key that no mask blocks reaches every query, as without a mask."""
    kv = fw.tensor(_with_value_at(KV, 2, np.nan))
    out = fw.to_numpy(fw.cp.scaled_dot_product_attention(fw.tensor(Q), kv, kv, fw.tensor(PAD_MASK))[0])
    unmasked = fw.to_numpy(fw.cp.scaled_dot_product_attention(fw.tensor(Q), kv, kv)[0])
    assert np.isnan(out).all() and np.isnan(unmasked).all()


def test_sdpa_keeps_a_nan_value_out_of_each_query_that_blocks_its_key(fw):
    """Per-query masks (batch, heads, Tq, Tk): only the queries that attend to the NaN get NaN."""
    q = RNG.normal(size=(2, 3, 4, 4)).astype(np.float32)  # (batch, heads, Tq, depth)
    v = RNG.normal(size=(2, 3, 5, 4)).astype(np.float32)  # (batch, heads, Tk, depth)
    v[0, 1, 2, 3] = np.nan  # batch 0, head 1, key 2
    mask = np.zeros((2, 1, 4, 5), np.float32)
    mask[:, :, 1:, 2] = 1.0  # queries 1-3 block key 2; query 0 attends to it
    out = fw.to_numpy(fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(v), fw.tensor(v),
                                                         fw.tensor(mask))[0])
    bad = np.zeros(out.shape[:-1], bool)
    bad[0, 1, 0] = True
    assert np.isnan(out[bad]).all() and np.isfinite(out[~bad]).all()


def test_multi_head_attention_keeps_a_nan_at_a_future_position_out_of_earlier_queries(fw):
    fw.seed(0)
    mha = fw.make("MultiHeadAttention", 4, 2)
    poisoned = _with_value_at(SELF, FUTURE, np.nan)
    out = fw.call(mha, SELF, SELF, poisoned, mask=LOOK_AHEAD)[0]
    clean = fw.call(mha, SELF, SELF, SELF, mask=LOOK_AHEAD)[0]
    assert np.isfinite(out[:, :FUTURE]).all() and np.isnan(out[:, FUTURE:]).all()
    np.testing.assert_allclose(out[:, :FUTURE], clean[:, :FUTURE], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layer,args", [("BahdanauAttention", (4,)), ("LuongAttention", (4,)),
                                        ("LuongAttention", (4, "general"))])
def test_rnn_attention_keeps_a_nan_key_out_of_the_queries_that_block_it(fw, layer, args):
    fw.seed(0)
    attention = fw.make(layer, *args)
    mask = np.zeros((2, 3, 5), np.float32)  # (batch, Tq, Tk)
    mask[:, 0, 4] = 1.0  # query 0 blocks key 4; queries 1 and 2 attend to it
    context, weights = fw.call(attention, Q, _with_value_at(KV, 4, np.nan), mask=mask)
    zeroed, zeroed_weights = fw.call(attention, Q, _with_value_at(KV, 4, 0.0), mask=mask)
    assert np.isfinite(context[:, 0]).all() and np.isnan(context[:, 1:]).all()
    np.testing.assert_array_equal(context[:, 0], zeroed[:, 0])
    np.testing.assert_array_equal(weights[:, 0], zeroed_weights[:, 0])


# ------------------------------------- the free functions: query/key batches, integers, arrays
def _message(fw, error, call):
    with pytest.raises(error) as info:
        call(fw)
    return str(info.value)


ATTENTIONS = ["scaled_dot_product_attention", "fused_attention"]
QK_AXES = ("query leading axes {} do not broadcast with key leading axes {}: each batch (or head) axis "
           "must be the same in both, or 1 in one of them")


@pytest.mark.parametrize("function", ATTENTIONS)
@pytest.mark.parametrize("q_shape,kv_shape", [((2, 3, 4), (3, 5, 4)), ((2, 3, 6, 4), (2, 2, 5, 4))],
                         ids=["batch", "heads"])
def test_attention_refuses_query_and_key_batches_or_heads_that_differ(fw, function, q_shape, kv_shape):
    q, kv = RNG.normal(size=q_shape).astype(np.float32), RNG.normal(size=kv_shape).astype(np.float32)
    with pytest.raises(ValueError, match="^" + re.escape(QK_AXES.format(q_shape[:-2], kv_shape[:-2])) + "$"):
        getattr(fw.cp, function)(fw.tensor(q), fw.tensor(kv), fw.tensor(kv))


@pytest.mark.parametrize("function", ATTENTIONS)
@pytest.mark.parametrize("which", ["query", "key", "value"])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_attention_refuses_integer_query_key_or_value_naming_it(fw, function, which, dtype):
    inputs = {"query": Q, "key": KV, "value": KV}
    inputs[which] = inputs[which].astype(dtype)
    with pytest.raises(TypeError, match=rf"^{which} must be a floating-point tensor \(float16, bfloat16, "
                                        rf"float32 or float64\), got dtype {dtype}; cast it first$"):
        getattr(fw.cp, function)(*(fw.tensor(inputs[name]) for name in ("query", "key", "value")))


def test_attention_messages_are_the_same_in_both_frameworks(tf_fw, torch_fw):
    kv3 = np.concatenate([KV, KV[:1]])  # (3, Tk, depth): a batch of 3 keys for 2 queries
    sdpa = "scaled_dot_product_attention"
    for error, call in [
        (ValueError, lambda fw: getattr(fw.cp, sdpa)(fw.tensor(Q), fw.tensor(kv3), fw.tensor(kv3))),
        (TypeError, lambda fw: getattr(fw.cp, sdpa)(fw.tensor(Q.astype(np.int64)), fw.tensor(KV),
                                                    fw.tensor(KV))),
        (ValueError, lambda fw: fw.cp.positional_encoding(-1, 8)),
        (TypeError, lambda fw: fw.cp.positional_encoding(4, 8.0)),
    ]:
        assert _message(tf_fw, error, call) == _message(torch_fw, error, call)


@pytest.mark.parametrize("function", ATTENTIONS)
def test_attention_takes_numpy_arrays_in_both_frameworks(fw, function):
    """TensorFlow converts arrays; torch now does too (it failed with NumPy's 'axes don't match array')."""
    mask = np.triu(np.ones((3, 5), np.float32), 1)
    from_arrays = getattr(fw.cp, function)(Q, KV, KV, mask)
    from_tensors = getattr(fw.cp, function)(fw.tensor(Q), fw.tensor(KV), fw.tensor(KV), fw.tensor(mask))
    got, expected = flatten(fw.to_numpy(from_arrays)), flatten(fw.to_numpy(from_tensors))
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("length,d_model,error,shown", [
    (-1, 8, ValueError, "length must be an int >= 0, got -1"),
    (4, -8, ValueError, "d_model must be an int >= 0, got -8"),
    (2.5, 8, TypeError, "length must be an int >= 0, got 2.5 (a float)"),
    (4, "8", TypeError, "d_model must be an int >= 0, got '8' (a str)"),
    (True, 8, TypeError, "length must be an int >= 0, got True (a bool)"),
])
def test_positional_encoding_refuses_sizes_that_are_not_ints_from_0(fw, length, d_model, error, shown):
    with pytest.raises(error, match="^" + re.escape(shown) + "$"):
        fw.cp.positional_encoding(length, d_model)


def test_positional_encoding_of_valid_sizes_is_unchanged(fw, ref):
    assert tuple(fw.cp.positional_encoding(0, 8).shape) == (0, 8)
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.positional_encoding(np.int64(5), 6)),
                                  fw.to_numpy(fw.cp.positional_encoding(5, 6)))
    np.testing.assert_allclose(fw.to_numpy(fw.cp.positional_encoding(7, 5)), ref.positional_encoding(7, 5),
                               atol=1e-6)
