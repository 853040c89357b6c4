"""NumPy reference implementation: the oracle both frameworks are held to.

Every function here is written for clarity, not speed, straight from the paper
(Vaswani et al., 2017). Layers take a ``params`` dict of NumPy arrays with the
canonical names that :func:`course_pkg.interop.get_weights` returns for the
same component, e.g. ``{"wq.kernel": (d_model, d_model), "wq.bias": ..., ...}``
for multi-head attention. Dense kernels have the Keras layout ``(in, out)``,
so a dense layer is ``x @ kernel + bias``.

Masks follow the course convention: float, 1.0 = blocked, 0.0 = may attend.
"""

from __future__ import annotations

import numpy as np

LAYER_NORM_EPSILON = 1e-6


# ----------------------------------------------------------------------------- masks
def create_padding_mask(tokens, pad_id=0):
    """1.0 where ``tokens == pad_id``. Shape: (batch, seq) -> (batch, 1, 1, seq)."""
    tokens = np.asarray(tokens)
    return (tokens == pad_id).astype(np.float32)[:, np.newaxis, np.newaxis, :]


def create_look_ahead_mask(size):
    """1.0 strictly above the diagonal. Shape: (size, size)."""
    return np.triu(np.ones((size, size), dtype=np.float32), k=1)


def create_combined_mask(tokens, pad_id=0):
    """Element-wise max of look-ahead and padding masks. Shape: (batch, 1, seq, seq)."""
    tokens = np.asarray(tokens)
    return np.maximum(create_look_ahead_mask(tokens.shape[1]), create_padding_mask(tokens, pad_id))


# ------------------------------------------------------------------------- attention
def softmax(x, axis=-1):
    """Numerically stable softmax."""
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention(query, key, value, mask=None):
    """softmax(q kᵀ / √d_k) v, with masked weights exactly 0.

    Shape: (..., Tq, dk), (..., Tk, dk), (..., Tk, dv) -> (..., Tq, dv), (..., Tq, Tk).
    A fully masked row gets all-zero weights (and a zero output).
    """
    query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    logits = query @ np.swapaxes(key, -1, -2) / np.sqrt(key.shape[-1])  # (..., Tq, Tk)
    if mask is None:
        weights = softmax(logits)
    else:
        blocked = np.broadcast_to(np.asarray(mask) != 0, logits.shape)
        weights = softmax(np.where(blocked, np.finfo(logits.dtype).min, logits))
        weights = np.where(blocked, 0.0, weights)
    return weights @ value, weights


def dense(params, x, name):
    """``x @ params[name.kernel] + params[name.bias]``."""
    return x @ params[f"{name}.kernel"] + params[f"{name}.bias"]


def sub(params, prefix):
    """The entries of ``params`` below ``prefix``, with the prefix removed."""
    start = prefix + "."
    return {k[len(start):]: v for k, v in params.items() if k.startswith(start)}


def split_heads(x, num_heads):
    """Shape: (batch, seq, d_model) -> (batch, heads, seq, depth)."""
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def combine_heads(x):
    """Shape: (batch, heads, seq, depth) -> (batch, seq, heads * depth)."""
    batch, heads, seq, depth = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, seq, heads * depth)


def multi_head_attention(params, query, key, value, num_heads, mask=None):
    """Multi-head attention with the weights ``wq, wk, wv, wo`` in ``params``.

    Shape: (batch, Tq, d_model), (batch, Tk, d_model) x2 ->
    (batch, Tq, d_model), (batch, heads, Tq, Tk).
    """
    q = split_heads(dense(params, np.asarray(query, np.float64), "wq"), num_heads)
    k = split_heads(dense(params, np.asarray(key, np.float64), "wk"), num_heads)
    v = split_heads(dense(params, np.asarray(value, np.float64), "wv"), num_heads)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return dense(params, combine_heads(out), "wo"), weights


