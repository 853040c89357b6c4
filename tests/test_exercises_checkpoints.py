"""Exercise 8.9 (course_pkg.exercises.checkpoint_names): which canonical weights of the course's
``Transformer`` the Marian loader fills from each tensor of a ``MarianMTModel`` checkpoint.

The answer key is the loader's own output (``loader_map``); here it is held against a checkpoint
that ``transformers`` writes (the names, and each answer's weight holding its tensor's values), the
drawn names against plausible wrong rules, and a wrong answer's message, in ``check`` and in the
grader (which must carry texts back from the kernel), against what it should say. The book's
solution passing for every seed, the cells and the build are checked with the other exercises
(test_exercises.py).
"""

from __future__ import annotations

import pytest
from helpers import book_answer, probe_reason, quiet_check

from course_pkg.common.huggingface import marian
from course_pkg.exercises import catalog
from course_pkg.exercises import checkpoint_names as cn

SEED = 7


@pytest.fixture(scope="module")
def saved_marian(tmp_path_factory):
    """``(tensors, config)`` of a random ``MarianMTModel`` of opus-mt's configuration and
    :data:`cn.LAYERS` layers, as ``save_pretrained`` writes it; every tensor drawn anew (Hugging
    Face starts biases and layer norms at zeros and ones, which would hide a swap)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    safetensors = pytest.importorskip("safetensors.numpy")
    config = transformers.MarianConfig(
        vocab_size=11, d_model=6, encoder_layers=cn.LAYERS, decoder_layers=cn.LAYERS,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=10, decoder_ffn_dim=10,
        max_position_embeddings=12, pad_token_id=10, decoder_start_token_id=10, eos_token_id=0,
        forced_eos_token_id=None, activation_function="swish", scale_embedding=True)
    model = transformers.MarianMTModel(config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, tensor in list(model.named_parameters()) + [("final_logits_bias", model.final_logits_bias)]:
            if "embed_positions" not in name:  # the fixed sinusoidal tables
                tensor.copy_(torch.randn(tensor.shape, generator=generator))
    folder = tmp_path_factory.mktemp("marian")
    model.save_pretrained(folder)
    return safetensors.load_file(str(folder / "model.safetensors")), config.to_dict()


def test_the_names_are_those_transformers_saves(saved_marian):
    tensors, _ = saved_marian
    assert sorted(tensors) == sorted(cn.checkpoint_names())


def test_each_answer_holds_its_tensor_and_every_weight_has_one(saved_marian):
    """Loading the saved checkpoint, each canonical weight of a tensor's answer holds that tensor's
    values (transposed, its features reordered: the same values, sorted), and the answers name
    every canonical weight of the model once."""
    tensors, config = saved_marian
    weights = marian.marian_weights(tensors, config)
    named = [course for name in cn.checkpoint_names() for course in cn.expected_names(name)]
    assert sorted(named) == sorted(weights)
    for name in cn.checkpoint_names():
        for course in cn.expected_names(name):
            assert sorted(weights[course].ravel()) == sorted(tensors[name].ravel()), (name, course)


def test_the_answers_are_the_loaders_own():
    """A few answers written out: the tied table fills three weights, the cross-attention is
    ``cross_attn``, the decoder's last layer norm ``norm3``."""
    assert cn.expected_names("model.shared.weight") == [
        "decoder.embedding.token_embedding.embeddings", "encoder.embedding.token_embedding.embeddings",
        "final_layer.kernel"]
    assert cn.expected_names("final_logits_bias") == ["final_layer.bias"]
    assert cn.expected_names("model.decoder.layers.1.encoder_attn.k_proj.weight") == [
        "decoder.layers.1.cross_attn.wk.kernel"]
    for name, course in (("model.encoder.layers.0.fc1.bias", "encoder.layers.0.ffn.w1.bias"),
                         ("model.decoder.layers.5.final_layer_norm.weight", "decoder.layers.5.norm3.gamma"),
                         ("model.encoder.layers.2.final_layer_norm.bias", "encoder.layers.2.norm2.beta")):
        assert cn.expected_names(name) == [course]


@pytest.mark.parametrize("mistake", list(cn.MISTAKES))
def test_every_seed_rejects_each_wrong_rule(mistake):
    """For any edition, each plausible wrong rule gets at least one of the six drawn names wrong,
    and ``check`` names that tensor."""
    for seed in range(25):
        params = catalog.get("8.9").params(seed)
        names = params["names"]
        assert len(set(names)) == 6 and {cn.SHARED, cn.LOGITS_BIAS} <= set(names)
        assert set(names) <= set(cn.checkpoint_names())
        with pytest.raises(AssertionError, match=r"^Exercise 8\.9: course_names\('[\w.]+'\) returned \["):
            quiet_check("8.9", cn.MISTAKES[mistake], params)


def _first_wrong(rule, names):
    return next(name for name in names if rule(name) != cn.expected_names(name))


def test_feedback_names_the_tensor_and_both_answers():
    """A wrong answer is told in the learner's terms: the tensor's name, the names returned and the
    names the loader fills; a text where a list is asked and the right names unsorted are said
    so; a result that holds no texts keeps the general message."""
    params = catalog.get("8.9").params(SEED)
    rule = cn.MISTAKES["the decoder's last layer norm numbered as the encoder's"]
    name = _first_wrong(rule, params["names"])
    with pytest.raises(AssertionError) as error:
        quiet_check("8.9", rule, params)
    assert str(error.value) == (f"Exercise 8.9: course_names({name!r}) returned {rule(name)}; "
                                f"the loader fills {cn.expected_names(name)}")
    first, right = params["names"][0], cn.expected_names(params["names"][0])
    with pytest.raises(AssertionError, match=rf"^Exercise 8\.9: course_names\('{first}'\) returned the text "
                                             rf"'{right[0]}', not a list; the loader fills \["):
        quiet_check("8.9", lambda name: cn.expected_names(name)[0], params)
    shared = {cn.SHARED: cn.expected_names(cn.SHARED)[::-1]}
    unsorted = r"returned the right names, \['final_layer\.kernel', .*\], but not sorted: \['decoder"
    with pytest.raises(AssertionError, match=r"course_names\('model\.shared\.weight'\) " + unsorted):
        quiet_check("8.9", lambda name: shared.get(name, cn.expected_names(name)), params)
    with pytest.raises(AssertionError, match=r"^Exercise 8\.9: course_names\(\.\.\.\)\[0\] should return"):
        quiet_check("8.9", lambda name: 3, params)


def test_the_grader_reads_names_back_and_tells_what_check_tells(tmp_path):
    """The kernel's texts reach the grader (not only their type and shape): the book's answer
    scores, a wrong rule gets ``check``'s message."""
    params = catalog.get("8.9").params(SEED)
    assert probe_reason("8.9", book_answer("8.9"), SEED, tmp_path) == ""
    rule = cn.MISTAKES["Hugging Face's `encoder_attn` for the cross-attention"]
    with pytest.raises(AssertionError) as error:
        quiet_check("8.9", rule, params)
    assert probe_reason("8.9", rule, SEED, tmp_path) == f"AssertionError: {error.value}"
    assert "returned the text" in probe_reason("8.9", lambda name: cn.expected_names(name)[0], SEED, tmp_path)
