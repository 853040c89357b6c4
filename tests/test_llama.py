"""Llama in both frameworks: Hugging Face's ``LlamaForCausalLM`` as the oracle, generation, the cache,
the NumPy reference, the loader's refusals.

The oracle is Hugging Face ``transformers`` (imported here only): small random configurations built
offline (grouped-query attention, 2 key/value heads for 4 query heads; rope_theta 500000 as Llama 3),
float32, eval mode, eager attention, weights randomised at a scale where every part matters (the
RMSNorm gains included); padded positions are compared only where they mean something.
"""

import numpy as np
import pytest
import torch
import transformers
from helpers import max_abs_diff

from course_pkg import interop

VOCAB, D_MODEL, HEADS, KV_HEADS, DFF, LAYERS, MAX_LEN = 50, 32, 4, 2, 48, 2, 32
THETA = 500000.0
HF_ATOL = 1e-4
# Two rows, the first padded (HF attention_mask: 1 = token, 0 = padding).
PROMPTS = {"left": (np.array([[0, 0, 5, 9, 3, 7, 1], [4, 22, 8, 6, 11, 3, 2]]),
                    np.array([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]])),
           "right": (np.array([[5, 9, 3, 7, 1, 0, 0], [4, 22, 8, 6, 11, 3, 2]]),
                     np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]]))}


def hf_config(tie=False, **overrides):
    return transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=D_MODEL, intermediate_size=DFF, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=MAX_LEN,
        rope_theta=THETA, rms_norm_eps=1e-6, tie_word_embeddings=tie, bos_token_id=1, eos_token_id=2,
        pad_token_id=0, attn_implementation="eager", **overrides)


def hf_llama(seed=0, tie=False, scale=0.3):
    """A random ``LlamaForCausalLM``: every parameter ~N(0, scale), the RMSNorm gains 1 + N(0, scale)."""
    model = transformers.LlamaForCausalLM(hf_config(tie))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            is_gain = name.endswith("norm.weight")
            param.copy_(torch.randn(param.shape, generator=gen) * scale + (1.0 if is_gain else 0.0))
    return model.eval()


def hf_logits(hf, tokens, attend):
    positions = np.clip(np.cumsum(attend, axis=1) - 1, 0, None)  # what HF's generate passes
    with torch.no_grad():
        return hf(input_ids=torch.tensor(tokens), attention_mask=torch.tensor(attend),
                  position_ids=torch.tensor(positions)).logits.numpy()


def random_llama_params(model, seed=0, scale=0.3):
    """Random canonical weights of a course Llama, the RMSNorm scales 1 + N(0, scale)."""
    rng = np.random.default_rng(seed)
    return {k: (rng.normal(0.0, scale, v.shape) + (1.0 if k.endswith(".scale") else 0.0)).astype(np.float32)
            for k, v in interop.get_weights(model).items()}


def _llama(fw, seed=0, **kw):
    fw.seed(seed)
    kw = {"num_kv_heads": KV_HEADS, "rope_theta": THETA, **kw}
    model = fw.make("Llama", LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN, **kw)
    interop.set_weights(model, random_llama_params(model, seed))
    return model


@pytest.mark.parametrize("tie,padding", [(False, "left"), (False, "right"), (True, "left"), (True, "right")])
def test_llama_matches_huggingface(fw, record_error, tie, padding):
    hf = hf_llama(seed=1 + tie, tie=tie)
    # from the model itself, and from a state dict with its configuration's dict
    model = fw.cp.llama_from_huggingface(hf) if padding == "left" else \
        fw.cp.llama_from_huggingface(dict(hf.state_dict()), hf.config.to_dict())
    cfg = model.get_config()
    assert (cfg["num_kv_heads"], cfg["rope_theta"], cfg["tie_embeddings"]) == (KV_HEADS, THETA, tie)
    assert (model.lm_head is None) == tie
    tokens, attend = PROMPTS[padding]
    ref = hf_logits(hf, tokens, attend)
    got = fw.call(model, tokens, padding_mask=1 - attend)
    real = attend == 1
    err = record_error(f"Llama logits (tied={tie}, {padding} padding) {fw.name} vs HF",
                       max_abs_diff(got[real], ref[real]))
    assert np.abs(ref).max() > 1.0 and err <= HF_ATOL


