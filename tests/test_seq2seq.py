"""RNN seq2seq (GRU encoder-decoder, Bahdanau / Luong attention).

Shapes, three-way parity (NumPy reference / TensorFlow / PyTorch, weights set
through ``course_pkg.interop``), the GRU weight mapping between Keras and
PyTorch, masking, padding invariance, step-by-step decoding, serialisation and
bad input, all parametrized over both frameworks.
"""

import numpy as np
import pytest
from helpers import PARITY_ATOL, flatten, max_abs_diff, random_params

SRC_VOCAB, TGT_VOCAB, EMB, UNITS = 13, 11, 6, 8  # EMB != UNITS: kernel layouts are distinguishable
# trailing padding, a pad token mid-sequence, and an all-pad source
SRC = np.array([[5, 9, 3, 7, 0, 0], [4, 12, 1, 0, 8, 2], [0, 0, 0, 0, 0, 0]], dtype=np.int64)
TGT = np.array([[1, 6, 10, 3, 0], [2, 0, 7, 9, 4], [1, 2, 3, 4, 5]], dtype=np.int64)
SRC_MASK = (SRC == 0).astype(np.float32)[:, None, :]  # (batch, 1, src_len)
ATTENTIONS = ["bahdanau", "luong_dot", "luong_general"]

_rng = np.random.default_rng(0)
ENC_OUT = _rng.normal(size=(3, 6, UNITS)).astype(np.float32)
STATE = _rng.normal(scale=0.5, size=(3, UNITS)).astype(np.float32)
CONTEXT = _rng.normal(scale=0.5, size=(3, UNITS)).astype(np.float32)
QUERY5 = _rng.normal(size=(3, 4, 5)).astype(np.float32)
QUERY8 = _rng.normal(size=(3, 4, UNITS)).astype(np.float32)
KEYS7 = _rng.normal(size=(3, 6, 7)).astype(np.float32)


def _f64(params):
    return {k: np.asarray(v, np.float64) for k, v in params.items()}


# case id -> (class, constructor args, constructor kwargs, call args, call kwargs, oracle)
CASES = {
    "BahdanauAttention": (
        "BahdanauAttention", (UNITS,), {"query_dim": 5, "key_dim": 7},
        (QUERY5, KEYS7), {"mask": SRC_MASK},
        lambda ref, p: ref.bahdanau_attention(p, QUERY5, KEYS7, SRC_MASK)),
    "LuongAttention-dot": (
        "LuongAttention", (UNITS,), {"score": "dot"},
        (QUERY8, ENC_OUT), {"mask": SRC_MASK},
        lambda ref, p: ref.luong_attention(p, QUERY8, ENC_OUT, "dot", SRC_MASK)),
    "LuongAttention-general": (
        "LuongAttention", (UNITS,), {"score": "general", "key_dim": 7},
        (QUERY8, KEYS7), {"mask": SRC_MASK},
        lambda ref, p: ref.luong_attention(p, QUERY8, KEYS7, "general", SRC_MASK)),
    "Seq2SeqEncoder": (
        "Seq2SeqEncoder", (SRC_VOCAB, EMB, UNITS), {},
        (SRC,), {},
        lambda ref, p: ref.seq2seq_encoder(p, SRC)),
    "Seq2SeqDecoder": (
        "Seq2SeqDecoder", (TGT_VOCAB, EMB, UNITS), {},
        (TGT, STATE), {},
        lambda ref, p: ref.seq2seq_decoder(p, TGT, STATE)),
    "Seq2SeqDecoder-context": (
        "Seq2SeqDecoder", (TGT_VOCAB, EMB, UNITS), {},
        (TGT, STATE), {"context": CONTEXT},
        lambda ref, p: ref.seq2seq_decoder(p, TGT, STATE, CONTEXT)),
    **{f"AttentionDecoder-{att}": (
        "AttentionDecoder", (TGT_VOCAB, EMB, UNITS, att), {},
        (TGT, ENC_OUT, STATE), {"padding_mask": SRC_MASK, "return_attention": True},
        lambda ref, p, att=att: ref.attention_decoder(p, TGT, ENC_OUT, STATE, SRC_MASK, att))
       for att in ATTENTIONS},
    "Seq2Seq-none": (
        "Seq2Seq", (SRC_VOCAB, TGT_VOCAB, EMB, UNITS), {},
        (SRC, TGT), {},
        lambda ref, p: ref.seq2seq(p, SRC, TGT)[0]),
    **{f"Seq2Seq-{att}": (
        "Seq2Seq", (SRC_VOCAB, TGT_VOCAB, EMB, UNITS, att), {},
        (SRC, TGT), {"return_attention": True},
        lambda ref, p, att=att: ref.seq2seq(p, SRC, TGT, att))
       for att in ATTENTIONS},
}


