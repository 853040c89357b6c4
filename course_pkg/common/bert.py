"""The checks of BERT (``bert``): its segment ids. Its Hugging Face mapping is
:mod:`course_pkg.common.huggingface.bert`."""

from __future__ import annotations

from .arguments import Shape


def check_segment_ids(is_integer: bool, dtype_name: str, shape: Shape, tokens_shape: Shape,
                      lowest=None, highest=None, type_vocab_size: int = 2) -> None:
    """Raise unless BERT's ``segment_ids`` are integers (``TypeError``) of the tokens' shape, in
    ``[0, type_vocab_size)`` (``ValueError``; ``lowest``/``highest`` ``None``: unknown or empty)."""
    if not is_integer:
        raise TypeError(f"segment_ids must be an integer tensor (int32 or int64), got dtype {dtype_name}; "
                        "cast them to int32 or int64 first")
    if tuple(shape) != tuple(tokens_shape):
        raise ValueError(f"segment_ids must have the tokens' shape {tuple(tokens_shape)}, got {tuple(shape)}")
    if lowest is not None and (lowest < 0 or highest >= type_vocab_size):
        raise ValueError(f"segment_ids must lie in [0, {type_vocab_size}) for type_vocab_size="
                         f"{type_vocab_size}, got ids from {lowest} to {highest}")
