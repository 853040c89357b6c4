"""SentencePiece's Unigram (``course_pkg.subword.Unigram``) gives the ids of ``sentencepiece`` and of
``transformers``' ``MarianTokenizer``, offline; bad input gets clear errors.

Models are trained here by ``sentencepiece`` (``model_type="unigram"``) on the course's everyday
corpus (the train split, French and English): three vocabulary sizes, byte fallback on and off,
user-defined pieces, and one model with the ``identity`` normaliser and its whitespace rules off.
Each is read by the course's own reader (no ``sentencepiece`` inside ``course_pkg``) and must give
the same pieces, ids, normalised text and decoded text as ``sentencepiece.SentencePieceProcessor``
on hard texts and on the test split. Small models written by hand (``Unigram(...).save``, loaded by
``sentencepiece`` too) pin the rules one by one: ties, float32 sums, the unknown piece's score,
byte fallback, unused and user-defined pieces.
"""

import json
import random
import shutil
import struct
import warnings

import pytest

from course_pkg.data import make_everyday_corpus
from course_pkg.subword import Unigram, read_sentencepiece_model, write_sentencepiece_model

MODELS = {
    "unigram200": {"vocab_size": 200},
    "unigram500": {"vocab_size": 500},
    "unigram1000": {"vocab_size": 1000},
    "bytes400": {"vocab_size": 400, "byte_fallback": True},
    "bytes1000_user": {"vocab_size": 1000, "byte_fallback": True,
                       "user_defined_symbols": ["<sep>", "...", "ab"]},
    "identity500": {"vocab_size": 500, "normalization_rule_name": "identity", "add_dummy_prefix": False,
                    "remove_extra_whitespaces": False},
}

HARD_TEXTS = [
    "", " ", "   ", "\t", "\n", "Hello world", "  leading spaces", "trailing spaces   ", "two  spaces",
    "tab\tand\ttabs\t\tdouble", "new\nlines\n\nand\r\nCRLF", "x  \u3000  y",
    "a\u00a0non-breaking\u2028line separator\u3000ideographic\u2009thin",
    "Café naïve façade über niño señor déjà-vu", "Cafe\u0301 nai\u0308ve fac\u0327ade u\u0308ber",
    "é e\u0301 É E\u0301 ǅ ǆ", "\u0301 a combining mark first",
    "1999 3.14 1,000 12 345 678 0.5% 2 000 000 -42 +7 1e10",
    "!!!???...,,,;;; -- ... «» “ ” ‘’ — – …‥", "Qu'est-ce que c'est ?! « Oui ! »", "a<sep>b ... ab",
    "emoji 👍 👍🏽 👨‍👩‍👧 🎉🎉 ❤️", "東京は日本の首都です。北京是中国的首都。",
    "한국어 텍스트 and Ελληνικά ΟΔΟΣ",
    "ＡＢＣ ｶﾀｶﾅ ① ﬁ ™ ½ ² 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "unknown ☃ ⚡ ∑ symbols ☃☃☃ ☃x☃",
    "nul\x00 del\x7f zwsp\u200b bom\ufeff esc\x1b[0m", "\ufdd0 \uffff \ue000 noncharacters and private use",
    "<s> </s> <unk> <pad> <0x41>", "x" * 120, "supercalifragilisticexpialidocious",
]
MARIAN_SPECIALS = ("</s>", "<unk>", "<pad>")  # found whole in a text by MarianTokenizer, not by sentencepiece


def everyday_texts(split, pairs=None):
    """The French and English sentences of a split of the everyday corpus (its first ``pairs`` pairs)."""
    corpus = make_everyday_corpus()
    return [text for pair in getattr(corpus, split)[:pairs] for text in pair]


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """The folder of the models of ``MODELS``, trained by ``sentencepiece`` on the first 1,500 pairs of
    the train split (about half a second each)."""
    spm = pytest.importorskip("sentencepiece")
    folder = tmp_path_factory.mktemp("sentencepiece")
    texts = everyday_texts("train", pairs=1500)
    for name, options in MODELS.items():
        spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(folder / name),
                                       model_type="unigram", minloglevel=2, num_threads=2, **options)
    return folder