def _make(fw, case):
    cls, args, kwargs = CASES[case][:3]
    return fw.make(cls, *args, **kwargs)


def _pair(tf_fw, torch_fw, interop, case, seed=0):
    """A TF and a torch instance of ``case`` holding the same random weights."""
    tf_layer, pt_layer = _make(tf_fw, case), _make(torch_fw, case)
    params = random_params(tf_layer, seed=seed)
    interop.set_weights(tf_layer, params)
    interop.set_weights(pt_layer, params)
    return tf_layer, pt_layer, params


# --------------------------------------------------------------------------- parity
@pytest.mark.parametrize("case", list(CASES))
def test_three_way_parity(case, tf_fw, torch_fw, interop, ref, record_error):
    tf_layer, pt_layer, params = _pair(tf_fw, torch_fw, interop, case, seed=len(case))
    for layer in (tf_layer, pt_layer):  # read back exactly what was set
        got = interop.get_weights(layer)
        assert sorted(got) == sorted(params)
        for k in params:
            np.testing.assert_array_equal(got[k], params[k], err_msg=k)
    args, kwargs = CASES[case][3:5]
    expected = CASES[case][5](ref, _f64(params))
    out_tf = tf_fw.call(tf_layer, *args, **kwargs)
    out_pt = torch_fw.call(pt_layer, *args, **kwargs)
    e_tf = record_error(f"{case} tf vs ref", max_abs_diff(out_tf, expected))
    e_pt = record_error(f"{case} torch vs ref", max_abs_diff(out_pt, expected))
    e_x = record_error(f"{case} tf vs torch", max_abs_diff(out_tf, out_pt))
    assert float(np.max(np.abs(flatten(expected)[0]))) > 0.1  # not trivially zero
    assert e_tf <= PARITY_ATOL and e_pt <= PARITY_ATOL and e_x <= PARITY_ATOL


@pytest.mark.parametrize("attention", [None] + ATTENTIONS)
@pytest.mark.parametrize("direction", ["tf->torch", "torch->tf"])
def test_copy_weights_from_native_init(attention, direction, tf_fw, torch_fw, interop):
    """copy_weights moves freshly initialised weights (no set_weights) and the outputs agree."""
    tf_fw.seed(1)
    torch_fw.seed(1)
    args = (SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    tf_model, pt_model = tf_fw.make("Seq2Seq", *args), torch_fw.make("Seq2Seq", *args)
    if direction == "tf->torch":
        interop.copy_weights(tf_model, pt_model)
    else:
        interop.copy_weights(pt_model, tf_model)
    assert max_abs_diff(tf_fw.call(tf_model, SRC, TGT), torch_fw.call(pt_model, SRC, TGT)) <= PARITY_ATOL


def test_gru_weight_mapping(torch_fw, interop):
    """Keras' (z, r, h) column blocks land in torch's (r, z, n) row blocks; biases in two rows."""
    layer = torch_fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS)
    params = random_params(layer, seed=3)
    interop.set_weights(layer, params)
    u = UNITS
    kernel, recurrent, bias = (params[f"rnn.{k}"] for k in ("kernel", "recurrent_kernel", "bias"))
    assert kernel.shape == (EMB, 3 * u) and recurrent.shape == (u, 3 * u) and bias.shape == (2, 3 * u)
    z, r, h = slice(0, u), slice(u, 2 * u), slice(2 * u, 3 * u)
    keras_order = np.concatenate
    rnn = layer.rnn
    np.testing.assert_array_equal(rnn.weight_ih_l0.detach().numpy(),
                                  keras_order([kernel[:, r], kernel[:, z], kernel[:, h]], 1).T)
    np.testing.assert_array_equal(rnn.weight_hh_l0.detach().numpy(),
                                  keras_order([recurrent[:, r], recurrent[:, z], recurrent[:, h]], 1).T)
    np.testing.assert_array_equal(rnn.bias_ih_l0.detach().numpy(),
                                  keras_order([bias[0, r], bias[0, z], bias[0, h]]))
    np.testing.assert_array_equal(rnn.bias_hh_l0.detach().numpy(),
                                  keras_order([bias[1, r], bias[1, z], bias[1, h]]))


