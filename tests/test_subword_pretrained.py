"""``gpt2_tokenizer`` and ``bert_tokenizer`` read a Hugging Face model directory and give the
ids of ``AutoTokenizer.from_pretrained`` on it, offline.

The directories are written here by ``transformers``' ``save_pretrained`` from files trained
here. transformers 5 saves ``tokenizer.json`` and ``tokenizer_config.json`` only; the Hub's
repositories (``gpt2``, ``bert-base-uncased``) hold the vocabulary files beside them, so the
test copies them in, as ``snapshot_download`` would find them.
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
from test_subword_parity import CORPUS  # noqa: E402
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
            assert ours.decode(ids, skip_special_tokens=skip) == auto.decode(ids, skip_special_tokens=skip)
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
