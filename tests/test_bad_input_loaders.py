"""Bad checkpoints for the Hugging Face loaders: one clear error naming the checkpoint's own key.

``bert_from_huggingface``, ``gpt_from_huggingface``, ``vit_from_huggingface``,
``llama_from_huggingface`` and ``marian_from_huggingface`` read a learner's checkpoint, which
speaks Hugging Face names. Another family's checkpoint, a missing or unexpected entry, a wrongly
shaped tensor or a configuration that does not match the weights raises ``ValueError``
(``TypeError`` for an entry that is not numbers) naming the key as the checkpoint spells it (with
its ``bert.`` / ``transformer.`` / ``vit.`` / ``model.`` prefix), what was expected and what came;
the checks live in the framework-free ``course_pkg.common.huggingface`` (one module per family),
so both frameworks say the same. Tiny random models, built offline.
"""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

D, LAYERS, HEADS, FF, VOCAB, POSITIONS = 8, 2, 2, 12, 20, 10
IMAGE, PATCH = 8, 4  # 4 patches + the class token


def bert():
    torch.manual_seed(0)
    return transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=FF, max_position_embeddings=POSITIONS)).eval()


def gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=VOCAB, n_embd=D, n_layer=LAYERS, n_head=HEADS, n_inner=FF, n_positions=POSITIONS)).eval()


def vit(**config):
    torch.manual_seed(0)
    return transformers.ViTForImageClassification(transformers.ViTConfig(
        image_size=IMAGE, patch_size=PATCH, num_channels=1, hidden_size=D, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, intermediate_size=FF, num_labels=3, **config)).eval()


def llama():
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=1, intermediate_size=FF, max_position_embeddings=POSITIONS)).eval()


def marian():
    torch.manual_seed(0)
    return transformers.MarianMTModel(transformers.MarianConfig(
        vocab_size=VOCAB, d_model=D, encoder_layers=LAYERS, decoder_layers=LAYERS,
        encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FF, decoder_ffn_dim=FF,
        max_position_embeddings=POSITIONS, pad_token_id=VOCAB - 1, decoder_start_token_id=VOCAB - 1)).eval()


MODELS = {"bert": bert, "gpt": gpt2, "vit": vit, "llama": llama, "marian": marian}


def load(fw, family, source, config=None):
    return getattr(fw.cp, f"{family}_from_huggingface")(source, config)


def state_and_config(family):
    model = MODELS[family]()
    return dict(model.state_dict()), model.config.to_dict()


@pytest.mark.parametrize("family,other,expected,found", [
    ("bert", "gpt", "BERT (model_type 'bert')", "gpt2"),
    ("gpt", "bert", "GPT-2 (model_type 'gpt2')", "bert"),
    ("vit", "bert", "ViT (model_type 'vit')", "bert"),
    ("bert", "vit", "BERT (model_type 'bert')", "vit"),
    ("llama", "gpt", "Llama (model_type 'llama')", "gpt2"),
    ("gpt", "llama", "GPT-2 (model_type 'gpt2')", "llama"),
    ("marian", "bert", "Marian (model_type 'marian')", "bert"),
    ("llama", "marian", "Llama (model_type 'llama')", "marian"),
])
def test_another_familys_checkpoint_is_named_as_such(fw, family, other, expected, found):
    message = f"expected the configuration of a Hugging Face {expected}, got one of model_type {found!r}"
    with pytest.raises(ValueError, match=re.escape(message)):
        load(fw, family, MODELS[other]())


@pytest.mark.parametrize("family,key", [("bert", "num_hidden_layers"), ("gpt", "n_embd"),
                                        ("vit", "image_size"), ("llama", "hidden_size"),
                                        ("marian", "decoder_ffn_dim")])
def test_a_configuration_without_a_size_names_it(fw, family, key):
    state, config = state_and_config(family)
    del config[key], config["model_type"]
    with pytest.raises(ValueError, match=f"the configuration has no '{key}'"):
        load(fw, family, state, config)
    config[key] = "2"
    with pytest.raises(ValueError, match=f"the configuration's '{key}' must be a positive int, got '2'"):
        load(fw, family, state, config)


