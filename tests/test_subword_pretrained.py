"""``gpt2_tokenizer`` and ``bert_tokenizer`` read a Hugging Face model directory and give the
ids of ``AutoTokenizer.from_pretrained`` on it, offline.

The directories are written here by ``transformers``' ``save_pretrained`` from files trained
here. transformers 5 saves ``tokenizer.json`` and ``tokenizer_config.json`` only; the Hub's
repositories (``gpt2``, ``bert-base-uncased``) hold the vocabulary files beside them, so the
test copies them in, as ``snapshot_download`` would find them.

The reference is ``AutoTokenizer``, ``tokenizers``-backed in both versions (transformers 4: the
``...Fast`` classes, decoding with its extra clean-up pass off, see ``hf_decode``). Two settings
are transformers 5's: a list of ``extra_special_tokens`` (transformers 4 fails to load it; there it
is compared as ``additional_special_tokens``), and ``add_eos_token``, which 4's GPT-2 ignores.
"""

import json
import shutil

import pytest

from course_pkg.subword import (
    ByteLevelBPE,
    WordPiece,
    bert_tokenizer,
    gpt2_tokenizer,
    read_tokenizer_config,
    train_byte_level_bpe,
    write_vocab_txt,
)

pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")
from test_subword_parity import CORPUS, TRANSFORMERS_4, hf_decode  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers  # noqa: E402

TEXTS = [
    "", "Hello world!", "HELLO World, MiXeD case", "Café naïve façade über niño señor",
    "don't can't I'm John's", "1999 3.14 $5.00 + €3,50 = ?", "emoji 👍 👨‍👩‍👧 and 東京は日本の首都です。",
    "tab\tand\nnew lines  two spaces", "ΣΊΣΥΦΟΣ and Ελληνικά", "x" * 120,
] + CORPUS[:20]


def _save(tokenizer, folder, files):
    """``tokenizer.save_pretrained(folder)``, then the vocabulary files beside it (as on the Hub)."""
    tokenizer.save_pretrained(str(folder))
    for path in files:
        if not (folder / path.name).exists():
            shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    files = tmp_path_factory.mktemp("gpt2_files")
    train_byte_level_bpe(CORPUS, 700).save(files / "vocab.json", files / "merges.txt")
    # positional: transformers 5 names them vocab and merges, 4 vocab_file and merges_file
    hf = transformers.GPT2TokenizerFast(str(files / "vocab.json"), str(files / "merges.txt"))
    return _save(hf, tmp_path_factory.mktemp("gpt2"), [files / "vocab.json", files / "merges.txt"])


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def bert_dir(request, tmp_path_factory):
    lowercase = request.param
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=600, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    vocab_file = tmp_path_factory.mktemp("bert_files") / "vocab.txt"
    vocab = tok.get_vocab()
    write_vocab_txt(vocab_file, sorted(vocab, key=vocab.get))
    hf = transformers.BertTokenizerFast(str(vocab_file), do_lower_case=lowercase)
    return _save(hf, tmp_path_factory.mktemp("bert"), [vocab_file]), lowercase


def test_gpt2_tokenizer_gives_autotokenizers_ids(gpt2_dir):
    ours = gpt2_tokenizer(gpt2_dir)
    auto = transformers.AutoTokenizer.from_pretrained(str(gpt2_dir))
    assert isinstance(ours, ByteLevelBPE) and ours.special_tokens == ["<|endoftext|>"]
    assert len(auto) == ours.vocab_size == 700
    for text in TEXTS + ["<|endoftext|>one<|endoftext|> two"]:
        ids = ours.encode(text)
        assert ids == auto(text)["input_ids"], repr(text)
        assert ours.decode(ids) == auto.decode(ids) == text
    assert ours.get_vocab()["<|endoftext|>"] == auto.eos_token_id


def test_bert_tokenizer_reads_do_lower_case_and_gives_autotokenizers_ids(bert_dir):
    folder, lowercase = bert_dir
    assert read_tokenizer_config(folder)["do_lower_case"] is lowercase
    ours = bert_tokenizer(folder)
    auto = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert isinstance(ours, WordPiece) and ours.lowercase is lowercase
    assert len(auto) == ours.vocab_size > 500
    assert set(ours.special_tokens) == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    for text in TEXTS + ["Paris is the [MASK] of France.", "[CLS] a [SEP] b [PAD]"]:
        ids = ours.encode(text)
        assert ids == auto(text)["input_ids"], repr(text)
        for skip in (False, True):
            expected = hf_decode(auto, ids, skip_special_tokens=skip)
            assert ours.decode(ids, skip_special_tokens=skip) == expected
    mask = ours.encode("the [MASK] sat")
    assert mask.count(ours.get_vocab()["[MASK]"]) == 1 == mask.count(auto.mask_token_id)


