"""Attention for the RNN encoder-decoder: Bahdanau's additive and Luong's multiplicative scores.

Mirrors ``course_pkg.torch.rnn_attention`` and ``course_pkg.tensorflow.rnn_attention``.
"""

import numpy as np

from .attention import softmax


def _project(params, x, name):
    """A dense layer, with or without ``<name>.bias``."""
    return x @ params[f"{name}.kernel"] + params.get(f"{name}.bias", 0.0)


def masked_softmax(scores, mask=None):
    """Softmax over the last axis; blocked (mask != 0) entries exactly 0, full rows all 0."""
    if mask is None:
        return softmax(scores)
    blocked = np.broadcast_to(np.asarray(mask) != 0, scores.shape)
    weights = softmax(np.where(blocked, np.finfo(scores.dtype).min, scores))
    return np.where(blocked, 0.0, weights)


def bahdanau_attention(params, query, keys, mask=None):
    """score = vᵀ tanh(W1 q + W2 k) with bias-free ``w1, w2, v``.

    Shape: (batch, Tq, query_dim), (batch, Tk, key_dim) -> (batch, Tq, key_dim), (batch, Tq, Tk).
    """
    query, keys = np.asarray(query, np.float64), np.asarray(keys, np.float64)
    q = _project(params, query, "w1")[:, :, np.newaxis, :]  # (batch, Tq, 1, units)
    k = _project(params, keys, "w2")[:, np.newaxis, :, :]  # (batch, 1, Tk, units)
    scores = _project(params, np.tanh(q + k), "v")[..., 0]  # (batch, Tq, Tk)
    weights = masked_softmax(scores, mask)
    return weights @ keys, weights


def luong_attention(params, query, keys, score="dot", mask=None):
    """score = qᵀ k (``"dot"``) or qᵀ W k (``"general"``, bias-free ``w``); not scaled.

    Shape: (batch, Tq, units), (batch, Tk, key_dim) -> (batch, Tq, key_dim), (batch, Tq, Tk).
    """
    query, keys = np.asarray(query, np.float64), np.asarray(keys, np.float64)
    k = _project(params, keys, "w") if score == "general" else keys  # (batch, Tk, units)
    weights = masked_softmax(query @ np.swapaxes(k, -1, -2), mask)  # (batch, Tq, Tk)
    return weights @ keys, weights
