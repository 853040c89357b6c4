"""BERT's WordPiece tokenizer: :class:`WordPiece` and its pre-tokenizer :func:`bert_pre_tokenize`.

Encoding has two steps, as in BERT (Devlin et al., 2019):

1. :func:`bert_pre_tokenize`: drop control characters, make every whitespace a space, put
   spaces around CJK ideographs, lowercase and strip accents (uncased models), then split on
   whitespace and around every punctuation character (``"don't!"`` -> ``don ' t !``).
2. Each word is cut greedily, longest match first, into vocabulary pieces; a piece that does
   not start the word carries ``##`` (``playing`` -> ``play ##ing``). A word with no such
   cut, or longer than 100 characters, becomes ``[UNK]`` whole.

::

    tok = WordPiece.from_file("vocab.txt")            # BERT's own file, or yours
    tok.encode("Hello, world!")    # [CLS] hello , world ! [SEP] as ids
    tok.decode(tok.encode("Hello, world!"), skip_special_tokens=True)   # 'hello, world!'

Tested equal to ``transformers.BertTokenizer`` (the ``tokenizers``-backed one of transformers
5, whose rules are ``normalizers.BertNormalizer`` and ``pre_tokenizers.BertPreTokenizer``).
Two rules differ from the pure-Python ``BertTokenizerLegacy`` of transformers, and the course
follows the Rust one: lowercasing is character by character (a Greek word-final ``Σ`` gives
``σ``, where ``str.lower`` gives ``ς``), and the text is not NFC-normalised first (a cased
model meets ``e`` + U+0301 as two characters, not as ``é``).

Unicode: which characters are controls (dropped), punctuation (split off) and accents (stripped)
comes from :mod:`~course_pkg.subword.bert_unicode`, ``tokenizers``' own tables, not from this
Python's ``unicodedata``: a character unassigned in Python's tables (an emoji newer than them,
the noncharacters U+FDD0 and U+FFFF) is kept, as a word piece or ``[UNK]``, never dropped.
Knowingly different: a letter whose case is newer than this Python's tables is lowercased by
``tokenizers`` (Rust's newer tables) and not here (55 code points on Python 3.11, none of them
in use before Unicode 15); U+11938 with ``strip_accents`` (Python and Rust decompose it apart).

Special tokens are found whole in a text whatever their brackets (``[MASK]``, ``<mask>``,
``<|endoftext|>``), longest first, before the text is normalised (as ``BertTokenizer`` finds its
special tokens).

Refused (``TypeError`` naming the argument): a vocabulary that is not a list of tokens
(``None``, a str, a dict), ``lowercase`` or ``strip_accents`` that is not a bool (``"false"``
is a non-empty str: it would read as true), a special token that is not a non-empty str;
``ValueError``: a blank or repeated token, a special token missing from the vocabulary.
:meth:`WordPiece.decode` refuses what is not one sequence of int ids: a str, bytes or
bytearray, ``None``, one int (write ``[id]``; ``transformers`` accepts it), a 2-D array
(decode each row).
"""

from __future__ import annotations

import os
import unicodedata

from ..common.arguments import check_flag
from .bert_unicode import is_bert_control, is_bert_punctuation, is_nonspacing_mark
from .checks import check_special_tokens, check_specials_in, check_text, ids_to_tokens
from .specials import special_pattern, split_specials
from .vocab_files import read_vocab_txt, write_vocab_txt

__all__ = ["SPECIAL_TOKENS", "WordPiece", "bert_pre_tokenize"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
"""BERT's special tokens: found whole in a text, never split or lowercased."""

# The CJK ideograph blocks that BERT writes as one word each (not Hangul, Hiragana or Katakana), as
# tokenizers has them: from U+2B920, not U+2B820 as in BERT's own Python (256 ideographs apart).
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


# transformers' clean-up of decoded text, applied to each token with the space before it.
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _is_cjk(code) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


def _normalize(text, lowercase, strip_accents) -> str:
    """``BertNormalizer``: clean controls and whitespace, space CJK ideographs, strip accents, lowercase."""
    out = []
    for char in text:
        if is_bert_control(char):  # U+0000 and U+FFFD too; never an unassigned character
            continue
        if char.isspace():
            out.append(" ")
        elif _is_cjk(ord(char)):
            out.append(f" {char} ")
        else:
            out.append(char)
    text = "".join(out)
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if not is_nonspacing_mark(c))
    if lowercase:
        text = "".join(c.lower() for c in text)  # character by character, like Rust's to_lowercase
    return text