@pytest.fixture(scope="module")
def texts():
    """The hard texts and the first 200 pairs of the test split."""
    return HARD_TEXTS + everyday_texts("test", pairs=200)


@pytest.fixture(scope="module", params=list(MODELS))
def model(request, trained):
    """``(path, the course's Unigram, sentencepiece's processor)`` of one trained model."""
    spm = pytest.importorskip("sentencepiece")
    path = trained / f"{request.param}.model"
    return path, Unigram.from_file(path), spm.SentencePieceProcessor(model_file=str(path))


def differences(pairs, limit=3):
    """The first ``limit`` ``(text, ours, theirs)`` that differ, for an assertion message."""
    return [(text, ours, theirs) for text, ours, theirs in pairs if ours != theirs][:limit]


# ------------------------------------------------------------------ parity with sentencepiece
def test_ids_and_pieces_are_sentencepieces(model, texts):
    _, tok, sp = model
    assert not differences((t, tok.encode(t), sp.encode(t)) for t in texts)
    assert not differences((t, tok.tokenize(t), sp.encode(t, out_type=str)) for t in texts)
    assert not differences((t, tok.encode(t, add_bos=True, add_eos=True),
                            sp.encode(t, add_bos=True, add_eos=True)) for t in texts[:40])


def test_the_normalised_text_is_sentencepieces(model, texts):
    _, tok, sp = model
    assert not differences((t, tok.normalize(t), sp.normalize(t)) for t in texts)


@pytest.mark.parametrize("name", ["unigram200", "bytes1000_user"])
def test_every_character_is_normalised_as_sentencepiece_does(trained, name):
    """The precompiled character map, read as a double-array trie, on every code point of the planes
    in use (64 at a time, so that sequences such as a letter and its accent meet too)."""
    spm = pytest.importorskip("sentencepiece")
    path = trained / f"{name}.model"
    tok, sp = Unigram.from_file(path), spm.SentencePieceProcessor(model_file=str(path))
    codes = [c for c in [*range(0x30000), *range(0xE0000, 0xE0200)] if not 0xD800 <= c < 0xE000]
    chunks = ["".join(map(chr, codes[i:i + 64])) for i in range(0, len(codes), 64)]
    assert not differences((t, tok.normalize(t), sp.normalize(t)) for t in chunks)


def test_decoding_is_sentencepieces(model, texts):
    _, tok, sp = model
    assert not differences((t, tok.decode(sp.encode(t)), sp.decode(sp.encode(t))) for t in texts)
    pieces = [sp.encode(t, out_type=str) for t in texts]
    assert not differences((p, tok.detokenize(p), sp.decode_pieces(p)) for p in pieces)
    rng = random.Random(0)  # any ids: control, unknown and byte pieces, a leading ▁ anywhere
    special = [i for i, (piece, _, kind) in enumerate(tok.pieces) if kind != "normal" or piece[0] == "▁"]
    for _ in range(300):
        ids = [rng.choice(special) if rng.random() < 0.5 else rng.randrange(tok.vocab_size)
               for _ in range(rng.randint(0, 8))]
        assert tok.decode(ids) == sp.decode(ids), ids
        pieces = [tok.pieces[i][0] for i in ids] + ["☃x"] * (rng.random() < 0.3)  # ☃x: not a piece
        assert tok.detokenize(pieces) == sp.decode_pieces(pieces), pieces