def test_gru_interop_shape_errors(fw, interop):
    layer = fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS)
    params = random_params(layer)
    params["rnn.bias"] = params["rnn.bias"][0]  # one bias vector instead of two
    with pytest.raises(ValueError, match=r"rnn\.bias: expected shape \(2, 24\)"):
        interop.set_weights(layer, params)


@pytest.mark.parametrize("attention", [None, "bahdanau"])
def test_initialisation_matches_keras(fw, interop, attention):
    """Glorot-uniform kernels, orthogonal recurrent kernels, zero biases, in both frameworks."""
    fw.seed(0)
    model = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    w = interop.get_weights(model)
    for prefix, fan_in in (("encoder.rnn", EMB), ("decoder.rnn", EMB + UNITS)):
        k, rk, b = w[f"{prefix}.kernel"], w[f"{prefix}.recurrent_kernel"], w[f"{prefix}.bias"]
        assert np.all(np.abs(k) <= np.sqrt(6.0 / (fan_in + 3 * UNITS)) + 1e-7)
        np.testing.assert_allclose(rk @ rk.T, np.eye(UNITS), atol=1e-5)  # orthonormal rows
        assert b.shape == (2, 3 * UNITS) and not b.any()
    assert np.all(np.abs(w["encoder.embedding.embeddings"]) <= 0.05)
    assert not w["decoder.final_layer.bias"].any()


# ---------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("case", list(CASES))
def test_output_shapes(fw, case):
    fw.seed(0)
    out = fw.call(_make(fw, case), *CASES[case][3], **CASES[case][4])
    b, s, t = SRC.shape[0], SRC.shape[1], TGT.shape[1]
    want = {
        "BahdanauAttention": [(b, 4, 7), (b, 4, s)],
        "LuongAttention-dot": [(b, 4, UNITS), (b, 4, s)],
        "LuongAttention-general": [(b, 4, 7), (b, 4, s)],
        "Seq2SeqEncoder": [(b, s, UNITS), (b, UNITS)],
        "Seq2SeqDecoder": [(b, t, TGT_VOCAB), (b, UNITS)],
        "Seq2SeqDecoder-context": [(b, t, TGT_VOCAB), (b, UNITS)],
        "Seq2Seq-none": [(b, t, TGT_VOCAB)],
        **{f"AttentionDecoder-{a}": [(b, t, TGT_VOCAB), (b, UNITS), (b, t, s)] for a in ATTENTIONS},
        **{f"Seq2Seq-{a}": [(b, t, TGT_VOCAB), (b, t, s)] for a in ATTENTIONS},
    }[case]
    assert [o.shape for o in flatten(out)] == want
    assert all(np.all(np.isfinite(o)) for o in flatten(out))