def bert_pre_tokenize(text, lowercase=True, strip_accents=None) -> list:
    """Split ``text`` into BERT's words: cleaned, lowercased and unaccented if asked, punctuation apart.

    Args:
        text: a str.
        lowercase: lowercase the text (uncased models).
        strip_accents: remove accents (NFD, then drop the combining marks); ``None``: as ``lowercase``.

    Returns:
        list of words (str).
    """
    check_text(text)
    lowercase = check_flag("lowercase", lowercase)
    strip_accents = check_flag("strip_accents", strip_accents, none=lowercase)
    words = []
    for chunk in _normalize(text, lowercase, strip_accents).split():
        start = 0
        for i, char in enumerate(chunk):
            if is_bert_punctuation(char):
                if i > start:
                    words.append(chunk[start:i])
                words.append(char)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


def _check_token_list(vocab, where) -> tuple:
    """``(tokens, ids)`` of a vocabulary given as a list of tokens in id order; errors name ``where``."""
    if vocab is None or isinstance(vocab, (str, bytes, bytearray, dict)) or not hasattr(vocab, "__iter__"):
        hint = "; load a file with WordPiece.from_file(path)" if isinstance(vocab, str) else ""
        raise TypeError(f"{where} must be a list of tokens in id order, got {type(vocab).__name__}{hint}")
    tokens = list(vocab)
    ids = {}
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token.strip():
            raise ValueError(f"{where}[{i}] must be a non-blank str, got {token!r}")
        if token in ids:
            raise ValueError(f"{where}[{i}] = {token!r} repeats {where}[{ids[token]}]")
        ids[token] = i
    return tokens, ids


