"""The number-list corpus (course_pkg.data.make_number_list_corpus): long inputs for chapters 1-2."""

from collections import Counter

import pytest
from helpers import assert_disjoint_splits
from num2words import num2words

from course_pkg import data as D


@pytest.fixture(scope="module")
def lists():
    return D.make_number_list_corpus(size=6000)  # fr -> en, 1 to 12 numbers below 100


def test_pairs_are_the_lists_in_words(lists):
    assert (len(lists.train), len(lists.valid), len(lists.test)) == (4800, 600, 600)
    assert (lists.src_lang, lists.tgt_lang) == ("fr", "en")
    for split in ("train", "valid", "test"):
        pairs, numbers = getattr(lists, split), lists.numbers[split]
        assert len(pairs) == len(numbers)
        for items, (src, tgt) in list(zip(numbers, pairs))[:40]:
            assert src == ", ".join(num2words(n, lang="fr") for n in items)
            assert tgt == ", ".join(num2words(n, lang="en") for n in items)
    everything = [n for split in lists.numbers.values() for items in split for n in items]
    assert min(everything) >= 0 and max(everything) <= 99


def test_list_corpus_is_deterministic_per_seed():
    a = D.make_number_list_corpus(size=1500, seed=0)
    b = D.make_number_list_corpus(size=1500, seed=0)
    c = D.make_number_list_corpus(size=1500, seed=1)
    assert (a.train, a.valid, a.test, a.numbers) == (b.train, b.valid, b.test, b.numbers)
    assert a.train != c.train


def test_splits_are_disjoint_by_list(lists):
    assert_disjoint_splits(lists, 6000)  # no list twice


def test_lengths_are_spread_from_short_to_long(lists):
    counts = Counter(len(items) for split in lists.numbers.values() for items in split)
    assert sorted(counts) == list(range(1, 13))
    assert counts[1] == 100  # only 100 one-number lists exist: all are taken
    others = [counts[k] for k in range(2, 13)]
    assert max(others) - min(others) <= 1  # the rest shared evenly
    assert sum(counts.values()) == 6000
    # every split holds short and long lists
    for split in lists.numbers.values():
        lengths = {len(items) for items in split}
        assert min(lengths) <= 2 and max(lengths) == 12


def test_tokenizer_round_trips_lists_with_one_separator_token(lists):
    src_tok, tgt_tok = D.Tokenizer("fr"), D.Tokenizer("en")
    for src, tgt in lists.train[:500] + lists.test:
        src_tokens, tgt_tokens = src_tok.tokenize(src), tgt_tok.tokenize(tgt)
        assert src_tok.detokenize(src_tokens) == src
        assert tgt_tok.detokenize(tgt_tokens) == tgt
        assert D.SPACE_TOKEN not in src_tokens + tgt_tokens
        assert D.GLUE_TOKEN not in src_tokens + tgt_tokens
    # one separator token between two numbers
    items, (src, tgt) = lists.numbers["train"][0], lists.train[0]
    assert src_tok.tokenize(src).count(",") == len(items) - 1
    assert tgt_tok.tokenize(tgt).count(",") == len(items) - 1


def test_vocab_encodes_and_decodes_back(lists):
    src_vocab = D.Vocab.build([s for s, _ in lists.train], D.Tokenizer("fr"))
    tgt_vocab = D.Vocab.build([t for _, t in lists.train], D.Tokenizer("en"))
    src, tgt_in, tgt_out = D.encode_pairs(lists.test, src_vocab, tgt_vocab)
    assert (src == D.UNK_ID).sum() == 0 and (tgt_out == D.UNK_ID).sum() == 0
    for row, (s, t) in zip(range(20), lists.test):
        assert src_vocab.decode(src[row]) == s
        assert tgt_vocab.decode(tgt_out[row]) == t


def test_languages_separator_item_counts_and_tiny_ranges():
    small = D.make_number_list_corpus("de", "en", max_number=9, min_items=3, max_items=5,
                                      size=300, seed=2, separator=";")
    assert {len(items) for split in small.numbers.values() for items in split} == {3, 4, 5}
    items, (src, tgt) = small.numbers["train"][0], small.train[0]
    assert src == "; ".join(num2words(n, lang="de") for n in items)
    assert tgt == "; ".join(num2words(n, lang="en") for n in items)
    every = D.make_number_list_corpus(max_number=2, min_items=1, max_items=2, size=12,
                                      splits=(0.5, 0.25, 0.25))
    assert sorted(x for split in every.numbers.values() for x in split) == sorted(
        [(a,) for a in range(3)] + [(a, b) for a in range(3) for b in range(3)])


@pytest.mark.parametrize("kwargs, match", [
    ({"src_lang": "xx"}, r"src_lang='xx' is not a language num2words supports"),
    ({"tgt_lang": 3}, "tgt_lang=3 is not a language num2words supports"),
    ({"max_number": -1}, "max_number must be an int >= 0, got -1"),
    ({"min_items": 0}, "min_items must be an int >= 1, got 0"),
    ({"max_items": 2.5}, r"max_items must be an int >= 1, got 2\.5"),
    ({"min_items": 4, "max_items": 3}, "min_items=4 is more than max_items=3"),
    ({"size": 0}, "size must be an int >= 1, got 0"),
    ({"size": 13, "max_number": 2, "max_items": 2}, "size=13 distinct lists cannot be drawn.* only 12"),
    ({"splits": (0.5, 0.5)}, "splits must be three fractions"),
    ({"separator": "et"}, "separator must be one punctuation mark .*, got 'et'"),
    ({"separator": " "}, "separator must be one punctuation mark .*, got ' '"),
    ({"separator": ",,"}, "separator must be one punctuation mark .*, got ',,'"),
])
def test_bad_list_corpus_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        D.make_number_list_corpus(**{"size": 100, **kwargs})
