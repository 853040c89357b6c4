"""The course's subword tokenizers give Hugging Face's ids, offline.

The vocabulary files are written here (trained by the course or by ``tokenizers`` on a corpus
generated here), then loaded by ``transformers``' ``GPT2Tokenizer``/``GPT2TokenizerFast`` and
``BertTokenizerFast``, by the pure-Python ``BertTokenizerLegacy``, and by ``tokenizers.Tokenizer``
pipelines assembled from ``models``, ``normalizers``, ``pre_tokenizers`` and ``decoders``.

The reference is the ``tokenizers``-backed class in both versions: transformers 5's
``BertTokenizer``/``GPT2Tokenizer`` (``...Fast`` is the same class), transformers 4's ``...Fast``
classes, whose decode is compared with transformers 4's extra clean-up pass off (:func:`hf_decode`);
transformers 4's slow ``GPT2Tokenizer`` agrees on these files and is checked too, and its slow
``BertTokenizer`` is the pure-Python tokenizer that transformers 5 calls ``BertTokenizerLegacy``.
"""

import random
import warnings

import pytest

from course_pkg.subword import (
    BPE,
    ByteLevelBPE,
    WordPiece,
    bert_pre_tokenize,
    bytes_to_unicode,
    learn_merges,
    pre_tokenize,
    read_merges,
    read_vocab_json,
    subword_stats,
    train_bpe,
    train_byte_level_bpe,
    write_vocab_txt,
)

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers  # noqa: E402

TRANSFORMERS_4 = int(transformers.__version__.split(".")[0]) < 5


def hf_decode(tokenizer, ids, **options):
    """``tokenizer.decode(ids, **options)``; under transformers 4 ``clean_up_tokenization_spaces=False``.

    transformers 4 defaults it to true for BERT and then runs its Python ``clean_up_tokenization``
    over the whole text (``don ' t`` becomes ``don't``) after ``tokenizers``' decoder, whose token
    by token clean-up the course follows; transformers 5 defaults it to false and leaves the decoder's.
    """
    if TRANSFORMERS_4:
        options.setdefault("clean_up_tokenization_spaces", False)
    return tokenizer.decode(ids, **options)


TEXTS = [
    "", " ", "Hello world", "Hello world!", "HELLO World, MiXeD case",
    "Café naïve façade über niño señor", "decomposed e\u0301 and u\u0308ber",
    "1999 3.14 1,000 12345678 0.5%", "$5.00 + €3,50 = ?", "punctuation: (a) [b] {c} <d> 'e' \"f\" - -- ...",
    "don't can't won't I'm we're they've it's John's we'll he'd", "'s 're n't", "'tis a 'quoted' word",
    "emoji 👍 👍🏽 👨‍👩‍👧 🎉🎉 ❤️", "東京は日本の首都です。北京是中国的首都。",
    "한국어 텍스트 and Ελληνικά ΟΔΟΣ",
    "two  spaces", "tab\tand\ttabs\t\tdouble", "new\nlines\n\nand\r\nCRLF", "trailing spaces   ",
    "   leading spaces", "\n", "a\u00a0non-breaking\u2028line separator\u3000ideographic space",
    "unknown ☃ ⚡ ∑ symbols", "zero\u200bwidth\u200djoiner", "x" * 120, "supercalifragilisticexpialidocious",
]

_SYLLABLES = ("ka ro mi ta ne lu so pe ri va do ze fu ha gi mo be cu la ti na re se the an in on "
              "é ü ñ ça qu str ght ing ed er ly tion").split()


def make_corpus(sentences, seed=0):
    """``sentences`` sentences of made-up words (syllables), punctuation and numbers: many distinct words."""
    rng = random.Random(seed)
    lexicon = ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 5))) for _ in range(12000)]
    weights = [1 / (rank + 1) for rank in range(len(lexicon))]  # Zipf-like frequencies
    out = []
    for _ in range(sentences):
        words = rng.choices(lexicon, weights, k=rng.randint(5, 12))
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 2000)))
        words[0] = words[0].capitalize()
        out.append(" ".join(words) + rng.choice([".", "!", "?", ",", "'s", " 're"]))
    return out


