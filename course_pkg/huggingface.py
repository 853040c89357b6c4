"""Hugging Face checkpoints into the course's BERT and GPT (framework-free half of the loaders).

The public loaders are ``course_pkg.torch.bert_from_huggingface`` / ``gpt_from_huggingface``
and their TensorFlow twins; they build the course model from the Hugging Face
configuration and load the weights this module maps. Nothing here imports
``transformers`` (nor a framework): the loaders take the Hugging Face model, or
its state dict (tensors or NumPy arrays) with its configuration, as arguments.

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

Weights a checkpoint lacks keep their initial values when they are optional (the
pooler of a ``BertForMaskedLM``, the MLM head of a ``BertModel``); any other missing or
unexpected entry raises ``ValueError`` naming it.
"""

from __future__ import annotations

import numpy as np

# Hugging Face activation names -> the course's FeedForward activations.
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def _as_array(value) -> np.ndarray:
    """A tensor (torch, TF) or array as a float32 NumPy array, without importing a framework."""
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().float().numpy()
    elif hasattr(value, "numpy"):  # TensorFlow
        value = value.numpy()
    return np.asarray(value, dtype=np.float32)


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


def bert_config(config: dict) -> dict:
    """The course ``BERT`` constructor arguments of a Hugging Face ``BertConfig`` (as a dict)."""
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
    d_model = config["n_embd"]
    return {
        "num_layers": config["n_layer"], "d_model": d_model, "num_heads": config["n_head"],
        "dff": config.get("n_inner") or 4 * d_model, "vocab_size": config["vocab_size"],
        "max_len": config["n_positions"], "dropout": float(config.get("resid_pdrop", 0.1)),
        "activation": _activation(config.get("activation_function", "gelu_new")),
        "layer_norm_eps": float(config.get("layer_norm_epsilon", 1e-5)),
        "tie_embeddings": bool(config.get("tie_word_embeddings", True)),
    }


class _Reader:
    """Reads entries of a state dict (under an optional prefix) and records which were used."""

    def __init__(self, state_dict, prefix):
        self.state, self.prefix, self.used = state_dict, prefix, set()

    def has(self, name):
        return self.prefix + name in self.state

    def get(self, name):
        key = self.prefix + name
        if key not in self.state:
            raise ValueError(f"the checkpoint has no {key!r}")
        self.used.add(key)
        return _as_array(self.state[key])

    def linear(self, out, src, name, transpose=True):
        """A dense layer: ``src.weight`` ((out, in) for nn.Linear, (in, out) for Conv1D) and ``src.bias``."""
        weight = self.get(f"{src}.weight")
        out[f"{name}.kernel"] = weight.T if transpose else weight
        out[f"{name}.bias"] = self.get(f"{src}.bias")

    def norm(self, out, src, name):
        out[f"{name}.gamma"] = self.get(f"{src}.weight")
        out[f"{name}.beta"] = self.get(f"{src}.bias")

    def check_all_used(self, ignore=()):
        left = sorted(k for k in self.state if k not in self.used and not k.endswith(tuple(ignore)))
        if left:
            raise ValueError(f"unexpected entries in the checkpoint (not mapped): {left}")