def test_everyday_sentences_come_back_whole(model):
    """``detokenize(tokenize(text)) == text`` for every everyday sentence; ``decode(encode(text))``
    too where nothing is unknown (always, with byte fallback)."""
    _, tok, _ = model
    texts = everyday_texts("test", pairs=200)
    assert not differences((t, tok.detokenize(tok.tokenize(t)), t) for t in texts)
    if tok.byte_fallback:
        assert not differences((t, tok.decode(tok.encode(t)), t) for t in texts)
        assert tok.decode(tok.encode("emoji 👍🏽 ☃ 東京")) == "emoji 👍🏽 ☃ 東京"
    else:
        known = [t for t in texts if tok.unk_id not in tok.encode(t)]
        assert len(known) > len(texts) // 2
        assert not differences((t, tok.decode(tok.encode(t)), t) for t in known)


def test_the_vocabulary_and_special_ids_are_sentencepieces(model):
    _, tok, sp = model
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert tok.vocab_size == len(pieces)
    assert tok.convert_ids_to_tokens(range(len(pieces))) == pieces
    assert tok.get_vocab() == {piece: i for i, piece in enumerate(pieces)}
    assert [score for _, score, _ in tok.pieces] == [sp.get_score(i) for i in range(len(pieces))]  # float32
    for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
        theirs = getattr(sp, name)()
        assert getattr(tok, name) == (None if theirs == -1 else theirs), name


def test_a_saved_model_is_read_by_sentencepiece_and_back(model, tmp_path, texts):
    spm = pytest.importorskip("sentencepiece")
    _, tok, sp = model
    tok.save(tmp_path / "copy.model")
    again = Unigram.from_file(tmp_path / "copy.model")
    theirs = spm.SentencePieceProcessor(model_file=str(tmp_path / "copy.model"))
    assert again.pieces == tok.pieces
    assert not differences((t, theirs.encode(t), sp.encode(t)) for t in texts)
    assert not differences((t, again.encode(t), sp.encode(t)) for t in texts)


# ------------------------------------------------------------------ parity with MarianTokenizer
def marian_folder(path, folder):
    """A Marian tokenizer folder: the model as source.spm and target.spm, and Marian's vocab.json.

    Marian's vocabulary is its own id space, not sentencepiece's: ``</s>`` 0, ``<unk>`` 1, the
    other pieces in order, ``<pad>`` last (as the opus-mt checkpoints have it). So its ids are
    compared with the course's *pieces* looked up in that vocabulary, an unknown run as ``<unk>``
    (``MarianTokenizer`` does the same with ``sentencepiece``'s pieces), and ``</s>`` added.
    """
    pieces = [piece for piece, _, _ in read_sentencepiece_model(path)["pieces"]]
    vocab = {"</s>": 0, "<unk>": 1}
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    vocab.setdefault("<pad>", len(vocab))
    folder.mkdir()
    shutil.copy(path, folder / "source.spm")
    shutil.copy(path, folder / "target.spm")
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    return vocab


def test_marian_tokenizer_gives_the_same_pieces_and_ids(model, tmp_path, texts):
    transformers = pytest.importorskip("transformers")
    path, tok, _ = model
    vocab = marian_folder(path, tmp_path / "marian")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses" (not used here)
        marian = transformers.MarianTokenizer(str(tmp_path / "marian/source.spm"),
                                              str(tmp_path / "marian/target.spm"),
                                              str(tmp_path / "marian/vocab.json"))
    plain = [t for t in texts if not any(s in t for s in MARIAN_SPECIALS)]
    assert len(plain) > 400
    assert not differences((t, tok.tokenize(t), marian.tokenize(t)) for t in plain)
    ours = ((t, [vocab.get(p, vocab["<unk>"]) for p in tok.tokenize(t)] + [vocab["</s>"]],
             marian(t)["input_ids"]) for t in plain)
    assert not differences(ours)


# ------------------------------------------------------------------ the rules, on small models
BASE = [("<unk>", 0.0, "unknown"), ("<s>", 0.0, "control"), ("</s>", 0.0, "control")]