def test_attention_decoder_without_return_attention(fw):
    fw.seed(0)
    dec = fw.make("AttentionDecoder", TGT_VOCAB, EMB, UNITS)
    logits, state = fw.call(dec, TGT, ENC_OUT, STATE)  # padding_mask defaults to None
    assert logits.shape == (3, 5, TGT_VOCAB) and state.shape == (3, UNITS)


# --------------------------------------------------------------------------- masking
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_masked_positions_weight_exactly_zero(fw, attention):
    fw.seed(0)
    model = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    _, weights = fw.call(model, SRC, TGT, return_attention=True)  # (batch, tgt_len, src_len)
    assert not np.isnan(weights).any()
    blocked = np.broadcast_to(SRC_MASK != 0, weights.shape)
    assert np.all(weights[blocked] == 0.0)
    sums = weights.sum(-1)
    np.testing.assert_allclose(sums[:2], 1.0, atol=1e-6)  # rows with real tokens
    assert np.all(weights[2] == 0.0)  # the all-pad source: all-zero rows, never NaN


@pytest.mark.parametrize("case", ["BahdanauAttention", "LuongAttention-dot", "LuongAttention-general"])
def test_attention_fully_masked_row_is_zero(fw, case):
    fw.seed(0)
    layer = _make(fw, case)
    query, keys = CASES[case][3]
    mask = np.zeros((3, 4, 6), np.float32)
    mask[1, 2] = 1.0  # one fully blocked query row
    mask[0, :, ::2] = 1.0  # every other key blocked for the first example
    context, weights = fw.call(layer, query, keys, mask=mask)
    assert np.all(weights[1, 2] == 0.0) and np.all(context[1, 2] == 0.0)
    assert np.all(weights[0, :, ::2] == 0.0)
    assert np.isfinite(weights).all() and np.isfinite(context).all()


@pytest.mark.parametrize("case", ["BahdanauAttention", "LuongAttention-dot", "LuongAttention-general"])
def test_projected_keys_passed_in_give_what_the_layer_computes(fw, case):
    """``project_keys`` is the keys' half of the score: passing it in (as the decoder does, once per
    sentence) gives the layer's own result bit for bit, and a different projection changes it."""
    fw.seed(0)
    layer = _make(fw, case)
    query, keys = CASES[case][3]
    mask = np.zeros((3, 1, 6), np.float32)
    mask[0, :, 4:] = 1.0
    projected = layer.project_keys(fw.tensor(keys))  # (batch, Tk, units)
    assert tuple(projected.shape) == (3, 6, UNITS)
    context, weights = fw.call(layer, query, keys, mask=mask)
    given, given_weights = fw.call(layer, query, keys, mask=mask, projected_keys=projected)
    np.testing.assert_array_equal(given, context)
    np.testing.assert_array_equal(given_weights, weights)
    _, other = fw.call(layer, query, keys, mask=mask, projected_keys=2.0 * projected)
    assert not np.allclose(other, weights)


def test_encoder_state_is_last_non_pad_output(fw):
    fw.seed(0)
    enc = fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS)
    outputs, state = fw.call(enc, SRC)
    np.testing.assert_array_equal(state[0], outputs[0, 3])  # trailing pads skipped
    np.testing.assert_array_equal(state[1], outputs[1, 5])  # a mid-sequence pad is read like a token
    np.testing.assert_array_equal(state[2], 0.0)  # all pad: the zero initial state


def test_encoder_state_skips_trailing_custom_pad_id(fw):
    fw.seed(0)
    enc = fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS, pad_id=7)
    outputs, state = fw.call(enc, SRC)
    np.testing.assert_array_equal(state[0], outputs[0, 5])  # 0 is an ordinary token now...
    src = SRC.copy()
    src[1, 4:] = 7
    outputs, state = fw.call(enc, src)
    np.testing.assert_array_equal(state[1], outputs[1, 3])  # ...and trailing 7s are skipped


