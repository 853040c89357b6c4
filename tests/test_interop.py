"""course_pkg.interop: canonical weight names, layouts and TF <-> torch copies."""

import numpy as np
import pytest
from helpers import (
    CLASS_NAMES,
    D_MODEL,
    DFF,
    NUM_LAYERS,
    PARITY_ATOL,
    SRC_VOCAB,
    TGT_VOCAB,
    class_args,
    example_inputs,
    max_abs_diff,
    random_params,
)


def _mha_names(prefix=""):
    return {f"{prefix}{w}.{p}" for w in ("wq", "wk", "wv", "wo") for p in ("kernel", "bias")}


def _ffn_names(prefix=""):
    return {f"{prefix}{w}.{p}" for w in ("w1", "w2") for p in ("kernel", "bias")}


def _norm_names(prefix, n):
    return {f"{prefix}norm{i}.{p}" for i in range(1, n + 1) for p in ("gamma", "beta")}


def _enc_layer_names(prefix=""):
    return _mha_names(prefix + "self_attn.") | _ffn_names(prefix + "ffn.") | _norm_names(prefix, 2)


def _dec_layer_names(prefix=""):
    return (_mha_names(prefix + "self_attn.") | _mha_names(prefix + "cross_attn.")
            | _ffn_names(prefix + "ffn.") | _norm_names(prefix, 3))


def _encoder_names(prefix=""):
    names = {f"{prefix}embedding.token_embedding.embeddings"}
    for i in range(NUM_LAYERS):
        names |= _enc_layer_names(f"{prefix}layers.{i}.")
    return names


def _decoder_names(prefix=""):
    names = {f"{prefix}embedding.token_embedding.embeddings"}
    for i in range(NUM_LAYERS):
        names |= _dec_layer_names(f"{prefix}layers.{i}.")
    return names


EXPECTED_NAMES = {
    "MultiHeadAttention": _mha_names(),
    "PositionalEmbedding": {"token_embedding.embeddings"},
    "FeedForward": _ffn_names(),
    "EncoderLayer": _enc_layer_names(),
    "DecoderLayer": _dec_layer_names(),
    "Encoder": _encoder_names(),
    "Decoder": _decoder_names(),
    "Transformer": _encoder_names("encoder.") | _decoder_names("decoder.")
    | {"final_layer.kernel", "final_layer.bias"},
}


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_canonical_names(fw, interop, name):
    w = interop.get_weights(fw.make(name, *class_args(name)))
    assert isinstance(w, dict)
    assert set(w) == EXPECTED_NAMES[name]
    for v in w.values():
        assert isinstance(v, np.ndarray)


def test_canonical_weights_use_keras_in_out_layouts(fw, interop):
    ff = interop.get_weights(fw.make("FeedForward", D_MODEL, DFF))
    assert ff["w1.kernel"].shape == (D_MODEL, DFF)
    assert ff["w1.bias"].shape == (DFF,)
    assert ff["w2.kernel"].shape == (DFF, D_MODEL)
    tr = interop.get_weights(fw.make("Transformer", *class_args("Transformer")))
    assert tr["final_layer.kernel"].shape == (D_MODEL, TGT_VOCAB)
    assert tr["final_layer.bias"].shape == (TGT_VOCAB,)
    assert tr["encoder.embedding.token_embedding.embeddings"].shape == (SRC_VOCAB, D_MODEL)
    assert tr["decoder.embedding.token_embedding.embeddings"].shape == (TGT_VOCAB, D_MODEL)
    assert tr["encoder.layers.1.norm2.gamma"].shape == (D_MODEL,)


def test_dense_kernel_is_in_out(fw, interop):
    """Kernel (in, out): y = x @ kernel + bias (checked on FeedForward with w2 = identity-ish)."""
    ff = fw.make("FeedForward", 2, 3)
    w = {"w1.kernel": np.array([[1, 0, 0], [0, 1, 0]], np.float32),  # (in=2, out=3)
         "w1.bias": np.array([0, 0, 5], np.float32),
         "w2.kernel": np.array([[1, 0], [0, 2], [0, 0]], np.float32),  # (in=3, out=2)
         "w2.bias": np.array([0.5, 0], np.float32)}
    interop.set_weights(ff, w)
    out = fw.call(ff, np.array([[[3.0, 4.0]]], np.float32))
    np.testing.assert_allclose(out, [[[3.5, 8.0]]], atol=1e-6)


