"""Data for the course: a number-translation corpus, a tokenizer, a vocabulary, batching.

Framework-free (Python and NumPy only): ``course_pkg.torch.data`` and
``course_pkg.tensorflow.data`` wrap :func:`make_batches` for their framework.

The course's task translates numbers written in words from one language to
another, generated locally with ``num2words`` (no download)::

    from course_pkg.data import Tokenizer, Vocab, encode_pairs, make_number_corpus

    corpus = make_number_corpus("fr", "en")   # Corpus(fr->en, train=24000, valid=3000, test=3000)
    corpus.train[0]   # ('six mille huit cent quarante-six', 'six thousand, eight hundred and forty-six')
    src_vocab = Vocab.build([s for s, _ in corpus.train], Tokenizer("fr"))
    tgt_vocab = Vocab.build([t for _, t in corpus.train], Tokenizer("en"))
    src, tgt_in, tgt_out = encode_pairs(corpus.train, src_vocab, tgt_vocab)

Conventions, shared by every function here and in the framework modules:

* token ids ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3;
* sequences are right-padded with ``<pad>``;
* the source is ``x <eos>``; teacher forcing feeds the decoder ``<bos> y`` and
  trains it to output ``y <eos>`` (the same sequence shifted by one).

Real sentence pairs (tab-separated files such as the Tatoeba / ManyThings
exports) load with :func:`load_tsv_pairs`; :data:`SAMPLE_TSV` is a tiny
English-French sample written for the course.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable
from typing import Optional

import numpy as np

__all__ = [
    "PAD", "BOS", "EOS", "UNK", "SPECIAL_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
    "SPACE_TOKEN", "GLUE_TOKEN", "SAMPLE_TSV",
    "supported_languages", "number_words", "make_number_corpus", "make_number_list_corpus",
    "split_pairs", "Corpus",
    "load_tsv_pairs", "Tokenizer", "Vocab",
    "pad_batch", "encode_pairs", "make_batches", "Batches",
]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

SAMPLE_TSV = Path(__file__).resolve().parent / "sample_data" / "eng-fra-sample.tsv"
"""English<TAB>French<TAB>attribution sample (20 pairs) written for the course."""


# =============================================================== num2words corpus
def _num2words():
    try:
        import num2words
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the number corpus needs num2words: pip install num2words "
            "(or pip install 'course-pkg[data]')"
        ) from err
    return num2words


def supported_languages() -> list:
    """The language codes ``num2words`` writes numbers in (``'de'``, ``'en'``, ``'fr'``, ...)."""
    return sorted(_num2words().CONVERTER_CLASSES)


def _check_language(lang, what="lang") -> str:
    langs = supported_languages()
    if not isinstance(lang, str) or lang not in langs:
        few = ", ".join(repr(x) for x in ("de", "en", "es", "fr", "it", "nl", "pt", "ru") if x in langs)
        raise ValueError(
            f"{what}={lang!r} is not a language num2words supports; valid codes include "
            f"{few} ({len(langs)} in all, see course_pkg.data.supported_languages())"
        )
    return lang


def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


# Words already written, per language: {lang: {number: words}}. Filled from the
# on-disk cache (once per process) and by num2words.
_WORDS: dict = {}


def _cache_file(lang) -> Optional[Path]:
    """Where the words of ``lang`` are cached on disk, or None if disabled.

    ``$COURSE_PKG_CACHE_DIR`` chooses the folder (empty: no disk cache); the
    default is ``$XDG_CACHE_HOME/course_pkg`` or ``~/.cache/course_pkg``.
    """
    folder = os.environ.get("COURSE_PKG_CACHE_DIR")
    if folder is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "course_pkg")
    if not folder:
        return None
    from importlib.metadata import version

    return Path(folder) / f"num2words-{version('num2words')}-{lang}.json"


def _read_cache(path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return {int(k): v for k, v in json.load(f).items()}
    except (OSError, ValueError, AttributeError):  # missing or damaged: start afresh
        return {}


def _write_cache(path, words) -> None:
    """Write atomically (temp file + rename), so readers never see half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({str(k): v for k, v in sorted(words.items())}, f, ensure_ascii=False)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    except OSError:  # read-only home, full disk...: the cache is only an optimisation
        pass


