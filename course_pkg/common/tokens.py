"""The checks of token ids (``tokens``; ``positional``, ``decoding`` and ``trainer`` check their
tokens with them too): an integer dtype, (batch, length), ids in the vocabulary, a length the
model has positions for."""

from __future__ import annotations

from typing import Optional

from .arguments import Shape


def check_token_dtype(is_integer: bool, dtype_name: str) -> None:
    """Raise ``TypeError`` for token ids that are not integers."""
    if not is_integer:
        raise TypeError(
            f"token ids must be an integer tensor (int32 or int64), got dtype "
            f"{dtype_name}; cast them to int32 or int64 first"
        )


def check_token_rank(shape: Shape) -> None:
    """Raise ``ValueError`` unless token ids are ``(batch, length)``."""
    if len(tuple(shape)) != 2:
        raise ValueError(f"token ids must have shape (batch, length), got {tuple(shape)}")


def check_token_range(lowest: int, highest: int, vocab_size: int) -> None:
    """Raise ``ValueError`` unless every id lies in ``[0, vocab_size)``."""
    if lowest < 0 or highest >= vocab_size:
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}) for vocab_size={vocab_size}, "
            f"got ids from {lowest} to {highest}"
        )


def check_length(length: Optional[int], max_len: int) -> None:
    """Raise ``ValueError`` for sequences longer than the model's ``max_len`` positions."""
    if length is not None and length > max_len:
        raise ValueError(
            f"sequence length {length} exceeds max_len={max_len}: the model has max_len positions "
            "(the rows of its positional table; for a rotary model such as Llama, the length it was "
            "built for); build the model with a larger max_len or truncate the input"
        )