def same_as_sentencepiece(tok, texts, tmp_path):
    """Assert that ``sentencepiece`` reading ``tok.save``'s file cuts ``texts`` as ``tok`` does."""
    spm = pytest.importorskip("sentencepiece")
    tok.save(tmp_path / "hand.model")
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "hand.model"))
    assert not differences((t, tok.tokenize(t), sp.encode(t, out_type=str)) for t in texts)
    assert not differences((t, tok.encode(t), sp.encode(t)) for t in texts)


def test_a_tie_goes_to_the_split_whose_last_piece_starts_first(tmp_path):
    """▁a + b and ▁ + ab both score -3 exactly: the offer made first to the end, ab's (it starts at
    the second character, b at the third), stays."""
    tok = Unigram(BASE + [("▁a", -1.0), ("b", -2.0), ("▁", -2.0), ("ab", -1.0), ("a", -5.0)])
    assert tok.tokenize("ab") == ["▁", "ab"]
    assert tok.tokenize("ab ab") == ["▁", "ab", "▁", "ab"]
    same_as_sentencepiece(tok, ["ab", "ab ab", "abab", "a b"], tmp_path)


def test_scores_add_up_in_float32(tmp_path):
    """In float64 ▁a + b (-7.006999909877777) beats ▁ + ab (-7.007000207901001); in float32 the two
    sums are the same number, a tie, which ab wins as above. sentencepiece adds in float32."""
    scores = {"▁a": -0.677, "b": -6.33, "▁": -5.669, "ab": -1.338}
    tok = Unigram(BASE + list(scores.items()) + [("a", -9.0)])
    stored = {piece: score for piece, score, _ in tok.pieces}
    assert stored["▁a"] + stored["b"] > stored["▁"] + stored["ab"]  # float64 would choose ▁a b
    assert tok.tokenize("ab") == ["▁", "ab"]
    same_as_sentencepiece(tok, ["ab", "ab ab"], tmp_path)


def test_an_unknown_run_is_one_piece_scored_the_worst_score_less_ten(tmp_path):
    """☃ has no piece: consecutive unknown characters are one unknown piece, decoded ' ⁇ '. Its score
    is the worst normal piece's less 10: here y☃ (-30; the control piece's -100 does not count), so
    y + unknown scores y - 40, which beats y☃ when y scores more than 10."""
    tok = Unigram(BASE + [("▁", -1.0), ("x", -1.0)])
    assert tok.tokenize("x☃☃x ☃") == ["▁", "x", "☃☃", "x", "▁", "☃"]
    assert tok.encode("x☃☃x") == [3, 4, 0, 4]
    assert tok.decode(tok.encode("x☃☃x")) == "x ⁇ x"
    assert tok.detokenize(tok.tokenize("x☃☃x")) == "x☃☃x"
    below, above = (Unigram(BASE + [("<sep>", -100.0, "control"), ("▁", -1.0), ("y", y), ("y☃", -30.0)])
                    for y in (9.5, 10.5))
    assert below.tokenize("y☃") == ["▁", "y☃"] and above.tokenize("y☃") == ["▁", "y", "☃"]
    for t in (tok, below, above):
        same_as_sentencepiece(t, ["x☃☃x ☃", "y☃", "☃☃y☃"], tmp_path)


def test_byte_fallback_writes_unknown_characters_as_their_bytes(tmp_path):
    pieces = BASE + [(f"<0x{b:02X}>", 0.0, "byte") for b in range(256)] + [("▁", -1.0), ("x", -1.0)]
    tok = Unigram(pieces, byte_fallback=True)
    assert tok.tokenize("x☃") == ["▁", "x", "<0xE2>", "<0x98>", "<0x83>"]
    assert tok.decode(tok.encode("x☃ é")) == "x☃ é"
    ids = tok.get_vocab()
    assert tok.decode([ids["<0xE2>"], ids["<0x98>"], ids["x"], ids["<0xFF>"]]) == "\ufffd\ufffdx\ufffd"
    same_as_sentencepiece(tok, ["x☃", "x☃ é", "☃☃ x\u200b"], tmp_path)