CORPUS = make_corpus(400) + TEXTS


def naive_merges(word_counts, vocab_size, min_frequency, specials, suffix=None):
    """The textbook BPE trainer (recount every pair after every merge), and whether a tie decided a merge."""
    tokens = list(specials) + sorted({c for w in word_counts for c in w})
    if suffix:
        tokens += sorted({w[-1] + suffix for w in word_counts})
    ids = {t: i for i, t in enumerate(tokens)}
    words = {}
    for w, n in word_counts.items():
        symbols = list(w)
        if suffix:
            symbols[-1] += suffix
        words[tuple(ids[s] for s in symbols)] = words.get(tuple(ids[s] for s in symbols), 0) + n
    merges, tied = [], False
    while len(tokens) < vocab_size:
        counts = {}
        for w, n in words.items():
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + n
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < max(1, min_frequency):
            break
        tied |= sum(c == counts[best] for c in counts.values()) > 1
        new = tokens[best[0]] + tokens[best[1]]
        if new not in ids:
            ids[new] = len(tokens)
            tokens.append(new)
        merges.append((tokens[best[0]], tokens[best[1]]))
        merged = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if w[i:i + 2] == best:
                    out.append(ids[new])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return tokens, merges, tied


def _rust_bpe_trainer(texts, vocab_size, min_frequency, specials, suffix=None, byte_level=False):
    """Train ``tokenizers``' BPE; return ``(vocab dict, merges list)`` as its own files hold them."""
    model = models.BPE() if byte_level else models.BPE(unk_token=specials[0])
    if suffix:
        model = models.BPE(unk_token=specials[0], end_of_word_suffix=suffix)
    tok = Tokenizer(model)
    tok.pre_tokenizer = (pre_tokenizers.ByteLevel(add_prefix_space=False) if byte_level
                         else pre_tokenizers.Whitespace())
    options = {"initial_alphabet": pre_tokenizers.ByteLevel.alphabet()} if byte_level else {}
    if suffix:
        options["end_of_word_suffix"] = suffix
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                                       special_tokens=list(specials), show_progress=False,
                                                       **options))
    return tok


def _rust_files(tok, folder):
    folder.mkdir(exist_ok=True)
    tok.model.save(str(folder))
    vocab = read_vocab_json(folder / "vocab.json")
    return vocab, read_merges(folder / "merges.txt", vocab)


# ------------------------------------------------------------------ the course's BPE trainer
def test_the_incremental_trainer_learns_the_textbook_merges():
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3, "aaaa": 4, "aaa": 1, "banana": 2}
    for suffix in (None, "</w>"):
        for vocab_size in (10, 30, 60):
            tokens, merges = learn_merges(counts, vocab_size, min_frequency=1, special_tokens=["<unk>"],
                                          end_of_word_suffix=suffix)
            assert (tokens, merges) == naive_merges(counts, vocab_size, 1, ["<unk>"], suffix)[:2]
    from collections import Counter
    big = Counter(w for s in make_corpus(300, seed=3) for w in s.split())
    assert learn_merges(big, 500, min_frequency=2)[1] == naive_merges(big, 500, 2, [])[1]


@pytest.mark.parametrize("vocab_size, min_frequency", [(300, 0), (400, 2), (900, 3), (5000, 2)])
def test_train_bpe_learns_the_merges_of_tokenizers_bpetrainer(tmp_path, vocab_size, min_frequency):
    """Without an end-of-word suffix the ids of every symbol agree, so every tie-break does too."""
    ours = train_bpe(CORPUS, vocab_size, min_frequency=min_frequency, end_of_word_suffix=None)
    vocab, merges = _rust_files(_rust_bpe_trainer(CORPUS, vocab_size, min_frequency, ["<unk>"]), tmp_path)
    assert ours.get_vocab() == vocab
    assert ours.merges == merges
    assert len(merges) > 50


