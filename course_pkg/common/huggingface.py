"""Hugging Face checkpoints into the course's BERT, GPT and ViT (framework-free half of the loaders).

The public loaders are ``course_pkg.torch.bert_from_huggingface`` / ``gpt_from_huggingface`` /
``vit_from_huggingface``
and their TensorFlow twins; they build the course model from the Hugging Face
configuration and load the weights this module maps. Nothing here imports
``transformers`` (nor a framework): the loaders take the Hugging Face model, or
its state dict (tensors or NumPy arrays) with its configuration, as arguments.
Llama's mapping, which reuses :class:`Reader` and :func:`load_into`, is in
:mod:`course_pkg.common.llama_checkpoint`.

What maps to what (``i`` a layer; canonical names as :mod:`course_pkg.interop`;
a ``torch.nn.Linear`` weight is (out, in), the canonical kernel its transpose):

BERT (``BertModel``, ``BertForMaskedLM``; keys may carry a ``bert.`` prefix; ``L`` stands
for ``encoder.layer.i``):

=====================================  ==========================================
Hugging Face                           course ``BERT``
=====================================  ==========================================
embeddings.word_embeddings             token_embedding (also the MLM decoder)
embeddings.position_embeddings         position_embedding.table
embeddings.token_type_embeddings       segment_embedding
embeddings.LayerNorm                   embedding_norm
L.attention.self.query / key / value   blocks.i.self_attn.wq / wk / wv
L.attention.output.dense               blocks.i.self_attn.wo
L.attention.output.LayerNorm           blocks.i.norm1
L.intermediate.dense                   blocks.i.ffn.w1
L.output.dense                         blocks.i.ffn.w2
L.output.LayerNorm                     blocks.i.norm2
pooler.dense                           pooler
cls.predictions.transform.dense        mlm_dense
cls.predictions.transform.LayerNorm    mlm_norm
cls.predictions.bias                   mlm_bias
=====================================  ==========================================

GPT-2 (``GPT2Model``, ``GPT2LMHeadModel``; keys may carry a ``transformer.`` prefix).
GPT-2's ``Conv1D`` keeps its weight as (in, out), the canonical layout, and fuses the
query, key and value projections in ``c_attn`` (in, 3 · d_model), split in three here:

=====================================  ==========================================
Hugging Face                           course ``GPT``
=====================================  ==========================================
wte                                    token_embedding (also the tied LM head)
wpe                                    position_embedding.table
h.i.ln_1                               blocks.i.norm1
h.i.attn.c_attn (q | k | v)            blocks.i.self_attn.wq / wk / wv
h.i.attn.c_proj                        blocks.i.self_attn.wo
h.i.ln_2                               blocks.i.norm3
h.i.mlp.c_fc                           blocks.i.ffn.w1
h.i.mlp.c_proj                         blocks.i.ffn.w2
ln_f                                   final_norm
lm_head (only when not tied)           lm_head (bias 0)
=====================================  ==========================================

ViT (``ViTModel``, ``ViTForImageClassification``; keys may carry a ``vit.`` prefix; both
spellings are read, that of ``transformers`` 5 and the older one of the Hub's checkpoints,
in brackets). The patch projection, a ``Conv2d`` weight (d_model, channels, p, p), becomes
the dense kernel (p · p · channels, d_model) that multiplies the flattened channels-last
patches; query, key and value without biases (``qkv_bias=False``) get zero biases:

=====================================================  ====================================
embeddings.patch_embeddings.projection                 patch_embedding.projection
embeddings.cls_token (1, 1, d_model)                   class_token (1, d_model)
embeddings.position_embeddings (1, tokens, d_model)    position_embedding.table
layers.i.layernorm_before / layernorm_after            blocks.i.norm1 / norm2
layers.i.attention.q_proj / k_proj / v_proj            blocks.i.self_attn.wq / wk / wv
(encoder.layer.i.attention.attention.query / ...)
layers.i.attention.o_proj (...attention.output.dense)  blocks.i.self_attn.wo
layers.i.mlp.fc1 / fc2 (intermediate.dense /           blocks.i.ffn.w1 / w2
output.dense)
layernorm                                              final_norm
classifier (``ViTForImageClassification``)             head
pooler (``ViTModel``; not in the course model)         left out
=====================================================  ====================================

Weights a checkpoint lacks keep their initial values when they are optional (the
pooler of a ``BertForMaskedLM``, the MLM head of a ``BertModel``). Everything is checked before
a model is built, and each refusal names the checkpoint's own key (prefix included): a
configuration of another family (its ``model_type``) or without a size, a missing or unexpected
entry, an entry of another shape than the configuration gives it (the shape found and the shape
expected, in the checkpoint's layout: GPT-2's fused ``c_attn`` is ``(d_model, 3 · d_model)``)
raise ``ValueError``; an entry that is not numbers raises ``TypeError``. A ViT has as many layers
as its configuration's ``num_hidden_layers``, not as its keys suggest.
"""

