"""Exercises 8.7 and 8.8, on section 8.6's language models: how their parameters are drawn and the
reference answers (:func:`course_pkg.reference.perplexity`, :class:`course_pkg.ngram.KneserNey`).

:data:`SPECS` holds each exercise's :class:`~course_pkg.exercises.catalog.Exercise` arguments as a
keyword dict; the catalog builds the entries from them (so this module does not import it).
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..ngram import KneserNey


def draw_perplexity(rng) -> dict:
    """Logits ``(2, seq, vocab)`` with one decimal and right-padded labels (``<pad>`` = 0).

    Shape:
        -> {"logits": source of (2, seq, vocab) floats, "labels": source of (2, seq) ints}.
    """
    seq, vocab = int(rng.integers(3, 5)), int(rng.integers(4, 6))
    logits = np.round(rng.uniform(-2, 2, (2, seq, vocab)), 1) + 0.0
    labels = rng.integers(1, vocab, (2, seq))
    labels[1, int(rng.integers(1, seq)):] = 0  # the second row is padded
    return {"logits": f"np.array({logits.tolist()!r})", "labels": repr(labels.tolist())}


def expected_perplexity(logits, labels):
    """The reference answer of exercise 8.7.

    Shape:
        logits (batch, seq, vocab), labels (batch, seq) -> a float.
    """
    return ref.perplexity(np.asarray(labels), np.asarray(logits, dtype=np.float64))


def draw_kneser_ney(rng) -> dict:
    """Three to five sentences of one to four ids in ``[2, vocab_size)`` and a discount.

    Shape:
        -> {"sentences": source of a list of lists, "vocab_size": int, "discount": float}.
    """
    vocab_size = int(rng.integers(5, 8))
    sentences = [rng.integers(2, vocab_size, int(rng.integers(1, 5))).tolist()
                 for _ in range(int(rng.integers(3, 6)))]
    return {"sentences": repr(sentences), "vocab_size": repr(vocab_size),
            "discount": repr(float(rng.choice([0.5, 0.6, 0.75, 0.8])))}


def expected_kneser_ney(sentences, vocab_size, discount):
    """The reference answer of exercise 8.8: row ``v`` holds ``P(w | v)`` for every ``w``.

    Shape:
        sentences (lists of ids) -> (vocab_size, vocab_size).
    """
    lm = KneserNey(sentences, order=2, vocab_size=vocab_size, bos=0, eos=1, discount=discount)
    return np.stack([lm.probabilities([v]) for v in range(vocab_size)])


SPECS = [
    dict(id="8.7", chapter="08_families", title="Perplexity from a model's logits", points=2,
         answer="perplexity", draw=draw_perplexity, expected=expected_perplexity, rtol=1e-5, atol=1e-6),
    dict(id="8.8", chapter="08_families", title="A Kneser-Ney bigram model", points=3,
         answer="kneser_ney_bigram", draw=draw_kneser_ney, expected=expected_kneser_ney,
         rtol=1e-6, atol=1e-9),
]
