"""Argument checks and choices of the RNN attentions (``rnn_attention``: Bahdanau's and Luong's,
chapter 2), shared by both frameworks so that both refuse bad arguments with the same messages.
"""

from __future__ import annotations

# LuongAttention(score=...).
LUONG_SCORES = ("dot", "general")

# check_mask_shape's message for the RNN attentions (Bahdanau, Luong): weights (batch, Tq, Tk).
RNN_MASK = {"what": "weights", "layout": "(batch, q_len, k_len)",
            "hint": "(batch, 1, k_len) for source padding: create_padding_mask(src_tokens)[:, 0]"}


def check_luong_widths(score: str, key_dim: int, units: int) -> None:
    """Raise ``ValueError`` unless the dot score compares vectors of one width."""
    if score == "dot" and key_dim != units:
        raise ValueError(
            f'score="dot" needs keys as wide as the queries: key_dim={key_dim} != '
            f'units={units}; use score="general" to compare different widths'
        )
