"""The word-level :class:`Tokenizer`: punctuation, German number compounds, lossless spacing."""

from __future__ import annotations

import re
import unicodedata
from array import array

SPACE_TOKEN = "<space>"
"""Emitted where the text has a space that the spacing rules would not put back."""
GLUE_TOKEN = "<glue>"
"""Emitted where the text has no space although the spacing rules would put one."""

# Number morphemes of languages that write a number as ONE word: German
# "siebenundneunzig" (7 + 90) is split into "sieben und neunzig", so that a model
# meets the same few morphemes in every number. Teens and tens stay whole, like
# English "seventeen" and "ninety".
_COMPOUND_MORPHEMES = {
    "de": frozenset(
        "null ein eins eine zwei drei vier fünf sechs sieben acht neun zehn elf zwölf "
        "dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn "
        "zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig "
        "hundert tausend und".split()
    ),
}

# Punctuation that takes no space before it / after it.
_NO_SPACE_BEFORE = {"default": frozenset(".,!?;:)]}…%"), "fr": frozenset(".,)]}…%")}
_NO_SPACE_AFTER = {"default": frozenset("([{¿¡"), "fr": frozenset("([{¿¡")}

_TOKEN_RE = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]")
_PLAIN_WORDS_RE = re.compile(r"\w+(?:[-'’]\w+)*(?: \w+(?:[-'’]\w+)*)*")  # fast path


class Tokenizer:
    """Word-level tokenizer that splits punctuation and German number compounds.

    * Words are runs of letters and digits; hyphens and apostrophes inside a
      word stay (``quatre-vingt-dix-sept``, ``ninety-seven``, ``c'est`` are one
      token each); every other mark is a token of its own (``thousand , nine``).
    * For ``lang="de"`` a word made of number morphemes is split into them:
      ``siebenundneunzig`` -> ``sieben und neunzig``.
    * ``lowercase=True`` lowercases the text first.
    * Text is Unicode-normalised first (NFC): a decomposed accent
      (``"e\\u0301"``, as macOS writes file names and some editors text)
      gives the same tokens as the composed one (``"é"``).

    :meth:`detokenize` puts the text back together with spacing rules: one
    space between words, none inside a split compound, none before ``. , ) %``
    and (except in French, which writes ``Va !``) ``! ? ; :``, none after ``(``.
    Where the text breaks a rule, :meth:`tokenize` records it with a
    ``<space>`` or ``<glue>`` token, so the round trip is lossless up to
    whitespace and normalisation::

        tok.detokenize(tok.tokenize(text)) == " ".join(text.split())   # NFC; lowercased if lowercase

    The number corpora never need ``<space>`` or ``<glue>``.

    Args:
        lang: language code (``"fr"``, ``"de_CH"``...); decides the spacing
            rules and whether number compounds are split (German only).
        lowercase: lowercase the text before splitting it.
    """

    def __init__(self, lang=None, lowercase=False):
        if lang is not None and not isinstance(lang, str):
            raise TypeError(f"lang must be a language code string or None, got {type(lang).__name__}")
        self.lang = lang
        self.lowercase = bool(lowercase)
        base = (lang or "").split("_")[0].split("-")[0].lower()
        self._morphemes = _COMPOUND_MORPHEMES.get(base, frozenset())
        self._longest_morpheme = max(map(len, self._morphemes), default=0)
        rules = "fr" if base == "fr" else "default"
        self._no_space_before = _NO_SPACE_BEFORE[rules]
        self._no_space_after = _NO_SPACE_AFTER[rules]

    def __repr__(self):
        return f"Tokenizer(lang={self.lang!r}, lowercase={self.lowercase})"

    def __eq__(self, other):
        return isinstance(other, Tokenizer) and self.get_config() == other.get_config()

    def get_config(self) -> dict:
        """The constructor arguments, JSON-serialisable: ``Tokenizer(**config)`` rebuilds it."""
        return {"lang": self.lang, "lowercase": self.lowercase}

    def _split_compound(self, word):
        """Split ``word`` into the fewest morphemes, or return it whole.

        Dynamic programming over the word's prefixes, in time and memory
        linear in its length: ``count[i]`` is the fewest morphemes that make
        up ``low[:i]`` and ``start[i]`` where the last of them starts (the
        smallest such start, on ties); the pieces are read back from the end.
        """
        morphemes = self._morphemes
        if not morphemes:
            return [word]
        low = word.lower()
        n = len(low)
        if n != len(word):  # lowercasing changed the length (rare letters): keep it whole
            return [word]
        longest = self._longest_morpheme
        unreached = n + 1  # more pieces than any split has
        count = array("l", [unreached]) * (n + 1)  # (n + 1,) fewest pieces covering low[:i]
        start = array("l", [0]) * (n + 1)  # (n + 1,) where the last of those pieces starts
        count[0] = 0
        for i in range(1, n + 1):
            for j in range(max(0, i - longest), i):
                if count[j] + 1 < count[i] and low[j:i] in morphemes:
                    count[i], start[i] = count[j] + 1, j
        if count[n] == unreached:
            return [word]
        ends = [n]
        while ends[-1] > 0:
            ends.append(start[ends[-1]])
        ends.reverse()  # 0, end of the first piece, ..., n
        return [word[a:b] for a, b in zip(ends[:-1], ends[1:])]

    def _glued(self, left, right) -> bool:
        """True where the spacing rules write ``left`` and ``right`` without a space."""
        if right in self._no_space_before or left in self._no_space_after:
            return True
        m = self._morphemes
        return bool(m) and left.lower() in m and right.lower() in m

    def tokenize(self, text) -> list:
        """Split ``text`` into tokens (strings)."""
        if not isinstance(text, str):
            raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
        text = unicodedata.normalize("NFC", text)
        if self.lowercase:
            text = text.lower()
        if not self._morphemes and _PLAIN_WORDS_RE.fullmatch(text):
            return text.split(" ")  # words and single spaces only: nothing to decide
        tokens, prev, prev_end = [], None, 0
        for match in _TOKEN_RE.finditer(text):
            spaced = match.start() > prev_end
            prev_end = match.end()
            pieces = self._split_compound(match.group())
            for k, piece in enumerate(pieces):
                if prev is not None:
                    space = spaced and k == 0
                    if space and self._glued(prev, piece):
                        tokens.append(SPACE_TOKEN)
                    elif not space and not self._glued(prev, piece):
                        tokens.append(GLUE_TOKEN)
                tokens.append(piece)
                prev = piece
        return tokens

    def detokenize(self, tokens) -> str:
        """Join tokens back into text (the inverse of :meth:`tokenize`)."""
        out, prev, override = [], None, None
        for token in tokens:
            if token in (SPACE_TOKEN, GLUE_TOKEN):
                override = token
                continue
            if prev is not None:
                glued = (override == GLUE_TOKEN) if override else self._glued(prev, token)
                if not glued:
                    out.append(" ")
            out.append(token)
            prev, override = token, None
        return "".join(out)
