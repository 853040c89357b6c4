"""Issue 37's bad input, table-driven over the subword tokenizers: each refused with an error that
names the argument, what was expected and what came, before anything is computed or kept."""

import numpy as np
import pytest

from course_pkg.subword import (
    BPE,
    ByteLevelBPE,
    WordPiece,
    bert_pre_tokenize,
    bert_tokenizer,
    learn_merges,
    train_bpe,
    train_byte_level_bpe,
    write_vocab_txt,
)

CORPUS = ["the cat sat on the mat", "the cats sat on the mats", "a dog"]
BERT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "a"]


@pytest.fixture(scope="module")
def tokenizers_():
    return {"bpe": train_bpe(CORPUS, 40), "byte_bpe": train_byte_level_bpe(CORPUS, 300),
            "wordpiece": WordPiece(BERT_VOCAB)}


BAD_IDS = [
    (bytearray(b"\x01\x02"), TypeError,
     r"^ids must be a list of int token ids, got bytearray; encode\(text\)"),
    (None, TypeError, r"^ids must be a list of int token ids, got NoneType$"),
    (3, TypeError, r"^ids must be a list of int token ids, got one int 3; pass a list: \[3\]$"),
    (np.int64(3), TypeError, r"^ids must be a list of int token ids, got one int64 3; pass a list"),
    (np.array([[1, 2], [3, 4]]), ValueError, r"^ids must be a list of int token ids \(1-D\), got a 2-D "
                                             r"ndarray of shape \(2, 2\); decode each row"),
    ([[1, 2]], TypeError,
     r"^ids\[0\] must be an int, got \[1, 2\] \(ids must be one sequence: decode each row\)"),
    (2.5, TypeError, r"^ids must be a list of int token ids, got float$"),
]


@pytest.mark.parametrize("name", ["bpe", "byte_bpe", "wordpiece"])
@pytest.mark.parametrize("ids, error, match", BAD_IDS, ids=lambda x: type(x).__name__)
def test_decode_and_convert_ids_to_tokens_refuse_what_is_not_one_sequence_of_ids(tokenizers_, name, ids,
                                                                                 error, match):
    tok = tokenizers_[name]
    for method in (tok.decode, tok.convert_ids_to_tokens):
        with pytest.raises(error, match=match):
            method(ids)


@pytest.mark.parametrize("name", ["bpe", "byte_bpe", "wordpiece"])
def test_one_dimensional_arrays_and_ranges_are_still_decoded(tokenizers_, name):
    tok = tokenizers_[name]
    ids = tok.encode("the cats")
    assert tok.decode(np.array(ids)) == tok.decode(ids) == tok.decode(tuple(ids))
    assert tok.convert_ids_to_tokens(range(3)) == tok.convert_ids_to_tokens([0, 1, 2])


BAD_CONSTRUCTORS = [
    (lambda: BPE({"<unk>": 0, "a": 1}, None), TypeError,
     r"^merges must be a list of \(left, right\) pairs .*got NoneType$"),
    (lambda: ByteLevelBPE(train_byte_level_bpe(CORPUS, 260).get_vocab(), None), TypeError,
     r"^merges must be a list of \(left, right\) pairs"),
    (lambda: WordPiece(None), TypeError, r"^vocab must be a list of tokens in id order, got NoneType$"),
    (lambda: WordPiece(5), TypeError, r"^vocab must be a list of tokens in id order, got int$"),
    (lambda: BPE({"<unk>": 0, None: 1}, []), ValueError,
     r"^vocab: every token must be a non-empty str, got NoneType None$"),
    (lambda: BPE({"<unk>": 0, "a": 1}, [], unk_token=5), TypeError,
     r"^unk_token must be a str or None, got int 5$"),
    (lambda: BPE({"<unk>": 0, "a": 1}, [], end_of_word_suffix=1), TypeError,
     r"^end_of_word_suffix must be a str or None, got int 1$"),
    (lambda: WordPiece(BERT_VOCAB, special_tokens=["[PAD]", None]), TypeError,
     r"^special_tokens\[1\] must be a non-empty str, got NoneType None$"),
    (lambda: WordPiece(BERT_VOCAB, unk_token=None), TypeError,
     r"^unk_token must be a non-empty str, got NoneType"),
    (lambda: ByteLevelBPE(train_byte_level_bpe(CORPUS, 260).get_vocab(), [], special_tokens="<|endoftext|>"),
     TypeError, r"^special_tokens must be a list of str, got the str '<\|endoftext\|>'; write \["),
]