def test_unused_pieces_are_never_used_and_user_defined_ones_never_normalised(tmp_path, trained):
    tok = Unigram(BASE + [("▁", -1.0), ("a", -1.0), ("b", -1.0), ("ab", -0.1, "unused")])
    assert tok.tokenize("ab") == ["▁", "a", "b"]
    same_as_sentencepiece(tok, ["ab", "abab b"], tmp_path)
    spec = read_sentencepiece_model(trained / "unigram200.model")["normalizer_spec"]
    charsmap = spec["precompiled_charsmap"]
    tok = Unigram(BASE + [("▁", -1.0), ("f", -1.0), ("i", -1.0), ("ﬁ", 0.0, "user_defined")],
                  precompiled_charsmap=charsmap, normalizer_name="nmt_nfkc")
    assert tok.normalize("ﬁ ﬀ") == "▁ﬁ▁ff"  # NFKC turns ﬀ into ff, not the user-defined ﬁ
    same_as_sentencepiece(tok, ["ﬁ ﬀ", "fiﬁ", "ﬁﬁ"], tmp_path)


def test_a_user_defined_piece_scores_a_tenth_a_byte_less_a_tenth(tmp_path):
    """xy (user-defined, 2 bytes) scores 0.1: xy + z beats x + yz when yz scores less than 0.1
    (whatever xy's own score in the file, and however good the best normal piece: 4 here)."""
    pieces = BASE + [("▁", -1.0), ("x", -1.0), ("z", -1.0), ("q", 4.0), ("xy", -7.0, "user_defined")]
    below, above = (Unigram(pieces + [("yz", yz)]) for yz in (0.05, 0.15))
    assert below.tokenize("xyz") == ["▁", "xy", "z"] and above.tokenize("xyz") == ["▁", "x", "yz"]
    for tok in (below, above):
        same_as_sentencepiece(tok, ["xyz", "xyzxyz"], tmp_path)


def random_model(rng, byte_fallback):
    """Pieces over a, b, c and ▁ with scores in tenths (ties), some user-defined or unused; d unknown."""
    pieces = {"▁": None, "a": None, "b": None, "c": None}
    while len(pieces) < 10:
        pieces["".join(rng.choice("▁abc") for _ in range(rng.randint(2, 4)))] = None
    entries = list(BASE) + [(f"<0x{b:02X}>", 0.0, "byte") for b in range(256) if byte_fallback]
    for piece in pieces:
        score = -0.1 * rng.randint(1, 40) if rng.random() < 0.7 else -rng.uniform(0.05, 4)
        kind = rng.choices(["normal", "user_defined", "unused"], [8, 1, 1])[0] if len(piece) > 1 else "normal"
        entries.append((piece, score, kind))
    return Unigram(entries, byte_fallback=byte_fallback)


def test_random_tie_heavy_models_cut_as_sentencepiece_does(tmp_path):
    rng = random.Random(7)
    for k in range(24):
        tok = random_model(rng, byte_fallback=k % 2 == 1)
        texts = ["".join(rng.choice("aabbc  d") for _ in range(rng.randint(1, 30))) for _ in range(25)]
        same_as_sentencepiece(tok, texts, tmp_path)


# ------------------------------------------------------------------ bad input
@pytest.fixture(scope="module")
def small():
    return Unigram(BASE + [("▁", -1.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)])


@pytest.fixture
def small_file(tmp_path, small):
    small.save(tmp_path / "small.model")
    return tmp_path / "small.model"


