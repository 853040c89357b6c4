"""Marian in both frameworks: Hugging Face's ``MarianMTModel`` loaded into the course's own
``Transformer`` (chapters 4-6), its logits, greedy and beam decoding, the cache, the loader's refusals.

The oracle is Hugging Face ``transformers`` (imported here only): small random configurations built
offline (odd and even widths, 1 to 3 layers, shared and separate vocabularies, tied and untied
output layers, with and without the embedding scale), float32, eval mode, eager attention. Every
weight is drawn from its own name's seed (the same weights under transformers 4 and 5), at a
scale where every part matters: the layer-norm gains and offsets, the biases and Marian's
``final_logits_bias`` included. The sources are right-padded with ``pad_token_id``; the targets
start from ``decoder_start_token_id``, Marian's ``<pad>``. Hugging Face's models and outputs are
made once and shared by both frameworks' tests (never changed by a test).
"""

import functools
import zlib

import numpy as np
import pytest
import torch
import transformers
from helpers import max_abs_diff

from course_pkg import interop
from course_pkg.common.huggingface import marian as mc

HF_ATOL = 1e-4
NEW_TOKENS = 6  # generated at most
NEVER = 1000  # an <eos> id that never comes (beyond the vocabularies)
# transformers 4's MarianModel gives the decoder's embeddings vocab_size rows (a copy of the encoder's),
# whatever decoder_vocab_size says: its separate vocabularies are of one size.
DECODER_VOCAB = 23 if int(transformers.__version__.split(".")[0]) >= 5 else 31
BASE = dict(vocab_size=37, d_model=15, encoder_layers=2, decoder_layers=2, encoder_attention_heads=3,
            decoder_attention_heads=3, encoder_ffn_dim=22, decoder_ffn_dim=22, max_position_embeddings=24,
            pad_token_id=36, decoder_start_token_id=36, eos_token_id=0, forced_eos_token_id=None,
            activation_function="swish", scale_embedding=True, share_encoder_decoder_embeddings=True,
            tie_word_embeddings=True, attn_implementation="eager")
CASES = {
    # opus-mt's choices (SiLU, scaled and shared embeddings tied to the output) at an odd width
    "shared": {},
    "separate": dict(vocab_size=31, decoder_vocab_size=DECODER_VOCAB, d_model=12, encoder_layers=1,
                     decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                     encoder_ffn_dim=20, decoder_ffn_dim=20, pad_token_id=22, decoder_start_token_id=22,
                     eos_token_id=1, activation_function="gelu", scale_embedding=False,
                     share_encoder_decoder_embeddings=False, tie_word_embeddings=False),
    "three_layers": dict(d_model=18, encoder_layers=3, decoder_layers=3, encoder_ffn_dim=14,
                         decoder_ffn_dim=14, activation_function="gelu_new"),
    # layer norms that see inputs of variance ~1e-5: their epsilon (1e-5, PyTorch's) matters
    "small_norms": dict(tie_word_embeddings=False, activation_function="relu"),
}
SOURCES = np.array([[5, 9, 3, 7, 1, 36, 36], [4, 22, 8, 6, 11, 3, 1], [12, 13, 14, 1, 36, 36, 36]])
TARGETS = np.array([[36, 4, 5, 6, 7, 2], [36, 9, 8, 2, 1, 19], [36, 1, 1, 3, 3, 20]])


def marian_config(case):
    return transformers.MarianConfig(**{**BASE, **CASES[case]})