@pytest.mark.parametrize("family,key,shape,expected", [
    ("bert", "bert.encoder.layer.1.intermediate.dense.bias", (7,), (FF,)),
    ("bert", "bert.embeddings.word_embeddings.weight", (VOCAB + 1, D), (VOCAB, D)),
    ("bert", "cls.predictions.bias", (3,), (VOCAB,)),
    ("gpt", "transformer.h.0.attn.c_attn.bias", (D,), (3 * D,)),  # fused q | k | v
    ("gpt", "transformer.h.1.mlp.c_fc.weight", (FF, D), (D, FF)),  # Conv1D: (in, out)
    ("gpt", "lm_head.weight", (VOCAB, D + 1), (VOCAB, D)),
    ("vit", "vit.embeddings.position_embeddings", (1, 6, D), (1, 5, D)),
    ("vit", "vit.embeddings.patch_embeddings.projection.weight", (D, 1, 2, 2), (D, 1, PATCH, PATCH)),
    ("vit", "classifier.bias", (4,), (3,)),
    ("llama", "model.layers.0.self_attn.k_proj.weight", (D, D), (D // HEADS, D)),  # one key/value head
    ("llama", "lm_head.weight", (VOCAB, D + 1), (VOCAB, D)),
    ("marian", "model.decoder.layers.1.encoder_attn.k_proj.weight", (D, D + 1), (D, D)),
    ("marian", "model.encoder.layers.0.fc1.weight", (D, FF), (FF, D)),  # nn.Linear: (out, in)
    ("marian", "final_logits_bias", (VOCAB,), (1, VOCAB)),
])
def test_a_wrongly_shaped_tensor_is_named_by_the_checkpoints_key(fw, family, key, shape, expected):
    state, config = state_and_config(family)
    assert key in state
    state[key] = torch.zeros(shape)
    message = f"the checkpoint's {key!r} has shape {shape}; a Hugging Face"
    with pytest.raises(ValueError, match=re.escape(message) + ".*" + re.escape(f"has {expected}")):
        load(fw, family, state, config)


@pytest.mark.parametrize("family,key", [
    ("bert", "bert.encoder.layer.1.output.LayerNorm.weight"),
    ("gpt", "transformer.ln_f.bias"),
    ("vit", "vit.embeddings.cls_token"),
    ("vit", "vit.layernorm.weight"),
    ("vit", "classifier.bias"),
    ("llama", "model.layers.1.mlp.up_proj.weight"),
    ("marian", "model.decoder.layers.1.encoder_attn_layer_norm.bias"),
])
def test_a_missing_entry_is_named(fw, family, key):
    state, config = state_and_config(family)
    del state[key]
    with pytest.raises(ValueError, match=re.escape(f"the checkpoint has no {key!r}")):
        load(fw, family, state, config)


@pytest.mark.parametrize("family,extra", [
    ("vit", "vit.embeddings.distillation_token"), ("vit", "head.weight"), ("bert", "bert.extra.weight"),
    ("gpt", "transformer.h.0.attn.extra"), ("llama", "model.layers.0.self_attn.q_proj.bias"),
    ("marian", "model.encoder.layernorm_embedding.weight"),
])
def test_an_unexpected_entry_is_named(fw, family, extra):
    state, config = state_and_config(family)
    state[extra] = torch.zeros(1, 1, D)
    with pytest.raises(ValueError, match=re.escape(f"unexpected entries in the checkpoint (not mapped): "
                                                   f"[{extra!r}]")):
        load(fw, family, state, config)


def test_vit_layers_are_counted_from_the_configuration_not_the_keys(fw):
    state, config = state_and_config("vit")
    # transformers 5 names the layers vit.layers.i, transformers 4 vit.encoder.layer.i
    layers = "vit.layers" if any(k.startswith("vit.layers.") for k in state) else "vit.encoder.layer"
    missing = f"the checkpoint has no '{layers}.2.layernorm_before.weight'"
    with pytest.raises(ValueError, match=re.escape(missing)):
        load(fw, "vit", state, {**config, "num_hidden_layers": LAYERS + 1})
    unexpected = r"unexpected entries in the checkpoint \(not mapped\): \[" + re.escape(f"'{layers}.1.")
    with pytest.raises(ValueError, match=unexpected):
        load(fw, "vit", state, {**config, "num_hidden_layers": LAYERS - 1})


def test_an_entry_that_is_not_numbers_is_a_type_error_naming_it(fw):
    state, config = state_and_config("gpt")
    state["transformer.wpe.weight"] = "weights.bin"
    message = "the checkpoint's 'transformer.wpe.weight' is not a tensor or array of numbers: got str"
    with pytest.raises(TypeError, match=re.escape(message)):
        load(fw, "gpt", state, config)


def test_both_frameworks_refuse_with_the_same_message(tf_fw, torch_fw):
    state, config = state_and_config("vit")
    state["vit.embeddings.position_embeddings"] = np.zeros((1, 6, D), np.float32)
    messages = []
    for fw in (tf_fw, torch_fw):
        with pytest.raises(ValueError) as error:
            load(fw, "vit", state, config)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_the_checkpoints_still_load(fw):
    """The checks refuse only what is wrong: each family's own checkpoint loads (the parity with
    Hugging Face's outputs is tested in test_families.py and test_vit.py)."""
    for family in MODELS:
        assert load(fw, family, MODELS[family]()) is not None
