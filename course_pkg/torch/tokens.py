"""Token ids: their conversion to an integer tensor and the checks of their dtype, rank and range.

Every course class that takes token ids (masks, embeddings, models, the Trainer) converts
and checks them here, so that both frameworks accept the same ids and refuse the others with
the same messages (those of :mod:`course_pkg.common.tokens`).

Shapes: ``batch`` sequences of ``seq`` token ids.
"""

import torch

from ..common.tokens import check_length, check_token_dtype, check_token_range, check_token_rank


def is_integer(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` holds integers (token ids, labels, indices)."""
    return not tensor.dtype.is_floating_point and not tensor.dtype.is_complex and tensor.dtype != torch.bool


def token_ids(tokens):
    """Token ids as a tensor; narrow or unsigned integers (uint8, int16, uint32, ...) become int64.

    ``nn.Embedding`` takes only int32 and int64 ids, and PyTorch implements few operations for
    uint16/32/64, so the course widens them (as Keras' ``Embedding`` casts them); other dtypes are
    kept, for the checks to name.
    """
    tokens = torch.as_tensor(tokens)
    if is_integer(tokens) and tokens.dtype not in (torch.int32, torch.int64):
        tokens = tokens.to(torch.int64)
    return tokens


def check_rank(tokens):
    """Raise ``ValueError`` unless ``tokens`` are ``(batch, seq)``."""
    check_token_rank(tokens.shape)


def check_token_ids(tokens):
    """Raise ``TypeError`` unless ``tokens`` hold integers, ``ValueError`` unless they are
    ``(batch, seq)``."""
    check_token_dtype(is_integer(tokens), str(tokens.dtype))
    check_rank(tokens)


def check_tokens(tokens, vocab_size, max_len=None, start=0):
    """Raise ``TypeError``/``ValueError`` unless ``tokens`` are valid ids.

    Valid: an integer tensor of shape (batch, seq) with
    ``start + seq <= max_len`` (unless ``max_len`` is None) and every id in ``[0, vocab_size)``.
    """
    check_token_ids(tokens)
    length = tokens.shape[1]
    if max_len is not None:
        check_length(None if length is None else start + length, max_len)
    if tokens.numel():
        check_token_range(int(tokens.min()), int(tokens.max()), vocab_size)
