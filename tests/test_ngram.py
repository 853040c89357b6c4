"""course_pkg.ngram: Kneser-Ney n-gram language models (framework-free), checked by hand and by sums."""

import itertools
import math

import numpy as np
import pytest

from course_pkg.ngram import KneserNey, ney_discount

# Two sentences over ids 0..4 (0 begins, 1 ends each one): padded, they read 0 2 3 1 and 0 2 1.
TINY = [[2, 3], [2]]


def tiny_bigram():
    return KneserNey(TINY, order=2, vocab_size=5, bos=0, eos=1, discount=0.5)


def test_bigram_matches_the_hand_computation():
    lm = tiny_bigram()
    # continuation counts N(. w): 2 <- {0}, 3 <- {2}, 1 <- {3, 2}: total 4, 3 types
    unigram = [0.075, 1.5 / 4 + 0.075, 0.5 / 4 + 0.075, 0.5 / 4 + 0.075, 0.075]
    np.testing.assert_allclose(lm.probabilities([4]), unigram)  # history 4 never seen: the unigram
    # after 2: counts {3: 1, 1: 1}, total 2, 2 types -> max(c - 0.5, 0) / 2 + 0.5 * unigram
    np.testing.assert_allclose(lm.probabilities([2]), [0.0375, 0.475, 0.1, 0.35, 0.0375])
    assert lm.probability(2, []) == pytest.approx(1.5 / 2 + 0.5 * 1 / 2 * 0.2)  # after <bos>: 0.8
    assert lm.log_probs([2]) == pytest.approx([math.log(0.8), math.log(0.475)])
    assert lm.perplexity([[2]]) == pytest.approx(1 / math.sqrt(0.8 * 0.475))


def test_unigram_discounts_raw_counts_towards_uniform():
    lm = KneserNey(TINY, order=1, vocab_size=5, bos=0, eos=1, discount=0.5)
    # raw counts of the predicted tokens: 2 twice, 3 once, 1 twice; 5 in all, 3 types
    floor = 0.5 * 3 / 5 / 5
    np.testing.assert_allclose(lm.probabilities([3, 2]), [floor, 1.5 / 5 + floor, 1.5 / 5 + floor,
                                                          0.5 / 5 + floor, floor])


def test_every_distribution_sums_to_one():
    rng = np.random.default_rng(0)
    sentences = [rng.integers(2, 9, rng.integers(1, 7)).tolist() for _ in range(40)]
    for order in (1, 2, 3):
        lm = KneserNey(sentences, order=order, vocab_size=12, bos=1, eos=1)  # one id for both
        for history in itertools.product(range(12), repeat=2):  # seen and unseen histories
            probs = lm.probabilities(list(history))
            assert probs.sum() == pytest.approx(1.0, abs=1e-12)
            assert (probs > 0).all()


def test_trigram_uses_two_tokens_of_history():
    sentences = [[2, 3, 4], [5, 3, 6]] * 3
    lm = KneserNey(sentences, order=3, vocab_size=8, bos=0, eos=1)
    assert lm.probability(4, [2, 3]) > 0.5 > lm.probability(4, [5, 3])
    bigram = KneserNey(sentences, order=2, vocab_size=8, bos=0, eos=1)
    assert bigram.probability(4, [2, 3]) == pytest.approx(bigram.probability(4, [5, 3]))
    assert lm.probability(2, []) == lm.probability(2, [0, 0])  # a sentence's start: <bos> <bos>


def test_ney_discount():
    assert ney_discount([1, 1, 2, 3]) == 0.5  # n1 = 2, n2 = 1
    assert ney_discount([3, 4]) == 0.75
    lm = KneserNey([[2, 3], [2, 4], [2, 3]], order=2, vocab_size=6, bos=0, eos=1)
    assert set(lm.discounts) == {1, 2} and all(0 < d < 1 for d in lm.discounts.values())


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="order"):
        KneserNey(TINY, order=0, vocab_size=5, bos=0, eos=1)
    with pytest.raises(ValueError, match=r"sentences\[1\].*\[0, 5\).*7"):
        KneserNey([[2], [7]], order=2, vocab_size=5, bos=0, eos=1)
    with pytest.raises(ValueError, match="discount"):
        KneserNey(TINY, order=2, vocab_size=5, bos=0, eos=1, discount=1.5)
    with pytest.raises(ValueError, match="sentence"):
        tiny_bigram().log_probs([9])
