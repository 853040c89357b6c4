"""Llama's components in both frameworks: RMSNorm, rotary position embeddings (RoPE), the gated
(SwiGLU) feed-forward and grouped-query attention (options of FeedForward and MultiHeadAttention).

The oracles: Hugging Face ``transformers`` (``LlamaRMSNorm``, ``LlamaRotaryEmbedding`` with
``apply_rotary_pos_emb``, ``LlamaMLP``; random weights, no download), the explicit repeat of the
key/value heads, and the NumPy reference (float64). Small sizes: d_model 32, 4 heads of 8 features.
"""

import numpy as np
import pytest
import torch
import transformers
from helpers import PARITY_ATOL, max_abs_diff, random_params
from transformers.models.llama import modeling_llama as hf_llama

from course_pkg import interop
from course_pkg import reference as ref

D_MODEL, HEADS, DEPTH, DFF = 32, 4, 8, 48
RNG = np.random.default_rng(28)
X = RNG.normal(size=(2, 6, D_MODEL)).astype(np.float32) * 2  # (batch, seq, d_model)
ENC = RNG.normal(size=(2, 4, D_MODEL)).astype(np.float32)  # (batch, src_len, d_model)
POSITIONS = np.array([[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]])  # the second row left-padded
CAUSAL = np.triu(np.ones((6, 6), np.float32), k=1)  # (seq, seq), 1.0 = blocked


def hf_config(theta=10000.0, kv_heads=2):
    return transformers.LlamaConfig(
        vocab_size=50, hidden_size=D_MODEL, intermediate_size=DFF, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=kv_heads, rope_theta=theta, rms_norm_eps=1e-5)


def f64(params):
    return {k: np.asarray(v, np.float64) for k, v in params.items()}


def with_weights(fw, cls, *args, seed=0, **kwargs):
    """A course layer with random canonical weights, and those weights."""
    layer = fw.make(cls, *args, **kwargs)
    params = random_params(layer, seed=seed)
    interop.set_weights(layer, params)
    return layer, params


# ----------------------------------------------------------------------------- RMSNorm
def test_rms_norm_equals_huggingface(fw, record_error):
    hf = hf_llama.LlamaRMSNorm(D_MODEL, eps=1e-5)
    scale = RNG.normal(1.0, 0.3, size=D_MODEL).astype(np.float32)
    with torch.no_grad():
        hf.weight.copy_(torch.from_numpy(scale))
        expected = hf(torch.from_numpy(X)).numpy()
    layer = fw.make("RMSNorm", D_MODEL, epsilon=1e-5)
    interop.set_weights(layer, {"scale": scale})
    out = fw.call(layer, X)
    e_hf = record_error(f"RMSNorm {fw.name} vs HF", max_abs_diff(out, expected))
    expected_ref = ref.rms_norm({"scale": scale.astype(np.float64)}, X, 1e-5)
    e_ref = record_error(f"RMSNorm {fw.name} vs ref", max_abs_diff(out, expected_ref))
    assert np.abs(out - X).max() > 0.1  # it changed something
    assert e_hf <= 1e-6 and e_ref <= PARITY_ATOL


def test_rms_norm_starts_as_unit_root_mean_square(fw):
    layer = fw.make("RMSNorm", D_MODEL)
    np.testing.assert_array_equal(interop.get_weights(layer)["scale"], np.ones(D_MODEL, np.float32))
    out = fw.call(layer, X)
    np.testing.assert_allclose(np.sqrt(np.mean(out ** 2, axis=-1)), 1.0, atol=1e-5)
    cfg = layer.get_config()
    assert (cfg["d_model"], cfg["epsilon"]) == (D_MODEL, 1e-6)
    assert type(layer).from_config(cfg).get_config() == cfg


