"""Rotary position embeddings, RoPE (Su et al., 2021), in Hugging Face's (Llama's) layout.

Each pair of features ``(i, i + head_dim / 2)`` of a query or key at position ``m`` is rotated by
the angle ``m θ^(-2i / head_dim)``: the dot product of a rotated query and a rotated key then
depends on their positions only through the offset between them.

Shapes: ``batch`` sequences of ``seq`` positions, ``heads`` attention heads of ``head_dim``
features each.
"""

import numpy as np
import torch

from ..common.rotary import check_head_dim, check_positions, check_rotary_shapes, check_theta
from .base import Layer


def _inverse_frequencies(head_dim, theta):
    """θ^(-2i / head_dim) for i = 0 .. head_dim / 2 - 1, computed in float64 and rounded to float32 (the
    same numbers in both frameworks). Shape: (head_dim / 2,)."""
    exponents = np.arange(0, head_dim, 2, dtype=np.float64) / head_dim
    return (1.0 / theta ** exponents).astype(np.float32)


def rotary_cos_sin(positions, head_dim, theta=10000.0):
    """The cosines and sines of the rotation angles ``positions × θ^(-2i / head_dim)``, float32.

    As Hugging Face's ``LlamaRotaryEmbedding``: ``inv_freq = 1 / θ^(arange(0, head_dim, 2) / head_dim)``,
    ``freqs = positions[..., None] * inv_freq``, ``emb = concat([freqs, freqs], -1)``.

    Raises:
        ValueError: an odd ``head_dim``, ``theta <= 0``, or positions that are not (batch, seq).
        TypeError: positions that are not integers.

    Shape:
        positions (batch, seq) -> cos, sin (batch, seq, head_dim).
    """
    check_head_dim(head_dim)
    theta = check_theta(theta)
    positions = positions_tensor(positions, None, None)  # (batch, seq)
    inv_freq = _inverse_frequencies(head_dim, theta)  # (head_dim / 2,)
    inv_freq = torch.as_tensor(inv_freq, device=positions.device)
    freqs = positions[..., None].float() * inv_freq  # (batch, seq, head_dim / 2)
    angles = torch.cat([freqs, freqs], dim=-1)  # (batch, seq, head_dim)
    return torch.cos(angles), torch.sin(angles)  # (batch, seq, head_dim) each


def rotate_half(x):
    """concat(-x2, x1) of the halves x1, x2 of the last axis (Hugging Face's ``rotate_half``).

    Shape:
        (..., head_dim) -> (..., head_dim).
    """
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (..., head_dim)


def apply_rotary(x, cos, sin):
    """``x * cos + rotate_half(x) * sin``: each feature pair (i, i + head_dim / 2) rotated by its angle,
    ``cos`` and ``sin`` shared by every head (cast to ``x``'s dtype first, as Hugging Face).

    Raises:
        ValueError: shapes other than those below, or an odd head_dim.

    Shape:
        x (batch, heads, seq, head_dim), cos and sin (batch or 1, seq, head_dim) ->
        (batch, heads, seq, head_dim).
    """
    check_rotary_shapes(x.shape, cos.shape, sin.shape)
    cos = cos[:, None].to(x.dtype)  # (batch, 1, seq, head_dim): broadcast over the heads
    sin = sin[:, None].to(x.dtype)  # (batch, 1, seq, head_dim)
    return x * cos + rotate_half(x) * sin  # (batch, heads, seq, head_dim)


_INTEGER_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def positions_tensor(positions, batch, seq):
    """``positions`` as a tensor (a NumPy array converted), checked: integers of shape (batch, seq) or
    (1, seq); ``None`` gives 0 .. seq - 1 for every row. ``batch`` or ``seq`` ``None``: not checked.

    Raises:
        TypeError: positions that are not integers.
        ValueError: another shape.

    Shape:
        positions (batch or 1, seq), or None -> (batch or 1, seq).
    """
    if positions is None:
        return torch.arange(seq)[None]  # (1, seq)
    positions = torch.as_tensor(positions)
    check_positions(positions.shape, batch, seq, positions.dtype in _INTEGER_DTYPES,
                    str(positions.dtype).replace("torch.", ""))
    return positions


class RotaryEmbedding(Layer):
    """Rotary position embeddings as a layer without weights: rotates queries or keys by their positions.

    Args:
        head_dim: features per head; must be even (``ValueError`` naming head_dim).
        theta: the base of the frequencies, > 0 (10000 in the paper and Llama 2, 500000 in Llama 3).

    Call:
        ``rope(x, positions=None)``: ``x`` rotated by :func:`apply_rotary` with the angles of
        :func:`rotary_cos_sin`; integer ``positions`` (batch, seq), by default 0 .. seq - 1 in every row.

    Shape:
        x (batch, heads, seq, head_dim), positions (batch or 1, seq) -> (batch, heads, seq, head_dim).
    """

    def __init__(self, head_dim, theta=10000.0):
        head_dim, theta = check_head_dim(head_dim), check_theta(theta)
        super().__init__()
        self.head_dim, self.theta = head_dim, theta

    def forward(self, x, positions=None):
        positions = positions_tensor(positions, x.shape[0], x.shape[2]).to(x.device)  # (batch or 1, seq)
        cos, sin = rotary_cos_sin(positions, self.head_dim, self.theta)  # (batch, seq, head_dim) each
        return apply_rotary(x, cos, sin)  # (batch, heads, seq, head_dim)
