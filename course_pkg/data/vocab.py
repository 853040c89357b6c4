"""The special tokens and their ids, and :class:`Vocab`, the token <-> id mapping."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import numpy as np

from ..common.arguments import check_count
from ..common.files import atomic_write
from .tokenizer import Tokenizer

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
VOCAB_FORMAT = "course_pkg.Vocab/1"  # the "format" field of Vocab.to_json


class Vocab:
    """Token <-> id mapping; special tokens ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3.

    Build one from training texts with :meth:`build`; it keeps its
    :class:`Tokenizer`, so :meth:`encode` and :meth:`decode` go from text to
    ids and back. Save it beside a checkpoint with :meth:`save` (JSON).

    Args:
        tokens: every token in id order, starting with the four special tokens.
        tokenizer: the :class:`Tokenizer` that splits texts into these tokens, or a subword
            tokenizer of :mod:`course_pkg.subword` (anything with ``tokenize`` and ``detokenize``).
    """

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, tokens, tokenizer=None):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIAL_TOKENS:
            raise ValueError(
                f"a Vocab's tokens must start with the special tokens {list(SPECIAL_TOKENS)}, "
                f"got {tokens[:4]}"
            )
        if not all(isinstance(t, str) for t in tokens):
            raise TypeError("a Vocab's tokens must all be strings")
        dupes = sorted({t for t, c in Counter(tokens).items() if c > 1})
        if dupes:
            raise ValueError(f"a Vocab's tokens must be unique, repeated: {dupes[:10]}")
        if tokenizer is not None and not isinstance(tokenizer, Tokenizer) and not (
                callable(getattr(tokenizer, "tokenize", None))
                and callable(getattr(tokenizer, "detokenize", None))):
            raise TypeError(f"tokenizer must be a course_pkg.data.Tokenizer or a subword tokenizer "
                            f"(with tokenize and detokenize), got {type(tokenizer).__name__}")
        self.tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        self.itos = tokens
        self.stoi = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def build(cls, texts, tokenizer=None, min_freq=1, max_size=None) -> "Vocab":
        """The vocabulary of ``texts``: specials, then tokens by falling frequency (ties A-Z).

        Args:
            texts: iterable of strings (e.g. the training sources).
            tokenizer: a :class:`Tokenizer` (default: ``Tokenizer()``).
            min_freq: drop tokens seen fewer times; they will encode as ``<unk>``.
            max_size: keep at most this many tokens, specials included.
        """
        tokenizer = tokenizer if tokenizer is not None else Tokenizer()
        min_freq = check_count("min_freq", min_freq, 1)
        if max_size is not None:
            max_size = check_count("max_size", max_size, len(SPECIAL_TOKENS))
        if isinstance(texts, str):
            raise TypeError("Vocab.build expects an iterable of texts, got a single str")
        counts = Counter()
        for text in texts:
            counts.update(tokenizer.tokenize(text))
        for special in SPECIAL_TOKENS:
            counts.pop(special, None)
        ranked = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            ranked = ranked[:max_size - len(SPECIAL_TOKENS)]
        return cls(list(SPECIAL_TOKENS) + ranked, tokenizer)

    def __len__(self):
        return len(self.itos)

    def __contains__(self, token):
        return token in self.stoi

    def __eq__(self, other):
        return isinstance(other, Vocab) and self.itos == other.itos and self.tokenizer == other.tokenizer

    def __repr__(self):
        return f"Vocab(size={len(self)}, tokenizer={self.tokenizer!r})"

    def token_to_id(self, token) -> int:
        """The id of ``token`` (``<unk>``'s id if unknown)."""
        return self.stoi.get(token, UNK_ID)

    def id_to_token(self, index) -> str:
        """The token of id ``index``."""
        return self.itos[index]

    def encode(self, text, add_bos=False, add_eos=False) -> list:
        """Tokenize ``text`` and map tokens to ids (unknown ones to ``<unk>`` = 3)."""
        ids = [self.stoi.get(t, UNK_ID) for t in self.tokenizer.tokenize(text)]
        return ([BOS_ID] if add_bos else []) + ids + ([EOS_ID] if add_eos else [])

    def decode(self, ids, strip_special=True) -> str:
        """Map ids back to text.

        Args:
            ids: 1-D sequence of ids (list, NumPy array or framework tensor).
            strip_special: stop at the first ``<eos>`` and drop ``<pad>`` and
                ``<bos>`` (what a model's greedy output needs); ``<unk>``
                stays, as the text ``<unk>``. ``False`` writes every token.

        Shape:
            (length,) -> str.
        """
        arr = np.asarray(ids)
        if arr.size == 0:
            return ""
        if arr.ndim != 1:
            raise ValueError(f"decode expects a 1-D sequence of ids, got shape {arr.shape}; "
                             "decode a batch row by row")
        if arr.dtype.kind not in "iu":
            raise TypeError(f"decode expects integer ids, got dtype {arr.dtype}")
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= len(self):
            raise ValueError(f"ids must lie in [0, {len(self)}) for this vocabulary, got ids "
                             f"from {lo} to {hi}")
        tokens = []
        for i in arr.tolist():
            if strip_special:
                if i == EOS_ID:
                    break
                if i in (PAD_ID, BOS_ID):
                    continue
            tokens.append(self.itos[i])
        return self.tokenizer.detokenize(tokens)

    # -------------------------------------------------------------- persistence
    def to_json(self) -> str:
        """The vocabulary and its tokenizer as a JSON string.

        Raises:
            TypeError: the tokenizer is a subword tokenizer, whose files its own ``save``
                writes (``vocab.json`` and ``merges.txt``).
        """
        if not isinstance(self.tokenizer, Tokenizer):
            raise TypeError(f"a Vocab over a {type(self.tokenizer).__name__} is not saved as JSON: "
                            "save the tokenizer with its own save() and rebuild the Vocab from it")
        return json.dumps({"format": VOCAB_FORMAT, "tokenizer": self.tokenizer.get_config(),
                           "tokens": self.itos}, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text) -> "Vocab":
        """Rebuild a :class:`Vocab` from :meth:`to_json`'s string.

        Raises:
            ValueError: the text is not such a JSON document, or a field has
                the wrong type (``"false"`` is not ``false``; the message says
                which field).
        """
        return cls._from_json(text, "")

    @classmethod
    def _from_json(cls, text, where) -> "Vocab":
        try:
            tokens, config = _parse_vocab_json(text)
            return cls(tokens, Tokenizer(**config))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{where}not a course_pkg Vocab JSON: {err}") from None

    def save(self, path) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8), atomically: ``path`` holds the old
        vocabulary or the new one, never half of one."""
        atomic_write(path, self.to_json())

    @classmethod
    def load(cls, path) -> "Vocab":
        """Read a vocabulary written by :meth:`save` (UTF-8, with or without a byte-order mark).

        Raises:
            FileNotFoundError: there is no file ``path``.
            ValueError: the file is not a vocabulary written by :meth:`save`:
                not UTF-8, not JSON, nested too deeply, a field missing or of
                the wrong type. The message names the file and what is wrong.
        """
        data = Path(path).read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ValueError(f"{os.fspath(path)}: not a course_pkg Vocab JSON: not UTF-8 text "
                             f"(byte 0x{data[err.start]:02x} at offset {err.start})") from None
        return cls._from_json(text, f"{os.fspath(path)}: ")


def _short(value, limit=60) -> str:
    """``repr(value)``, cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _parse_vocab_json(text) -> tuple:
    """``(tokens, tokenizer config)`` of a Vocab JSON document; ``ValueError`` says what is wrong."""
    try:
        data = json.loads(text)
    except RecursionError:  # the C parser recurses once per level of [ or {
        raise ValueError("the JSON is nested too deeply") from None
    except ValueError as err:
        raise ValueError(f"invalid JSON ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got a JSON {type(data).__name__}")
    for key in ("format", "tokenizer", "tokens"):
        if key not in data:
            raise ValueError(f"no {key!r} field")
    if data["format"] != VOCAB_FORMAT:
        raise ValueError(f"format must be {VOCAB_FORMAT!r}, got {_short(data['format'])}")
    tokens, config = data["tokens"], data["tokenizer"]
    if not isinstance(tokens, list):
        raise ValueError(f"tokens must be a list of strings, got {_short(tokens)}")
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise ValueError(f"tokens[{i}] must be a string, got {_short(token)}")
    if not isinstance(config, dict):
        raise ValueError(f"tokenizer must be an object, got {_short(config)}")
    unknown = sorted(set(config) - {"lang", "lowercase"})
    if unknown:
        raise ValueError(f"tokenizer has unknown fields {unknown[:10]}")
    if "lowercase" in config and not isinstance(config["lowercase"], bool):
        raise ValueError(f"tokenizer.lowercase must be true or false, got {_short(config['lowercase'])}")
    if config.get("lang") is not None and not isinstance(config["lang"], str):
        raise ValueError(f"tokenizer.lang must be a language code string or null, got "
                         f"{_short(config['lang'])}")
    return tokens, config
