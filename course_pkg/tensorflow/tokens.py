"""Token ids: their conversion to an integer tensor and the checks of their dtype, rank and range.

Every course class that takes token ids (masks, embeddings, models, the Trainer) converts
and checks them here, so that both frameworks accept the same ids and refuse the others with
the same messages (those of :mod:`course_pkg.common.tokens`).

Shapes: ``batch`` sequences of ``seq`` token ids.
"""

import tensorflow as tf

from ..common.tokens import check_length, check_token_dtype, check_token_range, check_token_rank


def is_integer(tensor: tf.Tensor) -> bool:
    """Whether ``tensor`` holds integers (token ids, labels, indices)."""
    return tensor.dtype.is_integer


def token_ids(tokens):
    """Token ids as a tensor, of any integer dtype (Keras' ``Embedding`` casts them); other dtypes
    are kept, for the checks to name."""
    return tf.convert_to_tensor(tokens)


def check_rank(tokens):
    """Raise ``ValueError`` unless ``tokens`` are ``(batch, seq)``."""
    if tokens.shape.rank is not None:  # unknown only inside a tf.function without a signature
        check_token_rank(tokens.shape)


def check_token_ids(tokens):
    """Raise ``TypeError`` unless ``tokens`` hold integers, ``ValueError`` unless they are
    ``(batch, seq)``."""
    check_token_dtype(is_integer(tokens), tokens.dtype.name)
    check_rank(tokens)


def check_tokens(tokens, vocab_size, max_len=None, start=0):
    """Raise ``TypeError``/``ValueError`` unless ``tokens`` are valid ids.

    Valid: an integer tensor of shape (batch, seq) with
    ``start + seq <= max_len`` (unless ``max_len`` is None) and every id in ``[0, vocab_size)``.
    Inside a ``tf.function`` only the static checks run.
    """
    check_token_ids(tokens)
    length = tokens.shape[1]
    if not isinstance(start, int):  # a tensor: known when eager, not inside a tf.function
        start = int(start) if tf.executing_eagerly() else None
    if max_len is not None:
        check_length(None if length is None or start is None else start + length, max_len)
    if tf.executing_eagerly() and tf.size(tokens) > 0:
        check_token_range(int(tf.reduce_min(tokens)), int(tf.reduce_max(tokens)), vocab_size)
