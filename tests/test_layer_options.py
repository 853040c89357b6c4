"""The layer options of the model families (chapter 8): pre-LN, the feed-forward activation,
the LayerNorm epsilon, a decoder layer without cross-attention, learned positions.

Three-way parity (NumPy = TensorFlow = torch <= 1e-5 with shared weights) for each option,
configurations that keep them, and bad values refused.
"""

import math

import numpy as np
import pytest
from helpers import (
    D_MODEL,
    DFF,
    MAX_LEN,
    NUM_HEADS,
    NUM_LAYERS,
    PARITY_ATOL,
    SRC_TOKENS,
    SRC_VOCAB,
    TGT_TOKENS,
    TGT_VOCAB,
    max_abs_diff,
    random_params,
)

RNG = np.random.default_rng(7)
X = RNG.normal(size=(2, 5, D_MODEL)).astype(np.float32) * 2  # (batch, tgt_len, d_model)
ENC = RNG.normal(size=(2, 6, D_MODEL)).astype(np.float32)  # (batch, src_len, d_model)


def _masks(ref):
    return (ref.create_padding_mask(SRC_TOKENS).astype(np.float32),
            ref.create_combined_mask(TGT_TOKENS).astype(np.float32))


def _three_way(tf_fw, torch_fw, interop, record_error, name, args, kwargs, call, oracle, label, seed=0):
    """Build class ``name`` in both frameworks with shared random weights, call both and the oracle."""
    tf_layer = tf_fw.make(name, *args, **kwargs)
    pt_layer = torch_fw.make(name, *args, **kwargs)
    params = random_params(tf_layer, seed=seed)
    interop.set_weights(tf_layer, params)
    interop.set_weights(pt_layer, params)
    expected = oracle({k: v.astype(np.float64) for k, v in params.items()})
    out_tf, out_pt = call(tf_fw, tf_layer), call(torch_fw, pt_layer)
    e_tf = record_error(f"{label} tf vs ref", max_abs_diff(out_tf, expected))
    e_pt = record_error(f"{label} torch vs ref", max_abs_diff(out_pt, expected))
    e_x = record_error(f"{label} tf vs torch", max_abs_diff(out_tf, out_pt))
    first = [np.asarray(e) for e in (expected if isinstance(expected, tuple) else (expected,))][0]
    assert float(np.max(np.abs(first))) > 0.1  # not trivially zero
    assert e_tf <= PARITY_ATOL and e_pt <= PARITY_ATOL and e_x <= PARITY_ATOL
    return tf_layer, pt_layer, params


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
def test_feed_forward_activation_parity(tf_fw, torch_fw, interop, ref, record_error, activation):
    _three_way(tf_fw, torch_fw, interop, record_error, "FeedForward", (D_MODEL, DFF),
               {"activation": activation}, lambda fw, layer: fw.call(layer, X),
               lambda p: ref.feed_forward(p, X, activation), f"FeedForward {activation}")


def test_activations_differ_and_gelu_is_exact(ref):
    x = np.linspace(-4, 4, 101)
    phi = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(ref.gelu(x), x * phi, atol=1e-12)
    assert 1e-5 < np.max(np.abs(ref.gelu(x) - ref.gelu_tanh(x))) < 1e-2  # close, not equal


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_options_parity(tf_fw, torch_fw, interop, ref, record_error, norm_first, activation):
    src_pad, comb = _masks(ref)
    eps = 1e-12 if activation == "gelu" else 1e-5
    kw = {"norm_first": norm_first, "activation": activation, "layer_norm_eps": eps}
    _three_way(tf_fw, torch_fw, interop, record_error, "EncoderLayer", (D_MODEL, NUM_HEADS, DFF), kw,
               lambda fw, layer: fw.call(layer, X, mask=comb, return_attention=True),
               lambda p: ref.encoder_layer(p, X, NUM_HEADS, comb, norm_first, activation, eps),
               f"EncoderLayer {kw}")


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("cross_attention", [True, False])
def test_decoder_layer_options_parity(tf_fw, torch_fw, interop, ref, record_error, norm_first,
                                      cross_attention):
    src_pad, comb = _masks(ref)
    kw = {"norm_first": norm_first, "activation": "gelu_tanh", "layer_norm_eps": 1e-5,
          "cross_attention": cross_attention}
    enc = ENC if cross_attention else None

    def call(fw, layer):
        out = fw.call(layer, X, enc, look_ahead_mask=comb, padding_mask=src_pad, return_attention=True)
        return out if cross_attention else out[:2]

    def oracle(p):
        out = ref.decoder_layer(p, X, enc, NUM_HEADS, comb, src_pad, norm_first, "gelu_tanh", 1e-5,
                                cross_attention)
        return out if cross_attention else out[:2]

    tf_layer, pt_layer, params = _three_way(tf_fw, torch_fw, interop, record_error, "DecoderLayer",
                                            (D_MODEL, NUM_HEADS, DFF), kw, call, oracle,
                                            f"DecoderLayer {kw}")
    if not cross_attention:
        assert not any(k.startswith(("cross_attn", "norm2")) for k in params)
        for fw, layer in ((tf_fw, tf_layer), (torch_fw, pt_layer)):
            assert fw.call(layer, X, None, look_ahead_mask=comb, return_attention=True)[2] is None


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_stack_options_parity(tf_fw, torch_fw, interop, ref, record_error, norm_first):
    src_pad, _ = _masks(ref)
    kw = {"norm_first": norm_first, "activation": "gelu", "layer_norm_eps": 1e-12}
    _, _, params = _three_way(
        tf_fw, torch_fw, interop, record_error, "Encoder",
        (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, SRC_VOCAB, MAX_LEN), kw,
        lambda fw, layer: fw.call(layer, SRC_TOKENS, mask=src_pad, return_attention=True),
        lambda p: ref.encoder(p, SRC_TOKENS, NUM_HEADS, src_pad, norm_first, "gelu", 1e-12),
        f"Encoder {kw}")
    assert ("final_norm.gamma" in params) == norm_first