@pytest.mark.parametrize("attention", [None] + ATTENTIONS)
def test_source_padding_changes_nothing(fw, attention):
    """Extra trailing source padding changes neither the encoder state nor the logits."""
    fw.seed(0)
    model = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    short = np.array([[5, 9, 3, 7], [4, 12, 1, 6]], dtype=np.int64)
    padded = np.concatenate([short, np.zeros((2, 3), np.int64)], axis=1)
    padded[1, 4:] = [3, 0, 0]  # second row: one more real token, then padding
    short_b = np.array([[4, 12, 1, 6, 3]], dtype=np.int64)
    tgt = TGT[:2]
    _, s_short = fw.call(model.encoder, short)
    _, s_padded = fw.call(model.encoder, padded)
    _, s_short_b = fw.call(model.encoder, short_b)
    np.testing.assert_allclose(s_padded[0], s_short[0], atol=1e-6)
    np.testing.assert_allclose(s_padded[1], s_short_b[0], atol=1e-6)
    l_padded = fw.call(model, padded, tgt)
    np.testing.assert_allclose(l_padded[:1], fw.call(model, short[:1], tgt[:1]), atol=1e-6)
    np.testing.assert_allclose(l_padded[1:], fw.call(model, short_b, tgt[1:]), atol=1e-6)


# ---------------------------------------------------------------- step-by-step decoding
def test_seq2seq_decoder_step_by_step(fw):
    fw.seed(0)
    dec = fw.make("Seq2SeqDecoder", TGT_VOCAB, EMB, UNITS)
    full, full_state = fw.call(dec, TGT, STATE)
    state = STATE
    for t in range(TGT.shape[1]):
        logits, state = fw.call(dec, TGT[:, t:t + 1], state, context=STATE)
        np.testing.assert_allclose(logits[:, 0], full[:, t], atol=1e-5, err_msg=f"step {t}")
    np.testing.assert_allclose(state, full_state, atol=1e-5)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_attention_decoder_step_by_step(fw, attention):
    fw.seed(0)
    dec = fw.make("AttentionDecoder", TGT_VOCAB, EMB, UNITS, attention)
    full, full_state, full_w = fw.call(dec, TGT, ENC_OUT, STATE, SRC_MASK, return_attention=True)
    state = STATE
    for t in range(TGT.shape[1]):
        logits, state, w = fw.call(dec, TGT[:, t:t + 1], ENC_OUT, state, SRC_MASK, return_attention=True)
        np.testing.assert_allclose(logits[:, 0], full[:, t], atol=1e-5, err_msg=f"step {t}")
        np.testing.assert_allclose(w[:, 0], full_w[:, t], atol=1e-6, err_msg=f"step {t}")
    np.testing.assert_allclose(state, full_state, atol=1e-5)


@pytest.mark.parametrize("attention", [None, "luong_general"])
def test_model_decode_step_matches_teacher_forcing(fw, attention):
    """start_decoding/decode_step (the decoding protocol) give the full call's logits."""
    fw.seed(0)
    model = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    full = fw.call(model, SRC, TGT)
    state = model.start_decoding(fw.tensor(SRC))
    for t in range(TGT.shape[1]):
        logits, state = model.decode_step(fw.tensor(TGT[:, t:t + 1]), state)
        np.testing.assert_allclose(fw.to_numpy(logits)[:, 0], full[:, t], atol=1e-5, err_msg=f"step {t}")


# ------------------------------------------------------------------------ model API
@pytest.mark.parametrize("attention", [None, "bahdanau"])
def test_seq2seq_accepts_pair(fw, attention):
    fw.seed(0)
    model = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    pair = (fw.tensor(SRC), fw.tensor(TGT))
    np.testing.assert_array_equal(fw.call(model, pair), fw.call(model, SRC, TGT))


@pytest.mark.parametrize("case", list(CASES))
def test_get_config_round_trip(fw, case):
    layer = _make(fw, case)
    cfg = layer.get_config()
    clone = type(layer).from_config(cfg) if fw.name == "tensorflow" else type(layer)(**cfg)
    assert clone.get_config() == cfg


