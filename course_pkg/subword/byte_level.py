"""GPT-2's byte-level BPE: :class:`ByteLevelBPE`, :func:`bytes_to_unicode`, :func:`train_byte_level_bpe`.

Byte-level BPE (Radford et al., 2019) runs BPE on the UTF-8 *bytes* of a text, so that
every text can be encoded without an unknown token: the 256 bytes are the alphabet. To keep
the merges printable, each byte is first written as one visible character
(:func:`bytes_to_unicode`: a space is ``Ġ``, a newline ``Ċ``), and the text is cut into
words by ``GPT2_PATTERN`` (a word keeps the space before it: ``" world"`` -> ``Ġworld``)::

    tok = ByteLevelBPE.from_files("vocab.json", "merges.txt")   # GPT-2's own files, or yours
    tok.tokenize("Hello world")   # ['Hello', 'Ġworld'] with GPT-2's files
    tok.decode(tok.encode(text)) == text                          # for every str

Tested equal to ``transformers.GPT2Tokenizer`` and to ``tokenizers``' ``models.BPE`` with
``pre_tokenizers.ByteLevel(add_prefix_space=False)`` and ``decoders.ByteLevel()``; a merges
file out of learning order gives their ids too (``tokenizers``' merge loop: transformers 4's
pure-Python ``GPT2Tokenizer``, with GPT-2's own loop, differs from its fast twin on such a file).

Refused, each error naming the argument: ``merges=None``, a vocabulary without every byte
symbol, ``special_tokens`` given as one str or holding a non-str or a token missing from the
vocabulary; :func:`train_byte_level_bpe` also refuses ``texts`` that are not an iterable of
str and an empty or blank corpus (only whitespace: ``ValueError``); ``decode`` refuses what
is not one sequence of int ids (bytes, bytearray, ``None``, one int, a 2-D array).
"""

from __future__ import annotations

import os
from collections import Counter

import regex

from .bpe import apply_merges, learn_merges
from .checks import (
    check_corpus,
    check_special_tokens,
    check_specials_in,
    check_text,
    check_texts,
    ids_to_tokens,
)
from .specials import special_pattern, split_specials
from .vocab_files import (
    check_merges,
    check_vocab,
    read_merges,
    read_vocab_json,
    write_merges,
    write_vocab_json,
)

__all__ = ["ByteLevelBPE", "GPT2_PATTERN", "bytes_to_unicode", "train_byte_level_bpe"]

GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
"""GPT-2's pre-tokenization: English contractions, letters, digits or other marks (each with
the space before them), and whitespace (a run of spaces gives all but its last to itself)."""


def bytes_to_unicode() -> dict:
    """GPT-2's table from the 256 byte values to 256 printable characters.

    The printable Latin-1 bytes (``!`` to ``~``, ``¡`` to ``¬``, ``®`` to ``ÿ``) stand for
    themselves; the 68 others (controls, space, soft hyphen...) get the characters from
    U+0100 on, in byte order: byte 0 is ``Ā``, the space (32) is ``Ġ``, the newline (10) ``Ċ``.

    Returns:
        dict mapping each int ``0 .. 255`` to a one-character str.
    """
    printable = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)}
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {char: byte for byte, char in _BYTE_TO_CHAR.items()}


def _to_symbols(word) -> str:
    """``word`` (str) as the printable characters of its UTF-8 bytes."""
    return "".join(_BYTE_TO_CHAR[b] for b in word.encode("utf-8"))


def _check_byte_alphabet(vocab, where) -> None:
    missing = [char for char in _CHAR_TO_BYTE if char not in vocab]
    if missing:
        raise ValueError(f"{where} lacks {len(missing)} of the 256 byte symbols, e.g. {missing[:5]!r}: "
                         "a byte-level vocabulary holds every byte (bytes_to_unicode())")


