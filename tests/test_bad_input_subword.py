"""Bad input to the subword tokenizers gives clear errors naming the argument, file and line;
a constructor checks everything before it keeps anything."""

import json

import pytest

from course_pkg.subword import (
    BPE,
    ByteLevelBPE,
    WordPiece,
    bert_tokenizer,
    bytes_to_unicode,
    gpt2_tokenizer,
    read_merges,
    read_vocab_json,
    read_vocab_txt,
    train_bpe,
    train_byte_level_bpe,
    write_vocab_txt,
)

CORPUS = ["the cat sat on the mat", "the cats sat on the mats", "a dog"]


@pytest.fixture(scope="module")
def bpe():
    return train_bpe(CORPUS, 40)


@pytest.fixture(scope="module")
def byte_bpe():
    return train_byte_level_bpe(CORPUS, 300)


@pytest.fixture(scope="module")
def wordpiece():
    return WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "a"])


@pytest.fixture(scope="module")
def gpt2_files(tmp_path_factory, byte_bpe):
    folder = tmp_path_factory.mktemp("files")
    byte_bpe.save(folder / "vocab.json", folder / "merges.txt")
    return folder


# ------------------------------------------------------------------ text and ids
@pytest.mark.parametrize("name", ["bpe", "byte_bpe", "wordpiece"])
def test_bytes_for_text_is_a_type_error_that_says_decode_it(request, name):
    tok = request.getfixturevalue(name)
    for method in (tok.encode, tok.tokenize):
        with pytest.raises(TypeError, match=r'^text must be str, got bytes; decode it first '
                                            r'\(text\.decode\("utf-8"\)\)$'):
            method(b"the cat")
        with pytest.raises(TypeError, match=r"^text must be str, got int$"):
            method(7)


@pytest.mark.parametrize("name", ["bpe", "byte_bpe", "wordpiece"])
def test_decode_refuses_a_str_a_non_int_and_ids_out_of_range(request, name):
    tok = request.getfixturevalue(name)
    with pytest.raises(TypeError, match=r"ids must be a list of int token ids, got str"):
        tok.decode("the cat")
    with pytest.raises(TypeError, match=r"ids\[1\] must be an int, got 'x'"):
        tok.decode([0, "x"])
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int, got True"):
        tok.decode([True])
    n = tok.vocab_size
    with pytest.raises(ValueError, match=rf"ids\[1\] = {n} is outside the vocabulary: "
                                         rf"expected 0 <= id < {n}"):
        tok.decode([0, n])
    with pytest.raises(ValueError, match=r"ids\[0\] = -1 is outside"):
        tok.decode([-1])


@pytest.mark.parametrize("train", [train_bpe, train_byte_level_bpe])
def test_training_refuses_bad_sizes_and_texts(train):
    for size in (0, -5, 2.5, True, "100"):
        with pytest.raises(ValueError, match=rf"vocab_size must be an int >= 1, got {size!r}"):
            train(CORPUS, size)
    with pytest.raises(ValueError, match=r"min_frequency must be an int >= 0, got -1"):
        train(CORPUS, 50, min_frequency=-1)
    with pytest.raises(TypeError, match=r"texts must be an iterable of str \(a list of sentences\), "
                                        r"got one str"):
        train("the cat sat", 50)
    with pytest.raises(TypeError, match=r'texts\[1\] must be str, got bytes; decode it first'):
        train(["ok", b"bytes"], 50)


# ------------------------------------------------------------------ missing and damaged files
def test_a_missing_file_is_named(tmp_path, gpt2_files):
    missing = tmp_path / "nope" / "vocab.json"
    with pytest.raises(FileNotFoundError, match=rf"vocabulary file not found: {missing}"):
        ByteLevelBPE.from_files(missing, gpt2_files / "merges.txt")
    with pytest.raises(FileNotFoundError, match=rf"merges file not found: {tmp_path / 'm.txt'}"):
        ByteLevelBPE.from_files(gpt2_files / "vocab.json", tmp_path / "m.txt")
    with pytest.raises(FileNotFoundError, match=r"vocabulary file not found"):
        WordPiece.from_file(tmp_path / "vocab.txt")
    with pytest.raises(FileNotFoundError, match=r"vocabulary file not found"):
        BPE.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")