from __future__ import annotations

import numpy as np

# Hugging Face activation names -> the course's FeedForward activations.
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def _as_array(value, key) -> np.ndarray:
    """A tensor (torch, TF) or array as a float32 NumPy array, without importing a framework."""
    try:
        if hasattr(value, "detach"):  # torch
            value = value.detach().cpu().float().numpy()
        elif hasattr(value, "numpy"):  # TensorFlow
            value = value.numpy()
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"the checkpoint's {key!r} is not a tensor or array of numbers: "
                        f"got {type(value).__name__}") from None


def split_source(source, config=None):
    """``(state_dict, config dict)`` from a Hugging Face model, or from a state dict and its config."""
    if hasattr(source, "state_dict"):
        state_dict = source.state_dict()
        config = source.config if config is None else config
    elif isinstance(source, dict):
        state_dict = source
    else:
        raise TypeError(f"expected a Hugging Face model or a state dict, got {type(source).__name__}")
    if config is None:
        raise ValueError("a state dict needs its configuration: pass config= (a Hugging Face config or dict)")
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a Hugging Face config or a dict, got {type(config).__name__}")
    return state_dict, config


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation {name!r} of the checkpoint has no course counterpart; "
                         f"supported: {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]


def check_config(config: dict, family: str, model_type: str, sizes) -> None:
    """Raise ``ValueError`` unless ``config`` is a Hugging Face ``family`` configuration: its
    ``model_type`` (when it has one) is ``model_type``, and each key of ``sizes`` is a positive int."""
    found = config.get("model_type")
    if found is not None and found != model_type:
        raise ValueError(f"expected the configuration of a Hugging Face {family} (model_type "
                         f"{model_type!r}), got one of model_type {found!r}")
    for key in sizes:
        if key not in config:
            raise ValueError(f"the configuration has no {key!r}, which a Hugging Face {family} "
                             f"configuration has: is it another family's?")
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise ValueError(f"the configuration's {key!r} must be a positive int, got {value!r}")


def bert_config(config: dict) -> dict:
    """The course ``BERT`` constructor arguments of a Hugging Face ``BertConfig`` (as a dict)."""
    check_config(config, "BERT", "bert", ("num_hidden_layers", "hidden_size", "num_attention_heads",
                                          "intermediate_size", "vocab_size", "max_position_embeddings"))
    return {
        "num_layers": config["num_hidden_layers"], "d_model": config["hidden_size"],
        "num_heads": config["num_attention_heads"], "dff": config["intermediate_size"],
        "vocab_size": config["vocab_size"], "max_len": config["max_position_embeddings"],
        "type_vocab_size": config.get("type_vocab_size", 2),
        "dropout": float(config.get("hidden_dropout_prob", 0.1)),
        "activation": _activation(config.get("hidden_act", "gelu")),
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
    }


