"""Hugging Face GPT-2 checkpoints into the course's ``GPT`` (framework-free half of its loader).

The public loaders are ``course_pkg.torch.gpt_from_huggingface`` and its TensorFlow twin; what
every family's loader shares is :mod:`course_pkg.common.huggingface`.

What maps to what (``GPT2Model``, ``GPT2LMHeadModel``; keys may carry a ``transformer.`` prefix; ``i``
a layer; canonical names as :mod:`course_pkg.interop`). GPT-2's ``Conv1D`` keeps its weight as
(in, out), the canonical layout, and fuses the query, key and value projections in ``c_attn``
(in, 3 · d_model), split in three here:
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
"""

from __future__ import annotations

import numpy as np

from . import Reader, build_from_huggingface, check_config, course_activation


def gpt_config(config: dict, state_dict=None) -> dict:
    """The course ``GPT`` constructor arguments of a Hugging Face ``GPT2Config`` (as a dict); the
    configuration gives every size, so ``state_dict`` is not read."""
    check_config(config, "GPT-2", "gpt2", ("n_layer", "n_embd", "n_head", "vocab_size", "n_positions"))
    d_model = config["n_embd"]
    return {
        "num_layers": config["n_layer"], "d_model": d_model, "num_heads": config["n_head"],
        "dff": config.get("n_inner") or 4 * d_model, "vocab_size": config["vocab_size"],
        "max_len": config["n_positions"], "dropout": float(config.get("resid_pdrop", 0.1)),
        "activation": course_activation(config.get("activation_function", "gelu_new")),
        "layer_norm_eps": float(config.get("layer_norm_epsilon", 1e-5)),
        "tie_embeddings": bool(config.get("tie_word_embeddings", True)),
    }


def gpt_weights(state_dict, config: dict) -> dict:
    """Canonical course weights of a Hugging Face GPT-2 state dict (``GPT2Model`` or ``GPT2LMHeadModel``),
    each entry checked against the shape that its configuration gives it (through the course
    constructor arguments, :func:`gpt_config`)."""
    size = gpt_config(config)
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


def gpt_from_huggingface(gpt_class, source, config=None):
    """A course ``gpt_class`` with the configuration and weights of a Hugging Face GPT-2."""
    return build_from_huggingface(gpt_class, source, config, gpt_config, gpt_weights)
