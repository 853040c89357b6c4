"""The model families of chapter 8: BERT, GPT and the classification head, in both frameworks.

The oracle is Hugging Face ``transformers`` (pinned in requirements.txt, imported here only):
small random configurations built offline, float32, eval mode, eager attention, weights
randomised at a scale where every part matters (LayerNorm gains and biases included), ported
with the public loaders; padded positions are compared only where they mean something.
"""

import numpy as np
import pytest
import torch
import transformers
from helpers import PARITY_ATOL, max_abs_diff, random_params

from course_pkg import interop

VOCAB, D_MODEL, HEADS, DFF, LAYERS, MAX_LEN = 50, 16, 2, 24, 2, 16


def randomise(model, seed=0, scale=0.3):
    """Every parameter ~N(0, scale) (LayerNorm weights 1 + N(0, scale)), so that none is trivial."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            is_gain = name.endswith(("LayerNorm.weight", "ln_1.weight", "ln_2.weight", "ln_f.weight"))
            param.copy_(torch.randn(param.shape, generator=gen) * scale + (1.0 if is_gain else 0.0))
    return model.eval()


def hf_bert(masked_lm, seed=0):
    config = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=D_MODEL, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=DFF, max_position_embeddings=MAX_LEN, type_vocab_size=3,
        attn_implementation="eager")
    cls = transformers.BertForMaskedLM if masked_lm else transformers.BertModel
    return randomise(cls(config), seed)


def hf_gpt2(seed=0, tie=True):
    config = transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=D_MODEL, n_layer=LAYERS, n_head=HEADS, n_inner=DFF, n_positions=MAX_LEN,
        tie_word_embeddings=tie, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        attn_implementation="eager")
    return randomise(transformers.GPT2LMHeadModel(config), seed)


# Two rows, the first padded (HF attention_mask: 1 = token, 0 = padding).
BERT_TOKENS = np.array([[2, 5, 9, 3, 7, 0, 0], [1, 4, 22, 8, 6, 11, 3]])
BERT_ATTEND = np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]])
SEGMENTS = np.array([[0, 0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 2, 2, 2]])
PROMPTS = {"left": (np.array([[0, 0, 5, 9, 3, 7, 1], [4, 22, 8, 6, 11, 3, 2]]),
                    np.array([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]])),
           "right": (np.array([[5, 9, 3, 7, 1, 0, 0], [4, 22, 8, 6, 11, 3, 2]]),
                     np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1]]))}


def _np(fw, out):
    return fw.to_numpy(out)


def test_bert_matches_huggingface_bert_model(fw, record_error):
    hf = hf_bert(masked_lm=False)
    model = fw.cp.bert_from_huggingface(hf)
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(BERT_TOKENS), attention_mask=torch.tensor(BERT_ATTEND),
                 token_type_ids=torch.tensor(SEGMENTS))
    seq, pooled = fw.call(model, BERT_TOKENS, SEGMENTS, padding_mask=1 - BERT_ATTEND)
    real = BERT_ATTEND == 1
    e_seq = record_error(f"BERT sequence {fw.name} vs HF",
                         max_abs_diff(seq[real], ref.last_hidden_state.numpy()[real]))
    e_pool = record_error(f"BERT pooled {fw.name} vs HF", max_abs_diff(pooled, ref.pooler_output.numpy()))
    assert np.abs(seq).max() > 0.5 and np.abs(pooled).max() > 0.1
    assert e_seq <= PARITY_ATOL and e_pool <= PARITY_ATOL


def test_bert_matches_huggingface_masked_lm(fw, record_error):
    hf = hf_bert(masked_lm=True, seed=1)
    model = fw.cp.bert_from_huggingface(hf.state_dict(), hf.config)  # a state dict and its config
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(BERT_TOKENS), attention_mask=torch.tensor(BERT_ATTEND),
                 token_type_ids=torch.tensor(SEGMENTS)).logits.numpy()
    if fw.name == "torch":
        got = _np(fw, model.masked_lm(torch.tensor(BERT_TOKENS), torch.tensor(SEGMENTS),
                                      padding_mask=torch.tensor(1 - BERT_ATTEND)))
    else:
        got = _np(fw, model.masked_lm(BERT_TOKENS, SEGMENTS, padding_mask=1 - BERT_ATTEND))
    real = BERT_ATTEND == 1
    err = record_error(f"BERT MLM logits {fw.name} vs HF", max_abs_diff(got[real], ref[real]))
    assert np.abs(ref).max() > 1.0 and err <= PARITY_ATOL


def test_bert_padding_changes_nothing_at_real_tokens(fw):
    """Padding keys are blocked: the real tokens' states do not depend on what the padding holds."""
    model = fw.cp.bert_from_huggingface(hf_bert(masked_lm=False))
    other = BERT_TOKENS.copy()
    other[0, 5:] = [17, 31]  # other ids under the padding
    a, _ = fw.call(model, BERT_TOKENS, padding_mask=1 - BERT_ATTEND)
    b, _ = fw.call(model, other, padding_mask=1 - BERT_ATTEND)
    np.testing.assert_allclose(a[0, :5], b[0, :5], atol=1e-6)
    c, _ = fw.call(model, other)  # no mask: the padding is attended to, and it shows
    assert np.abs(c[0, :5] - a[0, :5]).max() > 1e-3


