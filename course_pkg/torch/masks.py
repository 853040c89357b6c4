"""Attention masks in the course's convention, and converters to the frameworks'.

The course mask is a float tensor with **1.0 = blocked** and **0.0 = may
attend**; :func:`~course_pkg.torch.scaled_dot_product_attention` gives
blocked positions a weight of exactly zero. The frameworks' own layers spell
masks differently:

=====================================  ===============================
layer                                  boolean mask means
=====================================  ===============================
``torch.nn.MultiheadAttention``        ``True`` = blocked  (:func:`to_blocked_mask`)
``torch.nn.Transformer*Layer``         ``True`` = blocked  (:func:`to_blocked_mask`)
``F.scaled_dot_product_attention``     ``True`` = may attend (:func:`to_attend_mask`)
``keras.layers.MultiHeadAttention``    ``True`` = may attend (:func:`to_attend_mask`)
=====================================  ===============================

``nn.MultiheadAttention`` wants ``attn_mask`` of shape ``(Tq, Tk)`` or
``(batch * heads, Tq, Tk)`` and a ``key_padding_mask`` of shape
``(batch, Tk)``: squeeze or expand the converted mask to fit.

Shapes: ``batch`` sequences of ``seq`` tokens (``past`` of them already decoded, in a
decoding step's mask); a course mask's axes of size 1
broadcast over the ``heads`` and the queries. ``size`` is the side of the square
look-ahead mask; ``Tq`` and ``Tk``, the query and key lengths, size the
frameworks' own masks.
"""

import torch

from ..common.masks import check_padding_mask_2d
from .tokens import check_rank, token_ids


def create_padding_mask(tokens, pad_id=0):
    """Block the keys that are padding.

    Args:
        tokens: integer token ids.
        pad_id: the id of the padding token.

    Returns:
        float32 mask, 1.0 where ``tokens == pad_id``.

    Raises:
        ValueError: ``tokens`` are not ``(batch, seq)``.

    Shape:
        (batch, seq) -> (batch, 1, 1, seq): broadcasts over heads and queries.
    """
    tokens = token_ids(tokens)
    check_rank(tokens)
    return (tokens == pad_id).to(torch.float32)[:, None, None, :]  # (batch, 1, 1, seq)


def create_look_ahead_mask(size):
    """Block every position after the query's own (strictly above the diagonal).

    Shape:
        () -> (size, size) float32.
    """
    return torch.triu(torch.ones(size, size, dtype=torch.float32), diagonal=1)  # (size, size)


def create_combined_mask(tokens, pad_id=0):
    """The decoder's self-attention mask: look-ahead OR padding (element-wise max).

    Raises:
        ValueError: ``tokens`` are not ``(batch, seq)``.

    Shape:
        (batch, seq) -> (batch, 1, seq, seq) float32.
    """
    tokens = token_ids(tokens)
    check_rank(tokens)
    look_ahead = create_look_ahead_mask(tokens.shape[1]).to(tokens.device)  # (seq, seq)
    return torch.maximum(look_ahead, create_padding_mask(tokens, pad_id))  # (batch, 1, seq, seq)


def causal_padding_mask(pad, past=0):
    """A decoder-only model's self-attention mask: the causal (look-ahead) mask of the positions after
    the first ``past``, with padding keys blocked (1.0 = blocked); ``past=0`` for a whole sequence,
    the cached length for a decoding step.

    Shape:
        pad (batch, seq) 1.0 at padding, for all seq positions -> (batch, 1, seq - past, seq) float32.
    """
    look_ahead = create_look_ahead_mask(pad.shape[1])[past:].to(pad.device)  # (seq - past, seq)
    return torch.maximum(look_ahead, pad[:, None, None, :])  # (batch, 1, seq - past, seq)


def padding_mask_2d(tokens, padding_mask=None, pad_id=None):
    """The (batch, seq) float padding mask (1.0 = padding) given, or built from ``pad_id``, or None.

    Shape:
        tokens (batch, seq), padding_mask (batch, seq) -> (batch, seq) float32.
    """
    if padding_mask is None:
        return None if pad_id is None else (tokens == pad_id).float()
    padding_mask = torch.as_tensor(padding_mask, device=tokens.device)
    check_padding_mask_2d(tuple(padding_mask.shape), tuple(tokens.shape), padding_mask.dtype == torch.bool)
    return padding_mask.float()



def to_attend_mask(mask):
    """Course mask -> boolean mask with **True = may attend**.

    For ``F.scaled_dot_product_attention(attn_mask=...)`` and
    ``keras.layers.MultiHeadAttention(attention_mask=...)``. Shape is kept.
    """
    return torch.as_tensor(mask) == 0


def to_blocked_mask(mask):
    """Course mask -> boolean mask with **True = blocked**.

    For ``torch.nn.MultiheadAttention(attn_mask=..., key_padding_mask=...)`` and
    the ``torch.nn.Transformer*Layer`` masks. Shape is kept.
    """
    return torch.as_tensor(mask) != 0


def from_attend_mask(mask):
    """Boolean mask with True = may attend -> course float32 mask. Shape is kept."""
    return torch.logical_not(torch.as_tensor(mask).bool()).to(torch.float32)


def from_blocked_mask(mask):
    """Boolean mask with True = blocked -> course float32 mask. Shape is kept."""
    return torch.as_tensor(mask).bool().to(torch.float32)
