"""Mask builders, converters and the course polarity (1.0 = blocked)."""

import numpy as np
import pytest


def test_padding_mask_blocks_pad_positions(fw):
    m = fw.cp.create_padding_mask(fw.tensor(np.array([[1, 21, 777, 0, 0]])))
    a = fw.to_numpy(m)
    assert a.dtype == np.float32
    assert a.shape == (1, 1, 1, 5)
    np.testing.assert_array_equal(a, [[[[0, 0, 0, 1, 1]]]])


def test_padding_mask_custom_pad_id(fw):
    toks = np.array([[3, 1, 3], [0, 3, 2]])
    a = fw.to_numpy(fw.cp.create_padding_mask(fw.tensor(toks), pad_id=3))
    np.testing.assert_array_equal(a[:, 0, 0, :], [[1, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("size", [1, 2, 5])
def test_look_ahead_mask_blocks_future_positions(fw, size):
    a = fw.to_numpy(fw.cp.create_look_ahead_mask(size))
    assert a.dtype == np.float32
    assert a.shape == (size, size)
    np.testing.assert_array_equal(a, np.triu(np.ones((size, size)), k=1))


def test_combined_mask_blocks_future_and_pad_positions(fw):
    a = fw.to_numpy(fw.cp.create_combined_mask(fw.tensor(np.array([[1, 2, 0, 4, 5]]))))
    assert a.dtype == np.float32
    assert a.shape == (1, 1, 5, 5)
    expected = np.array([[0, 1, 1, 1, 1],
                         [0, 0, 1, 1, 1],
                         [0, 0, 1, 1, 1],
                         [0, 0, 1, 0, 1],
                         [0, 0, 1, 0, 0]], dtype=np.float32)
    np.testing.assert_array_equal(a[0, 0], expected)


def test_combined_mask_is_the_union_of_look_ahead_and_padding(fw):
    toks = fw.tensor(np.array([[1, 2, 0, 4, 5, 0]]))
    pad = fw.to_numpy(fw.cp.create_padding_mask(toks))
    np.testing.assert_array_equal(pad, np.array([0, 0, 1, 0, 0, 1], np.float32).reshape(1, 1, 1, 6))
    look = np.triu(np.ones((6, 6), np.float32), k=1)
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.create_look_ahead_mask(6)), look)
    expected = np.maximum(look, np.array([0, 0, 1, 0, 0, 1], np.float32)[None, :])
    # spelled out by hand as well, to make the example readable
    np.testing.assert_array_equal(expected, [[0, 1, 1, 1, 1, 1],
                                             [0, 0, 1, 1, 1, 1],
                                             [0, 0, 1, 1, 1, 1],
                                             [0, 0, 1, 0, 1, 1],
                                             [0, 0, 1, 0, 0, 1],
                                             [0, 0, 1, 0, 0, 1]])
    comb = fw.to_numpy(fw.cp.create_combined_mask(toks))
    assert comb.shape == (1, 1, 6, 6)
    np.testing.assert_array_equal(comb[0, 0], expected)


def test_masks_match_reference(fw, ref):
    toks = np.array([[1, 2, 0, 4, 5, 0], [0, 7, 7, 0, 1, 1]])
    for fname in ["create_padding_mask", "create_combined_mask"]:
        got = fw.to_numpy(getattr(fw.cp, fname)(fw.tensor(toks)))
        np.testing.assert_array_equal(got, getattr(ref, fname)(toks), err_msg=fname)
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.create_look_ahead_mask(4)),
                                  ref.create_look_ahead_mask(4))


def test_reference_masks_match_the_worked_examples(ref):
    np.testing.assert_array_equal(ref.create_padding_mask(np.array([[1, 21, 777, 0, 0]])),
                                  [[[[0, 0, 0, 1, 1]]]])
    np.testing.assert_array_equal(ref.create_combined_mask(np.array([[1, 2, 0, 4, 5]]))[0, 0],
                                  [[0, 1, 1, 1, 1], [0, 0, 1, 1, 1], [0, 0, 1, 1, 1],
                                   [0, 0, 1, 0, 1], [0, 0, 1, 0, 0]])


@pytest.mark.parametrize("past", [0, 2])
def test_causal_padding_mask_matches_reference_and_the_combined_mask(fw, ref, past):
    """A decoder-only model's mask (masks.causal_padding_mask, from a float padding row): the combined
    mask of the same tokens, its last ``seq - past`` rows in a decoding step; and the reference's."""
    import importlib

    masks = importlib.import_module(f"course_pkg.{fw.name}.masks")
    toks = np.array([[1, 2, 0, 4, 5, 0], [0, 7, 7, 0, 1, 1]])
    pad = (toks == 0).astype(np.float32)
    got = fw.to_numpy(masks.causal_padding_mask(fw.tensor(pad), past))
    assert got.dtype == np.float32 and got.shape == (2, 1, 6 - past, 6)
    np.testing.assert_array_equal(got, ref.create_combined_mask(toks)[:, :, past:])
    np.testing.assert_array_equal(got, ref.causal_padding_mask(pad, past))
    if past == 0:  # the default: the whole sequence, no cached prefix
        np.testing.assert_array_equal(fw.to_numpy(masks.causal_padding_mask(fw.tensor(pad))), got)
        np.testing.assert_array_equal(ref.causal_padding_mask(pad), got)