@functools.lru_cache(maxsize=None)
def hf_marian(case="shared", seed=0):
    """A random ``MarianMTModel``: weights ~N(0, 0.3), biases and layer-norm offsets ~N(0, 0.05), gains
    1 + N(0, 0.3) (``small_norms``: gains and offsets ~N(0, 0.003), biases ~N(0, 0.0003), output
    weights ~N(0, 30)), ``final_logits_bias`` ~N(0, 0.05); each drawn from its name's seed."""
    model = transformers.MarianMTModel(marian_config(case))
    small = case == "small_norms"
    with torch.no_grad():
        for name, param in list(model.named_parameters()) + [("final_logits_bias", model.final_logits_bias)]:
            if "embed_positions" in name:  # Marian's fixed sinusoidal table
                continue
            gen = torch.Generator().manual_seed(seed * 7919 + zlib.crc32(name.encode()))
            is_norm, is_bias = "layer_norm" in name, name.endswith("bias")
            scale = 0.003 if small and is_norm else 3e-4 if small and is_bias else 0.05 if is_bias else 0.3
            scale = 30.0 if small and name == "lm_head.weight" else scale
            gain = 1.0 if is_norm and name.endswith("weight") and not small else 0.0
            param.copy_(torch.randn(param.shape, generator=gen) * scale + gain)
    return model.eval()


def inputs(case):
    """Sources and targets in the case's vocabularies: ``36`` (the shared case's ``<pad>``) becomes
    the case's ``pad_token_id``, other ids wrap around the vocabulary."""
    config = marian_config(case)
    pad, vocab = config.pad_token_id, min(config.vocab_size, config.decoder_vocab_size)

    def fit(ids):
        return np.where(ids == 36, pad, ids % (vocab - 1))

    return fit(SOURCES), fit(TARGETS)


def hf_logits(hf, src, tgt):
    pad = hf.config.pad_token_id
    with torch.no_grad():
        return hf(input_ids=torch.tensor(src), attention_mask=torch.tensor(src != pad).long(),
                  decoder_input_ids=torch.tensor(tgt)).logits.numpy()


def hf_generate(hf, src, **kw):
    """Hugging Face's ``generate`` (``NEW_TOKENS`` at most): the tokens after the start token, or with
    ``output_scores``, ``(tokens, sequences_scores)``."""
    pad = hf.config.pad_token_id
    with torch.no_grad():
        out = hf.generate(torch.tensor(src), attention_mask=torch.tensor(src != pad).long(), do_sample=False,
                          max_new_tokens=NEW_TOKENS, return_dict_in_generate=True, **kw)
    tokens = out.sequences.numpy()[:, 1:]  # without the start token
    return (tokens, out.sequences_scores.numpy()) if kw.get("output_scores") else tokens


@functools.lru_cache(maxsize=None)
def reference_decoding(case, seed, **kw):
    """:func:`hf_generate` on the case's sources, once per case, seed and arguments."""
    return hf_generate(hf_marian(case, seed), inputs(case)[0], **kw)


@pytest.mark.parametrize("case", list(CASES))
def test_marian_logits_match_huggingface(fw, record_error, case):
    hf = hf_marian(case, seed=1)
    # from the model itself, and from a state dict with its configuration's dict
    model = fw.cp.marian_from_huggingface(hf) if case != "separate" else \
        fw.cp.marian_from_huggingface(dict(hf.state_dict()), hf.config.to_dict())
    cfg = model.get_config()
    assert (cfg["layer_norm_eps"], cfg["mask_target_padding"], cfg["pad_id"]) == (1e-5, False,
                                                                                  hf.config.pad_token_id)
    src, tgt = inputs(case)
    ref = hf_logits(hf, src, tgt)
    err = record_error(f"Marian logits ({case}) {fw.name} vs HF", max_abs_diff(fw.call(model, src, tgt), ref))
    assert np.abs(ref).max() > 1.0 and err <= HF_ATOL


def test_the_layer_norm_epsilon_matters_in_the_small_norms_case(fw):
    """The case that catches a wrong epsilon: the course model with the default 1e-6 is far off."""
    hf = hf_marian("small_norms", seed=1)
    kwargs = mc.marian_config(hf.config.to_dict())
    model = fw.make("Transformer", **{**kwargs, "layer_norm_eps": 1e-6})
    interop.set_weights(model, mc.marian_weights(dict(hf.state_dict()), hf.config.to_dict()))
    src, tgt = inputs("small_norms")
    assert max_abs_diff(fw.call(model, src, tgt), hf_logits(hf, src, tgt)) > 100 * HF_ATOL


