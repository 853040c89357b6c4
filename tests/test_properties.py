"""Behavioural properties: padding invariance and causality."""

import numpy as np
import pytest
from helpers import (
    D_MODEL,
    MAX_LEN,
    SRC_VOCAB,
    TGT_VOCAB,
    class_args,
    random_params,
)

ATOL = 1e-5


def _model(fw, interop, name, seed=0):
    layer = fw.make(name, *class_args(name))
    interop.set_weights(layer, random_params(layer, seed=seed))
    return layer


def test_encoder_ignores_tokens_at_masked_positions(fw, interop, ref):
    enc = _model(fw, interop, "Encoder", seed=1)
    src = np.array([[5, 9, 0, 7, 0, 0], [4, 12, 1, 0, 8, 0]])
    mask = ref.create_padding_mask(src).astype(np.float32)
    keep = src != 0
    base = fw.call(enc, src, mask=mask)
    rng = np.random.default_rng(0)
    for _ in range(3):
        changed = src.copy()
        changed[~keep] = rng.integers(1, SRC_VOCAB, size=(~keep).sum())
        out = fw.call(enc, changed, mask=mask)  # same mask: those positions stay masked
        np.testing.assert_allclose(out[keep], base[keep], atol=ATOL)
        # sanity: the masked positions themselves do change
        assert np.abs(out[~keep] - base[~keep]).max() > 1e-3


def test_encoder_output_depends_on_unmasked_tokens(fw, interop, ref):
    enc = _model(fw, interop, "Encoder", seed=1)
    src = np.array([[5, 9, 3, 7, 0, 0]])
    mask = ref.create_padding_mask(src).astype(np.float32)
    a = fw.call(enc, src, mask=mask)
    src2 = src.copy(); src2[0, 3] = 8
    b = fw.call(enc, src2, mask=mask)
    assert np.abs(a[0, 0] - b[0, 0]).max() > 1e-3  # position 0 sees position 3


def test_transformer_invariant_to_extra_src_padding(fw, interop):
    model = _model(fw, interop, "Transformer", seed=2)
    tgt = np.array([[1, 6, 8, 3]])
    short = np.array([[5, 9, 3, 7]])
    base = fw.call(model, short, tgt)
    for n_pad in (1, 3, MAX_LEN - 4):
        padded = np.concatenate([short, np.zeros((1, n_pad), short.dtype)], axis=1)
        np.testing.assert_allclose(fw.call(model, padded, tgt), base, atol=ATOL)


def test_transformer_logits_ignore_src_pad_content_in_batch(fw, interop):
    """A padded row in a batch gives the same logits as the row run alone."""
    model = _model(fw, interop, "Transformer", seed=3)
    src = np.array([[5, 9, 3, 0, 0, 0], [4, 12, 1, 6, 8, 2]])
    tgt = np.array([[1, 6, 0, 0], [2, 5, 7, 11]])
    batch = fw.call(model, src, tgt)
    assert batch.shape == (2, 4, TGT_VOCAB)
    alone = fw.call(model, src[:1, :3], tgt[:1, :2])
    np.testing.assert_allclose(batch[0, :2], alone[0], atol=ATOL)
    alone1 = fw.call(model, src[1:], tgt[1:])
    np.testing.assert_allclose(batch[1], alone1[0], atol=ATOL)


def test_transformer_logits_depend_on_the_source(fw, interop):
    model = _model(fw, interop, "Transformer", seed=4)
    tgt = np.array([[1, 6, 8]])
    a = fw.call(model, np.array([[5, 9, 3, 7]]), tgt)
    b = fw.call(model, np.array([[5, 9, 3, 8]]), tgt)
    assert np.abs(a - b).max() > 1e-3


@pytest.mark.parametrize("t", [0, 2, 4])
def test_transformer_is_causal(fw, interop, t):
    model = _model(fw, interop, "Transformer", seed=5)
    src = np.array([[5, 9, 3, 7, 0], [4, 12, 1, 6, 8]])
    tgt = np.array([[1, 6, 8, 3, 2, 9], [2, 5, 7, 11, 4, 4]])
    base = fw.call(model, src, tgt)
    changed = tgt.copy()
    changed[:, t + 1:] = np.random.default_rng(t).integers(1, TGT_VOCAB, size=changed[:, t + 1:].shape)
    changed[:, t + 1:] = np.where(changed[:, t + 1:] == tgt[:, t + 1:], 1 + tgt[:, t + 1:] % (TGT_VOCAB - 1),
                                  changed[:, t + 1:])
    out = fw.call(model, src, changed)
    np.testing.assert_allclose(out[:, :t + 1], base[:, :t + 1], atol=ATOL)
    assert np.abs(out[:, t + 1:] - base[:, t + 1:]).max() > 1e-3


def test_transformer_position_t_sees_token_t(fw, interop):
    model = _model(fw, interop, "Transformer", seed=6)
    src = np.array([[5, 9, 3]])
    tgt = np.array([[1, 6, 8, 3]])
    base = fw.call(model, src, tgt)
    changed = tgt.copy(); changed[0, 2] = 9
    out = fw.call(model, src, changed)
    np.testing.assert_allclose(out[0, :2], base[0, :2], atol=ATOL)
    assert np.abs(out[0, 2] - base[0, 2]).max() > 1e-3


def test_decoder_is_causal(fw, interop, ref):
    dec = _model(fw, interop, "Decoder", seed=7)
    rng = np.random.default_rng(0)
    enc_out = rng.normal(size=(1, 4, D_MODEL)).astype(np.float32)
    tgt = np.array([[1, 6, 8, 3, 2]])
    changed = np.array([[1, 6, 9, 4, 5]])
    base = fw.call(dec, tgt, enc_out, look_ahead_mask=ref.create_combined_mask(tgt).astype(np.float32))
    out = fw.call(dec, changed, enc_out, look_ahead_mask=ref.create_combined_mask(changed).astype(np.float32))
    np.testing.assert_allclose(out[0, :2], base[0, :2], atol=ATOL)
    assert np.abs(out[0, 2:] - base[0, 2:]).max() > 1e-3


def test_decoder_ignores_padded_memory(fw, interop, ref):
    dec = _model(fw, interop, "Decoder", seed=8)
    rng = np.random.default_rng(1)
    src = np.array([[3, 4, 0, 0]])
    pad = ref.create_padding_mask(src).astype(np.float32)
    enc_out = rng.normal(size=(1, 4, D_MODEL)).astype(np.float32)
    enc2 = enc_out.copy(); enc2[0, 2:] = rng.normal(size=(2, D_MODEL)) * 10
    tgt = np.array([[1, 6, 8]])
    la = ref.create_combined_mask(tgt).astype(np.float32)
    a = fw.call(dec, tgt, enc_out, look_ahead_mask=la, padding_mask=pad)
    b = fw.call(dec, tgt, enc2, look_ahead_mask=la, padding_mask=pad)
    np.testing.assert_allclose(a, b, atol=ATOL)
