"""Calls with default arguments, accepted token dtypes, constructor configs."""

import numpy as np
import pytest
from helpers import CLASS_NAMES, D_MODEL, NUM_HEADS, NUM_LAYERS, TGT_VOCAB, class_args

# batch 3 (!= NUM_HEADS, NUM_LAYERS), target length 5, source length 6: a swapped axis changes a shape
X = np.random.default_rng(0).normal(size=(3, 5, D_MODEL)).astype(np.float32)
ENC = np.random.default_rng(1).normal(size=(3, 6, D_MODEL)).astype(np.float32)
TOKS = np.array([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5], [6, 7, 0, 8, 0]])
SRC_TOKS = np.array([[3, 4, 5, 9, 0, 0], [1, 2, 3, 4, 5, 6], [6, 7, 0, 8, 0, 0]])


@pytest.mark.parametrize("name,args,shape", [
    ("MultiHeadAttention", (X, ENC, ENC), (3, 5, D_MODEL)),
    ("FeedForward", (X,), (3, 5, D_MODEL)),
    ("EncoderLayer", (X,), (3, 5, D_MODEL)),
    ("DecoderLayer", (X, ENC), (3, 5, D_MODEL)),
    ("PositionalEmbedding", (TOKS,), (3, 5, D_MODEL)),
    ("Encoder", (SRC_TOKS,), (3, 6, D_MODEL)),
    ("Decoder", (TOKS, ENC), (3, 5, D_MODEL)),
    ("Transformer", (SRC_TOKS, TOKS), (3, 5, TGT_VOCAB)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_call_with_default_masks(fw, name, args, shape):
    """Every class can be called with only its required inputs (masks default to None)."""
    fw.seed(0)
    layer = fw.make(name, *class_args(name))
    out = fw.call(layer, *args)
    if name == "MultiHeadAttention":
        out, w = out
        assert w.shape == (3, NUM_HEADS, 5, 6)
    assert out.shape == shape
    assert np.all(np.isfinite(out))


def test_encoder_without_mask_equals_all_zero_mask(fw):
    fw.seed(0)
    enc = fw.make("Encoder", *class_args("Encoder"))
    a = fw.call(enc, TOKS)
    b = fw.call(enc, TOKS, mask=np.zeros((3, 1, 1, 5), np.float32))
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_encoder_layer_takes_mask_as_second_positional_argument(fw):
    """mask is the second positional parameter of EncoderLayer (None allowed)."""
    fw.seed(0)
    layer = fw.make("EncoderLayer", *class_args("EncoderLayer"))
    np.testing.assert_allclose(fw.call(layer, X, None), fw.call(layer, X), atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int32_and_int64_token_ids_give_the_same_logits(fw, dtype):
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"))
    a = fw.call(model, fw.tensor(TOKS, dtype), fw.tensor(TOKS, dtype))
    b = fw.call(model, TOKS.astype(np.int64), TOKS.astype(np.int64))
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_transformer_accepts_pair(fw):
    """model((src, tgt)) is the same as model(src, tgt) (the form Keras' fit uses)."""
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"))
    pair = (fw.tensor(TOKS), fw.tensor(TOKS[:, :4]))
    np.testing.assert_array_equal(fw.call(model, pair), fw.call(model, TOKS, TOKS[:, :4]))


def test_transformer_exposes_named_sublayers(fw):
    model = fw.make("Transformer", *class_args("Transformer"))
    assert len(model.encoder.layers) == NUM_LAYERS
    assert len(model.decoder.layers) == NUM_LAYERS
    for sub in ("embedding", "layers"):
        assert hasattr(model.encoder, sub) and hasattr(model.decoder, sub)
    assert hasattr(model.encoder.embedding, "token_embedding")
    dl = model.decoder.layers[0]
    for sub in ("self_attn", "cross_attn", "ffn", "norm1", "norm2", "norm3"):
        assert hasattr(dl, sub), sub
    el = model.encoder.layers[0]
    for sub in ("self_attn", "ffn", "norm1", "norm2"):
        assert hasattr(el, sub), sub
    for sub in ("w1", "w2"):
        assert hasattr(el.ffn, sub)
    assert hasattr(model, "final_layer")


def test_layer_norm_epsilon_is_1e_minus_6(fw):
    """LayerNorm eps is 1e-6 in both frameworks (not Keras' default 1e-3 nor torch's 1e-5)."""
    fw.seed(0)
    el = fw.make("EncoderLayer", *class_args("EncoderLayer"))
    norm = el.norm1
    eps = getattr(norm, "epsilon", getattr(norm, "eps", None))
    assert eps == pytest.approx(1e-6)


def test_torch_get_config_reconstructs(torch_fw):
    for name in CLASS_NAMES:
        m = torch_fw.make(name, *class_args(name))
        cfg = m.get_config()
        clone = type(m)(**cfg)
        assert clone.get_config() == cfg
        assert [p.shape for p in m.parameters()] == [p.shape for p in clone.parameters()]