def eos_candidates(case, seed):
    """The ids a free greedy run generates, those that first come after the first step first: with
    each as ``<eos>``, the rows stop at different steps (or not at all)."""
    tokens = reference_decoding(case, seed, eos_token_id=NEVER)
    first = {}
    for step, column in enumerate(tokens.T):
        for token in column:
            first.setdefault(int(token), step)
    first.pop(marian_config(case).pad_token_id, None)  # <pad>: generated too, but not as <eos>
    return sorted(first, key=lambda token: (first[token] == 0, first[token]))


_MODELS = {}


def course_marian(fw, case, seed):
    """The course model of ``hf_marian(case, seed)``, loaded once per framework (TensorFlow traces
    its decoding graphs once per model)."""
    if (fw.name, case, seed) not in _MODELS:
        _MODELS[fw.name, case, seed] = fw.cp.marian_from_huggingface(hf_marian(case, seed))
    return _MODELS[fw.name, case, seed]


@pytest.mark.parametrize("case", ["shared", "separate"])
def test_greedy_decoding_matches_huggingface(fw, case):
    seed = {"shared": 3, "separate": 2}[case]
    model, src = course_marian(fw, case, seed), inputs(case)[0]
    stopped = set()
    for eos in eos_candidates(case, seed)[:2]:
        ids = {**mc.decoding_ids(marian_config(case)), "eos_id": eos}
        ref = reference_decoding(case, seed, num_beams=1, eos_token_id=eos)
        got = fw.to_numpy(fw.cp.greedy_decode(model, src, max_len=NEW_TOKENS, **ids))
        np.testing.assert_array_equal(got, ref)
        stopped |= {(ref[i] == eos).any() for i in range(len(ref))}
    assert stopped == {True, False}  # some rows stopped at <eos>, some ran to max_len


@pytest.mark.parametrize("beams,early_stopping", [(2, True), (3, "never")])
def test_beam_search_matches_huggingface_at_length_penalty_0(fw, beams, early_stopping):
    """Ranked by their summed log-probabilities (``length_penalty=0`` in both), the course's beam
    search returns Hugging Face's hypotheses and scores, whichever ``early_stopping`` Hugging Face
    uses. The rules still differ: Hugging Face keeps ``num_beams`` finished hypotheses in a pool
    beside ``num_beams`` running ones; the course keeps a finished hypothesis in the beam (extended
    with ``<pad>`` at no cost), where ``beam_size`` better running prefixes can push it out: the two
    then differ if every later hypothesis ends below the one pushed out (never in these cases)."""
    model, src = course_marian(fw, "shared", 3), inputs("shared")[0]
    for eos in eos_candidates("shared", 3)[:2]:
        ids = {**mc.decoding_ids(marian_config("shared")), "eos_id": eos}
        expected, expected_scores = reference_decoding("shared", 3, num_beams=beams, eos_token_id=eos,
                                                       length_penalty=0.0, early_stopping=early_stopping,
                                                       output_scores=True)
        tokens, scores = fw.cp.beam_search(model, src, beams, max_len=NEW_TOKENS, length_penalty=0.0,
                                           return_scores=True, **ids)
        np.testing.assert_array_equal(fw.to_numpy(tokens)[:, :expected.shape[1]], expected)
        assert np.all(fw.to_numpy(tokens)[:, expected.shape[1]:] == ids["pad_id"])
        np.testing.assert_allclose(fw.to_numpy(scores), expected_scores, atol=HF_ATOL)


