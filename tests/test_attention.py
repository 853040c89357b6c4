"""scaled_dot_product_attention and MultiHeadAttention behaviour."""

import numpy as np
import pytest
from helpers import D_MODEL, NUM_HEADS

KEY = np.array([[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]], np.float32)
VALUE = np.array([[1, 0], [10, 0], [100, 5], [1000, 6]], np.float32)
# (query, expected output, expected weights): a query matching one key copies its value;
# matching two keys averages theirs.
QUERY_CASES = [
    ([0, 10, 0], [10, 0], [0, 1, 0, 0]),
    ([0, 0, 10], [550, 5.5], [0, 0, 0.5, 0.5]),
    ([10, 10, 0], [5.5, 0], [0.5, 0.5, 0, 0]),
]


@pytest.mark.parametrize("query,expected,weights", QUERY_CASES)
def test_sdpa_query_averages_the_values_of_matching_keys(fw, query, expected, weights):
    q = np.array([query], np.float32)
    out, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(KEY), fw.tensor(VALUE))
    out, w = fw.to_numpy(out), fw.to_numpy(w)
    assert out.shape == (1, 2) and w.shape == (1, 4)
    np.testing.assert_allclose(out[0], expected, atol=1e-4)
    np.testing.assert_allclose(w[0], weights, atol=1e-4)


def test_sdpa_stacked_queries_match_expected_in_course_and_reference(fw, ref):
    q = np.array([c[0] for c in QUERY_CASES], np.float32)
    out, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(KEY), fw.tensor(VALUE))
    np.testing.assert_allclose(fw.to_numpy(out), [c[1] for c in QUERY_CASES], atol=1e-4)
    ref_out, _ = ref.scaled_dot_product_attention(q, KEY, VALUE)
    np.testing.assert_allclose(ref_out, [c[1] for c in QUERY_CASES], atol=1e-4)


def test_sdpa_shapes_batched(fw):
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    k = rng.normal(size=(2, 3, 6, 5)).astype(np.float32)
    v = rng.normal(size=(2, 3, 6, 7)).astype(np.float32)
    out, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(v))
    out, w = fw.to_numpy(out), fw.to_numpy(w)
    assert out.shape == (2, 3, 4, 7)
    assert w.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    # scaled by sqrt(dk): compare with a direct NumPy computation
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(5)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(w, e / e.sum(-1, keepdims=True), atol=1e-5)


def _random_qkv(rng, b=2, tq=5, tk=5, d=6, dv=7):
    """q (b, tq, d), k (b, tk, d), v (b, tk, dv): depth and value width differ from the lengths."""
    return (rng.normal(size=(b, tq, d)).astype(np.float32),
            rng.normal(size=(b, tk, d)).astype(np.float32) * 3,
            rng.normal(size=(b, tk, dv)).astype(np.float32))


def test_sdpa_masked_weights_exactly_zero(fw):
    rng = np.random.default_rng(1)
    q, k, v = _random_qkv(rng)
    toks = np.array([[3, 4, 0, 5, 0], [1, 0, 0, 2, 2]])
    mask = fw.cp.create_combined_mask(fw.tensor(toks))[:, 0]  # (b, 5, 5)
    m = fw.to_numpy(mask)
    _, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(v), mask)
    w = fw.to_numpy(w)
    assert np.all(w[m == 1] == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_sdpa_fully_masked_rows_are_zero(fw, dtype):
    rng = np.random.default_rng(2)
    q, k, v = _random_qkv(rng, b=1, tq=3, tk=4)
    mask = np.zeros((1, 3, 4), np.float32)
    mask[0, 1, :] = 1.0  # row 1 attends to nothing
    mask[0, 2, 3] = 1.0
    out, w = fw.cp.scaled_dot_product_attention(
        fw.tensor(q, dtype), fw.tensor(k, dtype), fw.tensor(v, dtype), fw.tensor(mask))
    out = fw.to_numpy(out).astype(np.float32)
    w = fw.to_numpy(w).astype(np.float32)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    np.testing.assert_array_equal(w[0, 1], 0.0)
    np.testing.assert_array_equal(out[0, 1], 0.0)
    assert w[0, 2, 3] == 0.0
    np.testing.assert_allclose(w[0, [0, 2]].sum(-1), 1.0, atol=1e-2)


def test_sdpa_all_rows_masked_no_nan(fw):
    rng = np.random.default_rng(3)
    q, k, v = _random_qkv(rng)
    mask = np.ones((2, 1, 5), np.float32)
    out, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(v),
                                                fw.tensor(mask))
    np.testing.assert_array_equal(fw.to_numpy(w), 0.0)
    np.testing.assert_array_equal(fw.to_numpy(out), 0.0)