@pytest.mark.parametrize("padding", ["left", "right"])
def test_gpt_matches_huggingface_gpt2(fw, record_error, padding):
    hf = hf_gpt2(seed=2)
    model = fw.cp.gpt_from_huggingface(hf)
    tokens, attend = PROMPTS[padding]
    positions = np.clip(np.cumsum(attend, axis=1) - 1, 0, None)  # what HF's generate passes
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(tokens), attention_mask=torch.tensor(attend),
                 position_ids=torch.tensor(positions)).logits.numpy()
    got = fw.call(model, tokens, padding_mask=1 - attend)
    real = attend == 1
    err = record_error(f"GPT logits ({padding} padding) {fw.name} vs HF", max_abs_diff(got[real], ref[real]))
    assert np.abs(ref).max() > 1.0 and err <= PARITY_ATOL


def test_gpt_untied_head_matches_huggingface(fw, record_error):
    hf = hf_gpt2(seed=3, tie=False)
    model = fw.cp.gpt_from_huggingface(hf)
    assert model.get_config()["tie_embeddings"] is False
    tokens = PROMPTS["left"][0][1:]
    with torch.no_grad():
        ref = hf(input_ids=torch.tensor(tokens)).logits.numpy()
    err = record_error(f"GPT untied logits {fw.name} vs HF", max_abs_diff(fw.call(model, tokens), ref))
    assert err <= PARITY_ATOL


def test_gpt_greedy_generate_matches_huggingface(fw):
    hf = hf_gpt2(seed=4)
    model = fw.cp.gpt_from_huggingface(hf)
    prompt = np.array([[5, 9, 3], [4, 22, 8]])
    with torch.no_grad():
        ref = hf.generate(torch.tensor(prompt), attention_mask=torch.ones(2, 3, dtype=torch.long),
                          max_new_tokens=6, do_sample=False, pad_token_id=0).numpy()
    got = _np(fw, model.generate(prompt, 6))
    np.testing.assert_array_equal(got, ref)


def _gpt(fw, seed=0):
    fw.seed(seed)
    model = fw.make("GPT", LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN, 0.0)
    interop.set_weights(model, random_params(model, seed=seed, scale=0.3))
    return model


def test_gpt_cache_equals_recomputation(fw):
    model = _gpt(fw)
    tokens, attend = PROMPTS["left"]
    tokens = np.concatenate([tokens, [[7, 8, 9], [10, 11, 12]]], axis=1)
    pad = np.concatenate([1 - attend, np.zeros((2, 3), int)], axis=1)
    full = fw.call(model, tokens, padding_mask=pad)
    state, outs = model.init_cache(2), []
    for start, stop in ((0, 7), (7, 8), (8, 10)):  # the prompt, then 1 and 2 tokens
        step_pad = pad[:, start:stop].astype(np.float32)
        logits, state = model.decode_step(fw.tensor(tokens[:, start:stop]), state, fw.tensor(step_pad))
        outs.append(_np(fw, logits))
    real = pad == 0
    assert np.abs(full).max() > 1.0
    np.testing.assert_allclose(np.concatenate(outs, axis=1)[real], full[real], atol=1e-5)