def test_tf_weights_exist_after_construction(tf_fw, interop):
    for case in CASES:
        layer = _make(tf_fw, case)
        assert layer.built
        if case != "LuongAttention-dot":  # the dot score has no weights
            assert layer.weights and interop.get_weights(layer)


# --------------------------------------------------------------------- serialisation
@pytest.mark.parametrize("attention", [None, "bahdanau"])
def test_keras_save_load(tf_fw, interop, tmp_path, attention):
    import keras

    model = tf_fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention, pad_id=0)
    interop.set_weights(model, random_params(model, seed=5))
    assert isinstance(model, keras.Model)
    kw = {"return_attention": True} if attention else {}
    before = tf_fw.call(model, SRC, TGT, **kw)
    path = tmp_path / "seq2seq.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
    assert max_abs_diff(before, tf_fw.call(loaded, SRC, TGT, **kw)) == 0.0


@pytest.mark.parametrize("attention", [None] + ATTENTIONS)
def test_torch_state_dict_round_trip(torch_fw, interop, tmp_path, attention):
    import torch

    args = (SRC_VOCAB, TGT_VOCAB, EMB, UNITS, attention)
    model = torch_fw.make("Seq2Seq", *args)
    interop.set_weights(model, random_params(model, seed=6))
    path = tmp_path / "seq2seq.pt"
    torch.save(model.state_dict(), path)
    clone = torch_fw.make("Seq2Seq", *args)
    clone.load_state_dict(torch.load(path, weights_only=True))
    assert max_abs_diff(torch_fw.call(model, SRC, TGT), torch_fw.call(clone, SRC, TGT)) == 0.0


# -------------------------------------------------------------------------- training
def test_keras_fit_and_dynamic_lengths(tf_fw):
    """The attention decoder (a tf.scan) trains with fit and traces with unknown lengths."""
    import keras
    import tensorflow as tf

    tf_fw.seed(0)
    model = tf_fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, "bahdanau")
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    src, tgt = np.tile(SRC[:2], (2, 1)), np.tile(TGT[:2], (2, 1))
    history = model.fit((src, tgt[:, :-1]), tgt[:, 1:], batch_size=2, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    spec = tf.TensorSpec((None, None), tf.int64)
    traced = tf.function(lambda s, t: model(s, t, training=False), input_signature=[spec, spec])
    np.testing.assert_allclose(traced(src, tgt).numpy(), tf_fw.call(model, src, tgt), atol=1e-6)


def test_torch_backward_reaches_every_parameter(torch_fw):
    torch_fw.seed(0)
    model = torch_fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, "luong_general")
    logits = torch_fw.call_raw(model, SRC, TGT, training=True)
    logits.sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None and g.abs().sum() > 0 for g in grads.values()), \
        [n for n, g in grads.items() if g is None or not g.abs().sum() > 0]


