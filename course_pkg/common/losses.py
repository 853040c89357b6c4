"""The checks of the masked loss and accuracy (``losses``; the trainers check their labels with
them too): labels that fit the logits, in the vocabulary, a label smoothing in [0, 1)."""

from __future__ import annotations

from .arguments import Shape


def check_label_range(lowest: int, highest: int, vocab_size: int, pad_id) -> None:
    """Raise ``ValueError`` unless every label that counts (not ``pad_id``) lies in ``[0, vocab_size)``.

    ``lowest`` and ``highest`` are taken over the counted labels only (``lowest > highest``: none).
    """
    if lowest <= highest and (lowest < 0 or highest >= vocab_size):
        raise ValueError(
            f"labels must lie in [0, {vocab_size}) (or be pad_id={pad_id}), got labels from "
            f"{lowest} to {highest}: the logits score {vocab_size} target tokens"
        )


def check_label_smoothing(label_smoothing) -> None:
    """Raise ``ValueError`` unless ``0 <= label_smoothing < 1``."""
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= float(label_smoothing) < 1.0:
        raise ValueError(f"label_smoothing must be a float in [0, 1), got {label_smoothing!r}")


def check_loss_shapes(labels_shape: Shape, logits_shape: Shape) -> None:
    """Raise ``ValueError`` unless labels ``(batch, tgt_len)`` fit logits ``(batch, tgt_len, vocab)``."""
    labels_shape, logits_shape = tuple(labels_shape), tuple(logits_shape)
    ok = len(labels_shape) == 2 and len(logits_shape) == 3 and all(
        a is None or b is None or a == b for a, b in zip(labels_shape, logits_shape))
    if not ok:
        raise ValueError(
            f"labels of shape {labels_shape} do not fit logits of shape {logits_shape}: "
            "expected labels (batch, tgt_len) and logits (batch, tgt_len, vocab)"
        )