@pytest.mark.parametrize("sampling", [{}, {"do_sample": True, "temperature": 1.5, "top_k": 10, "top_p": 0.9}])
def test_generate_with_cache_equals_without(fw, sampling):
    model = _gpt(fw, seed=1)
    tokens, attend = PROMPTS["left"]
    a = _np(fw, model.generate(tokens, 6, padding_mask=1 - attend, seed=5, **sampling))
    b = _np(fw, model.generate(tokens, 6, padding_mask=1 - attend, seed=5, use_cache=False, **sampling))
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 13) and a.dtype == np.int64
    np.testing.assert_array_equal(a[:, :7], tokens)  # the prompts come back as they were


def test_seeded_sampling_is_reproducible_and_seed_dependent(fw):
    model = _gpt(fw, seed=2)
    prompt = np.array([[5, 9, 3]] * 4)
    a = _np(fw, model.generate(prompt, 8, do_sample=True, temperature=2.0, seed=0))
    b = _np(fw, model.generate(prompt, 8, do_sample=True, temperature=2.0, seed=0))
    c = _np(fw, model.generate(prompt, 8, do_sample=True, temperature=2.0, seed=1))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert len({tuple(r) for r in a[:, 3:]}) > 1  # rows of the same prompt sample differently


def test_sampling_is_the_same_in_both_frameworks(tf_fw, torch_fw, interop):
    tf_model, pt_model = _gpt(tf_fw, seed=3), _gpt(torch_fw, seed=3)
    interop.copy_weights(tf_model, pt_model)
    prompt = np.array([[5, 9, 3], [4, 22, 8]])
    kw = {"do_sample": True, "top_k": 20, "top_p": 0.95, "seed": 11}
    np.testing.assert_array_equal(tf_fw.to_numpy(tf_model.generate(prompt, 8, **kw)),
                                  torch_fw.to_numpy(pt_model.generate(prompt, 8, **kw)))


def test_left_and_right_padded_prompts_generate_the_same(fw):
    model = _gpt(fw, seed=4)
    left = _np(fw, model.generate(PROMPTS["left"][0], 5, padding_mask=1 - PROMPTS["left"][1]))
    right = _np(fw, model.generate(PROMPTS["right"][0], 5, padding_mask=1 - PROMPTS["right"][1]))
    np.testing.assert_array_equal(left, right)  # right padding is moved to the left


def test_top_k_and_top_p_filters(fw):
    logits = np.log(np.array([[0.5, 0.05, 0.2, 0.25], [0.1, 0.2, 0.3, 0.4]], np.float32))
    k2 = _np(fw, fw.cp.top_k_filter(fw.tensor(logits), 2))
    np.testing.assert_array_equal(np.isfinite(k2), [[1, 0, 0, 1], [0, 0, 1, 1]])
    np.testing.assert_array_equal(k2[np.isfinite(k2)], logits[np.isfinite(k2)])
    p = _np(fw, fw.cp.top_p_filter(fw.tensor(logits), 0.7))  # 0.5 + 0.25 >= 0.7; 0.4 + 0.3 >= 0.7
    np.testing.assert_array_equal(np.isfinite(p), [[1, 0, 0, 1], [0, 0, 1, 1]])
    tiny = _np(fw, fw.cp.top_p_filter(fw.tensor(logits), 0.01))  # the most likely token always stays
    np.testing.assert_array_equal(np.isfinite(tiny).sum(axis=1), [1, 1])
    assert np.isfinite(_np(fw, fw.cp.top_k_filter(fw.tensor(logits), 10))).all()
    with pytest.raises(ValueError, match="k must be a positive int"):
        fw.cp.top_k_filter(fw.tensor(logits), 0)
    with pytest.raises(ValueError, match=r"top_p must be a float in \(0, 1\]"):
        fw.cp.top_p_filter(fw.tensor(logits), 1.5)


