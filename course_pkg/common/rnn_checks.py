"""Argument checks and choices of the RNN encoder-decoder (chapters 1-2), shared by both frameworks.

Like :mod:`course_pkg.common.checks`: each framework turns its tensors' static facts
into plain values and calls these functions, so that both refuse bad arguments with
the same messages.
"""

from __future__ import annotations

from typing import Optional

# Seq2Seq(attention=...): none, Bahdanau's additive score, or Luong's dot / general score.
ATTENTION_TYPES = ("bahdanau", "luong_dot", "luong_general")
# LuongAttention(score=...).
LUONG_SCORES = ("dot", "general")


def check_luong_widths(score: str, key_dim: int, units: int) -> None:
    """Raise ``ValueError`` unless the dot score compares vectors of one width."""
    if score == "dot" and key_dim != units:
        raise ValueError(
            f'score="dot" needs keys as wide as the queries: key_dim={key_dim} != '
            f'units={units}; use score="general" to compare different widths'
        )


def check_attention_requested(return_attention: bool, attention_type: Optional[str]) -> None:
    """Raise ``ValueError`` for attention weights asked of a Seq2Seq built without attention."""
    if return_attention and attention_type is None:
        raise ValueError("return_attention=True needs attention weights, but this Seq2Seq "
                         "was built with attention=None")


def check_some_positions(length: Optional[int]) -> None:
    """Raise ``ValueError`` for token ids without any position (a GRU needs one step)."""
    if length == 0:
        raise ValueError("token ids must hold at least one position, got length 0")
