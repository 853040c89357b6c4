"""The subword tokenizers' checks of their arguments: text must be a str, ids ints in range."""

from __future__ import annotations

__all__ = ["check_text", "check_texts", "ids_to_tokens"]


def check_text(text, name="text") -> str:
    """Return ``text``; raise ``TypeError`` naming the argument unless it is a ``str``."""
    if isinstance(text, (bytes, bytearray)):
        raise TypeError(f'{name} must be str, got {type(text).__name__}; decode it first '
                        f'({name}.decode("utf-8"))')
    if not isinstance(text, str):
        raise TypeError(f"{name} must be str, got {type(text).__name__}")
    return text


def check_texts(texts) -> None:
    """Raise ``TypeError`` if ``texts`` is one str (or bytes) instead of an iterable of them."""
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError("texts must be an iterable of str (a list of sentences), "
                        f"got one {type(texts).__name__}")


def ids_to_tokens(ids, tokens) -> list:
    """``[tokens[i] for i in ids]``; ``TypeError`` for a str or a non-int, ``ValueError`` out of range."""
    if isinstance(ids, (str, bytes)):
        raise TypeError(f"ids must be a list of int token ids, got {type(ids).__name__}; "
                        "encode(text) gives ids, decode(ids) gives text")
    out = []
    for position, index in enumerate(ids):
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            raise TypeError(f"ids[{position}] must be an int, got {index!r:.40}")
        index = index.__index__()
        if not 0 <= index < len(tokens):
            raise ValueError(f"ids[{position}] = {index} is outside the vocabulary: expected "
                             f"0 <= id < {len(tokens)}")
        out.append(tokens[index])
    return out