class ByteLevelBPE:
    """GPT-2's tokenizer: byte-level BPE with GPT-2's pre-tokenization.

    Args:
        vocab: dict mapping each token (bytes written with :func:`bytes_to_unicode`) to its
            id, the ids ``0 .. n-1``, all 256 byte symbols among them.
        merges: ``(left, right)`` pairs, highest priority first.
        special_tokens: tokens found whole in a text and never split (each in ``vocab``);
            default: ``["<|endoftext|>"]`` if the vocabulary has it, else none.

    Raises:
        ValueError: ids that are not ``0 .. n-1``, a byte symbol missing, a merge with a part
            or result outside the vocabulary, a special token missing from it.
    """

    def __init__(self, vocab, merges, *, special_tokens=None):
        self._load(vocab, merges, special_tokens, "vocab", "merges")

    def _load(self, vocab, merges, special_tokens, vocab_where, merges_where) -> None:
        vocab = check_vocab(vocab, vocab_where)
        _check_byte_alphabet(vocab, vocab_where)
        merges = check_merges(merges, vocab, merges_where)
        if special_tokens is None:
            special_tokens = ["<|endoftext|>"] if "<|endoftext|>" in vocab else []
        specials = check_special_tokens(special_tokens)
        check_specials_in(specials, vocab, vocab_where)
        # everything is checked: now assign
        self._vocab = vocab
        self._tokens = sorted(vocab, key=vocab.get)
        self._ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.merges = merges
        self.special_tokens = specials
        self._special_re = special_pattern(specials)
        self._cache = {}

    @classmethod
    def from_files(cls, vocab_file, merges_file, *, special_tokens=None) -> "ByteLevelBPE":
        """Load GPT-2's ``vocab.json`` and ``merges.txt`` (checked whole before anything is kept)."""
        vocab = read_vocab_json(vocab_file)
        merges = read_merges(merges_file, vocab)
        self = cls.__new__(cls)
        self._load(vocab, merges, special_tokens, os.fspath(vocab_file), os.fspath(merges_file))
        return self

    def save(self, vocab_file, merges_file) -> None:
        """Write ``vocab.json`` and ``merges.txt`` (each atomically)."""
        write_vocab_json(vocab_file, self._vocab)
        write_merges(merges_file, self.merges)

    @property
    def vocab_size(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self._tokens)

    def get_vocab(self) -> dict:
        """A copy of the vocabulary: dict token -> id."""
        return dict(self._vocab)

    def _bpe(self, symbols) -> list:
        """The tokens of one pre-tokenized word (already written as byte symbols)."""
        cached = self._cache.get(symbols)
        if cached is not None:
            return cached
        parts = apply_merges(symbols, self._ranks)
        if len(self._cache) < 100_000:
            self._cache[symbols] = parts
        return parts

    def tokenize(self, text) -> list:
        """The tokens (str, bytes written with :func:`bytes_to_unicode`) of ``text``."""
        check_text(text)
        out = []
        for piece, special in split_specials(text, self._special_re):
            if special:
                out.append(piece)
                continue
            for word in GPT2_PATTERN.findall(piece):
                out.extend(self._bpe(_to_symbols(word)))
        return out

    def encode(self, text) -> list:
        """The token ids of ``text``, as ``GPT2Tokenizer(text)["input_ids"]`` gives them."""
        return [self._vocab[token] for token in self.tokenize(text)]

    def decode(self, ids, errors="replace") -> str:
        """The text of token ids: their bytes, decoded as UTF-8.

        Args:
            ids: token ids.
            errors: what to do with bytes that are not UTF-8 (a cut in the middle of a
                character): ``"replace"`` (U+FFFD, as GPT-2 does) or ``"strict"`` (raise).

        Raises:
            TypeError: ``ids`` is a str or holds a non-int.
            ValueError: an id outside ``0 .. vocab_size - 1``.
        """
        return self.detokenize(ids_to_tokens(ids, self._tokens), errors=errors)

    def detokenize(self, tokens, errors="replace") -> str:
        """The text of tokens (what :meth:`tokenize` returns): their bytes, decoded as UTF-8.

        What :class:`course_pkg.data.Vocab` calls to write a model's output back as text:
        ``detokenize(tokenize(text)) == text`` for every text.
        """
        data = bytearray()
        specials = set(self.special_tokens)
        for token in tokens:
            if token in specials or any(c not in _CHAR_TO_BYTE for c in token):
                data += token.encode("utf-8")
            else:
                data += bytes(_CHAR_TO_BYTE[c] for c in token)
        return data.decode("utf-8", errors=errors)

    def convert_ids_to_tokens(self, ids) -> list:
        """The tokens of ids, checked as :meth:`decode` checks them."""
        return ids_to_tokens(ids, self._tokens)


def train_byte_level_bpe(texts, vocab_size, *, min_frequency=2,
                         special_tokens=("<|endoftext|>",)) -> ByteLevelBPE:
    """Learn a byte-level BPE from sentences, as ``tokenizers``' ``ByteLevelBPETokenizer.train`` does.

    The words are cut by ``GPT2_PATTERN``, written as byte symbols, and the alphabet is all
    256 byte symbols (``initial_alphabet=pre_tokenizers.ByteLevel.alphabet()``), so any text
    can be encoded. Merges are learnt as :func:`~course_pkg.subword.learn_merges` learns them.

    Args:
        texts: iterable of sentences (str).
        vocab_size: the number of tokens wanted (at least the special tokens and 256 bytes).
        min_frequency: the fewest occurrences of a pair worth a merge.
        special_tokens: tokens placed first in the vocabulary and never split.

    Returns:
        the trained :class:`ByteLevelBPE`.

    Raises:
        TypeError: ``texts`` is not an iterable of str (one str, ``None``); ``special_tokens``
            is one str (``"<pad>"``: write ``["<pad>"]``) or holds a non-str.
        ValueError: ``vocab_size`` is not a positive int; the texts are empty or blank
            (only whitespace: nothing to learn from).
    """
    for name, value, low in (("vocab_size", vocab_size, 1), ("min_frequency", min_frequency, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    specials = check_special_tokens(special_tokens)
    check_texts(texts)
    counts, seen, blank = Counter(), 0, True
    for seen, text in enumerate(texts, start=1):
        text = check_text(text, f"texts[{seen - 1}]")
        blank = blank and not text.strip()
        counts.update(_to_symbols(word) for word in GPT2_PATTERN.findall(text))
    check_corpus({} if blank else counts, seen)
    tokens, merges = learn_merges(counts, vocab_size, min_frequency=min_frequency,
                                  special_tokens=specials, initial_alphabet=_CHAR_TO_BYTE)
    return ByteLevelBPE({t: i for i, t in enumerate(tokens)}, merges, special_tokens=specials)
