"""course_pkg.data.mlm: masked-LM inputs (the 80/10/10 rule), the classification corpus, prompts.

Framework-free, fast. The rates are checked within five binomial standard deviations on
100 000 draws: a wrong rule (say 90/5/5, or masking specials) fails, a right one passes
with probability above 1 - 1e-5 (and the seeds are fixed).
"""

from __future__ import annotations

import numpy as np
import pytest

from course_pkg import data
from course_pkg.data import BOS_ID, EOS_ID, PAD_ID, UNK_ID, mask_for_mlm

MASK_ID, VOCAB = 4, 50
SPECIALS = (PAD_ID, BOS_ID, EOS_ID, UNK_ID)


def _tokens(rng, rows=2000, length=60):
    """Rows ``<bos> w1 .. wn <eos> <pad>...`` with ordinary tokens 5..49 and a few <unk>."""
    tokens = np.zeros((rows, length), dtype=np.int64)
    for row in range(rows):
        n = int(rng.integers(10, length - 1))
        tokens[row, 0] = BOS_ID
        tokens[row, 1:n + 1] = rng.integers(5, VOCAB, n)
        tokens[row, n + 1] = EOS_ID
    tokens[rng.random(tokens.shape) < 0.01 * (tokens >= 5)] = UNK_ID
    return tokens


def _within(count, n, p, sigmas=5.0):
    return abs(count - n * p) <= sigmas * np.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("rate", [0.15, 0.4])
def test_rates_follow_the_80_10_10_rule(rate):
    tokens = _tokens(np.random.default_rng(1))
    inputs, labels, positions = mask_for_mlm(tokens, np.random.default_rng(2), MASK_ID, VOCAB, rate=rate)
    ordinary = tokens >= 5
    n_ordinary, chosen = int(ordinary.sum()), int(positions.sum())
    assert n_ordinary > 50_000
    assert _within(chosen, n_ordinary, rate)
    masked = int((positions & (inputs == MASK_ID)).sum())
    kept = int((positions & (inputs == tokens)).sum())
    swapped = chosen - masked - kept
    assert _within(masked, chosen, 0.8)
    # a random replacement may draw the token itself (1 in 45): it then counts as kept
    p_same = 0.1 / (VOCAB - 5)
    assert _within(kept, chosen, 0.1 + p_same)
    assert _within(swapped, chosen, 0.1 - p_same)
    changed = inputs[positions & (inputs != tokens)]
    assert ((changed >= 5) | (changed == MASK_ID)).all()


def test_specials_are_never_chosen_and_the_rest_is_untouched():
    tokens = _tokens(np.random.default_rng(3), rows=500)
    inputs, labels, positions = mask_for_mlm(tokens, np.random.default_rng(4), MASK_ID, VOCAB, rate=1.0)
    special = np.isin(tokens, SPECIALS)
    assert not positions[special].any()
    assert positions[~special].all()  # rate 1: every ordinary token is chosen
    assert (inputs[special] == tokens[special]).all()
    assert (labels[positions] == tokens[positions]).all() and (labels[~positions] == PAD_ID).all()
    replaced = inputs[positions & (inputs != MASK_ID)]
    assert not np.isin(replaced, SPECIALS).any()  # random replacements are ordinary tokens
    inputs, labels, positions = mask_for_mlm(tokens, np.random.default_rng(4), MASK_ID, VOCAB, rate=0.2)
    assert (inputs[~positions] == tokens[~positions]).all()
    assert (labels[~positions] == PAD_ID).all()


def test_seeded_and_input_unchanged():
    tokens = _tokens(np.random.default_rng(5), rows=50)
    before = tokens.copy()
    first = mask_for_mlm(tokens, np.random.default_rng(6), MASK_ID, VOCAB)
    again = mask_for_mlm(tokens, np.random.default_rng(6), MASK_ID, VOCAB)
    other = mask_for_mlm(tokens, np.random.default_rng(7), MASK_ID, VOCAB)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[2], other[2])
    np.testing.assert_array_equal(tokens, before)
    one_d = mask_for_mlm(tokens[0], np.random.default_rng(6), MASK_ID, VOCAB)
    assert [a.shape for a in one_d] == [tokens[0].shape] * 3
    assert first[0].dtype == first[1].dtype == np.int64 and first[2].dtype == bool


