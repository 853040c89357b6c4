"""Hugging Face Marian checkpoints into the course's Transformer (framework-free half of the loader).

The public loaders are ``course_pkg.torch.marian_from_huggingface`` and its TensorFlow twin; they
build the course ``Transformer`` of chapters 4-6 from a ``MarianConfig`` and load the weights this
module maps, with the ``Reader``, ``check_config`` and ``build_from_huggingface`` that every family
shares (:mod:`course_pkg.common.huggingface`). Nothing here imports ``transformers`` (nor a framework).

Marian (the opus-mt translation models) is the paper's encoder-decoder: post-LN layers, sinusoidal
positions, token embeddings scaled by √d_model, shared embeddings tied to the output projection.
Hugging Face's port of it (``MarianMTModel``, whose logits the loader reproduces) adds an
activation (``"swish"``, SiLU, in opus-mt), PyTorch's default layer-norm epsilon (1e-5; the Marian
toolkit's own layer norms use a smaller one), a bias on the logits (``final_logits_bias``) and a
decoder that starts from ``<pad>`` (``decoder_start_token_id`` = ``pad_token_id``). The course's
``Transformer`` takes the first two as options (``activation``, ``layer_norm_eps``); its
``final_layer`` has a bias already; ``mask_target_padding=False`` gives the decoder the look-ahead
mask alone, as Hugging Face does when no ``decoder_attention_mask`` is passed (with the target
padding mask, the start token ``<pad>`` would be blocked and the first query would see no key at
all).

**Sines and cosines in two halves.** Hugging Face's Marian position table puts the sines in the first
``ceil(d_model / 2)`` features and the cosines in the rest; the course's
``positional_encoding`` interleaves them (sine in feature 2i, cosine in 2i + 1, at the same
frequency). The two tables hold the same columns in another order: course feature ``2i`` is
Marian feature ``i``, course feature ``2i + 1`` is Marian feature ``ceil(d_model / 2) + i``
(:func:`interleaving_order`; odd widths too). Rather than give the course's table a second
layout, the loader renumbers Marian's features: nothing in a Transformer depends on the order
of the ``d_model`` features of its residual stream, as long as every weight that reads or writes
them is renumbered alike, so each weight's ``d_model`` axis is reordered
(:func:`reorder_features`): the embeddings' columns, the rows of every kernel that reads the
stream (queries, keys, values, the feed-forward's first layer, the output projection), the
columns and biases of every kernel that writes it (the attention outputs, the feed-forward's
second layer), the layer norms' gains and offsets. The logits are unchanged and the course's
classes stay as chapters 4-5 built them; the price is that the course model's hidden states are
Hugging Face's with their features reordered (``hidden[..., order]``), while its logits are
Hugging Face's as they are.

What maps to what (``MarianMTModel``, or its ``MarianModel`` without the ``model.`` prefix;
``E`` stands for ``encoder.layers.i``, ``D`` for ``decoder.layers.i``; a ``torch.nn.Linear``
weight is (out, in), the canonical kernel its transpose; every ``d_model`` axis reordered):

=========================================  ==========================================
Hugging Face                               course ``Transformer``
=========================================  ==========================================
encoder.embed_tokens (or shared)           encoder.embedding.token_embedding
decoder.embed_tokens (or shared)           decoder.embedding.token_embedding
encoder/decoder.embed_positions            checked: the sinusoidal table in halves
E.self_attn.q_proj / k_proj / v_proj       encoder.layers.i.self_attn.wq / wk / wv
E.self_attn.out_proj                       encoder.layers.i.self_attn.wo
E.self_attn_layer_norm                     encoder.layers.i.norm1
E.fc1 / fc2                                encoder.layers.i.ffn.w1 / w2
E.final_layer_norm                         encoder.layers.i.norm2
D.self_attn.(q/k/v/out)_proj               decoder.layers.i.self_attn.wq / wk / wv / wo
D.self_attn_layer_norm                     decoder.layers.i.norm1
D.encoder_attn.(q/k/v/out)_proj            decoder.layers.i.cross_attn.wq / wk / wv / wo
D.encoder_attn_layer_norm                  decoder.layers.i.norm2
D.fc1 / fc2                                decoder.layers.i.ffn.w1 / w2
D.final_layer_norm                         decoder.layers.i.norm3
lm_head (or the decoder's embeddings)      final_layer.kernel
final_logits_bias (1, vocab)               final_layer.bias (zeros when absent)
=========================================  ==========================================

With ``scale_embedding=False`` the embeddings enter the course model divided by √d_model (its
``PositionalEmbedding`` multiplies them back); the output projection keeps them as they are.
The tied copies a model's state dict repeats (``shared`` with ``encoder.embed_tokens`` and
``decoder.embed_tokens``, ``lm_head`` with the decoder's embeddings) may be there or not; where
the configuration ties them (``tie_word_embeddings``, and ``share_encoder_decoder_embeddings``
for ``shared``) they must be equal. (With ``tie_word_embeddings=False``, transformers 5 keeps each
stack's ``embed_tokens`` apart from ``shared`` and reads its own: so does the loader.
transformers 4 gives a decoder with its own embeddings ``vocab_size`` rows whatever
``decoder_vocab_size`` says: such a checkpoint loads only where the two sizes are equal, else
the shape of ``decoder.embed_tokens`` is refused.)

Only what the course's ``Transformer`` computes is read: as many encoder as decoder layers,
heads and feed-forward units; an activation of ``ACTIVATIONS``; none of ``normalize_before``,
``normalize_embedding``, ``layernorm_embedding``, ``add_final_layer_norm``, ``add_bias_logits``
true, nor ``static_position_embeddings`` false (keys of older configurations on the Hub, which
transformers 4 and 5 no longer read: a model trained with them set otherwise computes something
else). Anything else raises ``ValueError`` naming the
configuration's key, before a model is built; so do a missing, unexpected or mis-shaped entry,
and a position table that is not the sinusoidal one (each named by the checkpoint's own key).
``attention_dropout`` and ``activation_dropout`` have no course counterpart and are not read;
the course model's ``dropout`` is the configuration's ``dropout``.
"""

