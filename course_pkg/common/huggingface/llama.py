"""Hugging Face Llama checkpoints into the course's Llama (framework-free half of the loader).

The public loaders are ``course_pkg.torch.llama_from_huggingface`` and its TensorFlow twin;
they build the course ``Llama`` from the Hugging Face configuration and load the weights this
module maps, with the ``Reader``, ``check_config`` and ``build_from_huggingface`` that every
family shares (:mod:`course_pkg.common.huggingface`). Nothing here imports ``transformers`` (nor
a framework).

What maps to what (``LlamaModel``, ``LlamaForCausalLM``; keys may carry a ``model.`` prefix;
``L`` stands for ``layers.i``; a ``torch.nn.Linear`` weight is (out, in), the canonical kernel
its transpose; no entry has a bias):

=====================================  ==========================================
Hugging Face                           course ``Llama``
=====================================  ==========================================
embed_tokens                           token_embedding (also the tied LM head)
L.input_layernorm                      blocks.i.attention_norm
L.self_attn.q_proj                     blocks.i.attention.wq
L.self_attn.k_proj / v_proj            blocks.i.attention.wk / wv (kv_heads · depth outputs)
L.self_attn.o_proj                     blocks.i.attention.wo
L.post_attention_layernorm             blocks.i.ffn_norm
L.mlp.gate_proj / up_proj / down_proj  blocks.i.feed_forward.w1 / w3 / w2
norm                                   final_norm
lm_head (only when not tied)           lm_head
=====================================  ==========================================

Only the configurations the course's Llama computes exactly are read: ``model_type`` "llama",
``hidden_act`` "silu", no ``attention_bias`` nor ``mlp_bias``, ``head_dim`` equal to
``hidden_size // num_attention_heads``, ``num_key_value_heads`` dividing
``num_attention_heads``, and the default rotary embedding (``rope_parameters`` or the older
``rope_scaling`` of ``rope_type`` "default", or none): anything else raises ``ValueError``
naming the configuration's key, before a model is built. So do a missing, unexpected or
mis-shaped entry (named by the checkpoint's own key). ``attention_dropout`` (dropout on the
attention weights, 0.0 in Llama) has no course counterpart and is not read: the course model
has ``dropout=0.0``.
"""

from __future__ import annotations

import numpy as np

from . import Reader, build_from_huggingface, check_config

# The canonical name of an RMSNorm's weight (``<path>.scale``, as course_pkg.interop reads it).
NORM_WEIGHT = "scale"
DEFAULT_ROPE_THETA = 10000.0


def rope_theta(config: dict) -> float:
    """The rotary base of a Llama configuration: ``rope_parameters["rope_theta"]`` (transformers 5),
    else the older top-level ``rope_theta`` (10000.0 when neither is given). Raise ``ValueError``
    for a scaled rotary embedding (a ``rope_type`` other than "default", in ``rope_parameters``
    or ``rope_scaling``)."""
    theta = config.get("rope_theta")
    for key in ("rope_parameters", "rope_scaling"):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ValueError(f"the configuration's {key!r} must be a dict or None, got {value!r}")
        kind = value.get("rope_type", value.get("type", "default"))
        if kind != "default":
            raise ValueError(f"the configuration's {key!r} asks for rope_type {kind!r}: the course's Llama "
                             f"has only the default rotary embedding (no scaling)")
        theta = value.get("rope_theta", theta)
    theta = DEFAULT_ROPE_THETA if theta is None else theta
    if isinstance(theta, bool) or not isinstance(theta, (int, float, np.number)) or not theta > 0:
        raise ValueError(f"the configuration's 'rope_theta' must be a number > 0, got {theta!r}")
    return float(theta)


