"""return_attention: counts, shapes, normalisation, and unchanged outputs."""

import numpy as np
import pytest
from helpers import D_MODEL, TGT_VOCAB, class_args, example_inputs, max_abs_diff

# Every axis of an attention map has its own size: batch 2, heads 4, tgt_len 5, src_len 6,
# and 3 layers, so a swapped axis or a per-head list instead of a per-layer one fails.
NUM_HEADS, NUM_LAYERS = 4, 3
SRC = np.array([[5, 9, 3, 7, 0, 0], [4, 12, 1, 0, 8, 2]])
TGT = np.array([[1, 6, 8, 3, 0], [2, 0, 7, 11, 4]])


def _make(fw, name, **kw):
    return fw.make(name, *class_args(name, num_heads=NUM_HEADS, num_layers=NUM_LAYERS), **kw)


def _check_rows(w, mask, tol=1e-5):
    """Blocked entries are exactly 0; rows sum to 1 unless fully blocked (then 0)."""
    m = np.broadcast_to(mask, w.shape)
    assert np.all(w[m == 1] == 0)
    full = m.min(-1) == 1
    sums = w.sum(-1)
    np.testing.assert_allclose(sums[~full], 1.0, atol=tol)
    np.testing.assert_array_equal(sums[full], 0.0)


def test_transformer_attention_maps(fw, ref):
    fw.seed(0)
    model = _make(fw, "Transformer")
    plain = fw.call(model, SRC, TGT)
    logits, attn = fw.call(model, SRC, TGT, return_attention=True)
    assert plain.shape == (2, 5, TGT_VOCAB)
    np.testing.assert_allclose(logits, plain, atol=1e-6)
    assert set(attn) == {"encoder_self", "decoder_self", "decoder_cross"}
    for key, (tq, tk) in {"encoder_self": (6, 6), "decoder_self": (5, 5),
                          "decoder_cross": (5, 6)}.items():
        assert len(attn[key]) == NUM_LAYERS, key
        for w in attn[key]:
            assert w.shape == (2, NUM_HEADS, tq, tk), key
    src_pad = ref.create_padding_mask(SRC)
    for w in attn["encoder_self"]:
        _check_rows(w, src_pad)
    for w in attn["decoder_cross"]:
        _check_rows(w, src_pad)
    for w in attn["decoder_self"]:
        _check_rows(w, ref.create_combined_mask(TGT))


def test_transformer_pad_id_respected(fw, ref):
    fw.seed(0)
    model = _make(fw, "Transformer", pad_id=7)
    _, attn = fw.call(model, SRC, TGT, return_attention=True)
    for w in attn["encoder_self"] + attn["decoder_cross"]:
        _check_rows(w, ref.create_padding_mask(SRC, pad_id=7))
    for w in attn["decoder_self"]:
        _check_rows(w, ref.create_combined_mask(TGT, pad_id=7))


def test_encoder_attention_maps(fw, ref):
    fw.seed(0)
    enc = _make(fw, "Encoder")
    mask = ref.create_padding_mask(SRC).astype(np.float32)
    plain = fw.call(enc, SRC, mask=mask)
    x, attn = fw.call(enc, SRC, mask=mask, return_attention=True)
    assert plain.shape == (2, 6, D_MODEL)
    np.testing.assert_allclose(x, plain, atol=1e-6)
    assert isinstance(attn, list) and len(attn) == NUM_LAYERS
    for w in attn:
        assert w.shape == (2, NUM_HEADS, 6, 6)
        _check_rows(w, mask)


def test_decoder_attention_maps(fw, ref):
    fw.seed(0)
    dec = _make(fw, "Decoder")
    enc_out = np.random.default_rng(0).normal(size=(2, 6, D_MODEL)).astype(np.float32)
    la = ref.create_combined_mask(TGT).astype(np.float32)
    pad = ref.create_padding_mask(SRC).astype(np.float32)
    plain = fw.call(dec, TGT, enc_out, look_ahead_mask=la, padding_mask=pad)
    x, self_w, cross_w = fw.call(dec, TGT, enc_out, look_ahead_mask=la, padding_mask=pad,
                                 return_attention=True)
    np.testing.assert_allclose(x, plain, atol=1e-6)
    assert len(self_w) == NUM_LAYERS and len(cross_w) == NUM_LAYERS
    for w in self_w:
        assert w.shape == (2, NUM_HEADS, 5, 5)
        _check_rows(w, la)
    for w in cross_w:
        assert w.shape == (2, NUM_HEADS, 5, 6)
        _check_rows(w, pad)


# layer -> the call keyword of the mask of each attention map it returns (self, then cross)
LAYER_MAP_MASKS = {
    "EncoderLayer": ["mask"],
    "DecoderLayer": ["look_ahead_mask", "padding_mask"],
}


@pytest.mark.parametrize("name", list(LAYER_MAP_MASKS))
def test_layer_attention_maps(fw, name):
    fw.seed(0)
    layer = _make(fw, name)
    args, kw = example_inputs(name)
    kw_plain = {k: v for k, v in kw.items() if k != "return_attention"}
    plain = fw.call(layer, *args, **kw_plain)
    out = fw.call(layer, *args, **kw)
    assert isinstance(out, tuple)
    assert len(out) == 1 + len(LAYER_MAP_MASKS[name])
    np.testing.assert_allclose(out[0], plain, atol=1e-6)
    batch, t = args[0].shape[:2]
    for weights, mask_key, keys in zip(out[1:], LAYER_MAP_MASKS[name], args):
        # self-attention attends over the layer input x, cross-attention over enc_output
        assert weights.shape == (batch, NUM_HEADS, t, keys.shape[1]), mask_key
        _check_rows(weights, kw[mask_key])


def test_return_attention_false_returns_tensor(fw):
    fw.seed(0)
    model = _make(fw, "Transformer")
    out = fw.call(model, SRC, TGT, return_attention=False)
    assert isinstance(out, np.ndarray) and out.shape == (2, 5, TGT_VOCAB)
    assert max_abs_diff(out, fw.call(model, SRC, TGT)) == 0.0