def test_text_must_be_a_str(small):
    for method in (small.encode, small.tokenize, small.normalize):
        with pytest.raises(TypeError, match=r'^text must be str, got bytes; decode it first '
                                            r'\(text\.decode\("utf-8"\)\)$'):
            method(b"ab")
        with pytest.raises(TypeError, match=r"^text must be str, got int$"):
            method(7)
    with pytest.raises(ValueError, match=r"text holds '\\ud800' at 1, a lone surrogate"):
        small.encode("a\ud800")
    with pytest.raises(TypeError, match=r"add_eos must be True or False, got str 'yes'"):
        small.encode("ab", add_eos="yes")
    no_bos = Unigram([("<unk>", 0.0, "unknown"), ("a", -1.0)])
    with pytest.raises(ValueError, match=r"add_bos=True but the model has no control piece '<s>'"):
        no_bos.encode("a", add_bos=True)


def test_decode_refuses_what_is_not_ids_in_range(small):
    with pytest.raises(TypeError, match=r"ids must be a list of int token ids, got str"):
        small.decode("ab")
    with pytest.raises(TypeError, match=r"got one int 3; pass a list: \[3\]"):
        small.decode(3)
    with pytest.raises(TypeError, match=r"ids\[1\] must be an int, got 'x'"):
        small.decode([0, "x"])
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int, got True"):
        small.decode([True])
    with pytest.raises(ValueError, match=r"ids\[1\] = 7 is outside the vocabulary: expected 0 <= id < 7"):
        small.decode([0, 7])
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int, got \[1, 2\] \(ids must be one sequence"):
        small.convert_ids_to_tokens([[1, 2]])
    with pytest.raises(TypeError, match=r"tokens must be a list of str \(pieces\), got str"):
        small.detokenize("▁ab")
    with pytest.raises(TypeError, match=r"tokens\[1\] must be a str, got int 3"):
        small.detokenize(["▁a", 3])


@pytest.mark.parametrize("pieces, error, match", [
    (None, TypeError,
     r"^pieces must be a list of \(piece, score\) or \(piece, score, type\) tuples, got NoneType"),
    ("x.model", TypeError, r"got str; load a file with Unigram\.from_file\(path\)"),
    ({"a": -1.0}, TypeError, r"got dict"),
    ([("<unk>", 0.0, "unknown"), "a"], TypeError, r"^pieces\[1\] must be a \(piece, score\) or"),
    ([("<unk>", 0.0, "unknown"), ("a", -1.0, "normal", 4)], TypeError, r"^pieces\[1\] must be"),
    ([("<unk>", 0.0, "unknown"), ("", -1.0)], ValueError, r"^pieces\[1\]: the piece must be a non-empty str"),
    ([("<unk>", 0.0, "unknown"), ("a\x00", -1.0)], ValueError, r"non-empty str without NUL"),
    ([("<unk>", 0.0, "unknown"), (b"a", -1.0)], ValueError, r"non-empty str without NUL, got b'a'"),
    ([("<unk>", 0.0, "unknown"), ("a", float("nan"))], ValueError,
     r"^pieces\[1\] \('a'\): the score must be a finite number \(a float32\), got nan"),
    ([("<unk>", 0.0, "unknown"), ("a", 1e39)], ValueError, r"finite number \(a float32\), got 1e\+39"),
    ([("<unk>", 0.0, "unknown"), ("a", "-1")], ValueError, r"finite number \(a float32\), got '-1'"),
    ([("<unk>", 0.0, "unknown"), ("a", True)], ValueError, r"finite number \(a float32\), got True"),
    ([("<unk>", 0.0, "unknown"), ("a", -1.0, "special")], ValueError,
     r"^pieces\[1\] \('a'\): the type must be one of \['byte', 'control', 'normal', 'unknown', 'unused', "
     r"'user_defined'\], got 'special'"),
    ([("<unk>", 0.0, "unknown"), ("a", -1.0), ("b", -1.0), ("a", -2.0)], ValueError,
     r"^pieces\[3\] = 'a' repeats pieces\[1\]$"),
    ([("a", -1.0)], ValueError,
     r"^pieces must hold exactly one piece of type 'unknown' \(<unk>\), found none$"),
    ([("<unk>", 0.0, "unknown"), ("<UNK>", 0.0, "unknown"), ("a", -1.0)], ValueError,
     r"found 2: \['<unk>', '<UNK>'\]"),
    ([("<unk>", 0.0, "unknown"), ("<s>", 0.0, "control")], ValueError,
     r"^pieces holds no piece to cut a text into \(only unknown, control, byte pieces\)$"),
    ([("<unk>", 0.0, "unknown"), ("a", -1.0), ("<0x41>", 0.0, "byte")], ValueError,
     r"^pieces\[2\] = '<0x41>' is a byte piece but byte_fallback is False$"),
    ([("<unk>", 0.0, "unknown"), ("a", -1.0), ("<0x4g>", 0.0, "byte")], ValueError,
     r"^pieces\[2\] = '<0x4g>' is a byte piece; expected <0x00> to <0xFF>$"),
])
def test_the_constructor_names_the_bad_piece(pieces, error, match):
    with pytest.raises(error, match=match):
        Unigram(pieces)


def test_the_constructor_checks_its_options():
    pieces = [("<unk>", 0.0, "unknown"), ("a", -1.0)]
    with pytest.raises(ValueError, match=r"^byte_fallback needs the 256 byte pieces; pieces lacks 256, "
                                         r"e\.g\. \['<0x00>', '<0x01>', '<0x02>'\]$"):
        Unigram(pieces, byte_fallback=True)
    with pytest.raises(TypeError, match=r"^add_dummy_prefix must be True or False, got str 'false' "
                                        r"\(a str is not read as a flag"):
        Unigram(pieces, add_dummy_prefix="false")
    with pytest.raises(TypeError, match=r"^unk_surface must be a str, got NoneType None$"):
        Unigram(pieces, unk_surface=None)
    with pytest.raises(TypeError, match=r"^precompiled_charsmap must be bytes \(b'' for none\), got str$"):
        Unigram(pieces, precompiled_charsmap="nmt_nfkc")
    with pytest.raises(ValueError, match=r"^pieces: precompiled_charsmap is broken: a trie of 0 bytes"):
        Unigram(pieces, precompiled_charsmap=b"\x00\x00\x00\x00junk")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'lowercase'"):
        Unigram(pieces, lowercase=True)


def test_a_missing_or_empty_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=rf"^SentencePiece model not found: {tmp_path / 'no.model'}$"):
        Unigram.from_file(tmp_path / "no.model")
    with pytest.raises(IsADirectoryError, match=rf"^SentencePiece model {tmp_path} is a folder"):
        Unigram.from_file(tmp_path)
    with pytest.raises(TypeError, match=r"^model_file must be a str or os\.PathLike, got int$"):
        Unigram.from_file(3)
    (tmp_path / "empty.model").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'empty.model'} is empty: expected a SentencePiece"):
        Unigram.from_file(tmp_path / "empty.model")