def test_classification_head(fw, interop):
    fw.seed(0)
    head = fw.make("ClassificationHead", D_MODEL, 3, 0.1)
    params = {k: np.random.default_rng(0).normal(size=v.shape).astype(np.float32)
              for k, v in interop.get_weights(head).items()}
    interop.set_weights(head, params)
    x = np.random.default_rng(1).normal(size=(4, 5, D_MODEL)).astype(np.float32)
    expected = x[:, 0] @ params["classifier.kernel"] + params["classifier.bias"]
    np.testing.assert_allclose(fw.call(head, x), expected, atol=1e-5)
    last = np.array([4, 2, 0, 3])  # one position per row
    expected = x[np.arange(4), last] @ params["classifier.kernel"] + params["classifier.bias"]
    np.testing.assert_allclose(fw.call(head, x, token_index=fw.tensor(last)), expected, atol=1e-5)
    assert fw.call_train(head, x).shape == (4, 3)
    with pytest.raises(ValueError, match="outside a sequence of 5 positions"):
        fw.call(head, x, token_index=5)
    assert type(head).from_config(head.get_config()).get_config() == head.get_config()


@pytest.mark.parametrize("name,args", [
    ("BERT", (LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN)),
    ("GPT", (LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN)),
])
def test_families_configs_and_cross_framework_parity(tf_fw, torch_fw, interop, record_error, name, args):
    tf_model = tf_fw.make(name, *args, pad_id=0)
    cfg = tf_model.get_config()
    assert type(tf_model).from_config(cfg).get_config() == cfg
    pt_model = torch_fw.make(name, *args, pad_id=0)
    assert type(pt_model).from_config(pt_model.get_config()).get_config() == pt_model.get_config()
    interop.set_weights(tf_model, random_params(tf_model, seed=5))
    interop.copy_weights(tf_model, pt_model)
    tokens = BERT_TOKENS  # pad_id=0: the zeros are padding
    a, b = tf_fw.call(tf_model, tokens), torch_fw.call(pt_model, tokens)
    real = tokens != 0
    a0, b0 = (a[0], b[0]) if name == "BERT" else (a, b)
    err = record_error(f"{name} tf vs torch", max_abs_diff(a0[real], b0[real]))
    assert err <= PARITY_ATOL


def test_keras_save_load_gpt(tf_fw, tmp_path):
    import keras

    model = _gpt(tf_fw, seed=6)
    tokens = PROMPTS["left"][0]
    before = tf_fw.call(model, tokens)
    model.save(tmp_path / "gpt.keras")
    loaded = keras.models.load_model(tmp_path / "gpt.keras")
    np.testing.assert_allclose(tf_fw.call(loaded, tokens), before, atol=1e-6)


def test_bad_generation_arguments(fw):
    model = _gpt(fw)
    prompt = np.array([[5, 9, 3]])
    for kw, match in [({"max_new_tokens": MAX_LEN}, "exceeds max_len=16"),
                      ({"max_new_tokens": -1}, "max_new_tokens must be an int >= 0"),
                      ({"max_new_tokens": 2, "temperature": 0}, "temperature must be a float > 0"),
                      ({"max_new_tokens": 2, "top_p": 0.0}, r"top_p must be a float in \(0, 1\]"),
                      ({"max_new_tokens": 2, "top_k": 0}, "top_k must be a positive int"),
                      ({"max_new_tokens": 2, "padding_mask": np.ones((1, 3))}, "at least one real")]:
        with pytest.raises(ValueError, match=match):
            model.generate(prompt, **kw)
    with pytest.raises(TypeError, match="not bool"):
        model.generate(prompt, 2, padding_mask=np.zeros((1, 3), bool))
    with pytest.raises(ValueError, match="padding_mask must have the tokens' shape"):
        fw.call(model, prompt, padding_mask=np.zeros((1, 4)))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 50\)"):
        fw.call(model, np.array([[5, 50]]))