def test_a_negative_ignore_id():
    tokens = _tokens(np.random.default_rng(8), rows=20)
    _, labels, positions = mask_for_mlm(tokens, np.random.default_rng(0), MASK_ID, VOCAB, ignore_id=-100)
    assert (labels[~positions] == -100).all() and (labels[positions] >= 5).all()


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(rng=0), TypeError, "numpy.random.Generator"),
    (dict(tokens=[[1.0, 2.0]]), TypeError, "integer ids"),
    (dict(tokens=np.zeros((2, 2, 2), dtype=int)), ValueError, "shape"),
    (dict(tokens=[[5, 50]]), ValueError, r"\[0, 50\)"),
    (dict(tokens=[[-1, 5]]), ValueError, r"\[0, 50\)"),
    (dict(mask_id=50), ValueError, "mask_id"),
    (dict(rate=0.0), ValueError, "rate"),
    (dict(rate=1.5), ValueError, "rate"),
    (dict(rate=True), ValueError, "rate"),
    (dict(ignore_id=7), ValueError, "ignore_id"),
    (dict(vocab_size=5), ValueError, "ordinary token"),
    (dict(special_ids=(-1,)), ValueError, "special_ids"),
])
def test_bad_input_is_refused(kwargs, error, match):
    args = dict(tokens=[[1, 7, 8, 2, 0]], rng=np.random.default_rng(0), mask_id=MASK_ID, vocab_size=VOCAB)
    if kwargs.get("vocab_size") == 5:
        args["tokens"] = [[1, 2, 0]]
    args.update(kwargs)
    with pytest.raises(error, match=match):
        mask_for_mlm(args.pop("tokens"), args.pop("rng"), **args)


def test_with_mask_token():
    vocab = data.Vocab.build(["un deux trois", "deux"], data.Tokenizer("fr"))
    masked = data.with_mask_token(vocab)
    assert masked.itos[:5] == list(data.SPECIAL_TOKENS) + [data.MASK]
    assert masked.itos[5:] == vocab.itos[4:]
    assert data.with_mask_token(masked) is masked
    with pytest.raises(TypeError, match="Vocab"):
        data.with_mask_token(["<pad>"])


def test_classification_corpus_labels_and_splits():
    corpus = data.make_number_classification("en", "digits", size=2000, seed=3)
    translation = data.make_number_corpus("fr", "en", size=2000, seed=3)
    assert corpus.numbers == translation.numbers  # the same numbers, split the same way
    for split in ("train", "valid", "test"):
        for (text, label), number in zip(getattr(corpus, split), corpus.numbers[split]):
            assert label == len(str(number)) - 1
            assert text == data.number_words(number, "en")
    parity = data.make_number_classification("fr", "parity", size=500)
    assert {label for _, label in parity.train} == {0, 1}
    assert all(label == n % 2 for (_, label), n in zip(parity.train, parity.numbers["train"]))
    assert not set(parity.numbers["train"]) & set(parity.numbers["test"])
    with pytest.raises(ValueError, match="task must be one of"):
        data.make_number_classification("en", "colour")
    with pytest.raises(ValueError, match="size=11"):
        data.make_number_classification("en", max_number=9, size=11)


def test_prompts_score_the_answer_only():
    pairs = [("quatre-vingt-dix-sept", "ninety-seven"), ("mille deux", "one thousand and two")]
    vocab = data.Vocab.build(data.prompt_texts(pairs), data.Tokenizer("en"))
    inputs, labels = data.encode_prompts(pairs, vocab)
    words = [[vocab.itos[i] for i in row] for row in inputs]
    assert words[0] == ["<bos>", "quatre-vingt-dix-sept", "=", "ninety-seven"] + ["<pad>"] * 4
    assert words[1] == ["<bos>", "mille", "deux", "=", "one", "thousand", "and", "two"]
    assert [vocab.itos[i] for i in labels[0]] == ["<pad>", "<pad>", "ninety-seven", "<eos>"] + ["<pad>"] * 4
    assert [vocab.itos[i] for i in labels[1]] == ["<pad>"] * 3 + ["one", "thousand", "and", "two", "<eos>"]
    for row_in, row_out in zip(inputs, labels):  # labels are the inputs shifted left, where scored
        scored = np.flatnonzero(row_out)
        assert (row_out[scored[:-1]] == row_in[scored[:-1] + 1]).all() and row_out[scored[-1]] == EOS_ID
    assert data.prompt_ids(["mille deux"], vocab) == [list(inputs[1, :4])]
    with pytest.raises(ValueError, match="max_len=6"):
        data.encode_prompts(pairs, vocab, max_len=6)
    with pytest.raises(ValueError, match="separator"):
        data.encode_prompts(pairs, vocab, sep="->")
    with pytest.raises(TypeError, match="pair 0"):
        data.encode_prompts([("a", 1)], vocab)
    with pytest.raises(TypeError, match="single str"):
        data.prompt_ids("mille deux", vocab)
