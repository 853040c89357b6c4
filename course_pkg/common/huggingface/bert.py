"""Hugging Face BERT checkpoints into the course's ``BERT`` (framework-free half of its loader).

The public loaders are ``course_pkg.torch.bert_from_huggingface`` and its TensorFlow twin; what
every family's loader shares (:class:`~course_pkg.common.huggingface.Reader`, the checks, the
refusals) is :mod:`course_pkg.common.huggingface`.

What maps to what (``BertModel``, ``BertForMaskedLM``; keys may carry a ``bert.`` prefix; ``L`` stands
for ``encoder.layer.i``, ``i`` a layer; canonical names as :mod:`course_pkg.interop`; a
``torch.nn.Linear`` weight is (out, in), the canonical kernel its transpose):

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

The pooler (a ``BertForMaskedLM`` has none) and the MLM head (a ``BertModel`` has none) are
optional: without them, the course model's keep their initial values.
"""

from __future__ import annotations

import numpy as np

from . import Reader, build_from_huggingface, check_config, course_activation


def bert_config(config: dict, state_dict=None) -> dict:
    """The course ``BERT`` constructor arguments of a Hugging Face ``BertConfig`` (as a dict); the
    configuration gives every size, so ``state_dict`` is not read."""
    check_config(config, "BERT", "bert", ("num_hidden_layers", "hidden_size", "num_attention_heads",
                                          "intermediate_size", "vocab_size", "max_position_embeddings"))
    return {
        "num_layers": config["num_hidden_layers"], "d_model": config["hidden_size"],
        "num_heads": config["num_attention_heads"], "dff": config["intermediate_size"],
        "vocab_size": config["vocab_size"], "max_len": config["max_position_embeddings"],
        "type_vocab_size": config.get("type_vocab_size", 2),
        "dropout": float(config.get("hidden_dropout_prob", 0.1)),
        "activation": course_activation(config.get("hidden_act", "gelu")),
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
    }


def bert_weights(state_dict, config: dict) -> dict:
    """Canonical course weights of a Hugging Face BERT state dict (``BertModel`` or ``BertForMaskedLM``),
    each entry checked against the shape that its configuration gives it (through the course
    constructor arguments, :func:`bert_config`)."""
    size = bert_config(config)
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


def bert_from_huggingface(bert_class, source, config=None):
    """A course ``bert_class`` with the configuration and weights of a Hugging Face BERT."""
    return build_from_huggingface(bert_class, source, config, bert_config, bert_weights)