def test_beam_search_matches_huggingface_when_no_hypothesis_ends_early(fw):
    """Where every hypothesis runs to ``max_len`` (an ``<eos>`` that never comes), the length
    penalties cannot differ: the course's GNMT penalty ((5 + length) / 6) ** alpha and Hugging Face's
    length ** length_penalty divide every hypothesis by the same number, and both searches keep the
    ``beam_size`` best running prefixes: the same tokens for any penalty. (With hypotheses of
    different lengths, the two penalties rank them differently.) The hypotheses hold ``<pad>``
    generated as a token: its length counts it."""
    model, src = course_marian(fw, "shared", 3), inputs("shared")[0]
    ref = reference_decoding("shared", 3, num_beams=3, eos_token_id=NEVER, length_penalty=1.0)
    ids = {**mc.decoding_ids(marian_config("shared")), "eos_id": NEVER}
    got = fw.to_numpy(fw.cp.beam_search(model, src, 3, max_len=NEW_TOKENS, length_penalty=0.6, **ids))
    assert ref.shape == (3, NEW_TOKENS) and (ref == ids["pad_id"]).any()
    np.testing.assert_array_equal(got, ref)


def test_the_cache_equals_recomputation(fw):
    model, (src, tgt) = course_marian(fw, "three_layers", 4), inputs("three_layers")
    full = fw.call(model, src, tgt)
    state, outs = model.start_decoding(fw.tensor(src)), []
    for start, stop in ((0, 1), (1, 3), (3, 6)):  # the start token <pad>, then 2 and 3 tokens
        logits, state = model.decode_step(fw.tensor(tgt[:, start:stop]), state)
        outs.append(fw.to_numpy(logits))
    assert np.abs(full).max() > 1.0
    np.testing.assert_allclose(np.concatenate(outs, axis=1), full, atol=1e-5)


def test_tensorflow_model_equals_the_torch_one_through_copy_weights(tf_fw, torch_fw, record_error):
    hf = hf_marian("separate", seed=5)
    pt_model = torch_fw.cp.marian_from_huggingface(hf)
    tf_model = tf_fw.make("Transformer", **mc.marian_config(hf.config.to_dict()))
    interop.copy_weights(pt_model, tf_model)
    src, tgt = inputs("separate")
    err = record_error("Marian TensorFlow vs PyTorch", max_abs_diff(tf_fw.call(tf_model, src, tgt),
                                                                   torch_fw.call(pt_model, src, tgt)))
    assert err <= 1e-5


@pytest.mark.parametrize("d_model", [15, 16])
def test_marians_halves_are_the_courses_table_reordered(fw, d_model):
    """Marian's table (sines, then cosines) read in :func:`interleaving_order` is the course's."""
    table = mc.halves_table(20, d_model)
    order = mc.interleaving_order(d_model)
    assert sorted(order) == list(range(d_model))
    course = fw.to_numpy(fw.cp.positional_encoding(20, d_model))  # sin, cos, sin, cos, ...
    np.testing.assert_allclose(table[:, order], course, atol=1e-7)
    hf = transformers.MarianMTModel(marian_config("shared")).model.encoder.embed_positions
    if d_model == 15:  # Hugging Face's own table
        np.testing.assert_array_equal(hf.weight.detach().numpy(), mc.halves_table(24, 15))


