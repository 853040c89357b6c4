"""Bad files give clear errors naming the file; every file the package writes is replaced atomically.

Vocabularies (field types, byte-order mark, deep nesting), TSV files (undecodable bytes,
Unicode normalisation), the German compound splitter on huge words, BLEU of no examples,
and the atomic writer of ``course_pkg.common.files`` with every writer that uses it.
"""

import json
import os
import tracemalloc
import unicodedata

import pytest

from course_pkg import data as D
from course_pkg.common import files as _files
from course_pkg.data import num2words_cache
from course_pkg.evaluation import accuracy_by_length, corpus_bleu, exact_match
from course_pkg.exercises import notebooks as exercise_notebooks


def _vocab_json(**changes):
    """A valid Vocab JSON document (as a dict) with ``changes`` applied; ``None`` deletes a key."""
    data = json.loads(D.Vocab.build(["un deux trois"], D.Tokenizer("fr")).to_json())
    for key, value in changes.items():
        if key.startswith("tokenizer."):
            data["tokenizer"][key.split(".", 1)[1]] = value
        elif value is None:
            del data[key]
        else:
            data[key] = value
    return data


# -------------------------------------------------------------------- Vocab.load
@pytest.mark.parametrize("changes, match", [
    ({"tokenizer.lowercase": "false"}, r"tokenizer\.lowercase must be true or false, got 'false'"),
    ({"tokenizer.lowercase": 0}, r"tokenizer\.lowercase must be true or false, got 0"),
    ({"tokenizer.lang": 7}, r"tokenizer\.lang must be a language code string or null, got 7"),
    ({"tokenizer.shout": True}, r"tokenizer has unknown fields \['shout'\]"),
    ({"tokenizer": "fr"}, r"tokenizer must be an object, got 'fr'"),
    ({"tokens": "<pad><bos>"}, r"tokens must be a list of strings, got '<pad><bos>'"),
    ({"tokens": ["<pad>", "<bos>", "<eos>", "<unk>", 5]}, r"tokens\[4\] must be a string, got 5"),
    ({"tokens": ["<pad>", "<bos>", "<eos>", "<unk>", "a", "a"]}, r"tokens must be unique, repeated: \['a'\]"),
    ({"tokens": ["a", "b"]}, r"must start with the special tokens"),
    ({"tokens": None}, r"no 'tokens' field"),
    ({"format": "course_pkg.Vocab/2"}, r"format must be 'course_pkg\.Vocab/1', got 'course_pkg\.Vocab/2'"),
])
def test_vocab_load_validates_field_types_and_names_the_file(tmp_path, changes, match):
    path = tmp_path / "bad_vocab.json"
    path.write_text(json.dumps(_vocab_json(**changes)), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as info:
        D.Vocab.load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content, match", [
    (b"", r"not a course_pkg Vocab JSON"),
    (b"[1, 2]", r"not a course_pkg Vocab JSON.*a JSON object"),
    (b'{"format": "course_pkg.Vocab/1", "tokens": [', r"not a course_pkg Vocab JSON"),
    (b'{"tokens": ["\xff\xfe"]}', r"not UTF-8 text"),
    (b"[" * 100_000 + b"]" * 100_000, r"nested too deeply"),
    (b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, r"nested too deeply"),
], ids=["empty", "a list", "truncated", "latin-1", "nested lists", "nested objects"])
def test_vocab_load_of_a_damaged_file_raises_value_error_naming_it(tmp_path, content, match):
    path = tmp_path / "damaged.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as info:
        D.Vocab.load(path)
    assert str(path) in str(info.value)


def test_vocab_load_accepts_a_byte_order_mark(tmp_path):
    vocab = D.Vocab.build(["quatre-vingt-dix-sept"], D.Tokenizer("fr", lowercase=True))
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + vocab.to_json().encode("utf-8"))
    assert D.Vocab.load(path) == vocab


def test_vocab_from_json_keeps_its_message_without_a_file():
    with pytest.raises(ValueError, match=r"^not a course_pkg Vocab JSON: tokenizer\.lowercase must be"):
        D.Vocab.from_json(json.dumps(_vocab_json(**{"tokenizer.lowercase": "yes"})))


