"""The special tokens and their ids, and :class:`Vocab`, the token <-> id mapping."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from .._checks import check_count
from .tokenizer import Tokenizer

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3


class Vocab:
    """Token <-> id mapping; special tokens ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3.

    Build one from training texts with :meth:`build`; it keeps its
    :class:`Tokenizer`, so :meth:`encode` and :meth:`decode` go from text to
    ids and back. Save it beside a checkpoint with :meth:`save` (JSON).

    Args:
        tokens: every token in id order, starting with the four special tokens.
        tokenizer: the :class:`Tokenizer` that splits texts into these tokens.
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
        if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
            raise TypeError(f"tokenizer must be a course_pkg.data.Tokenizer, got {type(tokenizer).__name__}")
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
        """The vocabulary and its tokenizer as a JSON string."""
        return json.dumps({"format": "course_pkg.Vocab/1", "tokenizer": self.tokenizer.get_config(),
                           "tokens": self.itos}, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text) -> "Vocab":
        """Rebuild a :class:`Vocab` from :meth:`to_json`'s string."""
        try:
            data = json.loads(text)
            if data.get("format") != "course_pkg.Vocab/1":
                raise KeyError("format")
            tokens, config = data["tokens"], data["tokenizer"]
        except (ValueError, KeyError, AttributeError, TypeError) as err:
            raise ValueError(f"not a course_pkg Vocab JSON ({err!r})") from err
        return cls(tokens, Tokenizer(**config))

    def save(self, path) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8)."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path) -> "Vocab":
        """Read a vocabulary written by :meth:`save`."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))