def test_a_truncated_file_is_refused_wherever_it_is_cut(small_file):
    data = small_file.read_bytes()
    for cut in range(1, len(data)):
        small_file.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=rf"^{small_file}: .*truncated\?|^{small_file} has \d+ pieces "
                                             r"but no (trainer|normalizer)_spec: truncated\?"):
            Unigram.from_file(small_file)


@pytest.mark.parametrize("content, match", [
    (b"<unk>\t0\n<s>\t0\n", r"starts no protocol-buffer field .*: garbled, or not a model file "
                            r"\(a text file: the \.vocab or a JSON file\? pass the \.model file\)$"),
    (b'{"model": {"type": "Unigram"}}', r"\(a text file: the \.vocab or a JSON file\?"),
    (b"\x0a\x02\x00\x00", r"pieces\[0\]: byte 0 starts no protocol-buffer field \(field 0, wire type 0\)"),
    (b"\x0a\x03\x08\x05\x07", r"pieces\[0\]\.piece is written with wire type 0, expected 2 \(a str\)"),
    (b"\x0a\x04\x0a\x02\xff\xfe" + b"\x12\x00\x1a\x00", r"pieces\[0\]\.piece is not UTF-8 text"),
    (b"\x0a\x05\x0a\x01a\x18\x09\x12\x00\x1a\x00", r"pieces\[0\] \('a'\) has type 9, expected one of "
                                                   r"\[1, 2, 3, 4, 5, 6\]$"),
    (b"\x0a\x05\x0a\x01a\x10\x01\x12\x00\x1a\x00", r"pieces\[0\]\.score is written with wire type 0, "
                                                   r"expected 5 \(a float\)"),
    (b"\x12\x00\x1a\x00", r"holds no pieces: not a SentencePiece model$"),
    (bytes(random.Random(0).randrange(256) for _ in range(300)), r"garbled|truncated|not a model"),
])
def test_a_garbled_file_is_named(tmp_path, content, match):
    path = tmp_path / "bad.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        Unigram.from_file(path)