@pytest.mark.parametrize("content, match", [
    ('{"a": 0,\n "b": 1,\n}', r"vocab\.json:3: not valid JSON"),
    ("[1, 2]", r"vocab\.json: expected a non-empty JSON object \{token: id\}, got list"),
    ("{}", r"expected a non-empty JSON object"),
    ('{"a": 0, "b": 2}', r"vocab\.json: the ids must be 0 \.\. 1, each once; 1 is missing"),
    ('{"a": 0, "b": 0}', r"vocab\.json: id 0 is given to several tokens \['a', 'b'\]"),
    ('{"a": "0"}', r"vocab\.json: the id of 'a' must be an int, got '0'"),
    ("[" * 100_000, r"vocab\.json"),
])
def test_a_damaged_vocab_json_names_the_file(tmp_path, content, match):
    path = tmp_path / "vocab.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_vocab_json(path)


def test_undecodable_bytes_name_the_line(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\n[UNK]\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"vocab\.txt:3: the vocabulary file is not UTF-8 "
                                         r"text \(byte 0xe9\)"):
        read_vocab_txt(path)


@pytest.mark.parametrize("lines, match", [
    (["#version: 0.2", "a b c"], r"merges\.txt:2: a merge is two tokens separated by one space, got 'a b c'"),
    (["#version: 0.2", "ab"], r"merges\.txt:2: a merge is two tokens"),
    (["#version: 0.2", "a  b"], r"merges\.txt:2: a merge is two tokens"),
    (["a b", "a b"], r"merges\.txt:2: the merge 'a b' repeats line 1"),
    (["#version: 0.2", "a z"], r"merges\.txt:2: the merge 'a z' has a second part 'z' that is not"),
    (["#version: 0.2", "b a"], r"merges\.txt:2: the merge 'b a' has a result 'ba' that is not"),
])
def test_a_damaged_merges_file_names_the_line(tmp_path, lines, match):
    path = tmp_path / "merges.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_merges(path, {"a": 0, "b": 1, "ab": 2})


@pytest.mark.parametrize("content, match", [
    ("[PAD]\n[UNK]\nthe\n[PAD]\n", r"vocab\.txt:4: the token '\[PAD\]' repeats line 1"),
    ("[PAD]\n\nthe\n", r"vocab\.txt:2: empty token"),
    ("", r"vocab\.txt: the vocabulary is empty"),
])
def test_a_damaged_vocab_txt_names_the_line(tmp_path, content, match):
    path = tmp_path / "vocab.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        read_vocab_txt(path)