def test_with_a_suffix_they_agree_where_no_tie_decides(tmp_path):
    counts = {"lower": 4, "low": 8, "lowest": 5, "newest": 1}  # every merge has a unique best count
    corpus = [" ".join(w for w, n in counts.items() for _ in range(n))]
    assert not naive_merges(counts, 40, 2, ["<unk>"], "</w>")[2]
    ours = train_bpe(corpus, 40, min_frequency=2)
    assert ours.merges == [("l", "o"), ("w", "e"), ("lo", "we"), ("lo", "w</w>"), ("s", "t</w>"),
                           ("lowe", "st</w>"), ("lowe", "r</w>")]
    _, merges = _rust_files(_rust_bpe_trainer(corpus, 40, 2, ["<unk>"], "</w>"), tmp_path)
    assert ours.merges == merges


def test_where_they_differ_bpetrainer_numbers_word_final_symbols_in_hash_order(tmp_path):
    """``xa`` and ``xb`` tie: the course merges ``x a</w>`` (the smaller code point) every time;
    ``BpeTrainer`` numbers ``a</w>``/``b</w>`` in its hash map's order, which varies by run."""
    corpus = ["xa xb"]
    assert train_bpe(corpus, 7, min_frequency=1).merges == [("x", "a</w>")]
    firsts = set()
    for run in range(40):
        tok = _rust_bpe_trainer(corpus, 7, 1, ["<unk>"], "</w>")
        firsts.add(tuple(_rust_files(tok, tmp_path / str(run))[1]))
    assert firsts == {(("x", "a</w>"),), (("x", "b</w>"),)}


def test_where_they_differ_min_frequency_defaults(tmp_path):
    """The course stops at pairs seen once (min_frequency=2); BpeTrainer's default 0 merges them too."""
    corpus = ["the cat sat", "a dog"]
    ours = train_bpe(corpus, 100, end_of_word_suffix=None)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=100, special_tokens=["<unk>"],
                                                        show_progress=False))
    assert ours.merges == [("a", "t")]
    assert len(tok.get_vocab()) > ours.vocab_size and ("a", "t") == _rust_files(tok, tmp_path)[1][0]


def test_bpe_encodes_and_decodes_like_tokenizers_bpe_model(tmp_path):
    ours = train_bpe(CORPUS[:200], 600)
    ours.save(tmp_path / "vocab.json", tmp_path / "merges.txt")
    reloaded = BPE.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    rust = Tokenizer(models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"),
                                          unk_token="<unk>", end_of_word_suffix="</w>"))
    rust.pre_tokenizer = pre_tokenizers.Whitespace()
    rust.decoder = decoders.BPEDecoder(suffix="</w>")
    unknown = 0
    for text in TEXTS + CORPUS[200:260]:
        ids = ours.encode(text)
        assert ids == reloaded.encode(text) == rust.encode(text).ids, text
        assert ours.decode(ids) == rust.decode(ids), text
        unknown += ours.tokenize(text).count("<unk>")
        if "<unk>" not in ours.tokenize(text):
            assert ours.decode(ids) == " ".join(pre_tokenize(text))
    assert unknown > 10  # the texts do hold characters the corpus never had


def test_training_on_25k_words_reaches_4000_tokens_and_cuts_finer_than_200():
    corpus = make_corpus(3000, seed=1)
    words = sum(len(s.split()) for s in corpus)
    tok = train_bpe(corpus, 4000)
    assert 20_000 < words < 30_000 and tok.vocab_size == 4000
    small, large = train_bpe(corpus, 200), tok
    stats = [subword_stats(t, corpus[:300]) for t in (small, large)]
    assert stats[0]["tokens_per_word"] > stats[1]["tokens_per_word"] >= 1.0
    assert stats[1]["unk_rate"] == 0.0