def llama_config(config: dict, state_dict=None) -> dict:
    """The course ``Llama`` constructor arguments of a Hugging Face ``LlamaConfig`` (as a dict); the
    configuration gives every size, so ``state_dict`` is not read."""
    check_config(config, "Llama", "llama", ("num_hidden_layers", "hidden_size", "num_attention_heads",
                                            "intermediate_size", "vocab_size", "max_position_embeddings"))
    d_model, heads = config["hidden_size"], config["num_attention_heads"]
    if d_model % heads:
        raise ValueError(f"the configuration's 'hidden_size' ({d_model}) is not a multiple of its "
                         f"'num_attention_heads' ({heads})")
    head_dim = config.get("head_dim")
    if head_dim is not None and head_dim != d_model // heads:
        raise ValueError(f"the configuration's 'head_dim' ({head_dim}) differs from hidden_size // "
                         f"num_attention_heads ({d_model // heads}): the course's Llama has no other")
    kv_heads = config.get("num_key_value_heads")
    kv_heads = heads if kv_heads is None else kv_heads
    if isinstance(kv_heads, bool) or not isinstance(kv_heads, (int, np.integer)) or kv_heads <= 0 \
            or heads % kv_heads:
        raise ValueError(f"the configuration's 'num_key_value_heads' must be a positive int dividing "
                         f"num_attention_heads ({heads}), got {kv_heads!r}")
    activation = config.get("hidden_act", "silu")
    if activation != "silu":
        raise ValueError(f"the configuration's 'hidden_act' is {activation!r}: the course's Llama has "
                         f"only 'silu' (SwiGLU)")
    for key in ("attention_bias", "mlp_bias"):
        if config.get(key, False):
            raise ValueError(f"the configuration's {key!r} is {config[key]!r}: the course's Llama has "
                             f"no biases")
    return {
        "num_layers": config["num_hidden_layers"], "d_model": d_model, "num_heads": heads,
        "dff": config["intermediate_size"], "vocab_size": config["vocab_size"],
        "max_len": config["max_position_embeddings"], "dropout": 0.0, "num_kv_heads": int(kv_heads),
        "rope_theta": rope_theta(config), "rms_norm_eps": float(config.get("rms_norm_eps", 1e-6)),
        "tie_embeddings": bool(config.get("tie_word_embeddings", False)),
    }


def _kernel(reader, out, src, name, n_in, n_out):
    """A dense layer without bias: ``src.weight`` (out, in) as the canonical kernel (in, out)."""
    out[f"{name}.kernel"] = reader.get(f"{src}.weight", (n_out, n_in)).T


def llama_weights(state_dict, config: dict) -> dict:
    """Canonical course weights of a Hugging Face Llama state dict (``LlamaModel`` or
    ``LlamaForCausalLM``), each entry checked against the shape that its configuration gives it
    (through the course constructor arguments, :func:`llama_config`)."""
    size = llama_config(config)
    num_layers, d, ff, vocab = size["num_layers"], size["d_model"], size["dff"], size["vocab_size"]
    kv = size["num_kv_heads"] * (d // size["num_heads"])  # width of the keys and values
    prefix = "model." if any(k.startswith("model.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "Llama")
    w = {"token_embedding.embeddings": r.get("embed_tokens.weight", (vocab, d))}
    for i in range(num_layers):
        src, dst = f"layers.{i}", f"blocks.{i}"
        w[f"{dst}.attention_norm.{NORM_WEIGHT}"] = r.get(f"{src}.input_layernorm.weight", (d,))
        for hf, course, width in (("q_proj", "wq", d), ("k_proj", "wk", kv), ("v_proj", "wv", kv)):
            _kernel(r, w, f"{src}.self_attn.{hf}", f"{dst}.attention.{course}", d, width)
        _kernel(r, w, f"{src}.self_attn.o_proj", f"{dst}.attention.wo", d, d)
        w[f"{dst}.ffn_norm.{NORM_WEIGHT}"] = r.get(f"{src}.post_attention_layernorm.weight", (d,))
        _kernel(r, w, f"{src}.mlp.gate_proj", f"{dst}.feed_forward.w1", d, ff)
        _kernel(r, w, f"{src}.mlp.up_proj", f"{dst}.feed_forward.w3", d, ff)
        _kernel(r, w, f"{src}.mlp.down_proj", f"{dst}.feed_forward.w2", ff, d)
    w[f"final_norm.{NORM_WEIGHT}"] = r.get("norm.weight", (d,))
    head = Reader(state_dict, "", "Llama")
    if size["tie_embeddings"]:
        if head.has("lm_head.weight") and not np.array_equal(head.get("lm_head.weight", (vocab, d)),
                                                             w["token_embedding.embeddings"]):
            raise ValueError("lm_head.weight differs from embed_tokens.weight but the configuration ties "
                             "them (tie_word_embeddings=True)")
    else:
        _kernel(head, w, "lm_head", "lm_head", d, vocab)
    r.used |= head.used
    r.check_all_used(ignore=("rotary_emb.inv_freq",))
    return w


def llama_from_huggingface(llama_class, source, config=None):
    """A course ``llama_class`` with the configuration and weights of a Hugging Face Llama."""
    return build_from_huggingface(llama_class, source, config, llama_config, llama_weights)