def test_rms_norm_casts_back_before_the_scale_as_huggingface(torch_fw):
    hf = hf_llama.LlamaRMSNorm(D_MODEL, eps=1e-6).to(torch.bfloat16)
    layer = torch_fw.make("RMSNorm", D_MODEL).to(torch.bfloat16)
    scale = torch.from_numpy(RNG.normal(1.0, 0.3, size=D_MODEL).astype(np.float32)).to(torch.bfloat16)
    x = torch.from_numpy(X).to(torch.bfloat16)
    with torch.no_grad():
        hf.weight.copy_(scale)
        layer.scale.copy_(scale)
        out, expected = layer(x), hf(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, expected)  # bit for bit


# ----------------------------------------------------------------------------- rotary
@pytest.mark.parametrize("theta", [10000.0, 500000.0])
def test_rotary_equals_huggingface(fw, theta, record_error):
    positions = np.array([[0, 1, 2, 3, 4, 5], [3, 17, 40, 41, 99, 100]])
    rope = hf_llama.LlamaRotaryEmbedding(hf_config(theta))
    q = RNG.normal(size=(2, HEADS, 6, DEPTH)).astype(np.float32)
    k = RNG.normal(size=(2, 2, 6, DEPTH)).astype(np.float32)
    with torch.no_grad():
        hf_cos, hf_sin = rope(torch.from_numpy(q), torch.from_numpy(positions))
        hf_q, hf_k = hf_llama.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), hf_cos, hf_sin)
    cos, sin = fw.cp.rotary_cos_sin(fw.tensor(positions), DEPTH, theta)
    assert fw.to_numpy(cos).dtype == np.float32 and tuple(cos.shape) == (2, 6, DEPTH)
    e_cs = max_abs_diff(fw.to_numpy((cos, sin)), (hf_cos.numpy(), hf_sin.numpy()))
    got_q, got_k = (fw.to_numpy(fw.cp.apply_rotary(fw.tensor(t), cos, sin)) for t in (q, k))
    e_qk = record_error(f"RoPE {theta:g} {fw.name} vs HF", max_abs_diff((got_q, got_k), (hf_q.numpy(),
                                                                                          hf_k.numpy())))
    layer = fw.make("RotaryEmbedding", DEPTH, theta=theta)
    e_layer = max_abs_diff(fw.call(layer, q, positions), got_q)
    ref_cos, ref_sin = ref.rotary_cos_sin(positions, DEPTH, theta)
    e_ref = record_error(f"RoPE {theta:g} {fw.name} vs ref",
                         max_abs_diff(got_q, ref.apply_rotary(q, ref_cos, ref_sin)))
    assert np.abs(got_q - q).max() > 0.1  # positions > 0 rotate
    np.testing.assert_allclose(got_q[0, :, 0], q[0, :, 0], atol=1e-6)  # position 0: the identity
    assert e_cs <= 1e-5 and e_qk <= 1e-5 and e_layer == 0.0 and e_ref <= 1e-4


def test_rotary_scores_depend_only_on_the_offset(fw):
    """q·k of a query rotated to position m and a key rotated to n depends on m - n alone."""
    q = fw.tensor(RNG.normal(size=(1, 1, 1, DEPTH)).astype(np.float32))
    k = fw.tensor(RNG.normal(size=(1, 1, 1, DEPTH)).astype(np.float32))
    layer = fw.make("RotaryEmbedding", DEPTH)

    def score(m, n):
        rq = fw.to_numpy(fw.call(layer, q, np.array([[m]])))
        rk = fw.to_numpy(fw.call(layer, k, np.array([[n]])))
        return float(np.sum(rq * rk))

    same_offset = [score(m, m - 2) for m in (2, 5, 11, 40)]
    np.testing.assert_allclose(same_offset, same_offset[0], rtol=1e-4, atol=1e-5)
    assert abs(score(5, 3) - score(5, 4)) > 1e-3  # another offset, another score
    plain = float(np.sum(fw.to_numpy(q) * fw.to_numpy(k)))
    assert abs(score(7, 7) - plain) < 1e-5  # offset 0: the unrotated product


