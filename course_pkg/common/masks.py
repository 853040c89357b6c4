"""The checks of attention masks (``masks``; the attentions of ``attention`` and ``rnn_attention``
check their masks with :func:`check_mask_shape` too): a mask that broadcasts to the attention
scores, a (batch, seq) padding mask of the course's convention (1 = padding).
"""

from __future__ import annotations

from .arguments import Shape


def check_mask_shape(
    mask_shape: Shape,
    scores_shape: Shape,
    what: str = "logits",
    layout: str = "(..., q_len, k_len)",
    hint: str = "(batch, 1, 1, k_len) for padding or (q_len, k_len) / (batch, 1, q_len, k_len) "
                "for look-ahead masks",
) -> None:
    """Raise ``ValueError`` unless the mask broadcasts to the attention scores' shape.

    Broadcasting may only add or stretch axes of the mask, never the scores:
    a ``(batch, 1, 1, Tk)`` mask fits ``(batch, heads, Tq, Tk)`` logits, a
    ``(Tk,)`` mask for other keys does not. ``None`` (unknown) matches anything.
    The message names the scores (``what``: the Transformer's ``"logits"``, the
    RNN attention's ``"weights"``), their ``layout`` and a ``hint`` of masks that fit.
    """
    mask_shape, scores_shape = tuple(mask_shape), tuple(scores_shape)
    ok = len(mask_shape) <= len(scores_shape) and all(
        m is None or s is None or m in (1, s)
        for m, s in zip(reversed(mask_shape), reversed(scores_shape))
    )
    if not ok:
        raise ValueError(
            f"mask of shape {mask_shape} does not broadcast to the attention {what} of shape "
            f"{scores_shape} {layout}; expected e.g. {hint}"
        )


def check_padding_mask_2d(shape: Shape, tokens_shape: Shape, is_bool: bool) -> None:
    """A (batch, seq) padding mask of the course's convention (1 = padding), with the tokens' shape."""
    if is_bool:
        raise TypeError("padding_mask must be float or int with 1 = padding (the course's convention), "
                        "not bool; Hugging Face's attention_mask is its complement: 1 - attention_mask")
    if tuple(shape) != tuple(tokens_shape):
        raise ValueError(f"padding_mask must have the tokens' shape {tuple(tokens_shape)} (batch, seq), "
                         f"got {tuple(shape)}")