# ------------------------------------------------------------------ GPT-2's byte-level BPE
@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt2")
    ours = train_byte_level_bpe(CORPUS, 700)
    ours.save(folder / "vocab.json", folder / "merges.txt")
    return folder / "vocab.json", folder / "merges.txt"


def test_bytes_to_unicode_is_gpt2s_table():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert (table[32], table[10], table[0], table[ord("a")], table[255]) == ("Ġ", "Ċ", "Ā", "a", "ÿ")
    assert sorted(table.values()) == sorted(pre_tokenizers.ByteLevel.alphabet())


@pytest.mark.parametrize("vocab_size, min_frequency", [(300, 2), (700, 2), (2000, 0)])
def test_byte_level_training_learns_the_merges_of_tokenizers(tmp_path, vocab_size, min_frequency):
    ours = train_byte_level_bpe(CORPUS, vocab_size, min_frequency=min_frequency)
    tok = _rust_bpe_trainer(CORPUS, vocab_size, min_frequency, ["<|endoftext|>"], byte_level=True)
    vocab, merges = _rust_files(tok, tmp_path)
    assert ours.get_vocab() == vocab and ours.merges == merges


def _gpt2_oracles(vocab_file, merges_file):
    from transformers import GPT2Tokenizer, GPT2TokenizerFast

    hf = GPT2Tokenizer(str(vocab_file), str(merges_file))  # transformers 5: GPT2TokenizerFast is this class
    fast = GPT2TokenizerFast(str(vocab_file), str(merges_file))
    rust = Tokenizer(models.BPE.from_file(str(vocab_file), str(merges_file)))
    rust.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rust.decoder = decoders.ByteLevel()
    rust.add_special_tokens(["<|endoftext|>"])
    return hf, fast, rust


def test_byte_level_bpe_gives_gpt2_tokenizers_ids(gpt2_files):
    ours = ByteLevelBPE.from_files(*gpt2_files)
    hf, fast, rust = _gpt2_oracles(*gpt2_files)
    texts = TEXTS + ["<|endoftext|>one<|endoftext|> two <|endoftext|>"] + CORPUS[:50]
    for text in texts:
        ids = ours.encode(text)
        assert ids == hf(text)["input_ids"] == fast(text)["input_ids"] == rust.encode(text).ids, repr(text)
        assert ours.tokenize(text) == hf.tokenize(text), repr(text)
        assert ours.decode(ids) == text == hf.decode(ids) == rust.decode(ids, skip_special_tokens=False)
    assert ours.encode("") == []


def test_byte_level_decode_of_a_cut_character_matches_gpt2(gpt2_files):
    ours = ByteLevelBPE.from_files(*gpt2_files)
    hf, _, rust = _gpt2_oracles(*gpt2_files)
    ids = ours.encode("👨‍👩‍👧 é 東")
    for cut in range(1, len(ids)):
        assert ours.decode(ids[:cut]) == hf.decode(ids[:cut]) == rust.decode(ids[:cut]), cut
    assert "\ufffd" in ours.decode(ids[:1])
    with pytest.raises(UnicodeDecodeError):
        ours.decode(ids[:1], errors="strict")


# ------------------------------------------------------------------ BERT's WordPiece
@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def bert_vocab(request, tmp_path_factory):
    lowercase = request.param
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    path = tmp_path_factory.mktemp("bert") / "vocab.txt"
    vocab = tok.get_vocab()
    write_vocab_txt(path, sorted(vocab, key=vocab.get))
    return path, lowercase


def _bert_oracles(path, lowercase):
    from transformers import BertTokenizerFast  # transformers 5: BertTokenizer is this class

    rust = Tokenizer(models.WordPiece.from_file(str(path), unk_token="[UNK]"))
    rust.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    rust.decoder = decoders.WordPiece()
    rust.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return BertTokenizerFast(str(path), do_lower_case=lowercase), rust


