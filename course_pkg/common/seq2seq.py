"""Argument checks and choices of the RNN encoder-decoder (``seq2seq``, chapters 1-2), shared by
both frameworks so that both refuse bad arguments with the same messages.
"""

from __future__ import annotations

from typing import Optional

# Seq2Seq(attention=...): none, Bahdanau's additive score, or Luong's dot / general score.
ATTENTION_TYPES = ("bahdanau", "luong_dot", "luong_general")


def check_state(shape, units, what="state"):
    """Raise ``ValueError`` unless ``shape`` is ``(batch, units)``."""
    shape = tuple(shape)
    if len(shape) != 2 or (shape[-1] is not None and shape[-1] != units):
        raise ValueError(f"{what} must have shape (batch, {units}), got {shape}")


def check_attention_requested(return_attention: bool, attention_type: Optional[str]) -> None:
    """Raise ``ValueError`` for attention weights asked of a Seq2Seq built without attention."""
    if return_attention and attention_type is None:
        raise ValueError("return_attention=True needs attention weights, but this Seq2Seq "
                         "was built with attention=None")


def check_some_positions(length: Optional[int]) -> None:
    """Raise ``ValueError`` for token ids without any position (a GRU needs one step)."""
    if length == 0:
        raise ValueError("token ids must hold at least one position, got length 0")