# ----------------------------------------------------------------------------- SwiGLU feed-forward
def test_gated_feed_forward_equals_huggingface_llama_mlp(fw, record_error):
    hf = hf_llama.LlamaMLP(hf_config()).eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
        expected = hf(torch.from_numpy(X)).numpy()
    params = {"w1.kernel": hf.gate_proj.weight.detach().numpy().T,  # gate_proj
              "w3.kernel": hf.up_proj.weight.detach().numpy().T,  # up_proj
              "w2.kernel": hf.down_proj.weight.detach().numpy().T}  # down_proj
    layer = fw.make("FeedForward", D_MODEL, DFF, dropout=0.0, activation="silu", gated=True, use_bias=False)
    assert sorted(interop.get_weights(layer)) == sorted(params)  # three kernels, no bias
    interop.set_weights(layer, params)
    out = fw.call(layer, X)
    e_hf = record_error(f"SwiGLU {fw.name} vs HF", max_abs_diff(out, expected))
    e_ref = record_error(f"SwiGLU {fw.name} vs ref",
                         max_abs_diff(out, ref.feed_forward(f64(params), X, "silu", gated=True)))
    size = np.abs(expected).max()
    assert size > 0.5
    assert e_hf <= PARITY_ATOL * size and e_ref <= PARITY_ATOL * size  # float32 rounding of outputs ~ size


@pytest.mark.parametrize("options", [{"activation": "silu"}, {"gated": True},
                                     {"gated": True, "activation": "gelu", "use_bias": False}])
def test_feed_forward_options_equal_the_reference(fw, options, record_error):
    layer, params = with_weights(fw, "FeedForward", D_MODEL, DFF, **options)
    assert ("w3.kernel" in params) == options.get("gated", False)
    assert ("w1.bias" in params) == options.get("use_bias", True)
    activation, gated = options.get("activation", "relu"), options.get("gated", False)
    expected = ref.feed_forward(f64(params), X, activation, gated)
    e = record_error(f"FeedForward {options} {fw.name} vs ref", max_abs_diff(fw.call(layer, X), expected))
    assert e <= PARITY_ATOL * max(1.0, np.abs(expected).max())  # a gated product reaches ~10: relative
    cfg = layer.get_config()
    assert all(cfg[key] == value for key, value in options.items())
    clone = type(layer).from_config(cfg)
    interop.copy_weights(layer, clone)
    np.testing.assert_array_equal(fw.call(clone, X), fw.call(layer, X))


# ----------------------------------------------------------------------------- grouped-query attention
def _repeated_heads(params, kv_heads):
    """The GQA weights as those of a plain MHA whose key/value heads are the repeated kv heads."""
    groups = HEADS // kv_heads
    heads = np.repeat(np.arange(kv_heads), groups)  # query head h reads kv head h // groups
    columns = (heads[:, None] * DEPTH + np.arange(DEPTH)).ravel()  # (d_model,)
    plain = dict(params)
    for name in ("wk", "wv"):
        plain[f"{name}.kernel"] = params[f"{name}.kernel"][:, columns]
        plain[f"{name}.bias"] = params[f"{name}.bias"][columns]
    return plain


def test_reference_grouped_query_attention_with_its_defaults_is_the_papers_attention():
    rng = np.random.default_rng(3)
    params = {f"{name}.{part}": rng.normal(size=shape) for name in ("wq", "wk", "wv", "wo")
              for part, shape in (("kernel", (D_MODEL, D_MODEL)), ("bias", (D_MODEL,)))}
    mask = ref.create_padding_mask(np.array([[3, 4, 5, 0], [1, 2, 3, 4]]))
    paper = ref.multi_head_attention(params, X, ENC, ENC, HEADS, mask)
    options = ref.grouped_query_attention(params, X, ENC, ENC, HEADS, mask)
    assert all(np.array_equal(a, b) for a, b in zip(paper, options))
    rotated = ref.grouped_query_attention(params, X, X, X, HEADS, num_kv_heads=HEADS, rope_theta=1e4)
    assert not np.allclose(rotated[0], ref.multi_head_attention(params, X, X, X, HEADS)[0])  # rotated