# ------------------------------------------------- unknown special tokens, nothing half-loaded
def test_an_unknown_special_token_is_named(tmp_path, gpt2_files):
    vocab = {"a": 0, "b": 1}
    with pytest.raises(ValueError, match=r"the unknown token '<unk>' is not in the vocabulary"):
        BPE(vocab, [])
    with pytest.raises(ValueError, match=r"the special token '<\|im_end\|>' is not in .*vocab\.json"):
        ByteLevelBPE.from_files(gpt2_files / "vocab.json", gpt2_files / "merges.txt",
                                special_tokens=["<|im_end|>"])
    with pytest.raises(ValueError, match=r"the special token '\[MASK\]' is not in vocab$"):
        WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"])
    path = tmp_path / "vocab.txt"
    path.write_text("[UNK]\n[CLS]\n[SEP]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"the special token '\[PAD\]' is not in {path}"):
        WordPiece.from_file(path)


def test_a_byte_level_vocabulary_needs_every_byte():
    vocab = {c: i for i, c in enumerate(list(bytes_to_unicode().values())[:-1])}
    with pytest.raises(ValueError, match=r"vocab lacks 1 of the 256 byte symbols, e\.g\. \['ÿ'\]"):
        ByteLevelBPE(vocab, [])


def test_a_merge_outside_the_vocabulary_is_refused_in_memory_too():
    with pytest.raises(ValueError, match=r"merges\[1\] = \('a', 'c'\) has a second part 'c' that is not"):
        BPE({"<unk>": 0, "a": 1, "b": 2, "ab": 3}, [("a", "b"), ("a", "c")])
    with pytest.raises(ValueError, match=r"vocab: the ids must be 0 \.\. 1"):
        BPE({"<unk>": 0, "a": 5}, [])


def test_a_failed_load_leaves_nothing_half_loaded(tmp_path, gpt2_files):
    merges = (gpt2_files / "merges.txt").read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "merges.txt"
    bad.write_text("\n".join(merges[:5] + ["Ġ zzz"] + merges[5:]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges\.txt:6: the merge 'Ġ zzz' has a second part 'zzz'"):
        ByteLevelBPE.from_files(gpt2_files / "vocab.json", bad)
    vocab = json.loads((gpt2_files / "vocab.json").read_text(encoding="utf-8"))
    assert ByteLevelBPE.from_files(gpt2_files / "vocab.json", gpt2_files / "merges.txt").get_vocab() == vocab


# ------------------------------------------------------------------ Hugging Face model directories
@pytest.fixture
def model_dir(tmp_path, gpt2_files):
    """A directory with GPT-2's and BERT's vocabulary files, as snapshot_download leaves them."""
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((gpt2_files / name).read_bytes())
    write_vocab_txt(tmp_path / "vocab.txt", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"])
    return tmp_path


@pytest.mark.parametrize("load", [gpt2_tokenizer, bert_tokenizer])
def test_a_missing_model_directory_is_named(tmp_path, load):
    missing = tmp_path / "gpt2"
    with pytest.raises(FileNotFoundError, match=rf"^model directory not found: {missing}$"):
        load(missing)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=rf"{tmp_path / 'file'} is a file; expected a model"):
        load(tmp_path / "file")
    with pytest.raises(TypeError, match=r"the model directory must be a str or os.PathLike, got int"):
        load(3)


@pytest.mark.parametrize("load, name", [(gpt2_tokenizer, "vocab.json"), (gpt2_tokenizer, "merges.txt"),
                                        (bert_tokenizer, "vocab.txt")])
def test_a_missing_file_of_the_directory_is_named(model_dir, load, name):
    (model_dir / name).unlink()
    with pytest.raises(FileNotFoundError, match=rf"^{model_dir} has no {name}; .*'s tokenizer reads "
                                                r".*snapshot_download\(repo_id, allow_patterns=\["):
        load(model_dir)
    (model_dir / "tokenizer.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=rf"has no {name} \(it has tokenizer\.json, which the "
                                                r"course does not read\)"):
        load(model_dir)


def test_a_damaged_vocabulary_in_the_directory_names_its_line(model_dir):
    (model_dir / "vocab.txt").write_text("[PAD]\n[UNK]\n[PAD]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt:3: the token '\[PAD\]' repeats line 1"):
        bert_tokenizer(model_dir)


@pytest.mark.parametrize("load, content, match", [
    (bert_tokenizer, '{"do_lower_case": true,\n}', r"tokenizer_config\.json:2: not valid JSON"),
    (gpt2_tokenizer, "[1, 2]", r"tokenizer_config\.json: expected a JSON object \{setting: value\}, "
                               r"got list"),
    (bert_tokenizer, '{"do_lower_case": "yes"}',
     r"tokenizer_config\.json: do_lower_case must be true, false or null, got 'yes'"),
    (bert_tokenizer, '{"do_lower_case": null}', r"do_lower_case must be true or false, got null"),
    (bert_tokenizer, '{"strip_accents": 1}', r"strip_accents must be true, false or null, got 1"),
    (bert_tokenizer, '{"unk_token": 5}', r"tokenizer_config\.json: unk_token must be a non-empty str or "
                                         r"null, got 5"),
    (bert_tokenizer, '{"cls_token": null}', r"cls_token must be a token, got null"),
    (bert_tokenizer, '{"mask_token": "<mask>"}',
     r"tokenizer_config\.json: mask_token '<mask>' is not in .*vocab\.txt"),
    (gpt2_tokenizer, '{"eos_token": "</s>"}',
     r"tokenizer_config\.json: eos_token '</s>' is not in .*vocab\.json"),
    (gpt2_tokenizer, '{"added_tokens_decoder": [1]}', r"added_tokens_decoder must be an object"),
    (gpt2_tokenizer, '{"added_tokens_decoder": {"9": {"content": "<x>"}}}',
     r"added_tokens_decoder\['9'\] '<x>' is not in"),
    (gpt2_tokenizer, '{"add_prefix_space": true}', r"add_prefix_space is true; the course's ByteLevelBPE"),
    (bert_tokenizer, '{"tokenize_chinese_chars": false}',
     r"tokenize_chinese_chars is false; the course's WordPiece always splits CJK"),
])
def test_a_damaged_tokenizer_config_names_the_file_and_key(model_dir, load, content, match):
    (model_dir / "tokenizer_config.json").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        load(model_dir)


def test_bert_tokenizer_refuses_an_unknown_option(model_dir):
    with pytest.raises(TypeError, match=r"WordPiece\.from_file got unknown options \['lower'\]"):
        bert_tokenizer(model_dir, lower=True)