def test_sdpa_mask_broadcasts(fw):
    """A (b,1,1,Tk) padding mask broadcasts over heads and query positions."""
    rng = np.random.default_rng(4)
    # batch 2, heads 3, q_len 4, k_len 5, depth 6, value width 7: a swapped axis changes a shape
    q = rng.normal(size=(2, 3, 4, 6)).astype(np.float32)
    k = rng.normal(size=(2, 3, 5, 6)).astype(np.float32)
    v = rng.normal(size=(2, 3, 5, 7)).astype(np.float32)
    toks = np.array([[1, 2, 0, 3, 0], [1, 1, 1, 1, 0]])
    mask = fw.cp.create_padding_mask(fw.tensor(toks))
    _, w = fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(v), mask)
    w = fw.to_numpy(w)
    assert w.shape == (2, 3, 4, 5)
    assert np.all(w[0][..., [2, 4]] == 0) and np.all(w[1][..., 4] == 0)
    assert np.all(w[0][..., [0, 1, 3]] > 0)


def test_sdpa_matches_torch_functional(fw):
    """Course SDPA (course mask) == F.scaled_dot_product_attention (to_attend_mask)."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(5)
    q, k, v = _random_qkv(rng)
    toks = np.array([[3, 4, 0, 5, 6], [1, 2, 3, 0, 0]])
    mask = fw.cp.create_combined_mask(fw.tensor(toks))
    out, _ = fw.cp.scaled_dot_product_attention(fw.tensor(q[:, None]), fw.tensor(k[:, None]),
                                                fw.tensor(v[:, None]), mask)
    attend = torch.from_numpy(fw.to_numpy(fw.cp.to_attend_mask(mask)))
    expected = F.scaled_dot_product_attention(torch.from_numpy(q[:, None]),
                                              torch.from_numpy(k[:, None]),
                                              torch.from_numpy(v[:, None]), attn_mask=attend)
    np.testing.assert_allclose(fw.to_numpy(out), expected.numpy(), atol=1e-5)


# ------------------------------------------------------------------ MHA
def test_mha_attributes_and_shapes(fw):
    mha = fw.make("MultiHeadAttention", D_MODEL, NUM_HEADS)
    assert mha.d_model == D_MODEL and mha.num_heads == NUM_HEADS
    assert mha.depth == D_MODEL // NUM_HEADS
    for sub in ("wq", "wk", "wv", "wo"):
        assert hasattr(mha, sub)
    rng = np.random.default_rng(0)
    q = rng.normal(size=(3, 4, D_MODEL)).astype(np.float32)
    kv = rng.normal(size=(3, 7, D_MODEL)).astype(np.float32)
    out, w = fw.call(mha, q, kv, kv)
    assert out.shape == (3, 4, D_MODEL)
    assert w.shape == (3, NUM_HEADS, 4, 7)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)


def test_mha_padding_mask_zeroes_weights(fw):
    mha = fw.make("MultiHeadAttention", D_MODEL, NUM_HEADS)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, D_MODEL)).astype(np.float32)  # batch 3 != NUM_HEADS
    toks = np.array([[1, 0, 2, 0, 3], [4, 4, 4, 4, 0], [5, 0, 5, 5, 5]])
    mask = fw.cp.create_padding_mask(fw.tensor(toks))
    _, w = fw.call(mha, x, x, x, mask=mask)
    assert w.shape == (3, NUM_HEADS, 5, 5)
    assert np.all(w[0][..., [1, 3]] == 0)
    assert np.all(w[1][..., 4] == 0)
    assert np.all(w[2][..., 1] == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)


def test_mha_uneven_heads_value_error(fw):
    with pytest.raises(ValueError, match="d_model=10 is not divisible by num_heads=3"):
        fw.make("MultiHeadAttention", 10, 3)