@pytest.mark.parametrize("norm_first,cross_attention", [(True, True), (True, False), (False, False)])
def test_decoder_stack_options_parity(tf_fw, torch_fw, interop, ref, record_error, norm_first,
                                      cross_attention):
    src_pad, comb = _masks(ref)
    kw = {"norm_first": norm_first, "activation": "gelu_tanh", "layer_norm_eps": 1e-5,
          "cross_attention": cross_attention}
    enc = ENC if cross_attention else None
    _, _, params = _three_way(
        tf_fw, torch_fw, interop, record_error, "Decoder",
        (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, TGT_VOCAB, MAX_LEN), kw,
        lambda fw, layer: fw.call(layer, TGT_TOKENS, enc, look_ahead_mask=comb, padding_mask=src_pad,
                                  return_attention=True)[:2],
        lambda p: ref.decoder(p, TGT_TOKENS, enc, NUM_HEADS, comb, src_pad, norm_first, "gelu_tanh", 1e-5,
                              cross_attention)[:2],
        f"Decoder {kw}")
    assert ("final_norm.gamma" in params) == norm_first


@pytest.mark.parametrize("cross_attention", [True, False])
def test_decoder_step_equals_full_call(fw, interop, ref, cross_attention):
    """The key/value cache of a pre-LN decoder (with or without cross-attention) equals recomputation."""
    fw.seed(0)
    dec = fw.make("Decoder", NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, TGT_VOCAB, MAX_LEN, 0.0, norm_first=True,
                  activation="gelu_tanh", cross_attention=cross_attention)
    interop.set_weights(dec, random_params(dec, seed=11))
    tokens = np.array([[1, 6, 28, 3, 9], [2, 5, 7, 11, 4]])
    look_ahead = ref.create_look_ahead_mask(5)
    enc = fw.tensor(ENC) if cross_attention else None
    full = fw.call(dec, tokens, enc, look_ahead_mask=look_ahead)
    cache = dec.init_cache(enc, batch_size=2)
    outs = []
    for start, stop in ((0, 2), (2, 3), (3, 5)):  # a prompt of 2, then one token at a time
        mask = fw.tensor(look_ahead[start:stop, :stop])
        x, cache = dec.step(fw.tensor(tokens[:, start:stop]), cache, mask)
        outs.append(fw.to_numpy(x))
    assert np.max(np.abs(full)) > 0.1
    np.testing.assert_allclose(np.concatenate(outs, axis=1), full, atol=1e-5)
    assert ("cross_k" in cache[0]) == cross_attention


def test_learned_positional_encoding_parity(tf_fw, torch_fw, interop, ref, record_error):
    for start in (0, 3):
        _three_way(tf_fw, torch_fw, interop, record_error, "LearnedPositionalEncoding",
                   (MAX_LEN, D_MODEL), {}, lambda fw, layer: fw.call(layer, X, start=start),
                   lambda p: ref.learned_positional_encoding(p, X, start),
                   f"LearnedPositionalEncoding {start}", seed=start)


def test_learned_positional_encoding_adds_its_rows(fw, interop):
    layer = fw.make("LearnedPositionalEncoding", MAX_LEN, D_MODEL)
    params = random_params(layer, seed=1)
    assert list(params) == ["table.embeddings"] and params["table.embeddings"].shape == (MAX_LEN, D_MODEL)
    interop.set_weights(layer, params)
    np.testing.assert_allclose(fw.call(layer, X, start=2), X + params["table.embeddings"][2:7], atol=1e-6)
    assert fw.call(layer, X, start=MAX_LEN - 5).shape == X.shape  # the last rows fit
    with pytest.raises(ValueError, match="exceeds max_len=12"):
        fw.call(layer, X, start=MAX_LEN - 4)
    with pytest.raises(ValueError, match="start must be an int >= 0"):
        fw.call(layer, X, start=-1)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, length, 16\)"):
        fw.call(layer, X[..., :8])