@pytest.mark.parametrize("kv_heads", [2, 1])
def test_grouped_query_attention_is_attention_with_repeated_kv_heads(fw, kv_heads, record_error):
    gqa, params = with_weights(fw, "MultiHeadAttention", D_MODEL, HEADS, num_kv_heads=kv_heads)
    assert params["wk.kernel"].shape == (D_MODEL, kv_heads * DEPTH)
    plain = fw.make("MultiHeadAttention", D_MODEL, HEADS)
    interop.set_weights(plain, _repeated_heads(params, kv_heads))
    mask = ref.create_padding_mask(np.array([[3, 4, 5, 0], [1, 2, 3, 4]])).astype(np.float32)
    out, weights = fw.call(gqa, X, ENC, ENC, mask=mask)
    e = record_error(f"GQA {kv_heads} {fw.name} vs repeated MHA",
                     max_abs_diff((out, weights), fw.call(plain, X, ENC, ENC, mask=mask)))
    assert weights.shape == (2, HEADS, 6, 4)  # after the repeat
    k, v = fw.call(gqa.project_kv, ENC, ENC)
    assert k.shape == v.shape == (2, kv_heads, 4, DEPTH)  # the cache keeps kv heads only
    expected = ref.grouped_query_attention(f64(params), X, ENC, ENC, HEADS, mask, num_kv_heads=kv_heads)
    e_ref = record_error(f"GQA {kv_heads} {fw.name} vs ref", max_abs_diff((out, weights), expected))
    assert e <= PARITY_ATOL and e_ref <= PARITY_ATOL


@pytest.mark.parametrize("options", [{"num_kv_heads": 2, "use_bias": False, "rope_theta": 10000.0},
                                     {"num_kv_heads": 1, "rope_theta": 500000.0}, {}])
def test_fused_path_equals_explicit_path(fw, options):
    layer, _ = with_weights(fw, "MultiHeadAttention", D_MODEL, HEADS, **options)
    kw = {"positions": POSITIONS} if options.get("rope_theta") else {}
    explicit, _ = fw.call(layer, X, X, X, mask=CAUSAL, **kw)
    fused, none = fw.call(layer, X, X, X, mask=CAUSAL, need_weights=False, **kw)
    old = fw.cp.set_fused_attention(False)
    try:
        forced, _ = fw.call(layer, X, X, X, mask=CAUSAL, need_weights=False, **kw)
    finally:
        fw.cp.set_fused_attention(old)
    assert none is None
    np.testing.assert_array_equal(forced, explicit)
    assert max_abs_diff(fused, explicit) <= 1e-5 and np.abs(explicit).max() > 0.1


@pytest.mark.parametrize("options", [{"num_kv_heads": 2, "use_bias": False, "rope_theta": 10000.0},
                                     {"num_kv_heads": 1, "rope_theta": 500000.0},
                                     {"use_bias": False, "rope_theta": 10000.0}])
def test_attention_with_rope_equals_the_reference(fw, options, record_error):
    layer, params = with_weights(fw, "MultiHeadAttention", D_MODEL, HEADS, **options)
    assert ("wq.bias" in params) == options.get("use_bias", True)
    for positions in (None, POSITIONS):
        kw = {} if positions is None else {"positions": positions}
        out = fw.call(layer, X, X, X, mask=CAUSAL, **kw)
        expected = ref.grouped_query_attention(f64(params), X, X, X, HEADS, CAUSAL,
                                               options.get("num_kv_heads"), options["rope_theta"], positions)
        e = record_error(f"MHA {options} {positions is None} {fw.name} vs ref", max_abs_diff(out, expected))
        # float32 rounding of the rotation angles and of outputs of a few units: a bound relative
        # to the largest output (TensorFlow 2.19 with Keras 3.10 reaches 1.2e-5)
        assert e <= PARITY_ATOL * max(1.0, np.abs(expected[0]).max())  # expected: (output, weights)
    shifted = fw.call(layer, X, X, X, mask=CAUSAL, positions=POSITIONS + 7)
    unshifted = fw.call(layer, X, X, X, mask=CAUSAL, positions=POSITIONS)
    assert max_abs_diff(shifted, unshifted) <= 1e-5  # only offsets matter
    assert max_abs_diff(fw.call(layer, X, X, X, mask=CAUSAL), out) > 1e-3  # other positions, other output