BERT_TEXTS = TEXTS + ["[MASK] is a [SEP] token", "a" * 100, "a" * 101, "ΣΊΣΥΦΟΣ"] + CORPUS[:50]


def test_wordpiece_gives_bert_tokenizers_ids(bert_vocab):
    path, lowercase = bert_vocab
    ours = WordPiece.from_file(path, lowercase=lowercase)
    hf, rust = _bert_oracles(path, lowercase)
    for text in BERT_TEXTS:
        ids = ours.encode(text)
        assert ids == hf(text)["input_ids"], repr(text)
        assert ours.encode(text, add_special_tokens=False) == rust.encode(text).ids, repr(text)
        assert ours.tokenize(text) == hf.tokenize(text), repr(text)
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == hf_decode(hf, ids, skip_special_tokens=skip)
        bare = ours.encode(text, add_special_tokens=False)
        assert ours.decode(bare) == rust.decode(bare, skip_special_tokens=False), repr(text)
    assert ours.encode("") == [ours.get_vocab()["[CLS]"], ours.get_vocab()["[SEP]"]]
    assert ours.tokenize("a" * 101) == ["[UNK]"]


def test_wordpiece_round_trip_gives_the_normalized_words(bert_vocab):
    path, lowercase = bert_vocab
    ours = WordPiece.from_file(path, lowercase=lowercase)
    for text in CORPUS[:100]:
        words = bert_pre_tokenize(text, lowercase)
        if "[UNK]" not in ours.tokenize(text):
            assert ours.decode(ours.encode(text), skip_special_tokens=True,
                               clean_up_tokenization_spaces=False) == " ".join(words)


def test_where_bert_legacy_differs_and_the_course_follows_the_fast_tokenizer(bert_vocab):
    """transformers' pure-Python BertTokenizerLegacy lowercases with str.lower (word-final sigma)
    and NFC-normalises first; BertNormalizer lowercases char by char and does not.

    transformers 4 calls it BertTokenizer (the slow class); its ``tokenize`` lowercases the text
    character by character before that str.lower, so there the sigma agrees and only NFC differs."""
    path, lowercase = bert_vocab
    ours = WordPiece.from_file(path, lowercase=lowercase)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if TRANSFORMERS_4:
            legacy = transformers.BertTokenizer(vocab_file=str(path), do_lower_case=lowercase)
        else:
            from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy
            legacy = BertTokenizerLegacy(vocab_file=str(path), do_lower_case=lowercase)
    differ = [t for t in BERT_TEXTS if legacy(t)["input_ids"] != ours.encode(t)]
    if lowercase:
        assert differ == ([] if TRANSFORMERS_4 else ["한국어 텍스트 and Ελληνικά ΟΔΟΣ"])
        assert "".join(ours.tokenize("ΟΔΟΣ")).replace("##", "").endswith("σ")
    else:
        assert differ == ["decomposed e\u0301 and u\u0308ber"]


def test_a_vocab_over_a_byte_level_bpe_keeps_its_ids_and_writes_text_back_exactly():
    from course_pkg import data as D
    from course_pkg.subword import train_byte_level_bpe

    texts = ["Où est la gare ?", "I'm 12 years old.", "Il coûte 4,50 euros.", "Don't go!"] * 3
    tok = train_byte_level_bpe(texts, 300, special_tokens=D.SPECIAL_TOKENS)
    vocab = D.Vocab(tok.convert_ids_to_tokens(range(tok.vocab_size)), tok)
    for text in texts + ["Déjà vu 👍🏽"]:
        ids = vocab.encode(text, add_bos=True, add_eos=True)
        assert ids[1:-1] == tok.encode(text)
        assert vocab.decode(ids) == tok.detokenize(tok.tokenize(text)) == text
    with pytest.raises(TypeError, match="save the tokenizer with its own save"):
        vocab.to_json()
