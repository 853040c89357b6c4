"""The subword tokenizers' checks of their arguments: text must be a str, ids ints in range, tokens str.

Flags are checked by :func:`course_pkg.common.arguments.check_flag`, as the layers' are. Each check
raises an error that names the argument, what was expected and what came, before anything is
computed or kept.
"""

from __future__ import annotations

import operator

__all__ = ["check_corpus", "check_special_tokens", "check_specials_in", "check_text", "check_texts",
           "check_token_option", "ids_to_tokens"]


def check_text(text, name="text") -> str:
    """Return ``text``; raise ``TypeError`` naming the argument unless it is a ``str``."""
    if isinstance(text, (bytes, bytearray)):
        raise TypeError(f'{name} must be str, got {type(text).__name__}; decode it first '
                        f'({name}.decode("utf-8"))')
    if not isinstance(text, str):
        raise TypeError(f"{name} must be str, got {type(text).__name__}")
    return text


def check_texts(texts) -> None:
    """Raise ``TypeError`` unless ``texts`` is an iterable of texts (one str, bytes or ``None`` is not).

    Nothing is read from ``texts`` (a generator stays whole).
    """
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError("texts must be an iterable of str (a list of sentences), "
                        f"got one {type(texts).__name__}")
    try:
        iter(texts)
    except TypeError:
        raise TypeError("texts must be an iterable of str (a list of sentences), "
                        f"got {type(texts).__name__}") from None


def check_token_option(value, name, *, empty=True) -> None:
    """``TypeError`` naming ``name`` unless ``value`` is a str or None (the unknown token, a suffix);
    ``ValueError`` for ``""`` where ``empty`` is false (an unknown token must be spelt)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__} {value!r:.40}")
    if value == "" and not empty:
        raise ValueError(f"{name} must be a non-empty str or None, got ''")


def check_corpus(word_counts, texts_seen) -> None:
    """``ValueError`` naming ``texts`` when they hold no word: nothing to learn from."""
    if not word_counts:
        raise ValueError(f"texts hold no words ({texts_seen} texts, all empty or blank): "
                         "expected sentences to learn from")


def check_specials_in(specials, vocab, where) -> None:
    """``ValueError`` naming the first of ``specials`` that ``vocab`` (its tokens or ids) lacks."""
    for token in specials:
        if token not in vocab:
            raise ValueError(f"the special token {token!r} is not in {where}")


def check_special_tokens(tokens, name="special_tokens") -> list:
    """Return ``tokens`` as a list of non-empty str; ``TypeError`` naming ``name[i]`` otherwise.

    One str (``"<pad>"``) is refused rather than read as its characters.
    """
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a list of str, got the str {tokens!r:.40}; write [{tokens!r:.40}]")
    if isinstance(tokens, (bytes, bytearray)) or tokens is None:
        raise TypeError(f"{name} must be a list of str, got {type(tokens).__name__}")
    try:
        tokens = list(tokens)
    except TypeError:
        raise TypeError(f"{name} must be a list of str, got {type(tokens).__name__}") from None
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token:
            raise TypeError(f"{name}[{i}] must be a non-empty str, got {type(token).__name__} {token!r:.40}")
    return tokens


def _check_ids_argument(ids) -> None:
    """``TypeError``/``ValueError`` naming ``ids`` unless it is one sequence (not a str, an int, 2-D...)."""
    expected = "ids must be a list of int token ids"
    if isinstance(ids, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{expected}, got {type(ids).__name__}; "
                        "encode(text) gives ids, decode(ids) gives text")
    ndim = getattr(ids, "ndim", None)
    if isinstance(ids, int) or ndim == 0:
        try:
            shown = str(operator.index(ids))
        except TypeError:
            shown = repr(ids)
        raise TypeError(f"{expected}, got one {type(ids).__name__} {shown:.40}; pass a list: [{shown:.40}]")
    if ndim is not None and ndim != 1:
        shape = tuple(getattr(ids, "shape", ()))
        raise ValueError(f"{expected} (1-D), got a {ndim}-D {type(ids).__name__} of shape {shape}; "
                         "decode each row (a batch from generate: [decode(row) for row in ids])")
    try:
        iter(ids)
    except TypeError:
        raise TypeError(f"{expected}, got {type(ids).__name__}") from None


def ids_to_tokens(ids, tokens) -> list:
    """``[tokens[i] for i in ids]``; ``TypeError`` for a str, one int or a non-int, ``ValueError`` out of
    range or for a 2-D array."""
    _check_ids_argument(ids)
    out = []
    for position, index in enumerate(ids):
        if isinstance(index, bool) or not hasattr(index, "__index__"):
            nested = isinstance(index, (list, tuple)) or getattr(index, "ndim", 0) >= 1
            row = " (ids must be one sequence: decode each row)" if nested else ""
            raise TypeError(f"ids[{position}] must be an int, got {index!r:.40}{row}")
        index = index.__index__()
        if not 0 <= index < len(tokens):
            raise ValueError(f"ids[{position}] = {index} is outside the vocabulary: expected "
                             f"0 <= id < {len(tokens)}")
        out.append(tokens[index])
    return out