def test_cached_keys_are_rotated_to_their_positions(fw):
    """project_kv over the prefix, then over the new tokens, then attend: the full call's last rows."""
    layer, _ = with_weights(fw, "MultiHeadAttention", D_MODEL, HEADS, num_kv_heads=2, use_bias=False,
                            rope_theta=10000.0)
    full, _ = fw.call(layer, X, X, X, mask=CAUSAL, positions=POSITIONS)
    parts = [fw.call(layer.project_kv, X[:, a:b], X[:, a:b], positions=POSITIONS[:, a:b])
             for a, b in ((0, 4), (4, 6))]
    k = np.concatenate([parts[0][0], parts[1][0]], axis=2)  # (batch, kv_heads, 6, depth)
    v = np.concatenate([parts[0][1], parts[1][1]], axis=2)
    assert k.shape == (2, 2, 6, DEPTH)
    step, _ = fw.call(layer.attend, X[:, 4:], k, v, CAUSAL[4:], positions=POSITIONS[:, 4:])
    unrotated, _ = fw.call(layer.attend, X[:, 4:], k, v, CAUSAL[4:])  # positions 0, 1: wrong here
    assert max_abs_diff(step, full[:, 4:]) <= 1e-5 and max_abs_diff(unrotated, full[:, 4:]) > 1e-3


def test_default_options_keep_the_layers_as_they_were(fw):
    """Defaults: the same initial weights (same random draws), the same canonical names and shapes, and
    bit-identical outputs to the layer built with every new option spelt out at its default."""
    options = {"num_kv_heads": None, "use_bias": True, "rope_theta": None}
    fw.seed(3)
    plain = fw.make("MultiHeadAttention", D_MODEL, HEADS)
    fw.seed(3)
    spelt = fw.make("MultiHeadAttention", D_MODEL, HEADS, num_kv_heads=HEADS, use_bias=True, rope_theta=None)
    a, b = interop.get_weights(plain), interop.get_weights(spelt)
    assert sorted(a) == ["wk.bias", "wk.kernel", "wo.bias", "wo.kernel", "wq.bias", "wq.kernel", "wv.bias",
                         "wv.kernel"]
    assert all(np.array_equal(a[name], b[name]) for name in a)
    for need_weights in (True, False):
        np.testing.assert_array_equal(fw.call(plain, X, ENC, ENC, need_weights=need_weights)[0],
                                      fw.call(spelt, X, ENC, ENC, need_weights=need_weights)[0])
    cfg = plain.get_config()
    assert {key: cfg[key] for key in options} == {**options, "num_kv_heads": HEADS}
    ff = fw.make("FeedForward", D_MODEL, DFF)
    assert sorted(interop.get_weights(ff)) == ["w1.bias", "w1.kernel", "w2.bias", "w2.kernel"]
    assert (ff.get_config()["gated"], ff.get_config()["use_bias"]) == (False, True)


@pytest.mark.parametrize("options", [{"num_kv_heads": 2, "use_bias": False, "rope_theta": 500000.0}])
def test_attention_config_keeps_the_options(fw, options):
    layer, _ = with_weights(fw, "MultiHeadAttention", D_MODEL, HEADS, **options)
    cfg = layer.get_config()
    assert all(cfg[key] == value for key, value in options.items())
    clone = type(layer).from_config(cfg)
    interop.copy_weights(layer, clone)
    np.testing.assert_array_equal(fw.call(clone, X, X, X)[0], fw.call(layer, X, X, X)[0])
    assert type(fw.make("RotaryEmbedding", DEPTH, 500000.0)).from_config(
        fw.make("RotaryEmbedding", DEPTH, 500000.0).get_config()).theta == 500000.0