def bert_weights(state_dict, num_layers) -> dict:
    """Canonical course weights of a Hugging Face BERT state dict (``BertModel`` or ``BertForMaskedLM``)."""
    prefix = "bert." if any(k.startswith("bert.") for k in state_dict) else ""
    r = _Reader(state_dict, prefix)
    w = {"token_embedding.embeddings": r.get("embeddings.word_embeddings.weight"),
         "position_embedding.table.embeddings": r.get("embeddings.position_embeddings.weight"),
         "segment_embedding.embeddings": r.get("embeddings.token_type_embeddings.weight")}
    r.norm(w, "embeddings.LayerNorm", "embedding_norm")
    for i in range(num_layers):
        src, dst = f"encoder.layer.{i}", f"blocks.{i}"
        for hf, course in (("query", "wq"), ("key", "wk"), ("value", "wv")):
            r.linear(w, f"{src}.attention.self.{hf}", f"{dst}.self_attn.{course}")
        r.linear(w, f"{src}.attention.output.dense", f"{dst}.self_attn.wo")
        r.norm(w, f"{src}.attention.output.LayerNorm", f"{dst}.norm1")
        r.linear(w, f"{src}.intermediate.dense", f"{dst}.ffn.w1")
        r.linear(w, f"{src}.output.dense", f"{dst}.ffn.w2")
        r.norm(w, f"{src}.output.LayerNorm", f"{dst}.norm2")
    if r.has("pooler.dense.weight"):
        r.linear(w, "pooler.dense", "pooler")
    head = _Reader(state_dict, "cls.predictions.")
    if head.has("bias"):
        head.linear(w, "transform.dense", "mlm_dense")
        head.norm(w, "transform.LayerNorm", "mlm_norm")
        w["mlm_bias.bias"] = head.get("bias")
        if head.has("decoder.weight"):
            decoder = head.get("decoder.weight")
            if not np.array_equal(decoder, w["token_embedding.embeddings"]):
                raise ValueError("cls.predictions.decoder.weight differs from the word embeddings: the "
                                 "course BERT ties its MLM decoder to them")
        if head.has("decoder.bias") and not np.array_equal(head.get("decoder.bias"), w["mlm_bias.bias"]):
            raise ValueError("cls.predictions.decoder.bias differs from cls.predictions.bias")
    r.used |= head.used
    r.check_all_used(ignore=("position_ids", "token_type_ids"))
    return w


def gpt_weights(state_dict, num_layers, tie_embeddings=True) -> dict:
    """Canonical course weights of a Hugging Face GPT-2 state dict (``GPT2Model`` or ``GPT2LMHeadModel``)."""
    prefix = "transformer." if any(k.startswith("transformer.") for k in state_dict) else ""
    r = _Reader(state_dict, prefix)
    w = {"token_embedding.embeddings": r.get("wte.weight"),
         "position_embedding.table.embeddings": r.get("wpe.weight")}
    for i in range(num_layers):
        src, dst = f"h.{i}", f"blocks.{i}"
        r.norm(w, f"{src}.ln_1", f"{dst}.norm1")
        qkv_kernel, qkv_bias = r.get(f"{src}.attn.c_attn.weight"), r.get(f"{src}.attn.c_attn.bias")
        for part, name in zip(range(3), ("wq", "wk", "wv")):
            d = qkv_kernel.shape[1] // 3
            w[f"{dst}.self_attn.{name}.kernel"] = qkv_kernel[:, part * d:(part + 1) * d]
            w[f"{dst}.self_attn.{name}.bias"] = qkv_bias[part * d:(part + 1) * d]
        r.linear(w, f"{src}.attn.c_proj", f"{dst}.self_attn.wo", transpose=False)
        r.norm(w, f"{src}.ln_2", f"{dst}.norm3")
        r.linear(w, f"{src}.mlp.c_fc", f"{dst}.ffn.w1", transpose=False)
        r.linear(w, f"{src}.mlp.c_proj", f"{dst}.ffn.w2", transpose=False)
    r.norm(w, "ln_f", "final_norm")
    if "lm_head.weight" in state_dict:
        head = _as_array(state_dict["lm_head.weight"])  # (vocab, d_model)
        r.used.add("lm_head.weight")
        if tie_embeddings and not np.array_equal(head, w["token_embedding.embeddings"]):
            raise ValueError("lm_head.weight differs from wte.weight but the configuration ties them "
                             "(tie_word_embeddings=True)")
        if not tie_embeddings:
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


def bert_from_huggingface(bert_class, source, config=None):
    """A course ``bert_class`` with the configuration and weights of a Hugging Face BERT."""
    from . import interop

    state_dict, config = split_source(source, config)
    kwargs = bert_config(config)
    model = bert_class(**kwargs)
    load_into(model, bert_weights(state_dict, kwargs["num_layers"]), interop)
    return model


def gpt_from_huggingface(gpt_class, source, config=None):
    """A course ``gpt_class`` with the configuration and weights of a Hugging Face GPT-2."""
    from . import interop

    state_dict, config = split_source(source, config)
    kwargs = gpt_config(config)
    model = gpt_class(**kwargs)
    load_into(model, gpt_weights(state_dict, kwargs["num_layers"], kwargs["tie_embeddings"]), interop)
    return model