# ---------------------------------------------------------------- converters
MASKS = {
    "padding": np.array([[[[0, 0, 1, 0, 1]]], [[[1, 0, 0, 0, 0]]]], np.float32),
    "look_ahead": np.triu(np.ones((4, 4), np.float32), k=1),
    "combined": np.maximum(np.triu(np.ones((5, 5), np.float32), k=1),
                           np.array([0, 0, 1, 0, 1], np.float32))[None, None],
}


@pytest.mark.parametrize("kind", sorted(MASKS))
def test_to_attend_and_to_blocked_give_bool_polarities(fw, kind):
    m = MASKS[kind]
    attend = fw.to_numpy(fw.cp.to_attend_mask(fw.tensor(m)))
    blocked = fw.to_numpy(fw.cp.to_blocked_mask(fw.tensor(m)))
    assert attend.dtype == np.bool_ and blocked.dtype == np.bool_
    assert attend.shape == m.shape and blocked.shape == m.shape
    np.testing.assert_array_equal(attend, m == 0)
    np.testing.assert_array_equal(blocked, m == 1)


@pytest.mark.parametrize("kind", sorted(MASKS))
def test_converters_round_trip(fw, kind):
    m = MASKS[kind]
    back_a = fw.to_numpy(fw.cp.from_attend_mask(fw.cp.to_attend_mask(fw.tensor(m))))
    back_b = fw.to_numpy(fw.cp.from_blocked_mask(fw.cp.to_blocked_mask(fw.tensor(m))))
    for back in (back_a, back_b):
        assert back.dtype == np.float32
        assert back.shape == m.shape
        np.testing.assert_array_equal(back, m)


def test_from_bool_masks_give_course_float_masks(fw):
    b = np.array([[True, False, True]])
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.from_attend_mask(fw.tensor(b))), [[0, 1, 0]])
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.from_blocked_mask(fw.tensor(b))), [[1, 0, 1]])


# ------------------------------------------------- polarity vs native layers
def test_attend_mask_polarity_torch_sdpa(fw):
    """to_attend_mask(look-ahead) fed to F.scaled_dot_product_attention == is_causal."""
    import torch
    import torch.nn.functional as F

    t = 5
    attend = fw.to_numpy(fw.cp.to_attend_mask(fw.cp.create_look_ahead_mask(t)))
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, t, 4, generator=g) for _ in range(3))
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(attend))
    b = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(a, b)


def test_blocked_mask_polarity_torch_mha(fw):
    """to_blocked_mask(look-ahead) fed to nn.MultiheadAttention == causal float mask."""
    import torch

    t, d = 5, 8
    blocked = fw.to_numpy(fw.cp.to_blocked_mask(fw.cp.create_look_ahead_mask(t)))
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d, 2, batch_first=True).eval()
    x = torch.randn(3, t, d)  # batch 3 != 2 heads
    with torch.no_grad():
        a, wa = mha(x, x, x, attn_mask=torch.from_numpy(blocked))
        b, wb = mha(x, x, x, attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(t))
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(wa, wb)


def test_blocked_padding_mask_polarity_torch_key_padding(fw):
    import torch

    toks = np.array([[4, 5, 0, 6, 0]])
    pad = fw.cp.create_padding_mask(fw.tensor(toks))
    kpm = fw.to_numpy(fw.cp.to_blocked_mask(pad)).reshape(1, -1)
    np.testing.assert_array_equal(kpm, toks == 0)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(1, 5, 8)
    with torch.no_grad():
        _, w = mha(x, x, x, key_padding_mask=torch.from_numpy(kpm), average_attn_weights=False)
    assert torch.all(w[..., toks[0] == 0] == 0)


def test_attend_mask_polarity_keras_mha(fw):
    """to_attend_mask(look-ahead) as keras attention_mask == use_causal_mask=True."""
    import keras

    t, d = 5, 8
    attend = fw.to_numpy(fw.cp.to_attend_mask(fw.cp.create_look_ahead_mask(t)))
    mha = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    x = np.random.default_rng(0).normal(size=(3, t, d)).astype(np.float32)  # batch 3 != 2 heads
    a, wa = mha(x, x, attention_mask=np.broadcast_to(attend, (3, t, t)),
                return_attention_scores=True)
    b, wb = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    np.testing.assert_allclose(np.asarray(wa), np.asarray(wb), atol=1e-6)
    assert np.all(np.asarray(wa)[:, :, ~attend] == 0)