def test_other_models_and_options_are_refused(tmp_path, small):
    spec = {"precompiled_charsmap": b"", "name": "identity"}
    for kind in ("bpe", "word", "char"):
        write_sentencepiece_model(tmp_path / "m.model", small.pieces, {"model_type": kind}, spec)
        with pytest.raises(ValueError, match=rf"^{tmp_path / 'm.model'} is a {kind} model "
                                             r"\(trainer_spec\.model_type\): Unigram reads unigram"):
            Unigram.from_file(tmp_path / "m.model")
    write_sentencepiece_model(tmp_path / "m.model", small.pieces, {"treat_whitespace_as_suffix": True}, spec)
    with pytest.raises(ValueError, match=r"m\.model: treat_whitespace_as_suffix is not supported"):
        Unigram.from_file(tmp_path / "m.model")
    small.save(tmp_path / "d.model")
    with open(tmp_path / "d.model", "ab") as file:  # a denormalizer_spec (field 5) with a charsmap
        file.write(b"\x2a\x06\x12\x04abcd")
    with pytest.raises(ValueError, match=r"d\.model: a denormalizer_spec \(a rewrite of decoded text\)"):
        Unigram.from_file(tmp_path / "d.model")


def test_a_model_is_checked_whole_before_it_is_kept(tmp_path, small):
    """A repeated last piece, a broken character map: the error names the file and nothing is made."""
    pieces = list(small.pieces) + [("a", -3.0, "normal")]
    spec = {"precompiled_charsmap": b"", "name": "identity"}
    write_sentencepiece_model(tmp_path / "m.model", pieces, {}, spec)
    with pytest.raises(ValueError, match=rf"^{tmp_path / 'm.model'}: pieces\[7\] = 'a' repeats "
                                         rf"{tmp_path / 'm.model'}: pieces\[4\]$"):
        Unigram.from_file(tmp_path / "m.model")
    blob = struct.pack("<I", 1024) + bytes(1024) + b"no zero at the end"
    write_sentencepiece_model(tmp_path / "m.model", small.pieces, {}, dict(spec, precompiled_charsmap=blob))
    with pytest.raises(ValueError, match=r"m\.model: pieces: precompiled_charsmap is broken: the replacement "
                                         r"strings do not end with a zero byte"):
        Unigram.from_file(tmp_path / "m.model")


def test_a_bpe_model_trained_by_sentencepiece_is_refused(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    spm.SentencePieceTrainer.train(sentence_iterator=iter(everyday_texts("valid")),
                                   model_prefix=str(tmp_path / "bpe"), model_type="bpe", vocab_size=200,
                                   minloglevel=2, num_threads=2)
    with pytest.raises(ValueError, match=r"bpe\.model is a bpe model \(trainer_spec\.model_type\)"):
        Unigram.from_file(tmp_path / "bpe.model")
    assert read_sentencepiece_model(tmp_path / "bpe.model")["model_type"] == "bpe"