@pytest.mark.parametrize("make, error, match", BAD_CONSTRUCTORS)
def test_constructors_name_the_bad_argument(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("flag, value", [("lowercase", "false"), ("lowercase", "0"), ("lowercase", 0),
                                         ("strip_accents", "false"), ("lowercase", None)])
def test_string_flags_are_refused_not_read_as_true(tmp_path, flag, value):
    allowed = "True, False or None" if flag == "strip_accents" else "True or False"
    match = rf"^{flag} must be {allowed}, got {type(value).__name__} {value!r}"
    with pytest.raises(TypeError, match=match):
        WordPiece(BERT_VOCAB, **{flag: value})
    with pytest.raises(TypeError, match=match):
        bert_pre_tokenize("Été", **{flag: value})
    write_vocab_txt(tmp_path / "vocab.txt", BERT_VOCAB)
    with pytest.raises(TypeError, match=match):
        bert_tokenizer(tmp_path, **{flag: value})
    assert WordPiece(BERT_VOCAB, lowercase=False, strip_accents=None).strip_accents is False


BAD_TRAINING = [
    ({"special_tokens": "<pad>"}, TypeError, r"^special_tokens must be a list of str, got the str '<pad>'; "
                                             r"write \['<pad>'\]$"),
    ({"special_tokens": ["<pad>", 5]}, TypeError,
     r"^special_tokens\[1\] must be a non-empty str, got int 5$"),
    ({"special_tokens": [b"<pad>"]}, TypeError, r"^special_tokens\[0\] must be a non-empty str, got bytes"),
    ({"special_tokens": [None]}, TypeError, r"^special_tokens\[0\] must be a non-empty str, got NoneType"),
    ({"texts": None}, TypeError, r"^texts must be an iterable of str \(a list of sentences\), got NoneType$"),
    ({"texts": 7}, TypeError, r"^texts must be an iterable of str \(a list of sentences\), got int$"),
    ({"texts": []}, ValueError, r"^texts hold no words \(0 texts, all empty or blank\): expected sentences"),
    ({"texts": ["", "  ", "\n"]}, ValueError, r"^texts hold no words \(3 texts, all empty or blank\)"),
]


@pytest.mark.parametrize("train", [train_bpe, train_byte_level_bpe])
@pytest.mark.parametrize("change, error, match", BAD_TRAINING)
def test_trainers_name_the_bad_argument(train, change, error, match):
    arguments = {"texts": CORPUS, "vocab_size": 300, **change}
    with pytest.raises(error, match=match):
        train(**arguments)


def test_the_bpe_trainer_names_its_own_options():
    with pytest.raises(TypeError, match=r"^end_of_word_suffix must be a str or None, got int 1$"):
        train_bpe(CORPUS, 40, end_of_word_suffix=1)
    with pytest.raises(TypeError, match=r"^unk_token must be a str or None, got bytes b'<unk>'$"):
        train_bpe(CORPUS, 40, unk_token=b"<unk>")
    with pytest.raises(TypeError, match=r"^special_tokens must be a list of str, got the str 'ab'"):
        learn_merges({"ab": 2}, 10, special_tokens="ab")


def test_valid_training_is_unchanged_and_a_generator_of_texts_is_read_once():
    assert train_bpe((t for t in CORPUS), 40).get_vocab() == train_bpe(CORPUS, 40).get_vocab()
    tok = train_byte_level_bpe(CORPUS, 300, special_tokens=["<pad>"])
    assert tok.special_tokens == ["<pad>"] and tok.tokenize("sss") != ["<pad>"] * 3
