"""Rotary position embeddings (RoPE) in Hugging Face's (Llama's) layout, in float64.

Mirrors ``course_pkg.torch.rotary`` and ``course_pkg.tensorflow.rotary``.
"""

import numpy as np


def rotary_cos_sin(positions, head_dim, theta=10000.0):
    """cos and sin of ``positions × θ^(-2i / head_dim)``, each frequency twice (concat([f, f])).

    Shape: positions (batch, seq) -> cos, sin (batch, seq, head_dim).
    """
    inv_freq = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (head_dim / 2,)
    freqs = np.asarray(positions, np.float64)[..., np.newaxis] * inv_freq  # (batch, seq, head_dim / 2)
    angles = np.concatenate([freqs, freqs], axis=-1)  # (batch, seq, head_dim)
    return np.cos(angles), np.sin(angles)


def rotate_half(x):
    """concat(-x2, x1) of the two halves x1, x2 of the last axis. Shape: (..., head_dim) -> same."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x, cos, sin):
    """``x * cos + rotate_half(x) * sin``, cos and sin shared by the heads.

    Shape: x (batch, heads, seq, head_dim), cos and sin (batch or 1, seq, head_dim) -> x's shape.
    """
    x = np.asarray(x, np.float64)
    return x * cos[:, np.newaxis] + rotate_half(x) * sin[:, np.newaxis]


def rope_rotate(x, position, theta=10000.0):
    """One vector ``x`` (head_dim,) at integer ``position``, rotated as RoPE rotates a query or a key: each
    pair of features ``(i, i + head_dim / 2)`` turned by the angle ``position × θ^(-2i / head_dim)``.

    Shape: x (head_dim,) -> (head_dim,).
    """
    x = np.asarray(x, np.float64)
    cos, sin = rotary_cos_sin(np.array([[position]]), x.shape[-1], theta)  # (1, 1, head_dim) each
    return apply_rotary(x[np.newaxis, np.newaxis, np.newaxis], cos, sin)[0, 0, 0]