def _converter(lang, largest):
    """num2words' converter for ``lang``, sped up for numbers up to ``largest``.

    Most languages split a number with ``Num2Word_Base.splitnum``, which scans
    the converter's whole table of number words (up to 10^600) at every step
    and skips the entries larger than the number. A copy whose table stops at
    ``largest`` writes the very same words about ten times faster. Languages
    with their own algorithm, or where a spot check disagrees, get the
    converter unchanged.
    """
    import copy

    num2words = _num2words()
    conv = num2words.CONVERTER_CLASSES[lang]
    base = getattr(getattr(num2words, "base", None), "Num2Word_Base", None)
    cards = getattr(conv, "cards", None)
    if base is None or not isinstance(cards, dict) or type(conv).splitnum is not base.splitnum:
        return conv
    fast = copy.copy(conv)
    fast.cards = type(cards)((k, v) for k, v in cards.items() if k <= largest)
    try:
        probes = {0, 1, 7, 21, 97, 100, 101, 1000, 1001, largest // 3, largest}
        if all(fast.to_cardinal(n) == conv.to_cardinal(n) for n in probes if 0 <= n <= largest):
            return fast
    except Exception:  # fall back to the plain converter, whose errors are reported
        pass
    return conv


def _words_for(numbers, lang) -> list:
    """``num2words`` of every number in ``lang``, cached in memory and on disk."""
    if lang not in _WORDS:
        path = _cache_file(lang)
        _WORDS[lang] = _read_cache(path) if path is not None else {}
    known = _WORDS[lang]
    missing = sorted({int(n) for n in numbers} - known.keys())
    if missing:
        convert = _converter(lang, missing[-1]).to_cardinal
        for n in missing:
            try:
                known[n] = convert(n)
            except Exception as err:  # NotImplementedError, OverflowError, ...
                raise ValueError(f"num2words cannot write {n} in lang={lang!r}: {err}") from err
        path = _cache_file(lang)
        if path is not None:
            on_disk = _read_cache(path)  # keep what other processes added meanwhile
            on_disk.update(known)
            known.update(on_disk)
            _write_cache(path, known)
    return [known[int(n)] for n in numbers]


def number_words(number, lang="fr") -> str:
    """``number`` written in words in ``lang``, e.g. ``number_words(97, "fr")`` ->
    ``'quatre-vingt-dix-sept'`` (``num2words``, cached)."""
    _check_language(lang)
    return _words_for([_check_count("number", number, 0)], lang)[0]


@dataclass(frozen=True, repr=False)
class Corpus:
    """Sentence pairs split three ways.

    Attributes:
        - train, valid, test: lists of ``(source_text, target_text)`` pairs.
        - numbers: for a number corpus, ``{"train": [...], "valid": [...],
          "test": [...]}``, the numbers of each split, pair by pair; else empty.
        - src_lang, tgt_lang: language codes, when known.
    """

    train: list
    valid: list
    test: list
    numbers: dict = field(default_factory=dict)
    src_lang: Optional[str] = None
    tgt_lang: Optional[str] = None

    def __repr__(self):
        langs = f"{self.src_lang}->{self.tgt_lang}, " if self.src_lang else ""
        return (f"Corpus({langs}train={len(self.train)}, valid={len(self.valid)}, "
                f"test={len(self.test)})")


def _split_sizes(total, splits):
    if (not isinstance(splits, (tuple, list)) or len(splits) != 3
            or not all(isinstance(s, (int, float)) and s >= 0 for s in splits)
            or abs(sum(splits) - 1.0) > 1e-6):
        raise ValueError(
            f"splits must be three fractions (train, valid, test) >= 0 that sum to 1, got {splits!r}"
        )
    n_valid = int(round(total * splits[1]))
    n_test = int(round(total * splits[2]))
    n_train = total - n_valid - n_test
    if n_train < 1:
        raise ValueError(f"splits={splits!r} of {total} examples leave no training example")
    return n_train, n_valid, n_test


def _split(pairs, items, n_train, n_valid, src_lang, tgt_lang) -> Corpus:
    """A Corpus of the first ``n_train`` pairs, the next ``n_valid`` and the rest, with their items."""
    cut = (0, n_train, n_train + n_valid, len(pairs))
    parts = [slice(cut[i], cut[i + 1]) for i in range(3)]
    return Corpus(
        train=pairs[parts[0]], valid=pairs[parts[1]], test=pairs[parts[2]],
        numbers={name: items[p] for name, p in zip(("train", "valid", "test"), parts)},
        src_lang=src_lang, tgt_lang=tgt_lang,
    )


def make_number_corpus(src_lang="fr", tgt_lang="en", max_number=99_999, size=30_000,
                       seed=0, splits=(0.8, 0.1, 0.1)) -> Corpus:
    """Numbers written in words in ``src_lang`` paired with the same numbers in ``tgt_lang``.

    ``size`` distinct numbers are drawn from ``0..max_number`` (a seeded random
    sample) and split **by number** into train / valid / test: no number of the
    test split was seen in training, so a model that scores well on it has
    learnt to translate, not to remember. The same seed gives the same corpus.

    The default, French to English below 100 000, has sources of 1 to 9
    tokens (``quatre-vingt-dix-sept``; ``soixante et onze mille trois cent
    quarante et un``) and targets of 1 to 7 (``ninety-seven``; ``seventy-one
    thousand , three hundred and forty-one``) under :class:`Tokenizer`, so
    ``max_len=10`` holds them with their ``<eos>`` / ``<bos>``. German sources
    split into morphemes take 1 to 9 tokens too (``sieben und neunzig``).

    Args:
        src_lang, tgt_lang: language codes of ``num2words`` (see
            :func:`supported_languages`), e.g. ``"fr"``, ``"de"``, ``"en"``.
        max_number: the largest number that may be drawn.
        size: how many numbers to draw in all; ``None`` takes every number
            ``0..max_number``.
        seed: seed of the sample and of the split.
        splits: fractions (train, valid, test), summing to 1.

    Returns:
        a :class:`Corpus`; ``corpus.numbers`` holds the numbers of each split.

    The words are cached in memory and on disk (see ``$COURSE_PKG_CACHE_DIR``):
    the first call for a language takes about a second, later ones less.
    """
    _check_language(src_lang, "src_lang")
    _check_language(tgt_lang, "tgt_lang")
    max_number = _check_count("max_number", max_number, 0)
    population = max_number + 1
    if size is None:
        size = population
    size = _check_count("size", size, 1)
    if size > population:
        raise ValueError(
            f"size={size} distinct numbers cannot be drawn from 0..{max_number} "
            f"({population} numbers); lower size or raise max_number"
        )
    n_train, n_valid, _ = _split_sizes(size, splits)
    rng = np.random.default_rng(seed)
    numbers = [int(n) for n in rng.choice(population, size=size, replace=False)]
    sources = _words_for(numbers, src_lang)
    targets = _words_for(numbers, tgt_lang)
    return _split(list(zip(sources, targets)), numbers, n_train, n_valid, src_lang, tgt_lang)


def _distinct_lists(rng, population, length, count) -> list:
    """``count`` distinct tuples of ``length`` numbers from ``0..population - 1``, in drawn order."""
    if population ** length <= 4 * count:  # few lists exist: sample their codes without replacement
        codes = rng.choice(population ** length, size=count, replace=False)
        return [tuple(int(code) // population ** i % population for i in reversed(range(length)))
                for code in codes]
    seen, lists = set(), []  # many exist: draw and redraw the rare repeats
    while len(lists) < count:
        for row in rng.integers(0, population, size=(count - len(lists), length)).tolist():
            row = tuple(row)
            if row not in seen:
                seen.add(row)
                lists.append(row)
    return lists


def _list_counts(population, min_items, max_items, size) -> dict:
    """How many lists of each length: as even as the number of distinct lists allows.

    Lengths that have fewer distinct lists than their share (one-number lists
    of ``0..9``, say) take them all; the rest is shared among the others, the
    remainder going to the longest.
    """
    caps = {k: population ** k for k in range(min_items, max_items + 1)}
    counts, left = {}, size
    for i, k in enumerate(sorted(caps, key=lambda k: (caps[k], k))):
        counts[k] = min(caps[k], left // (len(caps) - i))
        left -= counts[k]
    return dict(sorted(counts.items()))


def make_number_list_corpus(src_lang="fr", tgt_lang="en", max_number=99, min_items=1,
                            max_items=12, size=20_000, seed=0, splits=(0.8, 0.1, 0.1),
                            separator=",") -> Corpus:
    """Lists of numbers in words, ``'trois, dix-sept, quarante'`` -> ``'three, seventeen, forty'``.

    The long-input version of :func:`make_number_corpus`, made to show what a
    fixed-size context vector cannot hold: each example is a list of
    ``min_items`` to ``max_items`` numbers drawn from ``0..max_number``,
    written in words in each language and joined with ``separator``. The
    lengths are spread evenly: about as many lists of each number of items
    (lengths with fewer distinct lists than their share, such as the 100
    one-number lists of ``0..99``, take them all and leave the rest to the
    others). ``size`` distinct lists are drawn (seeded) and split **by list**
    into train / valid / test: no list of the test split occurs in training,
    though its numbers do. The same seed gives the same corpus.

    The texts are written the way :class:`Tokenizer` writes them back (no space
    before a comma), so ``tokenizer.detokenize(tokenizer.tokenize(text)) == text``.
    With the defaults (French to English, 1 to 12 numbers below 100), a
    French number takes 1 to 3 tokens (``quatre-vingt-dix-sept``, ``soixante
    et onze``) and an English one 1 token, plus one per separator: sources
    take about two tokens per number (at most 47) and targets exactly two
    less one (at most 23).
    Above 999 the English words hold commas of their own (``six thousand,
    eight hundred``), which a comma separator makes ambiguous: keep
    ``max_number`` below 1000 or choose another ``separator``.

    Args:
        src_lang, tgt_lang: language codes of ``num2words`` (see
            :func:`supported_languages`), e.g. ``"fr"``, ``"de"``, ``"en"``.
        max_number: the largest number that may be drawn.
        min_items, max_items: the fewest and the most numbers in a list.
        size: how many distinct lists to draw in all.
        seed: seed of the sample and of the split.
        splits: fractions (train, valid, test), summing to 1.
        separator: the token between two numbers, a punctuation mark that
            :class:`Tokenizer` keeps as one token (``","``, ``";"``, ...).

    Returns:
        a :class:`Corpus`; ``corpus.numbers`` holds the lists of each split,
        as tuples of ints, pair by pair.
    """
    _check_language(src_lang, "src_lang")
    _check_language(tgt_lang, "tgt_lang")
    max_number = _check_count("max_number", max_number, 0)
    min_items = _check_count("min_items", min_items, 1)
    max_items = _check_count("max_items", max_items, 1)
    if min_items > max_items:
        raise ValueError(f"min_items={min_items} is more than max_items={max_items}")
    size = _check_count("size", size, 1)
    if (not isinstance(separator, str) or not separator or separator.isspace()
            or any(c.isalnum() or c == "_" for c in separator)
            or any(Tokenizer(lang).tokenize(separator) != [separator] for lang in (src_lang, tgt_lang))):
        raise ValueError(f"separator must be one punctuation mark that the Tokenizer keeps as one "
                         f"token, such as ',' or ';', got {separator!r}")
    population = max_number + 1
    available = sum(population ** k for k in range(min_items, max_items + 1))
    if size > available:
        raise ValueError(
            f"size={size} distinct lists cannot be drawn: lists of {min_items} to {max_items} "
            f"numbers from 0..{max_number} number only {available}; lower size or raise "
            f"max_number or max_items"
        )
    n_train, n_valid, _ = _split_sizes(size, splits)
    rng = np.random.default_rng(seed)
    lists = []
    for length, count in _list_counts(population, min_items, max_items, size).items():
        lists += _distinct_lists(rng, population, length, count)
    lists = [lists[i] for i in rng.permutation(size)]

    def texts(lang):
        used = sorted({n for numbers in lists for n in numbers})
        tokenizer = Tokenizer(lang)
        tokens = dict(zip(used, (tokenizer.tokenize(w) for w in _words_for(used, lang))))
        out = []
        for numbers in lists:
            pieces = tokens[numbers[0]][:]
            for n in numbers[1:]:
                pieces += [separator] + tokens[n]
            out.append(tokenizer.detokenize(pieces))
        return out

    return _split(list(zip(texts(src_lang), texts(tgt_lang))), lists, n_train, n_valid, src_lang, tgt_lang)


def split_pairs(pairs, splits=(0.8, 0.1, 0.1), seed=0) -> Corpus:
    """Shuffle ``pairs`` (seeded) and split them into a train / valid / test :class:`Corpus`."""
    pairs = list(pairs)
    if not pairs:
        raise ValueError("split_pairs got no pairs: the corpus is empty")
    n_train, n_valid, _ = _split_sizes(len(pairs), splits)
    order = np.random.default_rng(seed).permutation(len(pairs))
    shuffled = [pairs[i] for i in order]
    return Corpus(train=shuffled[:n_train], valid=shuffled[n_train:n_train + n_valid],
                  test=shuffled[n_train + n_valid:])


# ===================================================================== TSV files
def load_tsv_pairs(path, src_col=0, tgt_col=1, max_pairs=None) -> list:
    """Read sentence pairs from a tab-separated file.

    The public parallel corpora of Tatoeba / ManyThings come as
    ``English<TAB>French<TAB>attribution`` lines: ``src_col=0, tgt_col=1``
    reads English -> French, ``src_col=1, tgt_col=0`` French -> English.
    Blank lines are skipped; texts are stripped of surrounding whitespace.

    Args:
        path: the file (UTF-8, with or without a byte-order mark).
        src_col, tgt_col: column indices (from 0) of the source and target texts.
        max_pairs: stop after this many pairs (``None``: read everything).

    Returns:
        list of ``(source_text, target_text)`` pairs, in file order.

    Raises:
        ValueError: a line has too few columns or an empty text (the message
            names the file and the line number).
    """
    for name, value in (("src_col", src_col), ("tgt_col", tgt_col)):
        _check_count(name, value, 0)
    if max_pairs is not None:
        max_pairs = _check_count("max_pairs", max_pairs, 1)
    need = max(src_col, tgt_col) + 1
    pairs = []
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) < need:
                raise ValueError(
                    f"{path}:{lineno}: expected at least {need} tab-separated columns "
                    f"(src_col={src_col}, tgt_col={tgt_col}), found {len(cols)}: {line[:80]!r}"
                )
            src, tgt = cols[src_col].strip(), cols[tgt_col].strip()
            if not src or not tgt:
                which = "source" if not src else "target"
                raise ValueError(f"{path}:{lineno}: empty {which} text in {line[:80]!r}")
            pairs.append((src, tgt))
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
    return pairs


# ===================================================================== tokenizer
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

    :meth:`detokenize` puts the text back together with spacing rules: one
    space between words, none inside a split compound, none before ``. , ) %``
    and (except in French, which writes ``Va !``) ``! ? ; :``, none after ``(``.
    Where the text breaks a rule, :meth:`tokenize` records it with a
    ``<space>`` or ``<glue>`` token, so the round trip is lossless up to
    whitespace::

        tok.detokenize(tok.tokenize(text)) == " ".join(text.split())   # lowercased if lowercase

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
        """Split ``word`` into the fewest morphemes, or return it whole."""
        morphemes = self._morphemes
        if not morphemes:
            return [word]
        low = word.lower()
        n = len(low)
        if n != len(word):  # lowercasing changed the length (rare letters): keep it whole
            return [word]
        longest = self._longest_morpheme
        best = [None] * (n + 1)  # best[i]: fewest pieces covering low[:i], as end positions
        best[0] = []
        for i in range(1, n + 1):
            for j in range(max(0, i - longest), i):
                if best[j] is not None and low[j:i] in morphemes:
                    if best[i] is None or len(best[j]) + 1 < len(best[i]):
                        best[i] = best[j] + [i]
        if best[n] is None:
            return [word]
        ends = best[n]
        return [word[a:b] for a, b in zip([0] + ends[:-1], ends)]

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


# ========================================================================= vocab
class Vocab:
    """Token <-> id mapping with the special tokens ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3.

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
        min_freq = _check_count("min_freq", min_freq, 1)
        if max_size is not None:
            max_size = _check_count("max_size", max_size, len(SPECIAL_TOKENS))
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


# ====================================================================== batching
def pad_batch(sequences, pad_id=PAD_ID, max_len=None) -> np.ndarray:
    """Right-pad sequences of ids to the longest one.

    Args:
        sequences: non-empty list of sequences of integer ids (may differ in length).
        pad_id: the id written after each sequence.
        max_len: the longest length allowed (e.g. the model's ``max_len``);
            a longer sequence raises ``ValueError``.

    Shape:
        batch sequences of lengths L_i -> (batch, max L_i) int64.
    """
    if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
        sequences = list(sequences)
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_batch got no sequences: the batch is empty")
    rows = []
    for i, seq in enumerate(sequences):
        row = np.asarray(seq)
        if row.ndim != 1:
            raise ValueError(f"sequence {i} must be 1-D (a list of ids), got shape {row.shape}")
        if row.size and row.dtype.kind not in "iu":
            raise TypeError(f"sequence {i} must hold integer ids, got dtype {row.dtype}")
        if max_len is not None and row.size > max_len:
            raise ValueError(f"sequence {i} has length {row.size}, more than max_len={max_len}")
        rows.append(row)
    out = np.full((len(rows), max(r.size for r in rows)), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :row.size] = row
    return out


def encode_pairs(pairs, src_vocab, tgt_vocab, max_len=None):
    """Encode text pairs for teacher forcing.

    For a pair ``(x, y)``: ``src = x <eos>``, ``tgt_in = <bos> y`` (what the
    decoder reads), ``tgt_out = y <eos>`` (what it must predict, ``tgt_in``
    shifted left by one).

    Args:
        pairs: non-empty list of ``(source_text, target_text)``.
        src_vocab, tgt_vocab: :class:`Vocab` of each side.
        max_len: the longest sequence allowed (the model's ``max_len``);
            ``ValueError`` names the first pair that is longer.

    Returns:
        ``(src, tgt_in, tgt_out)`` int64 arrays, right-padded with ``<pad>`` = 0.

    Shape:
        N pairs -> src (N, S), tgt_in (N, T), tgt_out (N, T); S, T the longest
        encoded source / target (with its ``<eos>`` / ``<bos>``).
    """
    if isinstance(pairs, str) or not isinstance(pairs, Iterable):
        raise TypeError(f"pairs must be a list of (source_text, target_text), got {type(pairs).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("encode_pairs got no pairs: the corpus is empty")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"{name} must be a course_pkg.data.Vocab, got {type(vocab).__name__}")
    srcs, tgts = [], []
    for i, pair in enumerate(pairs):
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                or not all(isinstance(t, str) for t in pair)):
            raise TypeError(f"pair {i} must be (source_text, target_text), got {pair!r:.80}")
        src = src_vocab.encode(pair[0], add_eos=True)
        tgt = tgt_vocab.encode(pair[1])
        if max_len is not None:
            for side, length in (("source", len(src)), ("target", len(tgt) + 1)):
                if length > max_len:
                    raise ValueError(
                        f"pair {i} has a {side} of length {length} with its <eos>/<bos>, more "
                        f"than max_len={max_len}: {pair!r:.120}; raise max_len or drop long pairs"
                    )
        srcs.append(src)
        tgts.append(tgt)
    return (pad_batch(srcs), pad_batch([[BOS_ID] + t for t in tgts]),
            pad_batch([t + [EOS_ID] for t in tgts]))


def _lengths(arr, pad_id=PAD_ID):
    """Length of each right-padded row: index of its last non-pad id + 1."""
    used = arr != pad_id
    return np.where(used.any(axis=1), arr.shape[1] - np.argmax(used[:, ::-1], axis=1), 0)


class Batches:
    """Re-iterable NumPy batches ``(src, tgt_in, tgt_out)``, padded per batch.

    Made by :func:`make_batches`. Every pass (``for batch in batches``) is one
    epoch; with ``shuffle=True`` epoch ``e`` visits the examples in the order
    ``numpy.random.default_rng([seed, e]).permutation(N)``, so the framework
    loaders built on it give the very same batches.
    """

    def __init__(self, arrays, batch_size, shuffle, seed):
        self.arrays = arrays
        self.lengths = (_lengths(arrays[0]), _lengths(arrays[1]))
        self.batch_size, self.shuffle, self.seed = batch_size, bool(shuffle), seed
        self.epoch = 0

    @property
    def num_examples(self) -> int:
        return self.arrays[0].shape[0]

    def __len__(self):
        return -(-self.num_examples // self.batch_size)

    def __repr__(self):
        return (f"Batches(examples={self.num_examples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, seed={self.seed}, epoch={self.epoch})")

    def epoch_indices(self, epoch) -> list:
        """The example indices of each batch of ``epoch``."""
        n = self.num_examples
        order = (np.random.default_rng([self.seed, epoch]).permutation(n)
                 if self.shuffle else np.arange(n))
        return [order[i:i + self.batch_size] for i in range(0, n, self.batch_size)]

    def next_epoch(self) -> list:
        """:meth:`epoch_indices` of the next epoch, and count it."""
        indices = self.epoch_indices(self.epoch)
        self.epoch += 1
        return indices

    def take(self, indices):
        """The batch of these examples, cut to its longest source and target.

        Shape:
            (batch,) indices -> src (batch, S_b), tgt_in (batch, T_b), tgt_out (batch, T_b) int64.
        """
        indices = np.asarray(indices)
        src_len = int(self.lengths[0][indices].max(initial=0))
        tgt_len = int(self.lengths[1][indices].max(initial=0))
        src, tgt_in, tgt_out = self.arrays
        return (src[indices, :src_len], tgt_in[indices, :tgt_len], tgt_out[indices, :tgt_len])

    def __iter__(self):
        for indices in self.next_epoch():
            yield self.take(indices)


def _as_arrays(data, src_vocab, tgt_vocab, max_len):
    """``(src, tgt_in, tgt_out)`` int64 arrays from pairs (encoded) or arrays (checked)."""
    if isinstance(data, tuple) and len(data) == 3 and all(isinstance(a, np.ndarray) for a in data):
        src, tgt_in, tgt_out = data
        for name, a in zip(("src", "tgt_in", "tgt_out"), data):
            if a.ndim != 2 or a.dtype.kind not in "iu":
                raise ValueError(f"{name} must be a 2-D integer array (N, length), got "
                                 f"shape {a.shape} dtype {a.dtype}")
        if tgt_in.shape != tgt_out.shape or src.shape[0] != tgt_in.shape[0]:
            raise ValueError(
                f"arrays must be src (N, S), tgt_in (N, T), tgt_out (N, T), got shapes "
                f"{src.shape}, {tgt_in.shape}, {tgt_out.shape}"
            )
        if src.shape[0] == 0:
            raise ValueError("make_batches got no examples: the corpus is empty")
        if max_len is not None:
            for name, a in zip(("src", "tgt_in"), (src, tgt_in)):
                longest = int(_lengths(a).max())
                if longest > max_len:
                    raise ValueError(f"{name} holds a sequence of length {longest}, more than "
                                     f"max_len={max_len}")
        return tuple(a.astype(np.int64, copy=False) for a in data)
    if src_vocab is None or tgt_vocab is None:
        raise ValueError("make_batches needs src_vocab and tgt_vocab to encode text pairs "
                         "(or pass the (src, tgt_in, tgt_out) arrays of encode_pairs)")
    return encode_pairs(data, src_vocab, tgt_vocab, max_len)


def make_batches(pairs_or_arrays, src_vocab=None, tgt_vocab=None, batch_size=64,
                 shuffle=False, seed=0, max_len=None) -> Batches:
    """NumPy batches ``(src, tgt_in, tgt_out)``; the framework versions wrap this.

    ``course_pkg.torch.data.make_batches`` and
    ``course_pkg.tensorflow.data.make_batches`` take the same arguments and
    yield the same batches as tensors.

    Args:
        pairs_or_arrays: ``(source_text, target_text)`` pairs, or the
            ``(src, tgt_in, tgt_out)`` arrays of :func:`encode_pairs`.
        src_vocab, tgt_vocab: :class:`Vocab` to encode pairs (unused for arrays).
        batch_size: examples per batch (the last batch may be smaller).
        shuffle: visit the examples in a new seeded order every epoch.
        seed: seed of the shuffling.
        max_len: the longest sequence allowed (``ValueError`` beyond it).

    Returns:
        a re-iterable :class:`Batches`.

    Shape:
        each batch: src (batch, S_b), tgt_in (batch, T_b), tgt_out (batch, T_b)
        int64, padded to the longest sequence of the batch.
    """
    batch_size = _check_count("batch_size", batch_size, 1)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    return Batches(_as_arrays(pairs_or_arrays, src_vocab, tgt_vocab, max_len),
                   batch_size, shuffle, int(seed))