def gpt_config(config: dict) -> dict:
    """The course ``GPT`` constructor arguments of a Hugging Face ``GPT2Config`` (as a dict)."""
    check_config(config, "GPT-2", "gpt2", ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"))
    d_model = config["n_embd"]
    return {
        "num_layers": config["n_layer"], "d_model": d_model, "num_heads": config["n_head"],
        "dff": config.get("n_inner") or 4 * d_model, "vocab_size": config["vocab_size"],
        "max_len": config["n_positions"], "dropout": float(config.get("resid_pdrop", 0.1)),
        "activation": _activation(config.get("activation_function", "gelu_new")),
        "layer_norm_eps": float(config.get("layer_norm_epsilon", 1e-5)),
        "tie_embeddings": bool(config.get("tie_word_embeddings", True)),
    }


class Reader:
    """Reads entries of a state dict (under an optional prefix), checks their shapes against the
    configuration's, and records which were used. Errors name the checkpoint's own key."""

    def __init__(self, state_dict, prefix, family):
        self.state, self.prefix, self.family, self.used = state_dict, prefix, family, set()

    def has(self, name):
        return self.prefix + name in self.state

    def get(self, name, shape):
        key = self.prefix + name
        if key not in self.state:
            raise ValueError(f"the checkpoint has no {key!r}, which a Hugging Face {self.family} "
                             f"of this configuration has")
        value = _as_array(self.state[key], key)
        if value.shape != tuple(shape):
            raise ValueError(f"the checkpoint's {key!r} has shape {value.shape}; a Hugging Face "
                             f"{self.family} of this configuration has {tuple(shape)}")
        self.used.add(key)
        return value

    def linear(self, out, src, name, n_in, n_out, conv1d=False):
        """A dense layer: ``src.weight`` ((out, in) for nn.Linear, (in, out) for GPT-2's Conv1D)
        and ``src.bias``, as the canonical kernel (in, out) and bias."""
        weight = self.get(f"{src}.weight", (n_in, n_out) if conv1d else (n_out, n_in))
        out[f"{name}.kernel"] = weight if conv1d else weight.T
        out[f"{name}.bias"] = self.get(f"{src}.bias", (n_out,))

    def norm(self, out, src, name, width):
        out[f"{name}.gamma"] = self.get(f"{src}.weight", (width,))
        out[f"{name}.beta"] = self.get(f"{src}.bias", (width,))

    def check_all_used(self, ignore=()):
        left = sorted(k for k in self.state if k not in self.used and not k.endswith(tuple(ignore)))
        if left:
            raise ValueError(f"unexpected entries in the checkpoint (not mapped): {left}")


def bert_weights(state_dict, size) -> dict:
    """Canonical course weights of a Hugging Face BERT state dict (``BertModel`` or ``BertForMaskedLM``),
    each entry checked against the shape that ``size`` (the course constructor arguments,
    :func:`bert_config`) gives it."""
    num_layers, d, ff, vocab = size["num_layers"], size["d_model"], size["dff"], size["vocab_size"]
    prefix = "bert." if any(k.startswith("bert.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "BERT")
    w = {"token_embedding.embeddings": r.get("embeddings.word_embeddings.weight", (vocab, d)),
         "position_embedding.table.embeddings": r.get("embeddings.position_embeddings.weight",
                                                      (size["max_len"], d)),
         "segment_embedding.embeddings": r.get("embeddings.token_type_embeddings.weight",
                                               (size["type_vocab_size"], d))}
    r.norm(w, "embeddings.LayerNorm", "embedding_norm", d)
    for i in range(num_layers):
        src, dst = f"encoder.layer.{i}", f"blocks.{i}"
        for hf, course in (("query", "wq"), ("key", "wk"), ("value", "wv")):
            r.linear(w, f"{src}.attention.self.{hf}", f"{dst}.self_attn.{course}", d, d)
        r.linear(w, f"{src}.attention.output.dense", f"{dst}.self_attn.wo", d, d)
        r.norm(w, f"{src}.attention.output.LayerNorm", f"{dst}.norm1", d)
        r.linear(w, f"{src}.intermediate.dense", f"{dst}.ffn.w1", d, ff)
        r.linear(w, f"{src}.output.dense", f"{dst}.ffn.w2", ff, d)
        r.norm(w, f"{src}.output.LayerNorm", f"{dst}.norm2", d)
    if r.has("pooler.dense.weight"):
        r.linear(w, "pooler.dense", "pooler", d, d)
    head = Reader(state_dict, "cls.predictions.", "BERT")
    if head.has("bias"):
        head.linear(w, "transform.dense", "mlm_dense", d, d)
        head.norm(w, "transform.LayerNorm", "mlm_norm", d)
        w["mlm_bias.bias"] = head.get("bias", (vocab,))
        if head.has("decoder.weight"):
            decoder = head.get("decoder.weight", (vocab, d))
            if not np.array_equal(decoder, w["token_embedding.embeddings"]):
                raise ValueError("cls.predictions.decoder.weight differs from the word embeddings: the "
                                 "course BERT ties its MLM decoder to them")
        if head.has("decoder.bias") and not np.array_equal(head.get("decoder.bias", (vocab,)),
                                                           w["mlm_bias.bias"]):
            raise ValueError("cls.predictions.decoder.bias differs from cls.predictions.bias")
    r.used |= head.used
    r.check_all_used(ignore=("position_ids", "token_type_ids"))
    return w


def gpt_weights(state_dict, size) -> dict:
    """Canonical course weights of a Hugging Face GPT-2 state dict (``GPT2Model`` or ``GPT2LMHeadModel``),
    each entry checked against the shape that ``size`` (the course constructor arguments,
    :func:`gpt_config`) gives it."""
    num_layers, d, ff, vocab = size["num_layers"], size["d_model"], size["dff"], size["vocab_size"]
    prefix = "transformer." if any(k.startswith("transformer.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "GPT-2")
    w = {"token_embedding.embeddings": r.get("wte.weight", (vocab, d)),
         "position_embedding.table.embeddings": r.get("wpe.weight", (size["max_len"], d))}
    for i in range(num_layers):
        src, dst = f"h.{i}", f"blocks.{i}"
        r.norm(w, f"{src}.ln_1", f"{dst}.norm1", d)
        qkv_kernel = r.get(f"{src}.attn.c_attn.weight", (d, 3 * d))
        qkv_bias = r.get(f"{src}.attn.c_attn.bias", (3 * d,))
        for part, name in enumerate(("wq", "wk", "wv")):
            w[f"{dst}.self_attn.{name}.kernel"] = qkv_kernel[:, part * d:(part + 1) * d]
            w[f"{dst}.self_attn.{name}.bias"] = qkv_bias[part * d:(part + 1) * d]
        r.linear(w, f"{src}.attn.c_proj", f"{dst}.self_attn.wo", d, d, conv1d=True)
        r.norm(w, f"{src}.ln_2", f"{dst}.norm3", d)
        r.linear(w, f"{src}.mlp.c_fc", f"{dst}.ffn.w1", d, ff, conv1d=True)
        r.linear(w, f"{src}.mlp.c_proj", f"{dst}.ffn.w2", ff, d, conv1d=True)
    r.norm(w, "ln_f", "final_norm", d)
    if "lm_head.weight" in state_dict:
        head = Reader(state_dict, "", "GPT-2").get("lm_head.weight", (vocab, d))  # (vocab, d_model)
        r.used.add("lm_head.weight")
        if size["tie_embeddings"] and not np.array_equal(head, w["token_embedding.embeddings"]):
            raise ValueError("lm_head.weight differs from wte.weight but the configuration ties them "
                             "(tie_word_embeddings=True)")
        if not size["tie_embeddings"]:
            w["lm_head.kernel"] = head.T
            w["lm_head.bias"] = np.zeros(head.shape[0], np.float32)
    r.check_all_used(ignore=(".attn.bias", ".attn.masked_bias"))
    return w


# Weights a checkpoint may lack (they keep their initial values).
OPTIONAL = {"BERT": ("pooler.", "mlm_"), "GPT": ()}


def load_into(model, weights: dict, interop) -> None:
    """Set ``weights`` into ``model``; optional ones it lacks keep their values, others: ``ValueError``."""
    current = interop.get_weights(model)
    optional = OPTIONAL.get(type(model).__name__, ())
    missing = sorted(k for k in set(current) - set(weights) if not k.startswith(optional))
    if missing:
        raise ValueError(f"the checkpoint lacks weights of the course {type(model).__name__}: {missing}")
    interop.set_weights(model, {**current, **weights})


def build_from_huggingface(model_class, source, config, read_config, read_weights):
    """A course ``model_class`` from a Hugging Face model or state dict (+ config): ``read_config``
    gives the constructor's arguments, ``read_weights(state_dict, kwargs)`` the course's weights,
    all checked before a model is built."""
    from .. import interop

    state_dict, config = split_source(source, config)
    kwargs = read_config(config)
    weights = read_weights(state_dict, kwargs)  # all checked before a model is built
    model = model_class(**kwargs)
    load_into(model, weights, interop)
    return model


def bert_from_huggingface(bert_class, source, config=None):
    """A course ``bert_class`` with the configuration and weights of a Hugging Face BERT."""
    return build_from_huggingface(bert_class, source, config, bert_config, bert_weights)


def gpt_from_huggingface(gpt_class, source, config=None):
    """A course ``gpt_class`` with the configuration and weights of a Hugging Face GPT-2."""
    return build_from_huggingface(gpt_class, source, config, gpt_config, gpt_weights)


# ----------------------------------------------------------------------------- ViT
# The course's names of a ViT layer's weights -> Hugging Face's: transformers 5, then the older
# names of the checkpoints on the Hub.
_VIT_LAYER = {
    "new": {"norm1": "layernorm_before", "norm2": "layernorm_after",
            "self_attn.wq": "attention.q_proj", "self_attn.wk": "attention.k_proj",
            "self_attn.wv": "attention.v_proj", "self_attn.wo": "attention.o_proj",
            "ffn.w1": "mlp.fc1", "ffn.w2": "mlp.fc2"},
    "old": {"norm1": "layernorm_before", "norm2": "layernorm_after",
            "self_attn.wq": "attention.attention.query", "self_attn.wk": "attention.attention.key",
            "self_attn.wv": "attention.attention.value", "self_attn.wo": "attention.output.dense",
            "ffn.w1": "intermediate.dense", "ffn.w2": "output.dense"},
}


def vit_config(state_dict, config: dict) -> dict:
    """The course ``ViT`` constructor arguments of a Hugging Face ``ViTConfig`` (as a dict) and
    its state dict: ``num_classes`` is the classifier's width, ``None`` for a ``ViTModel``."""
    check_config(config, "ViT", "vit", ("image_size", "patch_size", "hidden_size", "num_hidden_layers",
                                        "num_attention_heads", "intermediate_size"))
    head = state_dict.get("classifier.weight")
    return {
        "image_size": int(config["image_size"]), "patch_size": int(config["patch_size"]),
        "num_layers": config["num_hidden_layers"], "d_model": config["hidden_size"],
        "num_heads": config["num_attention_heads"], "dff": config["intermediate_size"],
        "num_classes": None if head is None or np.ndim(head) != 2 else int(np.shape(head)[0]),
        "num_channels": config.get("num_channels", 3), "dropout": 0.0,
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
        "activation": _activation(config.get("hidden_act", "gelu")),
    }


def vit_weights(state_dict, size) -> dict:
    """A Hugging Face ViT's state dict as the course ``ViT``'s canonical weights (table above), each
    entry checked against the shape that ``size`` (:func:`vit_config`) gives it."""
    d, ff, p, channels = size["d_model"], size["dff"], size["patch_size"], size["num_channels"]
    prefix = "vit." if any(k.startswith("vit.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "ViT")
    conv = r.get("embeddings.patch_embeddings.projection.weight", (d, channels, p, p))
    tokens = (size["image_size"] // p) ** 2 + 1
    out = {
        "patch_embedding.projection.kernel": conv.transpose(2, 3, 1, 0).reshape(-1, d),
        "patch_embedding.projection.bias": r.get("embeddings.patch_embeddings.projection.bias", (d,)),
        "class_token.embeddings": r.get("embeddings.cls_token", (1, 1, d)).reshape(1, d),
        "position_embedding.table.embeddings":
            r.get("embeddings.position_embeddings", (1, tokens, d)).reshape(tokens, d),
    }
    r.norm(out, "layernorm", "final_norm", d)
    if size["num_classes"] is not None or "classifier.weight" in state_dict:
        head = Reader(state_dict, "", "ViT")
        head.linear(out, "classifier", "head", d, size["num_classes"] or 0)
        r.used |= head.used
    # either naming of the layers: that of transformers 5, else the Hub's older one
    old = not any(k.startswith(prefix + "layers.") for k in state_dict)
    names = _VIT_LAYER["old" if old else "new"]
    for i in range(size["num_layers"]):
        src, dst = f"{'encoder.layer' if old else 'layers'}.{i}", f"blocks.{i}"
        r.norm(out, f"{src}.{names['norm1']}", f"{dst}.norm1", d)
        r.norm(out, f"{src}.{names['norm2']}", f"{dst}.norm2", d)
        for course in ("wq", "wk", "wv"):  # without biases (qkv_bias=False): zero biases
            name = f"{src}.{names['self_attn.' + course]}"
            if r.has(f"{name}.bias"):
                r.linear(out, name, f"{dst}.self_attn.{course}", d, d)
            else:
                out[f"{dst}.self_attn.{course}.kernel"] = r.get(f"{name}.weight", (d, d)).T
                out[f"{dst}.self_attn.{course}.bias"] = np.zeros(d, np.float32)
        r.linear(out, f"{src}.{names['self_attn.wo']}", f"{dst}.self_attn.wo", d, d)
        r.linear(out, f"{src}.{names['ffn.w1']}", f"{dst}.ffn.w1", d, ff)
        r.linear(out, f"{src}.{names['ffn.w2']}", f"{dst}.ffn.w2", ff, d)
    r.check_all_used(ignore=("pooler.dense.weight", "pooler.dense.bias"))  # ViTModel's pooler: left out
    return out


def vit_from_huggingface(vit_class, source, config=None):
    """A course ``vit_class`` with the configuration and weights of a Hugging Face ViT."""
    from .. import interop

    state_dict, config = split_source(source, config)
    kwargs = vit_config(state_dict, config)
    weights = vit_weights(state_dict, kwargs)  # all checked before a model is built
    model = vit_class(**kwargs)
    load_into(model, weights, interop)
    return model