def test_an_options_argument_overrides_the_configuration(bert_dir):
    folder, lowercase = bert_dir
    assert bert_tokenizer(folder, lowercase=not lowercase).lowercase is (not lowercase)


def test_without_tokenizer_config_the_defaults_are_transformers(tmp_path, bert_dir, gpt2_dir):
    folder, _ = bert_dir
    shutil.copy(folder / "vocab.txt", tmp_path / "vocab.txt")
    assert bert_tokenizer(tmp_path).lowercase is True  # BertTokenizer's do_lower_case=True
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(gpt2_dir / name, tmp_path / name)
    assert gpt2_tokenizer(tmp_path).special_tokens == ["<|endoftext|>"]


def test_the_hubs_bert_base_uncased_configuration_is_read(tmp_path, bert_dir):
    """The Hub's ``bert-base-uncased/tokenizer_config.json`` names no token: BERT's defaults hold."""
    folder, _ = bert_dir
    shutil.copy(folder / "vocab.txt", tmp_path / "vocab.txt")
    hub = {"do_lower_case": True, "model_max_length": 512}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(hub), encoding="utf-8")
    ours = bert_tokenizer(tmp_path)
    assert ours.lowercase and set(ours.special_tokens) == {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    assert ours.tokenize("a [MASK] b")[1] == "[MASK]"


def test_transformers_4_tokens_saved_as_objects_are_read(tmp_path, gpt2_dir):
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(gpt2_dir / name, tmp_path / name)
    added = {"content": "<|endoftext|>", "lstrip": False, "normalized": True, "rstrip": False,
             "single_word": False, "__type": "AddedToken"}
    config = {"add_prefix_space": False, "bos_token": added, "eos_token": added, "unk_token": added,
              "added_tokens_decoder": {"0": {**added, "special": True}}}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    assert gpt2_tokenizer(tmp_path).special_tokens == ["<|endoftext|>"]


# ------------------------------------------------- issue 37: every tokenizer_config.json key that changes ids
def _bare_dir(tmp_path, source, names, config):
    """A model directory of vocabulary files and ``config`` alone (no tokenizer.json to prefer)."""
    for name in names:
        shutil.copy(source / name, tmp_path / name)
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def _autotokenizer(folder):
    """``AutoTokenizer.from_pretrained(folder)``. transformers 4 reads ``extra_special_tokens`` only
    as an object {name: token} (a list fails as it loads): there a list is renamed
    ``additional_special_tokens`` in ``folder``'s configuration, 4's name for the same tokens."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if TRANSFORMERS_4 and isinstance(config.get("extra_special_tokens"), list):
        config["additional_special_tokens"] = config.pop("extra_special_tokens")
        path.write_text(json.dumps(config), encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(str(folder))


SPECIAL_KEYS = [{"additional_special_tokens": ["{t}"]}, {"extra_special_tokens": ["{t}"]},
                {"extra_special_tokens": {"image_token": "{t}"}},
                {"additional_special_tokens": [{"content": "{t}", "lstrip": False, "normalized": False,
                                                "rstrip": False, "single_word": False, "special": True,
                                                "__type": "AddedToken"}]}]


@pytest.mark.parametrize("setting", SPECIAL_KEYS, ids=lambda s: next(iter(s)))
def test_gpt2_extra_special_tokens_are_honoured_as_autotokenizer_does(tmp_path, gpt2_dir, setting):
    vocab = json.loads((gpt2_dir / "vocab.json").read_text(encoding="utf-8"))
    token = next(t for t in vocab if len(t) > 3 and t.isalpha())  # a token of the vocabulary
    config = json.loads(json.dumps(setting).replace("{t}", token))
    folder = _bare_dir(tmp_path, gpt2_dir, ["vocab.json", "merges.txt"],
                       {"tokenizer_class": "GPT2Tokenizer", **config})
    ours, auto = gpt2_tokenizer(folder), _autotokenizer(folder)
    assert token in ours.special_tokens
    for text in [f"a{token}b {token}", f"x {token}{token}", "Hello world!"] + TEXTS[:5]:
        assert ours.encode(text) == auto(text)["input_ids"], text


@pytest.mark.parametrize("setting", SPECIAL_KEYS + [{"mask_token": "{t}"}], ids=lambda s: next(iter(s)))
@pytest.mark.parametrize("token", ["<mask>", "[MASK]", "<|endoftext|>"])
def test_bert_special_tokens_in_any_brackets_are_honoured_as_autotokenizer_does(tmp_path, bert_dir, setting,
                                                                                token):
    folder, lowercase = bert_dir
    tokens = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")[:-1]
    if token not in tokens:
        tokens.append(token)
    write_vocab_txt(tmp_path / "vocab.txt", tokens)
    config = json.loads(json.dumps(setting).replace("{t}", token))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase, **config}), encoding="utf-8")
    ours, auto = bert_tokenizer(tmp_path), _autotokenizer(tmp_path)
    for text in [f"the {token} sat", f"a{token}{token}b", "Paris [MASK] <mask> <|endoftext|>."] + TEXTS[:4]:
        assert ours.encode(text) == auto(text)["input_ids"], text
        assert ours.tokenize(text) == auto.tokenize(text), text


@pytest.mark.parametrize("key", ["add_bos_token", "add_eos_token"])
def test_gpt2_add_bos_or_eos_token_is_refused_naming_the_key(tmp_path, gpt2_dir, key):
    folder = _bare_dir(tmp_path, gpt2_dir, ["vocab.json", "merges.txt"], {"tokenizer_class": "GPT2Tokenizer"})
    auto_plain = transformers.AutoTokenizer.from_pretrained(str(folder))("Hello")["input_ids"]
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer", key: True}))
    auto_set = transformers.AutoTokenizer.from_pretrained(str(folder))("Hello")["input_ids"]
    if TRANSFORMERS_4 and key == "add_eos_token":  # 4's GPT2TokenizerFast ignores it; the course refuses
        assert auto_set == auto_plain
    else:
        assert auto_set != auto_plain
    with pytest.raises(ValueError, match=rf"tokenizer_config\.json: {key} is true; the course's ByteLevelBPE "
                                         r"adds no token"):
        gpt2_tokenizer(folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({key: False}))
    assert gpt2_tokenizer(folder).encode("Hello") == auto_plain


def test_bert_ignores_add_bos_token_as_autotokenizer_does(tmp_path, bert_dir):
    folder, lowercase = bert_dir
    config = {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase, "add_bos_token": True,
              "add_eos_token": True}
    bare = _bare_dir(tmp_path, folder, ["vocab.txt"], config)
    auto = transformers.AutoTokenizer.from_pretrained(str(bare))
    assert bert_tokenizer(bare).encode("Hello world!") == auto("Hello world!")["input_ids"]


@pytest.mark.parametrize("config, match", [
    ({"additional_special_tokens": ["<not-in-vocab>"]},
     r"additional_special_tokens\[0\] '<not-in-vocab>' is not in .*vocab"),
    ({"extra_special_tokens": {"image_token": "<img>"}},
     r"extra_special_tokens\['image_token'\] '<img>' is not in"),
    ({"extra_special_tokens": "<img>"}, r"extra_special_tokens must be a list of tokens or an object"),
    ({"additional_special_tokens": ["[MASK]"], "extra_special_tokens": ["[PAD]"]},
     r"additional_special_tokens and extra_special_tokens name different tokens"),
])
@pytest.mark.parametrize("load, names", [(gpt2_tokenizer, ["vocab.json", "merges.txt"]),
                                         (bert_tokenizer, None)])
def test_extra_special_tokens_outside_the_vocabulary_are_refused(tmp_path, gpt2_dir, bert_dir, config, match,
                                                                 load, names):
    if load is gpt2_tokenizer and "[MASK]" in str(config):
        config = json.loads(json.dumps(config).replace("[MASK]", "<|endoftext|>").replace("[PAD]", "a"))
    source, names = (gpt2_dir, names) if names else (bert_dir[0], ["vocab.txt"])
    with pytest.raises(ValueError, match=match):
        load(_bare_dir(tmp_path, source, names, config))
