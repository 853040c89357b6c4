"""Special tokens in a text: found whole, longest first, whatever their brackets, and never split.

One mechanism for every tokenizer here that keeps special tokens (``ByteLevelBPE``'s
``<|endoftext|>``, ``WordPiece``'s ``[CLS]``, ``<mask>``...), as ``tokenizers`` matches its added
tokens before any pre-tokenization.
"""

from __future__ import annotations

import regex

__all__ = ["special_pattern", "split_specials"]


def special_pattern(specials):
    """A compiled pattern that finds any of ``specials`` (longest first), or ``None`` for none."""
    if not specials:
        return None
    return regex.compile("|".join(map(regex.escape, sorted(specials, key=len, reverse=True))))


def split_specials(text, pattern):
    """``(piece, is_special)``: the stretches of ``text`` between special tokens, and those."""
    if pattern is None:
        yield text, False
        return
    start = 0
    for match in pattern.finditer(text):
        yield text[start:match.start()], False
        yield match.group(), True
        start = match.end()
    yield text[start:], False