class WordPiece:
    """BERT's tokenizer: :func:`bert_pre_tokenize`, then greedy longest-match-first pieces.

    Args:
        vocab: the tokens in id order (a list), as ``vocab.txt`` holds them.
        lowercase: lowercase the text first (BERT's uncased models; ``do_lower_case``).
        strip_accents: remove accents; ``None``: as ``lowercase``.
        special_tokens: the tokens found whole in a text (each in ``vocab``); default
            ``SPECIAL_TOKENS`` (``[PAD] [UNK] [CLS] [SEP] [MASK]``).
        unk_token, cls_token, sep_token: the tokens of an unknown word and of the start and
            end that :meth:`encode` adds (each among ``special_tokens``).
        max_input_chars_per_word: a longer word becomes ``unk_token`` whole.

    Raises:
        ValueError: a token given twice or empty, a special token missing from ``vocab``.
    """

    def __init__(self, vocab, *, lowercase=True, strip_accents=None, special_tokens=SPECIAL_TOKENS,
                 unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", max_input_chars_per_word=100):
        self._load(vocab, "vocab", lowercase, strip_accents, special_tokens, unk_token, cls_token,
                   sep_token, max_input_chars_per_word)

    def _load(self, vocab, where, lowercase, strip_accents, special_tokens, unk_token, cls_token,
              sep_token, max_input_chars_per_word) -> None:
        tokens, ids = _check_token_list(vocab, where)
        lowercase = check_flag("lowercase", lowercase)
        strip_accents = check_flag("strip_accents", strip_accents, none=lowercase)
        specials = check_special_tokens(special_tokens)
        for name, token in (("unk_token", unk_token), ("cls_token", cls_token), ("sep_token", sep_token)):
            if not isinstance(token, str) or not token:
                raise TypeError(f"{name} must be a non-empty str, got {type(token).__name__} {token!r:.40}")
            if token not in specials:
                specials.append(token)
        check_specials_in(specials, ids, where)
        if (isinstance(max_input_chars_per_word, bool) or not isinstance(max_input_chars_per_word, int)
                or max_input_chars_per_word < 1):
            raise ValueError("max_input_chars_per_word must be an int >= 1, "
                             f"got {max_input_chars_per_word!r}")
        # everything is checked: now assign
        self._tokens, self._ids = tokens, ids
        self.lowercase, self.strip_accents = lowercase, strip_accents
        self.special_tokens = specials
        self._special_re = special_pattern(specials)  # found whole, whatever their brackets: [MASK], <mask>
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.max_input_chars_per_word = max_input_chars_per_word

    @classmethod
    def from_file(cls, vocab_file, **options) -> "WordPiece":
        """Load BERT's ``vocab.txt`` (checked whole first); ``options`` as for the constructor."""
        tokens = read_vocab_txt(vocab_file)
        self = cls.__new__(cls)
        defaults = {"lowercase": True, "strip_accents": None, "special_tokens": SPECIAL_TOKENS,
                    "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]",
                    "max_input_chars_per_word": 100}
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise TypeError(f"WordPiece.from_file got unknown options {unknown}")
        defaults.update(options)
        self._load(tokens, os.fspath(vocab_file), **defaults)
        return self

    def save(self, vocab_file) -> None:
        """Write ``vocab.txt`` (atomically)."""
        write_vocab_txt(vocab_file, self._tokens)

    @property
    def vocab_size(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self._tokens)

    def get_vocab(self) -> dict:
        """The vocabulary: dict token -> id."""
        return dict(self._ids)

    def _pieces(self, word) -> list:
        """Greedy longest-match-first: the pieces of one word, or ``[unk_token]``."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self._ids:
                    break
                end -= 1
            else:
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text) -> list:
        """The tokens (str) of ``text``, without ``[CLS]``/``[SEP]``; special tokens in it stay whole."""
        check_text(text)
        out = []
        for piece, special in split_specials(text, self._special_re):
            if special:
                out.append(piece)
            else:
                for word in bert_pre_tokenize(piece, self.lowercase, self.strip_accents):
                    out.extend(self._pieces(word))
        return out

    def encode(self, text, add_special_tokens=True) -> list:
        """The ids of ``text``: ``[CLS] tokens [SEP]`` as ``BertTokenizer(text)["input_ids"]`` gives them.

        Args:
            text: a str.
            add_special_tokens: add ``cls_token`` and ``sep_token`` around the tokens.
        """
        ids = [self._ids[token] for token in self.tokenize(text)]
        if add_special_tokens:
            ids = [self._ids[self.cls_token], *ids, self._ids[self.sep_token]]
        return ids

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=True) -> str:
        """The text of ids: tokens joined by spaces, ``##`` pieces glued to the piece before.

        Args:
            ids: token ids.
            skip_special_tokens: leave out the special tokens.
            clean_up_tokenization_spaces: remove the space before a ``.``, ``,``, ``!`` or ``?``
                token, as ``transformers`` 5 does (token by token, so ``don ' t`` stays apart).

        Raises:
            TypeError: ``ids`` is a str or holds a non-int.
            ValueError: an id outside ``0 .. vocab_size - 1``.
        """
        tokens = ids_to_tokens(ids, self._tokens)
        if skip_special_tokens:
            specials = set(self.special_tokens)
            tokens = [t for t in tokens if t not in specials]
        pieces = []
        for i, token in enumerate(tokens):
            if i:
                token = token[2:] if token.startswith("##") else " " + token
            if clean_up_tokenization_spaces:  # token by token, as tokenizers' decoders.WordPiece does
                for before, after in _CLEAN_UP:
                    token = token.replace(before, after)
            pieces.append(token)
        return "".join(pieces)

    def convert_ids_to_tokens(self, ids) -> list:
        """The tokens of ids, checked as :meth:`decode` checks them."""
        return ids_to_tokens(ids, self._tokens)