from __future__ import annotations

import numpy as np

from . import Reader, build_from_huggingface, check_config

# Hugging Face activation names (``activation_function``) -> the course's FeedForward activations.
ACTIVATIONS = {"swish": "silu", "silu": "silu", "relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh"}
# Keys of older Marian/BART configurations and the only value the course computes.
FIXED = {"normalize_before": False, "normalize_embedding": False, "layernorm_embedding": False,
         "add_final_layer_norm": False, "add_bias_logits": False, "static_position_embeddings": True}
# Hugging Face's Marian layer norms are torch.nn.LayerNorm's, of epsilon 1e-5 (there is no key for it).
LAYER_NORM_EPS = 1e-5
# The sizes a Marian configuration must give (positive ints).
SIZES = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
         "encoder_ffn_dim", "decoder_ffn_dim", "vocab_size", "max_position_embeddings")
# Each Hugging Face stack's sizes: the encoder's key, then the decoder's (the course has one of each).
PAIRED = (("encoder_layers", "decoder_layers"), ("encoder_attention_heads", "decoder_attention_heads"),
          ("encoder_ffn_dim", "decoder_ffn_dim"))


def interleaving_order(d_model: int) -> np.ndarray:
    """The course's feature ``c`` is Marian's feature ``order[c]``: ``0, h, 1, h + 1, ...`` with
    ``h = ceil(d_model / 2)``, so that ``marian_table[:, order]`` is the course's interleaved table.

    Shape:
        () -> (d_model,) int.
    """
    half = (d_model + 1) // 2  # sines: the first ceil(d_model / 2) features
    order = np.empty(d_model, dtype=np.int64)
    order[0::2] = np.arange(half)  # sin(pos / 10000^(2i / d_model))
    order[1::2] = half + np.arange(d_model // 2)  # cos(pos / 10000^(2i / d_model))
    return order


def halves_table(length: int, d_model: int) -> np.ndarray:
    """Marian's sinusoidal table: the sines in the first ``ceil(d_model / 2)`` features, the cosines
    of the same frequencies after them (angles in float64, as the course's).

    Shape:
        () -> (length, d_model) float32.
    """
    pos = np.arange(length, dtype=np.float64)[:, None]  # (length, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # 0, 2, 4, ...: one frequency each
    angles = pos / np.power(10000.0, two_i / d_model)  # (length, ceil(d_model / 2))
    return np.concatenate([np.sin(angles), np.cos(angles[:, :d_model // 2])], axis=1).astype(np.float32)


def _check_int(config, key, low=0):
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"the configuration's {key!r} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_bool(config, key, default):
    value = config.get(key, default)
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"the configuration's {key!r} must be True or False, got {value!r}")
    return bool(value)


def _check_architecture(config: dict) -> None:
    """Refuse, naming the key, what the course's Transformer does not compute."""
    check_config(config, "Marian", "marian", SIZES)
    for encoder_key, decoder_key in PAIRED:
        if config[decoder_key] != config[encoder_key]:
            raise ValueError(f"the configuration's {decoder_key!r} ({config[decoder_key]}) differs from "
                             f"its {encoder_key!r} ({config[encoder_key]}): the course's Transformer has "
                             f"one value for both stacks")
    d_model, heads = config["d_model"], config["encoder_attention_heads"]
    if d_model % heads:
        raise ValueError(f"the configuration's 'd_model' ({d_model}) is not a multiple of its "
                         f"'encoder_attention_heads' ({heads})")
    activation = config.get("activation_function", "gelu")
    if activation not in ACTIVATIONS:
        raise ValueError(f"the configuration's 'activation_function' is {activation!r}: the course's "
                         f"FeedForward has {sorted(ACTIVATIONS)}")
    for key, value in FIXED.items():
        if key in config and config[key] != value:
            raise ValueError(f"the configuration's {key!r} is {config[key]!r}: the course's Transformer "
                             f"computes only {key}={value!r} (post-LN, no embedding norm, sinusoidal "
                             f"positions, no extra bias)")


def marian_config(config: dict, state_dict=None) -> dict:
    """The course ``Transformer`` constructor arguments of a Hugging Face ``MarianConfig`` (as a
    dict), after checking that the course computes what it describes; the configuration gives
    every size, so ``state_dict`` is not read."""
    _check_architecture(config)
    vocab = config["vocab_size"]
    shared = _check_bool(config, "share_encoder_decoder_embeddings", True)
    _check_bool(config, "scale_embedding", False)
    _check_bool(config, "tie_word_embeddings", True)
    target_vocab = config.get("decoder_vocab_size") or vocab
    if shared and target_vocab != vocab:
        raise ValueError(f"the configuration's 'decoder_vocab_size' ({target_vocab}) differs from its "
                         f"'vocab_size' ({vocab}) but share_encoder_decoder_embeddings is True")
    target_vocab = _check_int({"decoder_vocab_size": target_vocab}, "decoder_vocab_size", low=1)
    pad_id = _check_int(config, "pad_token_id")
    if pad_id >= min(vocab, target_vocab):
        raise ValueError(f"the configuration's 'pad_token_id' ({pad_id}) is not below both vocabulary "
                         f"sizes ({vocab}, {target_vocab})")
    return {
        "num_layers": config["encoder_layers"], "d_model": config["d_model"],
        "num_heads": config["encoder_attention_heads"], "dff": config["encoder_ffn_dim"],
        "input_vocab_size": vocab, "target_vocab_size": target_vocab,
        "max_len": config["max_position_embeddings"], "dropout": float(config.get("dropout", 0.1)),
        "pad_id": pad_id, "activation": ACTIVATIONS[config.get("activation_function", "gelu")],
        "layer_norm_eps": LAYER_NORM_EPS, "mask_target_padding": False,
    }


def decoding_ids(config) -> dict:
    """``bos_id``, ``eos_id`` and ``pad_id`` of a Marian configuration (a ``MarianConfig`` or its
    dict), for the course's ``greedy_decode`` and ``beam_search``: the decoder starts from
    ``decoder_start_token_id`` (Marian's ``<pad>``) and stops at ``eos_token_id``."""
    config = config.to_dict() if hasattr(config, "to_dict") else config
    start = "pad_token_id" if config.get("decoder_start_token_id") is None else "decoder_start_token_id"
    return {"bos_id": _check_int(config, start), "eos_id": _check_int(config, "eos_token_id"),
            "pad_id": _check_int(config, "pad_token_id")}


def reorder_features(weights: dict, order) -> dict:
    """A course Transformer's canonical weights with the ``d_model`` features of the residual
    stream renumbered: feature ``c`` becomes the old feature ``order[c]`` in every weight that
    reads or writes the stream (the model computes the same logits; see the module's docstring).

    Shape:
        each weight keeps its shape; ``order`` (d_model,) int.
    """
    return {name: value if _model_axis(name) is None else np.take(value, order, axis=_model_axis(name))
            for name, value in weights.items()}


def _model_axis(name):
    """The axis of canonical weight ``name`` that runs over the ``d_model`` features (None: none)."""
    if name.endswith((".gamma", ".beta", "wo.bias", "w2.bias")):
        return 0  # the layer norms; the biases of the layers that write the stream
    if name.endswith((".embeddings", "wo.kernel", "w2.kernel")):
        return 1  # (vocab, d_model); the kernels (in, d_model) that write the stream
    if name.endswith(".kernel"):
        return 0  # the kernels (d_model, out) that read it: wq, wk, wv, ffn.w1, final_layer
    return None  # biases per head feature, hidden unit or token


def _token_embeddings(r, size, shared, tied):
    """The encoder's and the decoder's token embeddings, checked: each stack's own
    ``embed_tokens`` (what its forward reads), or ``shared`` when the state dict leaves the tied
    copies out; copies that the configuration ties (``share_encoder_decoder_embeddings`` and
    ``tie_word_embeddings`` both true) must be equal."""
    d, vocab, target_vocab = size["d_model"], size["input_vocab_size"], size["target_vocab_size"]
    if not shared:
        return r.get("encoder.embed_tokens.weight", (vocab, d)), r.get("decoder.embed_tokens.weight",
                                                                        (target_vocab, d))
    tables = {}
    for name in ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"):
        if r.has(name) or name == "shared.weight" and not r.has("encoder.embed_tokens.weight"):
            tables[name] = r.get(name, (vocab, d))  # (vocab, d_model)
    if tied:  # one tensor in Hugging Face's model: its copies must be equal
        first = next(iter(tables))
        for name, table in tables.items():
            if not np.array_equal(table, tables[first]):
                raise ValueError(f"the checkpoint's {r.prefix + name!r} differs from its "
                                 f"{r.prefix + first!r} but the configuration ties them "
                                 f"(share_encoder_decoder_embeddings and tie_word_embeddings True)")
    encoder = tables.get("encoder.embed_tokens.weight", tables.get("shared.weight"))
    return encoder, tables.get("decoder.embed_tokens.weight", encoder)


def _check_positions(r, size):
    """The stored position tables (optional: Hugging Face computes them) must be Marian's."""
    expected = halves_table(size["max_len"], size["d_model"])  # (max_len, d_model)
    for side in ("encoder", "decoder"):
        name = f"{side}.embed_positions.weight"
        if r.has(name) and not np.allclose(r.get(name, expected.shape), expected, rtol=0.0, atol=1e-5):
            raise ValueError(f"the checkpoint's {r.prefix + name!r} is not Marian's sinusoidal table (sines "
                             f"in the first half of the features, cosines in the second): the course's "
                             f"Transformer has no other positions")


def _output_layer(state_dict, w, decoder_table, size, tied):
    """``final_layer``: the tied decoder embeddings (or ``lm_head``) and ``final_logits_bias``."""
    head = Reader(state_dict, "", "Marian")
    d, target_vocab = size["d_model"], size["target_vocab_size"]
    if not tied:
        decoder_table = head.get("lm_head.weight", (target_vocab, d))
    elif head.has("lm_head.weight") and not np.array_equal(head.get("lm_head.weight", (target_vocab, d)),
                                                           decoder_table):
        raise ValueError("the checkpoint's 'lm_head.weight' differs from the decoder's embeddings but the "
                         "configuration ties them (tie_word_embeddings=True)")
    w["final_layer.kernel"] = decoder_table.T  # (d_model, target_vocab)
    w["final_layer.bias"] = (head.get("final_logits_bias", (1, target_vocab))[0]
                             if head.has("final_logits_bias") else np.zeros(target_vocab, np.float32))
    return head.used


def _layer(r, w, src, dst, size, cross):
    """One encoder (``cross=False``) or decoder layer's weights, ``src`` -> ``dst``."""
    d, ff = size["d_model"], size["dff"]
    blocks = [("self_attn", "self_attn", "norm1")]
    if cross:  # the decoder's encoder-decoder attention
        blocks.append(("encoder_attn", "cross_attn", "norm2"))
    for hf, course, norm in blocks:
        for proj, name in (("q_proj", "wq"), ("k_proj", "wk"), ("v_proj", "wv"), ("out_proj", "wo")):
            r.linear(w, f"{src}.{hf}.{proj}", f"{dst}.{course}.{name}", d, d)
        r.norm(w, f"{src}.{hf}_layer_norm", f"{dst}.{norm}", d)
    r.linear(w, f"{src}.fc1", f"{dst}.ffn.w1", d, ff)
    r.linear(w, f"{src}.fc2", f"{dst}.ffn.w2", ff, d)
    r.norm(w, f"{src}.final_layer_norm", f"{dst}.norm3" if cross else f"{dst}.norm2", d)


def marian_weights(state_dict, config: dict) -> dict:
    """Canonical course ``Transformer`` weights of a Hugging Face Marian state dict (``MarianMTModel``
    or ``MarianModel``), each entry checked against the shape the configuration gives it, the
    features reordered to the course's interleaved positions (:func:`interleaving_order`)."""
    size = marian_config(config)
    prefix = "model." if any(k.startswith("model.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "Marian")
    shared = bool(config.get("share_encoder_decoder_embeddings", True))
    tied = bool(config.get("tie_word_embeddings", True))
    encoder_table, decoder_table = _token_embeddings(r, size, shared, tied)  # (vocab, d_model) each
    _check_positions(r, size)
    w = {}
    r.used |= _output_layer(state_dict, w, decoder_table, size, tied)
    # The course's PositionalEmbedding multiplies by √d_model; Marian does so with scale_embedding only.
    scale = 1.0 if config.get("scale_embedding", False) else float(np.sqrt(size["d_model"]))
    w["encoder.embedding.token_embedding.embeddings"] = encoder_table / scale
    w["decoder.embedding.token_embedding.embeddings"] = decoder_table / scale
    for i in range(size["num_layers"]):
        _layer(r, w, f"encoder.layers.{i}", f"encoder.layers.{i}", size, cross=False)
        _layer(r, w, f"decoder.layers.{i}", f"decoder.layers.{i}", size, cross=True)
    r.check_all_used()
    return reorder_features(w, interleaving_order(size["d_model"]))


def marian_from_huggingface(transformer_class, source, config=None):
    """A course ``transformer_class`` with the configuration and weights of a Hugging Face Marian."""
    return build_from_huggingface(transformer_class, source, config, marian_config, marian_weights)
