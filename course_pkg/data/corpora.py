"""Corpora of sentence pairs: numbers in words, lists of numbers, any pairs split three ways."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..common.arguments import check_count, check_language
from .num2words_cache import supported_languages, words_for
from .tokenizer import Tokenizer
from .tsv import EVERYDAY_TSV, load_tsv_pairs


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


def split_sizes(total, splits):
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


def split_corpus(pairs, items, n_train, n_valid, src_lang, tgt_lang) -> Corpus:
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
    check_language(src_lang, supported_languages(), "src_lang")
    check_language(tgt_lang, supported_languages(), "tgt_lang")
    max_number = check_count("max_number", max_number, 0)
    population = max_number + 1
    if size is None:
        size = population
    size = check_count("size", size, 1)
    if size > population:
        raise ValueError(
            f"size={size} distinct numbers cannot be drawn from 0..{max_number} "
            f"({population} numbers); lower size or raise max_number"
        )
    n_train, n_valid, _ = split_sizes(size, splits)
    rng = np.random.default_rng(seed)
    numbers = [int(n) for n in rng.choice(population, size=size, replace=False)]
    sources = words_for(numbers, src_lang)
    targets = words_for(numbers, tgt_lang)
    return split_corpus(list(zip(sources, targets)), numbers, n_train, n_valid, src_lang, tgt_lang)


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


def _checked_list_arguments(src_lang, tgt_lang, max_number, min_items, max_items, size, separator):
    """``(max_number, min_items, max_items, size)`` of :func:`make_number_list_corpus`, checked;
    ``ValueError`` for languages, counts or a separator it cannot use, or more lists than exist."""
    check_language(src_lang, supported_languages(), "src_lang")
    check_language(tgt_lang, supported_languages(), "tgt_lang")
    max_number = check_count("max_number", max_number, 0)
    min_items = check_count("min_items", min_items, 1)
    max_items = check_count("max_items", max_items, 1)
    if min_items > max_items:
        raise ValueError(f"min_items={min_items} is more than max_items={max_items}")
    size = check_count("size", size, 1)
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
    return max_number, min_items, max_items, size


def _list_texts(lists, lang, separator):
    """Each list of ``lists`` written in words of ``lang``, the numbers joined by ``separator``
    the way :class:`Tokenizer` writes text back."""
    used = sorted({n for numbers in lists for n in numbers})
    tokenizer = Tokenizer(lang)
    tokens = dict(zip(used, (tokenizer.tokenize(w) for w in words_for(used, lang))))
    out = []
    for numbers in lists:
        pieces = tokens[numbers[0]][:]
        for n in numbers[1:]:
            pieces += [separator] + tokens[n]
        out.append(tokenizer.detokenize(pieces))
    return out


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
    max_number, min_items, max_items, size = _checked_list_arguments(
        src_lang, tgt_lang, max_number, min_items, max_items, size, separator)
    n_train, n_valid, _ = split_sizes(size, splits)
    rng, population = np.random.default_rng(seed), max_number + 1
    lists = []
    for length, count in _list_counts(population, min_items, max_items, size).items():
        lists += _distinct_lists(rng, population, length, count)
    lists = [lists[i] for i in rng.permutation(size)]
    pairs = list(zip(_list_texts(lists, src_lang, separator), _list_texts(lists, tgt_lang, separator)))
    return split_corpus(pairs, lists, n_train, n_valid, src_lang, tgt_lang)


def make_everyday_corpus(src_lang="fr", tgt_lang="en") -> Corpus:
    """The course's everyday sentence pairs, in their shipped train / valid / test split.

    Everyday sentences of 3 to 15 words (questions, negations, several tenses,
    numbers, names), written for the course in English and French sentence by
    sentence and released CC0: nothing is downloaded. The split is fixed (the
    files :data:`EVERYDAY_TSV`), by sentence: no English or French sentence of
    the test split occurs in training.

    Args:
        src_lang, tgt_lang: ``"fr"`` and ``"en"`` in either order.

    Returns:
        a :class:`Corpus` of ``(source_text, target_text)`` pairs.
    """
    langs = ("en", "fr")
    if src_lang not in langs or tgt_lang not in langs or src_lang == tgt_lang:
        raise ValueError(f"src_lang and tgt_lang must be 'fr' and 'en' (either order), "
                         f"got {src_lang!r} and {tgt_lang!r}")
    cols = dict(src_col=langs.index(src_lang), tgt_col=langs.index(tgt_lang))
    splits = {name: load_tsv_pairs(path, **cols) for name, path in EVERYDAY_TSV.items()}
    return Corpus(train=splits["train"], valid=splits["valid"], test=splits["test"],
                  src_lang=src_lang, tgt_lang=tgt_lang)


def split_pairs(pairs, splits=(0.8, 0.1, 0.1), seed=0) -> Corpus:
    """Shuffle ``pairs`` (seeded) and split them into a train / valid / test :class:`Corpus`."""
    pairs = list(pairs)
    if not pairs:
        raise ValueError("split_pairs got no pairs: the corpus is empty")
    n_train, n_valid, _ = split_sizes(len(pairs), splits)
    order = np.random.default_rng(seed).permutation(len(pairs))
    shuffled = [pairs[i] for i in order]
    return Corpus(train=shuffled[:n_train], valid=shuffled[n_train:n_train + n_valid],
                  test=shuffled[n_train + n_valid:])