def test_padding_changes_nothing_at_real_tokens(fw):
    """Padding keys are blocked and positions count real tokens: left and right padding, and no
    padding at all, give a row's real tokens the same logits."""
    model = _llama(fw, seed=3)
    left = fw.call(model, PROMPTS["left"][0], padding_mask=1 - PROMPTS["left"][1])
    right = fw.call(model, PROMPTS["right"][0], padding_mask=1 - PROMPTS["right"][1])
    alone = fw.call(model, PROMPTS["left"][0][:1, 2:])
    np.testing.assert_allclose(left[0, 2:], right[0, :5], atol=1e-5)
    np.testing.assert_allclose(left[0, 2:], alone[0], atol=1e-5)
    shifted = fw.call(model, PROMPTS["left"][0][:1])  # the padding read as tokens: other positions
    assert np.abs(shifted[0, 2:] - alone[0]).max() > 1e-3
    # the explicit path (weights returned) = the fused one; one map per block, every query head
    logits, maps = fw.call(model, PROMPTS["left"][0], padding_mask=1 - PROMPTS["left"][1],
                           return_attention=True)
    np.testing.assert_allclose(logits[0, 2:], left[0, 2:], atol=1e-5)
    assert len(maps) == LAYERS and maps[0].shape == (2, HEADS, 7, 7)
    assert np.all(maps[1][0, :, 2:, :2] == 0) and np.all(np.triu(maps[0][1], 1) == 0)  # padding, future
    np.testing.assert_allclose(maps[0][1].sum(axis=-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("padding", [None, "left"])
def test_greedy_generate_matches_huggingface(fw, padding):
    hf = hf_llama(seed=4)
    model = fw.cp.llama_from_huggingface(hf)
    if padding is None:
        prompt, attend = np.array([[5, 9, 3], [4, 22, 8]]), np.ones((2, 3), np.int64)
    else:
        prompt, attend = PROMPTS["left"]
    with torch.no_grad():
        ref = hf.generate(torch.tensor(prompt), attention_mask=torch.tensor(attend), max_new_tokens=6,
                          do_sample=False, pad_token_id=0).numpy()
    got = fw.to_numpy(model.generate(prompt, 6, padding_mask=1 - attend))
    assert len({tuple(r) for r in ref[:, -6:]}) > 1  # the rows continue differently
    np.testing.assert_array_equal(got, ref)


def test_cache_equals_recomputation(fw):
    model = _llama(fw)
    tokens, attend = PROMPTS["left"]
    tokens = np.concatenate([tokens, [[7, 8, 9], [10, 11, 12]]], axis=1)
    pad = np.concatenate([1 - attend, np.zeros((2, 3), int)], axis=1)
    full = fw.call(model, tokens, padding_mask=pad)
    state, outs = model.init_cache(2), []
    assert tuple(state["layers"][0]["self_k"].shape) == (2, KV_HEADS, 0, D_MODEL // HEADS)
    for start, stop in ((0, 7), (7, 8), (8, 10)):  # the prompt, then 1 and 2 tokens
        step_pad = pad[:, start:stop].astype(np.float32)
        logits, state = model.decode_step(fw.tensor(tokens[:, start:stop]), state, fw.tensor(step_pad))
        outs.append(fw.to_numpy(logits))
    assert tuple(state["layers"][1]["self_v"].shape) == (2, KV_HEADS, 10, D_MODEL // HEADS)  # kv heads only
    real = pad == 0
    assert np.abs(full).max() > 1.0
    np.testing.assert_allclose(np.concatenate(outs, axis=1)[real], full[real], atol=1e-5)


@pytest.mark.parametrize("sampling", [{}, {"do_sample": True, "temperature": 1.5, "top_k": 10, "top_p": 0.9}])
def test_generate_with_cache_equals_without(fw, sampling):
    model = _llama(fw, seed=1, num_kv_heads=1)  # multi-query attention
    tokens, attend = PROMPTS["right"]
    a = fw.to_numpy(model.generate(tokens, 6, padding_mask=1 - attend, seed=5, **sampling))
    b = fw.to_numpy(model.generate(tokens, 6, padding_mask=1 - attend, seed=5, use_cache=False, **sampling))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 13) and a.dtype == np.int64
    np.testing.assert_array_equal(a[:, :7], PROMPTS["left"][0])  # right padding moved to the left


@pytest.mark.parametrize("tie", [False, True])
def test_reference_tensorflow_and_torch_agree(tf_fw, torch_fw, ref, record_error, tie):
    """NumPy reference = TensorFlow = PyTorch with shared weights, padding included."""
    kw = {"num_kv_heads": KV_HEADS, "rope_theta": THETA, "tie_embeddings": tie}
    tf_model = tf_fw.make("Llama", LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN, **kw)
    pt_model = torch_fw.make("Llama", LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN, **kw)
    params = random_llama_params(tf_model, seed=7)
    interop.set_weights(tf_model, params)
    interop.copy_weights(tf_model, pt_model)
    tokens, attend = PROMPTS["left"]
    pad = 1 - attend
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    expected = ref.llama(p64, tokens, HEADS, pad, num_kv_heads=KV_HEADS, rope_theta=THETA)[pad == 0]
    assert np.abs(expected).max() > 1.0
    for fw, model in ((tf_fw, tf_model), (torch_fw, pt_model)):
        got = fw.call(model, tokens, padding_mask=pad.astype(np.float32))[pad == 0]
        assert record_error(f"Llama {fw.name} vs ref", max_abs_diff(got, expected)) <= 1e-4


def test_config_round_trip_and_keras_save_load(fw, tmp_path):
    model = _llama(fw, seed=6, tie_embeddings=True, pad_id=0)
    cfg = model.get_config()
    assert type(model).from_config(cfg).get_config() == cfg
    block_cfg = model.blocks[0].get_config()
    assert type(model.blocks[0]).from_config(block_cfg).get_config() == block_cfg
    tokens = PROMPTS["left"][0]  # pad_id=0: the zeros are padding
    before = fw.call(model, tokens)
    if fw.name == "tensorflow":
        import keras

        model.save(tmp_path / "llama.keras")
        loaded = keras.models.load_model(tmp_path / "llama.keras")
    else:
        loaded = type(model).from_config(cfg)
        loaded.load_state_dict(model.state_dict())
    np.testing.assert_allclose(fw.call(loaded, tokens), before, atol=1e-6)


@pytest.mark.parametrize("kw,match", [
    ({"num_kv_heads": 3}, "num_kv_heads"),
    ({"rope_theta": 0.0}, "rope_theta"),
    ({"rms_norm_eps": -1.0}, "rms_norm_eps"),
    ({"tie_embeddings": "yes"}, "tie_embeddings"),
    ({"pad_id": VOCAB}, "pad_id"),
])
def test_bad_arguments_are_refused(fw, kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fw.make("Llama", LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN, **kw)


def test_bad_checkpoints_are_refused(fw):
    hf = hf_llama(seed=0)
    state, config = dict(hf.state_dict()), hf.config.to_dict()
    gpt2 = transformers.GPT2Config(vocab_size=VOCAB, n_embd=D_MODEL, n_layer=LAYERS, n_head=HEADS)
    with pytest.raises(ValueError, match="model_type 'llama'.*model_type 'gpt2'"):
        fw.cp.llama_from_huggingface(state, gpt2)
    missing = {k: v for k, v in state.items() if k != "model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(ValueError, match="no 'model.layers.1.mlp.up_proj.weight'"):
        fw.cp.llama_from_huggingface(missing, config)
    wrong = {**state, "model.layers.0.self_attn.k_proj.weight": torch.zeros(D_MODEL, D_MODEL)}
    with pytest.raises(ValueError, match=r"'model.layers.0.self_attn.k_proj.weight' has shape \(32, 32\).*"
                                         r"\(16, 32\)"):
        fw.cp.llama_from_huggingface(wrong, config)
    extra = {**state, "model.layers.0.self_attn.q_proj.bias": torch.zeros(D_MODEL)}
    with pytest.raises(ValueError, match="unexpected entries.*q_proj.bias"):
        fw.cp.llama_from_huggingface(extra, config)
    for change, match in [
        ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": THETA}}, "rope_parameters"),
        ({"rope_parameters": None, "rope_theta": THETA, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
         "rope_scaling"),
        ({"attention_bias": True}, "attention_bias"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"hidden_act": "gelu"}, "hidden_act"),
        ({"head_dim": 16}, "head_dim"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ]:
        with pytest.raises(ValueError, match=match):
            fw.cp.llama_from_huggingface(state, config | change)
    # the older configurations' top-level rope_theta is read too
    old = {k: v for k, v in config.items() if k != "rope_parameters"} | {"rope_theta": 10000.0}
    assert fw.cp.llama_from_huggingface(state, old).get_config()["rope_theta"] == 10000.0