# --------------------------------------------------------------- position and layers
def positional_encoding(length, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...). Shape: (length, d_model)."""
    pos = np.arange(length, dtype=np.float64)[:, np.newaxis]  # (length, 1)
    two_i = (np.arange(d_model) // 2 * 2).astype(np.float64)  # 0, 0, 2, 2, 4, 4, ...
    angles = pos / np.power(10000.0, two_i / d_model)  # (length, d_model)
    pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return pe.astype(np.float32)


def positional_embedding(params, tokens):
    """Embedding × √d_model + positional encoding. Shape: (batch, seq) -> (batch, seq, d_model)."""
    table = params["token_embedding.embeddings"]
    d_model = table.shape[1]
    x = table[np.asarray(tokens)].astype(np.float64) * np.sqrt(d_model)
    return x + positional_encoding(x.shape[1], d_model)


def layer_norm(params, x, eps=LAYER_NORM_EPSILON):
    """LayerNorm over the last axis with ``gamma``, ``beta``."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * params["gamma"] + params["beta"]


def feed_forward(params, x):
    """max(0, x W1 + b1) W2 + b2. Shape: (..., d_model) -> (..., d_model)."""
    return dense(params, np.maximum(dense(params, np.asarray(x, np.float64), "w1"), 0.0), "w2")


def encoder_layer(params, x, num_heads, mask=None):
    """Post-LN encoder layer. Returns ``(x, self_attention_weights)``."""
    attn, weights = multi_head_attention(sub(params, "self_attn"), x, x, x, num_heads, mask)
    x = layer_norm(sub(params, "norm1"), x + attn)
    x = layer_norm(sub(params, "norm2"), x + feed_forward(sub(params, "ffn"), x))
    return x, weights


def decoder_layer(params, x, enc_output, num_heads, look_ahead_mask=None, padding_mask=None):
    """Post-LN decoder layer. Returns ``(x, self_weights, cross_weights)``."""
    attn, self_w = multi_head_attention(sub(params, "self_attn"), x, x, x, num_heads, look_ahead_mask)
    x = layer_norm(sub(params, "norm1"), x + attn)
    attn, cross_w = multi_head_attention(
        sub(params, "cross_attn"), x, enc_output, enc_output, num_heads, padding_mask
    )
    x = layer_norm(sub(params, "norm2"), x + attn)
    x = layer_norm(sub(params, "norm3"), x + feed_forward(sub(params, "ffn"), x))
    return x, self_w, cross_w


def _num_layers(params):
    return len({k.split(".")[1] for k in params if k.startswith("layers.")})


def encoder(params, tokens, num_heads, mask=None):
    """Embedding + N encoder layers. Returns ``(x, [weights per layer])``."""
    x = positional_embedding(sub(params, "embedding"), tokens)
    maps = []
    for i in range(_num_layers(params)):
        x, w = encoder_layer(sub(params, f"layers.{i}"), x, num_heads, mask)
        maps.append(w)
    return x, maps


def decoder(params, tokens, enc_output, num_heads, look_ahead_mask=None, padding_mask=None):
    """Embedding + N decoder layers. Returns ``(x, [self per layer], [cross per layer])``."""
    x = positional_embedding(sub(params, "embedding"), tokens)
    self_maps, cross_maps = [], []
    for i in range(_num_layers(params)):
        x, s, c = decoder_layer(
            sub(params, f"layers.{i}"), x, enc_output, num_heads, look_ahead_mask, padding_mask
        )
        self_maps.append(s)
        cross_maps.append(c)
    return x, self_maps, cross_maps


def transformer(params, src, tgt, num_heads, pad_id=0):
    """The whole model. Returns ``(logits, attention_maps)``.

    ``attention_maps`` has the keys ``encoder_self``, ``decoder_self`` and
    ``decoder_cross``, each a list with one (batch, heads, Tq, Tk) array per layer.
    """
    src_mask = create_padding_mask(src, pad_id)  # (batch, 1, 1, src_len)
    tgt_mask = create_combined_mask(tgt, pad_id)  # (batch, 1, tgt_len, tgt_len)
    enc, enc_maps = encoder(sub(params, "encoder"), src, num_heads, src_mask)
    dec, self_maps, cross_maps = decoder(sub(params, "decoder"), tgt, enc, num_heads, tgt_mask, src_mask)
    logits = dense(params, dec, "final_layer")  # (batch, tgt_len, target_vocab)
    return logits, {"encoder_self": enc_maps, "decoder_self": self_maps, "decoder_cross": cross_maps}