OPTIONED = {
    "FeedForward": ((D_MODEL, DFF), {"activation": "gelu_tanh"}),
    "EncoderLayer": ((D_MODEL, NUM_HEADS, DFF), {"norm_first": True, "activation": "gelu",
                                                 "layer_norm_eps": 1e-12}),
    "DecoderLayer": ((D_MODEL, NUM_HEADS, DFF), {"norm_first": True, "activation": "gelu_tanh",
                                                 "layer_norm_eps": 1e-5, "cross_attention": False}),
    "Encoder": ((NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, SRC_VOCAB, MAX_LEN),
                {"norm_first": True, "activation": "gelu", "layer_norm_eps": 1e-12}),
    "Decoder": ((NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, TGT_VOCAB, MAX_LEN),
                {"norm_first": True, "activation": "gelu_tanh", "layer_norm_eps": 1e-5,
                 "cross_attention": False}),
    "LearnedPositionalEncoding": ((MAX_LEN, D_MODEL), {}),
}


@pytest.mark.parametrize("name", list(OPTIONED))
def test_config_keeps_the_options(fw, interop, name):
    args, kw = OPTIONED[name]
    layer = fw.make(name, *args, **kw)
    cfg = layer.get_config()
    for key, value in kw.items():
        assert cfg[key] == value, key
    clone = type(layer).from_config(cfg)
    assert clone.get_config() == cfg
    interop.copy_weights(layer, clone)  # same architecture, same canonical weights
    assert sorted(interop.get_weights(clone)) == sorted(interop.get_weights(layer))


def test_defaults_are_the_papers(fw):
    cfg = fw.make("EncoderLayer", D_MODEL, NUM_HEADS, DFF).get_config()
    assert (cfg["norm_first"], cfg["activation"], cfg["layer_norm_eps"]) == (False, "relu", 1e-6)
    cfg = fw.make("DecoderLayer", D_MODEL, NUM_HEADS, DFF).get_config()
    assert (cfg["norm_first"], cfg["cross_attention"]) == (False, True)
    assert fw.make("FeedForward", D_MODEL, DFF).get_config()["activation"] == "relu"


def test_keras_save_load_keeps_options(tf_fw, interop, tmp_path):
    import keras

    args, kw = OPTIONED["Decoder"]
    inputs = keras.Input((5,), dtype="int32")
    dec = tf_fw.make("Decoder", *args, **kw)
    model = keras.Model(inputs, dec(inputs))
    interop.set_weights(dec, random_params(dec, seed=3))
    before = np.asarray(model(TGT_TOKENS))
    path = tmp_path / "decoder.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(TGT_TOKENS)), before, atol=1e-6)
    assert loaded.layers[-1].get_config()["cross_attention"] is False


def test_torch_options_checkpoint_round_trip(torch_fw, interop, tmp_path):
    import torch

    args, kw = OPTIONED["Encoder"]
    enc = torch_fw.make("Encoder", *args, **kw)
    torch.save({"config": enc.get_config(), "state": enc.state_dict()}, tmp_path / "enc.pt")
    saved = torch.load(tmp_path / "enc.pt")
    clone = type(enc).from_config(saved["config"])
    clone.load_state_dict(saved["state"])
    np.testing.assert_allclose(torch_fw.call(clone, SRC_TOKENS), torch_fw.call(enc, SRC_TOKENS), atol=1e-6)


@pytest.mark.parametrize("name,kw,error,match", [
    ("FeedForward", {"activation": "swish"}, ValueError, r"activation must be one of \('relu', 'gelu', "
                                                         r"'gelu_tanh', 'silu'\), got 'swish'"),
    ("EncoderLayer", {"activation": "GELU"}, ValueError, "activation must be one of"),
    ("EncoderLayer", {"norm_first": "yes"}, TypeError, "norm_first must be True or False"),
    ("EncoderLayer", {"layer_norm_eps": 0.0}, ValueError, "layer_norm_eps must be a positive float"),
    ("EncoderLayer", {"layer_norm_eps": -1e-5}, ValueError, "layer_norm_eps must be a positive float"),
    ("DecoderLayer", {"cross_attention": 1}, TypeError, "cross_attention must be True or False"),
    ("Encoder", {"activation": None}, ValueError, "activation must be one of"),
    ("Decoder", {"layer_norm_eps": float("nan")}, ValueError, "layer_norm_eps must be a positive float"),
])
def test_bad_options_are_refused(fw, name, kw, error, match):
    args = {"FeedForward": (D_MODEL, DFF), "EncoderLayer": (D_MODEL, NUM_HEADS, DFF),
            "DecoderLayer": (D_MODEL, NUM_HEADS, DFF),
            "Encoder": (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, SRC_VOCAB, MAX_LEN),
            "Decoder": (NUM_LAYERS, D_MODEL, NUM_HEADS, DFF, TGT_VOCAB, MAX_LEN)}[name]
    with pytest.raises(error, match=match):
        fw.make(name, *args, **kw)


def test_options_are_keyword_only(fw):
    with pytest.raises(TypeError):
        fw.make("EncoderLayer", D_MODEL, NUM_HEADS, DFF, 0.1, True)


def test_decoder_with_cross_attention_needs_enc_output(fw):
    layer = fw.make("DecoderLayer", D_MODEL, NUM_HEADS, DFF)
    with pytest.raises(ValueError, match="enc_output is None"):
        fw.call(layer, X, None)
