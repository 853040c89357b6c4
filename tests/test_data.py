"""The framework-free data part: number corpus, tokenizer, vocabulary, TSV files, batching."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_disjoint_splits
from num2words import num2words

from course_pkg import data as D
from course_pkg.data import num2words_cache

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fr_en():
    return D.make_number_corpus()  # the default corpus: fr -> en


@pytest.fixture(scope="module")
def fr_en_vocabs(fr_en):
    src = D.Vocab.build([s for s, _ in fr_en.train], D.Tokenizer("fr"))
    tgt = D.Vocab.build([t for _, t in fr_en.train], D.Tokenizer("en"))
    return src, tgt


@pytest.fixture(scope="module")
def de_en():
    return D.make_number_corpus("de", "en", size=5000, seed=3)


# ------------------------------------------------------------------ number corpus
def test_number_words_writes_97_in_french_english_and_german():
    assert D.number_words(97, "fr") == "quatre-vingt-dix-sept"
    assert D.number_words(97, "en") == "ninety-seven"
    assert D.number_words(97, "de") == "siebenundneunzig"


def test_corpus_pairs_are_the_numbers_in_words(fr_en):
    assert (len(fr_en.train), len(fr_en.valid), len(fr_en.test)) == (24000, 3000, 3000)
    for split in ("train", "valid", "test"):
        pairs, numbers = getattr(fr_en, split), fr_en.numbers[split]
        assert len(pairs) == len(numbers)
        for n, pair in list(zip(numbers, pairs))[:30]:
            assert pair == (num2words(n, lang="fr"), num2words(n, lang="en"))
    everything = sum(fr_en.numbers.values(), [])
    assert min(everything) >= 0 and max(everything) <= 99_999
    assert "train=24000" in repr(fr_en)


def test_splits_are_disjoint_by_number(fr_en):
    assert_disjoint_splits(fr_en, 30000)  # no number twice


def test_corpus_is_deterministic_per_seed(fr_en):
    again = D.make_number_corpus()
    assert again.train == fr_en.train and again.test == fr_en.test
    small = D.make_number_corpus(size=2000, seed=0)
    other = D.make_number_corpus(size=2000, seed=1)
    assert small.train == D.make_number_corpus(size=2000, seed=0).train
    assert other.test != small.test
    assert set(other.numbers["test"]) != set(small.numbers["test"])


def test_corpus_of_every_number_up_to_max_number_with_custom_splits():
    c = D.make_number_corpus("fr", "en", max_number=99, size=None, seed=0, splits=(0.5, 0.25, 0.25))
    assert (len(c.train), len(c.valid), len(c.test)) == (50, 25, 25)
    assert sorted(sum(c.numbers.values(), [])) == list(range(100))
    assert ("quatre-vingt-dix-sept", "ninety-seven") in c.train + c.valid + c.test


@pytest.mark.parametrize("lang", ["fr", "de", "en", "nl"])
def test_fast_converter_writes_what_num2words_writes(lang):
    convert = num2words_cache.fast_converter(lang, 10**6).to_cardinal
    numbers = np.random.default_rng(0).choice(10**6, 300, replace=False).tolist() + [10**6, 80, 180_080]
    assert [convert(n) for n in numbers] == [num2words(n, lang=lang) for n in numbers]


def test_unknown_language_raises_value_error_naming_valid_codes():
    with pytest.raises(ValueError, match=r"src_lang='xx'.*'fr'"):
        D.make_number_corpus("xx", "en")
    with pytest.raises(ValueError, match=r"tgt_lang='english'.*'en'"):
        D.make_number_corpus("fr", "english")
    with pytest.raises(ValueError, match="not a language num2words supports"):
        D.number_words(3, "klingon")
    assert {"de", "en", "fr"} <= set(D.supported_languages())


@pytest.mark.parametrize("kwargs, match", [
    ({"max_number": 9, "size": 11}, r"size=11 distinct numbers cannot be drawn from 0\.\.9"),
    ({"size": 0}, "size must be an int >= 1"),
    ({"max_number": -1}, "max_number must be an int >= 0"),
    ({"splits": (0.8, 0.1)}, "splits must be three fractions"),
    ({"splits": (0.5, 0.1, 0.1)}, "sum to 1"),
    ({"size": 2, "splits": (0.0, 0.5, 0.5)}, "leave no training example"),
])
def test_bad_corpus_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        D.make_number_corpus(**kwargs)


def test_disk_cache_is_written_atomically_read_back_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_PKG_CACHE_DIR", str(tmp_path))
    num2words_cache.forget_words()
    assert D.number_words(97, "fr") == "quatre-vingt-dix-sept"
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.endswith("-fr.json")  # no temp file left
    assert json.loads(files[0].read_text(encoding="utf-8")) == {"97": "quatre-vingt-dix-sept"}
    # A fresh process reads the disk cache instead of calling num2words.
    files[0].write_text(json.dumps({"97": "from the cache"}), encoding="utf-8")
    num2words_cache.forget_words()
    assert D.number_words(97, "fr") == "from the cache"
    # An empty COURSE_PKG_CACHE_DIR turns the disk cache off.
    monkeypatch.setenv("COURSE_PKG_CACHE_DIR", "")
    num2words_cache.forget_words()
    assert D.number_words(97, "fr") == "quatre-vingt-dix-sept"


def test_split_pairs_shuffles_by_seed_and_keeps_every_pair():
    pairs = [(f"s{i}", f"t{i}") for i in range(10)]
    c = D.split_pairs(pairs, seed=0)
    assert (len(c.train), len(c.valid), len(c.test)) == (8, 1, 1)
    assert sorted(c.train + c.valid + c.test) == sorted(pairs)
    assert D.split_pairs(pairs, seed=0).train == c.train
    assert D.split_pairs(pairs, seed=1).train != c.train
    with pytest.raises(ValueError, match="corpus is empty"):
        D.split_pairs([])


# ------------------------------------------------------------------------ tokenizer
def test_german_compound_splits_into_morphemes_and_joins_back():
    tok = D.Tokenizer("de")
    assert tok.tokenize("siebenundneunzig") == ["sieben", "und", "neunzig"]
    assert tok.detokenize(["sieben", "und", "neunzig"]) == "siebenundneunzig"
    vocab = D.Vocab.build(["siebenundneunzig"], tok)
    ids = vocab.encode("siebenundneunzig", add_bos=True, add_eos=True)
    assert len(ids) == 5 and ids[0] == D.BOS_ID and ids[-1] == D.EOS_ID
    assert vocab.decode(ids) == "siebenundneunzig"


def test_german_corpus_needs_few_morpheme_tokens_and_round_trips(de_en):
    tok = D.Tokenizer("de")
    assert tok.tokenize(D.number_words(12397, "de")) == [
        "zwölf", "tausend", "drei", "hundert", "sieben", "und", "neunzig"]
    assert tok.tokenize("eine Million zweihundert") == ["eine", "Million", "zwei", "hundert"]
    vocab = D.Vocab.build([s for s, _ in de_en.train], tok)
    # ~30 morphemes instead of one token per number.
    assert len(vocab) < 40
    for src, _ in de_en.train + de_en.valid + de_en.test:
        tokens = tok.tokenize(src)
        assert len(tokens) <= 9
        assert tok.detokenize(tokens) == src
        assert vocab.decode(vocab.encode(src)) == src


def test_default_corpus_round_trips_exactly(fr_en, fr_en_vocabs):
    src_vocab, tgt_vocab = fr_en_vocabs
    longest = [0, 0]
    for src, tgt in fr_en.train + fr_en.valid + fr_en.test:
        s_ids, t_ids = src_vocab.encode(src), tgt_vocab.encode(tgt)
        assert D.UNK_ID not in s_ids and D.UNK_ID not in t_ids
        assert src_vocab.decode(s_ids) == src
        assert tgt_vocab.decode(t_ids) == tgt
        longest = [max(longest[0], len(s_ids)), max(longest[1], len(t_ids))]
    assert longest == [9, 7]  # documented in make_number_corpus


def test_hyphenated_words_stay_whole_and_commas_split_off():
    en = D.Tokenizer("en")
    assert en.tokenize("ninety-nine thousand, nine hundred") == [
        "ninety-nine", "thousand", ",", "nine", "hundred"]
    assert D.Tokenizer("fr").tokenize("quatre-vingt-dix-sept") == ["quatre-vingt-dix-sept"]


@pytest.mark.parametrize("lang, text, tokens", [
    ("en", "Hello, world!", ["Hello", ",", "world", "!"]),
    ("en", "I don't know.", ["I", "don't", "know", "."]),
    ("fr", "Où est la gare ?", ["Où", "est", "la", "gare", "?"]),
    ("fr", "C'est (très) bien.", ["C'est", "(", "très", ")", "bien", "."]),
    ("en", "Où est la gare ?", ["Où", "est", "la", "gare", D.SPACE_TOKEN, "?"]),
    ("en", "3.5", ["3", ".", D.GLUE_TOKEN, "5"]),
    ("de", "eins und zwei", ["eins", D.SPACE_TOKEN, "und", D.SPACE_TOKEN, "zwei"]),
    ("en", "", []),
])
def test_sentence_tokens_and_detokenize_round_trip(lang, text, tokens):
    tok = D.Tokenizer(lang)
    assert tok.tokenize(text) == tokens
    assert tok.detokenize(tokens) == text


@pytest.mark.parametrize("text", [
    "He said \"hi\" -- twice!", "  spaced   out\ttext  ", "a\u202f!", "e-mail: x@y.z", "«Oui», dit-il.",
])
def test_round_trip_is_lossless_up_to_whitespace(text):
    for lang in ("en", "fr", "de"):
        tok = D.Tokenizer(lang)
        assert tok.detokenize(tok.tokenize(text)) == " ".join(text.split())


def test_lowercase_tokenizer_lowercases_before_splitting():
    tok = D.Tokenizer("fr", lowercase=True)
    assert tok.tokenize("Où est la Gare ?") == ["où", "est", "la", "gare", "?"]
    assert tok.detokenize(tok.tokenize("Où est la Gare ?")) == "où est la gare ?"


def test_sample_file_round_trips_with_canonical_spacing():
    pairs = D.load_tsv_pairs(D.SAMPLE_TSV)
    en, fr = D.Tokenizer("en"), D.Tokenizer("fr")
    for e, f in pairs:
        assert en.detokenize(en.tokenize(e)) == e
        assert fr.detokenize(fr.tokenize(f)) == f
        assert D.SPACE_TOKEN not in fr.tokenize(f) + en.tokenize(e)  # canonical spacing
        assert D.GLUE_TOKEN not in fr.tokenize(f) + en.tokenize(e)


# -------------------------------------------------------------------------- TSV
def test_load_tsv_reads_sample_columns_and_max_pairs():
    pairs = D.load_tsv_pairs(D.SAMPLE_TSV)
    assert len(pairs) == 20
    assert pairs[0] == ("Hello!", "Bonjour !")
    assert D.load_tsv_pairs(D.SAMPLE_TSV, src_col=1, tgt_col=0, max_pairs=2) == [
        ("Bonjour !", "Hello!"), ("Merci.", "Thank you.")]
    assert all("\t" not in s and "\t" not in t for s, t in pairs)


def test_load_tsv_skips_blank_lines_and_reports_bad_ones(tmp_path):
    good = tmp_path / "good.tsv"
    good.write_text("\ufeffGo.\tVa !\tCC-BY\n\n   \nHi.\tSalut.\r\n", encoding="utf-8")
    assert D.load_tsv_pairs(good) == [("Go.", "Va !"), ("Hi.", "Salut.")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("Go.\tVa !\tCC-BY\n\nno tab on this line\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.tsv:3: expected at least 2 tab-separated columns"):
        D.load_tsv_pairs(bad)
    empty = tmp_path / "empty.tsv"
    empty.write_text("Go.\tVa !\n\t Salut.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty\.tsv:2: empty source text"):
        D.load_tsv_pairs(empty)
    with pytest.raises(ValueError, match=r"found 3"):
        D.load_tsv_pairs(good.parent / "good.tsv", src_col=0, tgt_col=3)


# ------------------------------------------------------------------------- vocab
def test_vocab_puts_specials_first_then_tokens_by_frequency():
    vocab = D.Vocab.build(["b a b", "c b a", "d"], D.Tokenizer(), min_freq=1)
    assert vocab.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2, 3)
    assert vocab.itos[4:] == ["b", "a", "c", "d"]  # by frequency, ties alphabetical
    assert D.Vocab.build(["b a b", "c b a", "d"], min_freq=2).itos[4:] == ["b", "a"]
    assert D.Vocab.build(["b a b", "c b a", "d"], max_size=5).itos[4:] == ["b"]
    assert vocab.encode("a z", add_eos=True) == [5, D.UNK_ID, D.EOS_ID]
    assert vocab.decode([D.BOS_ID, 5, 3, D.EOS_ID, 4, 0]) == "a <unk>"
    assert vocab.decode(np.array([1, 5, 2, 0]), strip_special=False) == "<bos> a <eos> <pad>"
    assert vocab.decode([]) == ""


def test_vocab_rejects_bad_ids_tokens_and_json():
    vocab = D.Vocab.build(["a b"])
    with pytest.raises(ValueError, match="decode expects a 1-D sequence of ids"):
        vocab.decode([[4, 5]])
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        vocab.decode([4, 6])
    with pytest.raises(TypeError, match="integer ids"):
        vocab.decode([4.0])
    with pytest.raises(ValueError, match="must start with the special tokens"):
        D.Vocab(["a", "b"])
    with pytest.raises(ValueError, match="tokens must be unique, repeated"):
        D.Vocab(list(D.SPECIAL_TOKENS) + ["a", "a"])
    with pytest.raises(TypeError, match="single str"):
        D.Vocab.build("a b")
    with pytest.raises(ValueError, match="not a course_pkg Vocab JSON"):
        D.Vocab.from_json('{"tokens": []}')


def test_vocab_json_save_and_load_round_trip(tmp_path, fr_en_vocabs):
    src_vocab, _ = fr_en_vocabs
    path = tmp_path / "src_vocab.json"
    src_vocab.save(path)
    loaded = D.Vocab.load(path)
    assert loaded == src_vocab and loaded.tokenizer == D.Tokenizer("fr")
    text = "quatre-vingt-dix-sept mille"
    assert loaded.encode(text) == src_vocab.encode(text)
    de = D.Vocab.build(["siebenundneunzig"], D.Tokenizer("de", lowercase=True))
    again = D.Vocab.from_json(de.to_json())
    assert again.decode(again.encode("Siebenundneunzig")) == "siebenundneunzig"


# ---------------------------------------------------------------------- batching
def test_pad_batch_right_pads_to_longest_and_checks_ids():
    out = D.pad_batch([[5, 6, 7], [8], []])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[5, 6, 7], [8, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(D.pad_batch([[1], [2, 3]], pad_id=9), [[1, 9], [2, 3]])
    with pytest.raises(ValueError, match="sequence 1 has length 3, more than max_len=2"):
        D.pad_batch([[1], [1, 2, 3]], max_len=2)
    with pytest.raises(ValueError, match="no sequences: the batch is empty"):
        D.pad_batch([])
    with pytest.raises(TypeError, match="sequence 0 must hold integer ids"):
        D.pad_batch([[1.5, 2.0]])


def test_encode_pairs_builds_teacher_forcing_arrays(fr_en_vocabs):
    src_vocab, tgt_vocab = fr_en_vocabs
    pairs = [("quatre-vingt-dix-sept", "ninety-seven"), ("cent mille", "one hundred thousand")]
    src, tgt_in, tgt_out = D.encode_pairs(pairs, src_vocab, tgt_vocab)
    assert src.dtype == tgt_in.dtype == tgt_out.dtype == np.int64
    assert src.shape == (2, 3) and tgt_in.shape == tgt_out.shape == (2, 4)
    np.testing.assert_array_equal(src[0], src_vocab.encode("quatre-vingt-dix-sept", add_eos=True) + [0])
    assert list(tgt_in[:, 0]) == [D.BOS_ID] * 2
    y = tgt_in[:, 1:] != 0  # the target tokens: tgt_out is tgt_in shifted left by one
    np.testing.assert_array_equal(tgt_in[:, 1:][y], tgt_out[:, :-1][y])
    assert list(tgt_out[0]) == tgt_vocab.encode("ninety-seven", add_eos=True) + [0, 0]
    assert list(tgt_out[1]) == tgt_vocab.encode("one hundred thousand", add_eos=True)
    assert tgt_vocab.decode(tgt_out[1]) == "one hundred thousand"


def test_encode_pairs_rejects_empty_long_and_malformed_pairs(fr_en_vocabs):
    src_vocab, tgt_vocab = fr_en_vocabs
    with pytest.raises(ValueError, match="corpus is empty"):
        D.encode_pairs([], src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match=r"pair 1 has a target of length 5 .* max_len=3"):
        D.encode_pairs([("un", "one"), ("cent un", "one hundred and one")], src_vocab, tgt_vocab,
                       max_len=3)
    with pytest.raises(ValueError, match=r"pair 0 has a source of length 3 .* max_len=2"):
        D.encode_pairs([("cent un", "one")], src_vocab, tgt_vocab, max_len=2)
    with pytest.raises(TypeError, match="pair 0 must be"):
        D.encode_pairs([("un",)], src_vocab, tgt_vocab)
    with pytest.raises(TypeError, match="src_vocab must be"):
        D.encode_pairs([("un", "one")], None, tgt_vocab)


def test_pairs_max_len_is_the_smallest_max_len_encode_pairs_accepts(fr_en_vocabs):
    src_vocab, tgt_vocab = fr_en_vocabs
    pairs = [("un", "one"), ("cent un", "one hundred and one")]  # the target: 4 words + <bos>
    assert D.pairs_max_len(pairs, src_vocab, tgt_vocab) == 5
    D.encode_pairs(pairs, src_vocab, tgt_vocab, max_len=5)
    with pytest.raises(ValueError, match="max_len=4"):
        D.encode_pairs(pairs, src_vocab, tgt_vocab, max_len=4)
    assert D.pairs_max_len([("cent un", "one")], src_vocab, tgt_vocab) == 3  # the source: 2 words + <eos>


def test_numpy_batches_cover_each_example_once_per_epoch(fr_en, fr_en_vocabs):
    pairs = fr_en.train[:1000]
    arrays = D.encode_pairs(pairs, *fr_en_vocabs)
    batches = D.make_batches(pairs, *fr_en_vocabs, batch_size=64, shuffle=True, seed=0)
    assert len(batches) == 16
    epochs = [list(batches), list(batches)]
    for epoch in epochs:
        width = arrays[0].shape[1]
        src_rows = np.concatenate([np.pad(b[0], ((0, 0), (0, width - b[0].shape[1]))) for b in epoch])
        assert sorted(map(tuple, src_rows)) == sorted(map(tuple, arrays[0]))  # all 1000, once
        for src, tgt_in, tgt_out in epoch:
            assert src.dtype == np.int64 and tgt_in.shape == tgt_out.shape
            assert (src[:, -1] != 0).any() and (tgt_out[:, -1] != 0).any()  # padded per batch
    first = [b[0] for b in epochs[0]]
    assert not all(np.array_equal(a, b) for a, b in zip(first, [b[0] for b in epochs[1]]))
    unshuffled = next(iter(D.make_batches(arrays, batch_size=4)))
    np.testing.assert_array_equal(unshuffled[2], arrays[2][:4, :unshuffled[2].shape[1]])
    with pytest.raises(ValueError, match="needs src_vocab and tgt_vocab"):
        D.make_batches(pairs)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        D.make_batches(arrays, batch_size=0)


def test_import_course_pkg_data_imports_no_framework():
    code = ("import sys, course_pkg, course_pkg.data\n"
            "bad = [m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules]\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]
