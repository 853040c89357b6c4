"""Decoding: a bare string is one sentence, ``max_len`` beyond the model's is refused, an empty
batch gives an empty result (both frameworks)."""

import numpy as np
import pytest
from helpers import MAX_LEN, class_args

SRC = np.array([[5, 9, 3, 2], [4, 2, 0, 0]], np.int64)


def _transformer(fw):
    fw.seed(0)
    return fw.make("Transformer", *class_args("Transformer"))


def _vocabs():
    from course_pkg import data

    tokenizer = data.Tokenizer()
    return (data.Vocab.build(["un deux trois", "quatre cinq"], tokenizer),
            data.Vocab.build(["one two three", "four five"], tokenizer))


@pytest.mark.parametrize("beam_size", [1, 2])
def test_translate_takes_a_bare_string_as_one_sentence(fw, beam_size):
    src_vocab, tgt_vocab = _vocabs()
    fw.seed(0)
    model = fw.make("Transformer", 1, 8, 2, 16, len(src_vocab), len(tgt_vocab), 8)
    got = fw.cp.translate(model, "quatre cinq", src_vocab, tgt_vocab, max_len=4, beam_size=beam_size)
    assert isinstance(got, str)
    assert got == fw.cp.translate(model, ["quatre cinq"], src_vocab, tgt_vocab, max_len=4,
                                  beam_size=beam_size)[0]


@pytest.mark.parametrize("decode", ["greedy_decode", "beam_search"])
@pytest.mark.parametrize("max_len", [MAX_LEN + 1, 100])
def test_decoding_refuses_max_len_beyond_the_models(fw, decode, max_len):
    model = _transformer(fw)
    with pytest.raises(ValueError, match=rf"max_len={max_len} exceeds the model's max_len={MAX_LEN}"):
        getattr(fw.cp, decode)(model, SRC, max_len=max_len)


def test_translate_refuses_max_len_beyond_the_models(fw):
    src_vocab, tgt_vocab = _vocabs()
    model = fw.make("Transformer", 1, 8, 2, 16, len(src_vocab), len(tgt_vocab), 8)
    with pytest.raises(ValueError, match=r"max_len=9 exceeds the model's max_len=8"):
        fw.cp.translate(model, ["un deux"], src_vocab, tgt_vocab, max_len=9)


@pytest.mark.parametrize("decode", ["greedy_decode", "beam_search"])
def test_decoding_up_to_the_models_max_len_works(fw, decode):
    model = _transformer(fw)
    tokens = fw.to_numpy(getattr(fw.cp, decode)(model, SRC, max_len=MAX_LEN))
    assert tokens.shape[0] == 2 and 1 <= tokens.shape[1] <= MAX_LEN


def test_beam_search_of_an_empty_batch_is_empty(fw):
    model = _transformer(fw)
    tokens, scores = fw.cp.beam_search(model, SRC[:0], beam_size=3, max_len=4, return_scores=True)
    assert fw.to_numpy(tokens).shape == (0, 0) and fw.to_numpy(tokens).dtype == np.int64
    assert fw.to_numpy(scores).shape == (0,)


def test_greedy_decoding_of_an_empty_batch_is_empty(fw):
    model = _transformer(fw)
    tokens, logits = fw.cp.greedy_decode(model, SRC[:0], max_len=4, return_logits=True)
    assert fw.to_numpy(tokens).shape == (0, 0) and fw.to_numpy(tokens).dtype == np.int64
    assert fw.to_numpy(logits).shape == (0, 0, class_args("Transformer")[5])


def test_translate_of_no_sentence_is_an_empty_list(fw):
    src_vocab, tgt_vocab = _vocabs()
    model = fw.make("Transformer", 1, 8, 2, 16, len(src_vocab), len(tgt_vocab), 8)
    assert fw.cp.translate(model, [], src_vocab, tgt_vocab, beam_size=2) == []