def test_the_options_keep_the_defaults_and_round_trip(fw):
    model = fw.make("Transformer", 1, 8, 2, 12, 11, 13, 10, dropout=0.0)
    cfg = model.get_config()
    assert (cfg["activation"], cfg["layer_norm_eps"], cfg["mask_target_padding"]) == ("relu", 1e-6, True)
    marian = fw.make("Transformer", 1, 8, 2, 12, 11, 13, 10, dropout=0.0, activation="silu",
                     layer_norm_eps=1e-5, mask_target_padding=False)
    cfg = marian.get_config()
    assert type(marian).from_config(cfg).get_config() == cfg
    assert marian.encoder.layers[0].activation == marian.decoder.layers[0].activation == "silu"
    src, tgt = np.array([[3, 4, 5, 0]]), np.array([[1, 6, 7, 0, 0]])  # right-padded target, pad_id 0
    plain = fw.make("Transformer", 1, 8, 2, 12, 11, 13, 10, dropout=0.0, mask_target_padding=False)
    interop.set_weights(plain, interop.get_weights(model))
    # without the target padding mask: the same logits at the real target positions, not at the padding
    a, b = fw.call(model, src, tgt), fw.call(plain, src, tgt)
    np.testing.assert_allclose(a[:, :3], b[:, :3], atol=1e-6)
    assert np.abs(a[:, 3:] - b[:, 3:]).max() > 1e-4
    for bad, match in (({"activation": "tanh"}, "activation"), ({"layer_norm_eps": 0.0}, "layer_norm_eps"),
                       ({"mask_target_padding": "no"}, "mask_target_padding")):
        with pytest.raises((ValueError, TypeError), match=match):
            fw.make("Transformer", 1, 8, 2, 12, 11, 13, 10, **bad)


@pytest.mark.parametrize("change,key", [
    ({"decoder_layers": 3}, "'decoder_layers'"),
    ({"decoder_attention_heads": 5}, "'decoder_attention_heads'"),
    ({"decoder_ffn_dim": 8}, "'decoder_ffn_dim'"),
    ({"activation_function": "tanh"}, "'activation_function'"),
    ({"normalize_before": True}, "'normalize_before'"),
    ({"normalize_embedding": True}, "'normalize_embedding'"),
    ({"layernorm_embedding": True}, "'layernorm_embedding'"),
    ({"add_final_layer_norm": True}, "'add_final_layer_norm'"),
    ({"static_position_embeddings": False}, "'static_position_embeddings'"),
    ({"scale_embedding": "yes"}, "'scale_embedding'"),
    ({"pad_token_id": None}, "'pad_token_id'"),
    ({"pad_token_id": 40}, "'pad_token_id'"),
    ({"decoder_vocab_size": 30}, "'decoder_vocab_size'"),
    ({"model_type": "bart"}, "model_type 'bart'"),
])
def test_configurations_the_course_does_not_compute_are_refused(fw, change, key):
    hf = hf_marian("shared")
    with pytest.raises(ValueError, match=key):
        fw.cp.marian_from_huggingface(dict(hf.state_dict()), hf.config.to_dict() | change)


def test_checkpoints_that_are_not_marians_are_refused(fw):
    hf = hf_marian("shared")
    state, config = dict(hf.state_dict()), hf.config.to_dict()
    other = torch.randn(state["lm_head.weight"].shape)
    with pytest.raises(ValueError, match="'lm_head.weight' differs from the decoder's embeddings"):
        fw.cp.marian_from_huggingface({**state, "lm_head.weight": other}, config)
    with pytest.raises(ValueError, match="'model.encoder.embed_tokens.weight' differs from its 'model.shar"):
        fw.cp.marian_from_huggingface({**state, "model.encoder.embed_tokens.weight": other}, config)
    interleaved = torch.as_tensor(fw.to_numpy(fw.cp.positional_encoding(24, 15)))  # the course's layout
    with pytest.raises(ValueError, match="'model.decoder.embed_positions.weight' is not Marian's sinusoidal"):
        fw.cp.marian_from_huggingface({**state, "model.decoder.embed_positions.weight": interleaved}, config)
    # what a saved checkpoint leaves out: the tied copies, the position tables, the logits' bias
    left_out = ("lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
                "final_logits_bias")
    saved = {k: v for k, v in state.items() if k not in left_out and "embed_positions" not in k}
    model = fw.cp.marian_from_huggingface(saved, config)
    bias = interop.get_weights(model)["final_layer.bias"]
    assert not bias.any()  # zeros, as Hugging Face's model fills them
    with pytest.raises(ValueError, match="no 'model.shared.weight'"):
        fw.cp.marian_from_huggingface({k: v for k, v in saved.items() if k != "model.shared.weight"}, config)
