"""Scaled dot-product attention and multi-head attention, with the softmax and the head helpers.

Mirrors ``course_pkg.torch.attention`` and ``course_pkg.tensorflow.attention``.
"""

import numpy as np

from .base import dense
from .rotary import apply_rotary, rotary_cos_sin


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


def split_heads(x, num_heads):
    """Shape: (batch, seq, d_model) -> (batch, heads, seq, depth)."""
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def combine_heads(x):
    """Shape: (batch, heads, seq, depth) -> (batch, seq, heads * depth)."""
    batch, heads, seq, depth = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, seq, heads * depth)


def multi_head_attention(params, query, key, value, num_heads, mask=None):
    """Multi-head attention of Vaswani et al. (2017) with the weights ``wq, wk, wv, wo`` in ``params``
    (biases where present): project, split into heads, attend in every head, concatenate, project.

    Shape: (batch, Tq, d_model), (batch, Tk, d_model) x2 -> (batch, Tq, d_model), (batch, heads, Tq, Tk).
    """
    query, key, value = (np.asarray(a, np.float64) for a in (query, key, value))
    q = split_heads(dense(params, query, "wq"), num_heads)  # (batch, heads, Tq, depth)
    k = split_heads(dense(params, key, "wk"), num_heads)  # (batch, heads, Tk, depth)
    v = split_heads(dense(params, value, "wv"), num_heads)  # (batch, heads, Tk, depth)
    out, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, heads, Tq, depth), (.., Tq, Tk)
    return dense(params, combine_heads(out), "wo"), weights  # (batch, Tq, d_model)


def grouped_query_attention(params, query, key, value, num_heads, mask=None, num_kv_heads=None,
                            rope_theta=None, positions=None):
    """Multi-head attention with the options of today's decoders (chapter 8, section 8.10).

    ``num_kv_heads`` key/value heads (grouped-query attention), each repeated for its
    ``num_heads // num_kv_heads`` query heads; with ``rope_theta``, queries and keys rotated to
    ``positions`` (default 0 .. T - 1; one positions array for both, as in self-attention).
    With ``num_kv_heads=None`` and ``rope_theta=None`` it is ``multi_head_attention``.

    Shape: (batch, Tq, d_model), (batch, Tk, d_model) x2, positions (batch or 1, T) ->
    (batch, Tq, d_model), (batch, heads, Tq, Tk).
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    q = split_heads(dense(params, np.asarray(query, np.float64), "wq"), num_heads)
    k = split_heads(dense(params, np.asarray(key, np.float64), "wk"), num_kv_heads)
    v = split_heads(dense(params, np.asarray(value, np.float64), "wv"), num_kv_heads)
    if rope_theta is not None:
        positions = np.arange(q.shape[2])[np.newaxis] if positions is None else np.asarray(positions)
        cos, sin = rotary_cos_sin(positions, q.shape[-1], rope_theta)  # (batch, T, depth) each
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    k = repeat_kv(k, num_heads // num_kv_heads)  # (batch, heads, Tk, depth): head h reads h // groups
    v = repeat_kv(v, num_heads // num_kv_heads)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return dense(params, combine_heads(out), "wo"), weights


def repeat_kv(x, num_repeats):
    """Each key/value head repeated ``num_repeats`` times along the heads axis (grouped-query attention):
    query heads ``0 .. num_repeats - 1`` read key/value head 0, the next ``num_repeats`` head 1, and so on.

    Shape: (batch, kv_heads, T, depth) -> (batch, kv_heads * num_repeats, T, depth).
    """
    return np.repeat(np.asarray(x), num_repeats, axis=1)