@pytest.mark.parametrize("direction", ["tf_to_torch", "torch_to_tf"])
@pytest.mark.parametrize("name", CLASS_NAMES)
def test_copy_weights_reproduces_the_outputs(tf_fw, torch_fw, interop, name, direction, record_error):
    src_fw, dst_fw = (tf_fw, torch_fw) if direction == "tf_to_torch" else (torch_fw, tf_fw)
    src_fw.seed(1)
    src = src_fw.make(name, *class_args(name))
    dst_fw.seed(2)
    dst = dst_fw.make(name, *class_args(name))
    interop.set_weights(src, random_params(src, seed=7))
    args, kw = example_inputs(name)
    a = src_fw.call(src, *args, **kw)
    assert max_abs_diff(a, dst_fw.call(dst, *args, **kw)) > 1e-3  # differ before copying
    interop.copy_weights(src, dst)
    b = dst_fw.call(dst, *args, **kw)
    err = record_error(f"copy_weights {name} {direction}", max_abs_diff(a, b))
    assert err <= PARITY_ATOL
    ws, wd = interop.get_weights(src), interop.get_weights(dst)
    for k in ws:
        np.testing.assert_array_equal(ws[k], wd[k], err_msg=k)


def test_get_set_weights_round_trip(fw, interop):
    m = fw.make("Transformer", *class_args("Transformer"))
    p = random_params(m, seed=3)
    interop.set_weights(m, p)
    got = interop.get_weights(m)
    for k in p:
        np.testing.assert_array_equal(got[k], p[k], err_msg=k)
    # get_weights returns copies: mutating them does not touch the model
    got["final_layer.bias"][:] = 99.0
    assert not np.any(interop.get_weights(m)["final_layer.bias"] == 99.0)


def test_copy_weights_mismatched_shapes(tf_fw, torch_fw, interop):
    src = tf_fw.make("MultiHeadAttention", 16, 2)
    dst = torch_fw.make("MultiHeadAttention", 8, 2)
    same_args = r"copy_weights needs the same constructor arguments; differ \(src, dst\): "
    with pytest.raises(ValueError, match=same_args + r"\{'d_model': \(16, 8\)\}"):
        interop.copy_weights(src, dst)
    with pytest.raises(ValueError, match=same_args + r"\{'d_model': \(8, 16\)\}"):
        interop.copy_weights(dst, src)


def test_copy_weights_mismatched_classes(tf_fw, torch_fw, interop):
    same_class = "copy_weights needs two instances of the same class, got "
    with pytest.raises(ValueError, match=same_class + "EncoderLayer and DecoderLayer"):
        interop.copy_weights(tf_fw.make("EncoderLayer", D_MODEL, 2, DFF),
                             torch_fw.make("DecoderLayer", D_MODEL, 2, DFF))
    with pytest.raises(ValueError, match=same_class + "FeedForward and MultiHeadAttention"):
        interop.copy_weights(torch_fw.make("FeedForward", D_MODEL, DFF),
                             tf_fw.make("MultiHeadAttention", D_MODEL, 2))


def test_copy_weights_mismatched_vocab(tf_fw, torch_fw, interop):
    a = tf_fw.make("Transformer", *class_args("Transformer"))
    b = torch_fw.make("Transformer", NUM_LAYERS, D_MODEL, 2, DFF, SRC_VOCAB + 1, TGT_VOCAB, 12)
    with pytest.raises(ValueError, match=rf"\{{'input_vocab_size': \({SRC_VOCAB}, {SRC_VOCAB + 1}\)\}}"):
        interop.copy_weights(a, b)


def test_set_weights_wrong_shape(fw, interop):
    m = fw.make("MultiHeadAttention", D_MODEL, 2)
    w = interop.get_weights(m)
    w["wq.bias"] = np.zeros((D_MODEL + 1,), np.float32)
    with pytest.raises(ValueError, match=rf"wq\.bias: expected shape \({D_MODEL},\), got \({D_MODEL + 1},\)"):
        interop.set_weights(m, w)


def test_copy_weights_allows_different_dropout(tf_fw, torch_fw, interop):
    """No weight depends on dropout: a training model copies into an inference one."""
    args = class_args("EncoderLayer")
    src = tf_fw.make("EncoderLayer", *args[:3], dropout=0.1)
    dst = torch_fw.make("EncoderLayer", *args[:3], dropout=0.0)
    interop.copy_weights(src, dst)
    x = np.random.default_rng(0).normal(size=(2, 3, args[0])).astype(np.float32)
    np.testing.assert_allclose(torch_fw.call(dst, x), tf_fw.call(src, x), atol=1e-5)
    # dropout is not compared (it differs here too); the head count is
    with pytest.raises(ValueError, match=rf"\): \{{'num_heads': \({args[1]}, {args[1] * 2}\)\}}$"):
        interop.copy_weights(src, torch_fw.make("EncoderLayer", args[0], args[1] * 2, args[2]))