def test_bad_checkpoints_are_refused(fw):
    hf = hf_gpt2(seed=0)
    state = dict(hf.state_dict())
    with pytest.raises(ValueError, match="a state dict needs its configuration"):
        fw.cp.gpt_from_huggingface(state)
    extra = {**state, "transformer.h.0.attn.extra.weight": torch.zeros(2)}
    with pytest.raises(ValueError, match="unexpected entries.*extra"):
        fw.cp.gpt_from_huggingface(extra, hf.config)
    missing = {k: v for k, v in state.items() if "h.1.mlp.c_fc.bias" not in k}
    with pytest.raises(ValueError, match="h.1.mlp.c_fc.bias"):
        fw.cp.gpt_from_huggingface(missing, hf.config)
    config = hf.config.to_dict() | {"activation_function": "silu"}
    with pytest.raises(ValueError, match="activation 'silu' of the checkpoint has no course counterpart"):
        fw.cp.gpt_from_huggingface(state, config)
    with pytest.raises(TypeError, match="expected a Hugging Face model or a state dict"):
        fw.cp.bert_from_huggingface([1, 2, 3], {})


def test_course_pkg_imports_no_transformers():
    import subprocess
    import sys

    code = ("import sys, course_pkg.torch\n"
            "from course_pkg.common.huggingface import bert, gpt2, llama, marian, vit\n"
            "assert 'transformers' not in sys.modules, 'transformers imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", ["BERT", "GPT"])
def test_families_three_way_parity(tf_fw, torch_fw, interop, ref, record_error, name):
    """NumPy reference = TensorFlow = torch with shared weights, padding included."""
    args = (LAYERS, D_MODEL, HEADS, DFF, VOCAB, MAX_LEN)
    tf_model, pt_model = tf_fw.make(name, *args), torch_fw.make(name, *args)
    params = random_params(tf_model, seed=7)
    interop.set_weights(tf_model, params)
    interop.set_weights(pt_model, params)
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    if name == "BERT":
        tokens, pad, segments = BERT_TOKENS, 1 - BERT_ATTEND, SEGMENTS % 2
        seq, pooled, mlm = ref.bert(p64, tokens, HEADS, segments, pad)
        expected = (seq[pad == 0], pooled, mlm[pad == 0])
        outs = {}
        for fw, model in ((tf_fw, tf_model), (torch_fw, pt_model)):
            s, pl = fw.call(model, tokens, segments, padding_mask=pad.astype(np.float32))
            model_in = fw.tensor(s)
            logits = fw.to_numpy(model.mlm_logits(model_in))
            outs[fw.name] = (s[pad == 0], pl, logits[pad == 0])
    else:
        tokens, attend = PROMPTS["left"]
        pad = 1 - attend
        expected = ref.gpt(p64, tokens, HEADS, pad)[pad == 0]
        outs = {fw.name: fw.call(model, tokens, padding_mask=pad.astype(np.float32))[pad == 0]
                for fw, model in ((tf_fw, tf_model), (torch_fw, pt_model))}
    for fw_name, out in outs.items():
        assert record_error(f"{name} {fw_name} vs ref", max_abs_diff(out, expected)) <= PARITY_ATOL
    assert np.abs(expected[0]).max() > 0.5


def test_reference_filters_agree_with_the_frameworks(fw, ref):
    logits = np.random.default_rng(0).normal(size=(3, 20)).astype(np.float32) * 3
    for k in (1, 5, 20):
        np.testing.assert_array_equal(np.isfinite(fw.to_numpy(fw.cp.top_k_filter(fw.tensor(logits), k))),
                                      np.isfinite(ref.top_k_filter(logits, k)))
    for p in (0.1, 0.5, 0.9, 1.0):
        np.testing.assert_array_equal(np.isfinite(fw.to_numpy(fw.cp.top_p_filter(fw.tensor(logits), p))),
                                      np.isfinite(ref.top_p_filter(logits, p)))