def test_keras_serialises_the_new_layers(tf_fw):
    import keras

    for layer in (tf_fw.make("RMSNorm", D_MODEL, epsilon=1e-5),
                  tf_fw.make("RotaryEmbedding", DEPTH, 500000.0),
                  tf_fw.make("MultiHeadAttention", D_MODEL, HEADS, num_kv_heads=1, rope_theta=10000.0)):
        clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
        assert type(clone) is type(layer) and clone.get_config() == layer.get_config()


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("build,error,match", [
    (lambda fw: fw.make("RotaryEmbedding", 7), ValueError, "head_dim must be an even positive int"),
    (lambda fw: fw.make("RotaryEmbedding", 8, theta=0.0), ValueError, "theta must be a positive float"),
    (lambda fw: fw.cp.rotary_cos_sin(np.zeros((1, 3), np.int64), 5), ValueError, "head_dim must be an even"),
    (lambda fw: fw.cp.rotary_cos_sin(np.zeros((1, 3), np.float32), 8), TypeError,
     "positions must hold integer"),
    (lambda fw: fw.make("MultiHeadAttention", 32, 4, num_kv_heads=3), ValueError,
     "num_kv_heads=3 does not divide num_heads=4"),
    (lambda fw: fw.make("MultiHeadAttention", 32, 4, num_kv_heads=0), ValueError, "num_kv_heads must be"),
    (lambda fw: fw.make("MultiHeadAttention", 12, 4, rope_theta=1e4), ValueError,
     r"head_dim = d_model // num_heads must be an even positive int.*got 3"),
    (lambda fw: fw.make("MultiHeadAttention", 32, 4, rope_theta=-1.0), ValueError,
     "rope_theta must be a positive"),
    (lambda fw: fw.make("MultiHeadAttention", 32, 4, use_bias=0), TypeError,
     "use_bias must be True or False"),
    (lambda fw: fw.make("FeedForward", 32, 48, gated="yes"), TypeError, "gated must be True or False"),
    (lambda fw: fw.make("RMSNorm", 32, epsilon=0.0), ValueError, "epsilon must be a positive float"),
    (lambda fw: fw.call(fw.make("RMSNorm", 16), X), ValueError, r"x must have shape \(\.\.\., 16\)"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_bad_arguments_are_refused(fw, build, error, match):
    with pytest.raises(error, match=match):
        build(fw)


def test_attention_refuses_positions_it_would_ignore_or_cannot_place(fw):
    plain = fw.make("MultiHeadAttention", D_MODEL, HEADS)
    with pytest.raises(ValueError, match="rope_theta=None: it would ignore them"):
        fw.call(plain, X, X, X, positions=POSITIONS)
    rope = fw.make("MultiHeadAttention", D_MODEL, HEADS, num_kv_heads=2, rope_theta=10000.0)
    with pytest.raises(ValueError, match=r"queries \(6\) and keys \(4\) of different lengths"):
        fw.call(rope, X, ENC, ENC)
    with pytest.raises(ValueError, match=r"positions must have shape \(batch, seq\) = \(2, 6\)"):
        fw.call(rope, X, X, X, positions=POSITIONS[:, :5])
    with pytest.raises(TypeError, match="positions must hold integer positions"):
        fw.call(rope, X, X, X, positions=POSITIONS.astype(np.float32))
    k = fw.tensor(RNG.normal(size=(2, HEADS, 6, DEPTH)).astype(np.float32))  # num_heads, not kv_heads
    with pytest.raises(ValueError, match=r"k must have shape \(batch, kv_heads, Tk, depth\) = \(batch, 2, "):
        rope.attend(fw.tensor(X), k, k)
    assert fw.call(rope, X, X, X, positions=POSITIONS[:1])[0].shape == X.shape  # (1, seq): every row alike
