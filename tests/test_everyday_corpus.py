"""The everyday English-French corpus that ships with the course: size, variety, license, split."""

import collections
import re
import unicodedata

import pytest

from course_pkg import data as D

WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
PROVENANCE = "CC0-1.0: written for course_pkg, sentence by sentence"


def words(text):
    return WORD.findall(text.lower())


@pytest.fixture(scope="module")
def lines():
    """Every line of the three files, as (split, english, french, provenance)."""
    out = []
    for split, path in D.EVERYDAY_TSV.items():
        for line in path.read_text(encoding="utf-8").splitlines():
            out.append((split, *line.split("\t")))
    return out


def test_the_corpus_loads_through_load_tsv_pairs_in_its_fixed_split():
    corpus = D.make_everyday_corpus("fr", "en")
    sizes = (len(corpus.train), len(corpus.valid), len(corpus.test))
    assert sum(sizes) >= 3000
    assert len(corpus.valid) == len(corpus.test) == round(sum(sizes) / 10)
    assert corpus.train == [(f, e) for e, f in D.load_tsv_pairs(D.EVERYDAY_TSV["train"])]
    flipped = D.make_everyday_corpus("en", "fr")
    assert flipped.test == [(e, f) for f, e in corpus.test]
    assert (corpus.src_lang, corpus.tgt_lang) == ("fr", "en")


@pytest.mark.parametrize("langs", [("fr", "fr"), ("de", "en"), ("fr", None)])
def test_other_languages_are_refused(langs):
    with pytest.raises(ValueError, match="src_lang and tgt_lang must be 'fr' and 'en'"):
        D.make_everyday_corpus(*langs)


def test_every_line_carries_its_cc0_provenance_and_is_clean(lines):
    for split, en, fr, provenance in lines:
        assert provenance == PROVENANCE
        for text in (en, fr):
            assert text == unicodedata.normalize("NFC", text) == " ".join(text.split())
            assert 3 <= len(words(text)) <= 15, text


def test_no_sentence_occurs_twice_in_either_language_across_all_splits(lines):
    for column in (1, 2):
        keys = [" ".join(words(line[column])) for line in lines]
        assert len(set(keys)) == len(keys)


def test_each_language_has_at_least_2000_word_types(lines):
    assert len({w for line in lines for w in words(line[1])}) >= 2000
    assert len({w for line in lines for w in words(line[2])}) >= 2000


def test_no_sentence_frame_is_shared_by_more_than_one_percent_of_the_pairs(lines):
    # A frame keeps the 150 most frequent English words and blanks the others: "I bought three
    # apples." and "I bought two pears." share "i bought _ _" -- what a template would produce.
    counts = collections.Counter(w for line in lines for w in words(line[1]))
    frequent = {w for w, _ in counts.most_common(150)}
    frames = collections.Counter(" ".join(w if w in frequent else "_" for w in words(line[1]))
                                 for line in lines)
    frame, count = frames.most_common(1)[0]
    assert count <= len(lines) / 100, (frame, count)


def test_the_corpus_has_questions_negations_numbers_and_names(lines):
    english = [line[1] for line in lines]
    assert sum(e.endswith("?") for e in english) >= len(english) / 10
    negation = re.compile(r"\b(not|never|nothing|nobody|no)\b|n't")
    assert sum(bool(negation.search(e)) for e in english) >= len(english) / 10
    assert sum(bool(re.search(r"\d", e)) for e in english) >= len(english) / 20