# ------------------------------------------------------------------------- bad input
def _errors(fw):
    """(label, exception, message regex, callable) of calls that must raise; the same in both frameworks."""
    fw.seed(0)
    enc = fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS)
    dec = fw.make("Seq2SeqDecoder", TGT_VOCAB, EMB, UNITS)
    adec = fw.make("AttentionDecoder", TGT_VOCAB, EMB, UNITS)
    bahdanau = fw.make("BahdanauAttention", UNITS)
    plain = fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS)
    bad_mask = r"mask of shape \({}\) does not broadcast to the attention weights of shape \({}\)"
    return [
        ("float tokens", TypeError, r"token ids must be an integer tensor \(int32 or int64\)",
         lambda: fw.call(enc, SRC.astype(np.float32))),
        ("rank-3 tokens", ValueError, r"token ids must have shape \(batch, length\), got \(3, 6, 1\)",
         lambda: fw.call(enc, SRC[:, :, None])),
        ("id out of range", ValueError, r"token ids must lie in \[0, 13\) for vocab_size=13, got ids from 13",
         lambda: fw.call(enc, SRC + SRC_VOCAB)),
        ("empty tokens", ValueError, "token ids must hold at least one position, got length 0",
         lambda: fw.call(enc, SRC[:, :0])),
        ("state width", ValueError, r"state must have shape \(batch, 8\), got \(3, 5\)",
         lambda: fw.call(dec, TGT, STATE[:, :5])),
        ("context width", ValueError, r"context must have shape \(batch, 8\), got \(3, 5\)",
         lambda: fw.call(dec, TGT, STATE, context=STATE[:, :5])),
        ("state batch", ValueError, "state has batch size 2, expected 3",
         lambda: fw.call(dec, TGT, STATE[:2])),
        ("enc_outputs width", ValueError,
         r"enc_outputs? must have shape \(batch, length, 8\), got \(3, 6, 7\)",
         lambda: fw.call(adec, TGT, KEYS7, STATE)),
        ("enc_outputs batch", ValueError, "enc_outputs? has batch size 2, expected 3",
         lambda: fw.call(adec, TGT, ENC_OUT[:2], STATE)),
        ("4-D mask", ValueError, bad_mask.format("3, 1, 1, 6", "3, 1, 6"),
         lambda: fw.call(adec, TGT, ENC_OUT, STATE, SRC_MASK[:, None])),
        ("mask length", ValueError, bad_mask.format("3, 1, 4", "3, 4, 6"),
         lambda: fw.call(bahdanau, QUERY8, ENC_OUT, mask=SRC_MASK[..., :4])),
        ("query width", ValueError, r"query must have shape \(batch, length, 8\), got \(3, 4, 5\)",
         lambda: fw.call(bahdanau, QUERY5, ENC_OUT)),
        ("return_attention without attention", ValueError,
         "return_attention=True needs attention weights, but this Seq2Seq was built with attention=None",
         lambda: fw.call(plain, SRC, TGT, return_attention=True)),
        ("unknown score", ValueError, r"score must be one of \('dot', 'general'\), got 'concat'",
         lambda: fw.make("LuongAttention", UNITS, "concat")),
        ("dot with other key width", ValueError,
         'score="dot" needs keys as wide as the queries: key_dim=7 != units=8',
         lambda: fw.make("LuongAttention", UNITS, "dot", key_dim=7)),
        ("unknown attention", ValueError,
         r"attention must be one of \('bahdanau', 'luong_dot', 'luong_general'\), got 'luong'",
         lambda: fw.make("AttentionDecoder", TGT_VOCAB, EMB, UNITS, "luong")),
        ("unknown model attention", ValueError,
         r"attention must be one of \(None, 'bahdanau', 'luong_dot', 'luong_general'\), got 'additive'",
         lambda: fw.make("Seq2Seq", SRC_VOCAB, TGT_VOCAB, EMB, UNITS, "additive")),
        ("zero units", ValueError, "units must be a positive int, got 0",
         lambda: fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, 0)),
        ("bad pad_id", ValueError, r"pad_id must be an int in \[0, 13\), got 13",
         lambda: fw.make("Seq2SeqEncoder", SRC_VOCAB, EMB, UNITS, pad_id=SRC_VOCAB)),
        ("not a pair", TypeError,
         r"Seq2Seq expects \(src_tokens, tgt_tokens\): two arguments, a pair, or a dict",
         lambda: fw.call(plain, SRC)),
    ]


def test_bad_input_same_errors_in_both_frameworks(tf_fw, torch_fw):
    messages = {}
    for fw in (tf_fw, torch_fw):
        for label, exc, pattern, fn in _errors(fw):
            with pytest.raises(exc, match=pattern) as info:
                fn()
            messages.setdefault(label, []).append(str(info.value))
    del messages["not a pair"]  # names the framework's tensor type
    for label, (m_tf, m_pt) in messages.items():  # Keras wraps the message in call details
        assert m_pt.replace("torch.", "") in m_tf, f"{label}: {m_pt!r} not in {m_tf!r}"