# ------------------------------------------------------------------ atomic writes
def test_atomic_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    _files.atomic_write(path, "première\n")
    _files.atomic_write(path, "seconde\n")
    assert path.read_text(encoding="utf-8") == "seconde\n"
    _files.atomic_write(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert os.listdir(tmp_path) == ["out.txt"]
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as open(path, "w") would make it


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_an_interrupted_atomic_write_keeps_the_old_file_byte_identical(tmp_path, error):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old content")
    with pytest.raises(error, match="midway"):
        with _files.atomic_open(path, "wb") as file:
            file.write(b"new conte")
            raise error("midway")
    assert path.read_bytes() == b"old content"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_atomic_write_under_a_file_names_the_target(tmp_path):
    (tmp_path / "file.txt").write_text("a file, not a folder")
    target = tmp_path / "file.txt" / "sub" / "out.json"
    with pytest.raises(NotADirectoryError, match=r"cannot write .*out\.json: .*file\.txt is a file"):
        _files.atomic_write(target, "{}")


def _save_vocab(path):
    D.Vocab.build(["un deux"]).save(path)


def _write_num2words_cache(path):
    num2words_cache.write_cache(path, {1: "un", 2: "deux"})


def _write_exercise_files(path):
    exercise_notebooks.write_files(path.parent, {path.name: "{}\n"}, force=True)


WRITERS = {"Vocab.save": _save_vocab, "num2words cache": _write_num2words_cache,
           "exercises.write_files": _write_exercise_files}


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_every_writer_interrupted_keeps_the_old_file_and_no_temporary(tmp_path, monkeypatch, writer, where):
    path = tmp_path / "file.json"
    path.write_bytes(b'{"old": true}')

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt(f"interrupted at {where}")

    monkeypatch.setattr(os, where, interrupt)
    with pytest.raises(KeyboardInterrupt, match=f"interrupted at {where}"):
        WRITERS[writer](path)
    monkeypatch.undo()
    assert path.read_bytes() == b'{"old": true}'
    assert os.listdir(tmp_path) == ["file.json"]
    WRITERS[writer](path)  # uninterrupted: replaced
    assert path.read_bytes() != b'{"old": true}'
    assert os.listdir(tmp_path) == ["file.json"]


def test_vocab_save_under_a_file_names_the_path(tmp_path):
    (tmp_path / "file.txt").write_text("")
    with pytest.raises(NotADirectoryError, match=r"cannot write .*file\.txt[/\\]vocab\.json"):
        _save_vocab(tmp_path / "file.txt" / "vocab.json")


# --------------------------------------------------------------------- TSV files
def test_load_tsv_names_the_file_and_line_of_undecodable_bytes(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("Go.\tVa !\n\nHi.\tSalut.\r\nCafé.\tCafé.\n".encode("utf-8")
                     + "Thé.\tThé.\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.tsv:5: not UTF-8 text: byte 0xe9 at column 3"):
        D.load_tsv_pairs(path)


def test_load_tsv_counts_lines_across_a_large_file(tmp_path):
    path = tmp_path / "big.tsv"
    good = "".join(f"s{i}\tt{i}\n" for i in range(5000)).encode("utf-8")
    path.write_bytes(good + b"bad \xff\tline\n")
    with pytest.raises(ValueError, match=r"big\.tsv:5001: not UTF-8 text: byte 0xff at column 5"):
        D.load_tsv_pairs(path)


def test_load_tsv_normalises_decomposed_accents(tmp_path):
    path = tmp_path / "nfd.tsv"
    path.write_text("Coffee.\tCafe\u0301.\n", encoding="utf-8")
    assert D.load_tsv_pairs(path) == [("Coffee.", "Café.")]


# ------------------------------------------------------------ Unicode normalisation
@pytest.mark.parametrize("lang", ["fr", "en", "de", None])
def test_decomposed_accents_tokenize_like_composed_ones(lang):
    tok = D.Tokenizer(lang)
    assert tok.tokenize("Cafe\u0301 e\u0301te\u0301 !") == tok.tokenize("Café été !")
    vocab = D.Vocab.build(["café été"], tok)
    assert vocab.encode("cafe\u0301 e\u0301te\u0301") == vocab.encode("café été")
    assert D.UNK_ID not in vocab.encode("cafe\u0301 e\u0301te\u0301")


@pytest.mark.parametrize("lang", ["fr", "en", "de"])
def test_normalisation_leaves_every_number_corpus_text_unchanged(lang):
    corpus = D.make_number_corpus(lang, lang, size=None)  # every number 0..99_999
    texts = [s for split in (corpus.train, corpus.valid, corpus.test) for s, _ in split]
    assert len(texts) == 100_000
    assert all(unicodedata.is_normalized("NFC", text) for text in texts)
    lists = D.make_number_list_corpus(lang, lang)
    assert all(unicodedata.is_normalized("NFC", s) for split in (lists.train, lists.test) for s, _ in split)


# ---------------------------------------------------------------- compound splitter
def _quadratic_split(self, word):
    """The splitter before issue 11, verbatim: the reference its linear rewrite must match."""
    morphemes = self._morphemes
    if not morphemes:
        return [word]
    low = word.lower()
    n = len(low)
    if n != len(word):
        return [word]
    longest = self._longest_morpheme
    best = [None] * (n + 1)
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


def test_compound_splitter_output_is_unchanged_on_every_german_number():
    corpus = D.make_number_corpus("de", "de", size=None)
    words = sorted({w for split in (corpus.train, corpus.valid, corpus.test) for s, _ in split
                    for w in s.split()})
    tok = D.Tokenizer("de")
    assert len(words) > 99_000
    differ = [w for w in words if tok._split_compound(w) != _quadratic_split(tok, w)]
    assert differ == []
    extra = ["Siebenundneunzig", "einsein", "eineins", "dreißigeins", "hundertx", "x", "zehnzehn"]
    assert [tok._split_compound(w) for w in extra] == [_quadratic_split(tok, w) for w in extra]


@pytest.mark.parametrize("word, pieces", [
    ("drei" * 12_000, 12_000),  # 48 KB of morphemes: split into them
    ("drei" * 12_000 + "x", 1),  # every prefix splits, the whole does not: kept whole
    ("x" * 48_000, 1),
])
def test_compound_splitter_is_linear_in_memory_on_a_48_kb_word(word, pieces):
    tok = D.Tokenizer("de")
    tracemalloc.start()
    try:
        tokens = tok.tokenize(word)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(tokens) == pieces
    assert "".join(tokens) == word
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB"


# ----------------------------------------------------------------- no examples
def test_scores_of_no_examples_are_defined():
    assert corpus_bleu([], []) == 0.0
    assert exact_match([], []) == 0.0
    assert accuracy_by_length([], [], []) == {}
    assert corpus_bleu(iter([]), ()) == 0.0
