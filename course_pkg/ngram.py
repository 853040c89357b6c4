"""Counting language models: n-grams with interpolated Kneser-Ney smoothing (Chen and Goodman, 1998).

Framework-free (the standard library and NumPy): the baselines that chapter 8's GPT is measured
against, on the same token ids. A sentence of ids ``s`` is read as
``[bos] * (order - 1) + s + [eos]``: the model predicts every token of ``s`` and then ``eos``, each
from the ``order - 1`` tokens before it (the history). Interpolated Kneser-Ney, with ``c`` the
counts of the highest order and, below it, the *continuation counts* ``N(• g w)`` (the number of
different tokens seen before ``g w``), and ``D`` a discount in (0, 1]::

    P(w | h) = max(c(h w) - D, 0) / c(h •)  +  D * T(h) / c(h •) * P(w | h without its first token)

where ``c(h •)`` sums the counts after ``h`` and ``T(h)`` counts the different tokens seen after it;
a history never seen falls back to the shorter one, and below the unigram lies the uniform
distribution ``1 / vocab_size``. Every distribution sums to 1 over the vocabulary. ``order=1`` is
a unigram model (raw counts, discounted towards uniform).

Unlike SRILM and KenLM, which keep the raw counts for the n-grams that begin with the
begin-of-sentence token (nothing can precede it), this model takes continuation counts for them
too: a difference that touches only the lower orders' share in the probabilities of a sentence's
first ``order - 2`` tokens (the first token of a trigram model).

Example::

    from course_pkg.ngram import KneserNey

    lm = KneserNey([[5, 6, 7], [5, 7]], order=2, vocab_size=10, bos=1, eos=2)
    lm.probability(7, [6])      # P(7 | 6)
    lm.perplexity([[5, 6]])     # exp of the mean negative log-probability of 5, 6, <eos>
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np


def ney_discount(counts) -> float:
    """Ney's estimate of the discount, ``n1 / (n1 + 2 n2)``, from the n-grams counted once (n1) and
    twice (n2); 0.75 when neither occurs. Always in (0, 1).

    Shape:
        counts: an iterable of positive ints -> a float.
    """
    counts = list(counts)
    n1, n2 = counts.count(1), counts.count(2)
    return n1 / (n1 + 2 * n2) if n1 else 0.75


def _check_ids(sentence, vocab_size, where):
    ids = [int(t) for t in sentence]
    for t in ids:
        if not 0 <= t < vocab_size:
            raise ValueError(f"{where}: token ids must lie in [0, {vocab_size}), got {t}")
    return ids


class KneserNey:
    """An n-gram language model with interpolated Kneser-Ney smoothing (see the module's docstring).

    Args:
        sentences: iterable of sentences, each a sequence of token ids in ``[0, vocab_size)``,
            without the ``bos``/``eos`` markers (the model adds them).
        order: n, the tokens of an n-gram (1 unigram, 2 bigram, 3 trigram).
        vocab_size: the number of token ids; every distribution is over them.
        bos, eos: the ids that begin and end each sentence (they may be the same id).
        discount: ``D`` for every order, a float in (0, 1]; ``None`` estimates one per order
            with :func:`ney_discount` from that order's counts.

    Attributes:
        discounts: ``{k: D}`` for the orders ``k = 1 .. order``.

    Shape:
        sentences: lists of ids -> :meth:`probabilities` (vocab_size,), :meth:`log_probs` one
        float per token of the sentence and one for ``eos``.
    """

    def __init__(self, sentences, order, vocab_size, bos, eos, discount=None):
        for name, value in (("order", order), ("vocab_size", vocab_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if discount is not None and not 0 < discount <= 1:
            raise ValueError(f"discount must be None or in (0, 1], got {discount!r}")
        self.order, self.vocab_size, self.bos, self.eos = order, vocab_size, int(bos), int(eos)
        _check_ids([bos, eos], vocab_size, "bos and eos")
        grams = Counter()  # the n-grams of the highest order, tuples of ids
        for i, sentence in enumerate(sentences):
            ids = self._padded(_check_ids(sentence, vocab_size, f"sentences[{i}]"))
            grams.update(tuple(ids[j - order + 1:j + 1]) for j in range(order - 1, len(ids)))
        # counts[k]: {history (k - 1 ids): Counter of the next id}, raw for k = order, else continuation
        self.counts = {order: self._by_history(grams)}
        for k in range(order - 1, 0, -1):
            distinct = Counter(gram[1:] for gram in self._grams(self.counts[k + 1]))  # N(• g w)
            self.counts[k] = self._by_history(distinct)
        self.discounts = {k: float(discount) if discount is not None else
                          ney_discount(c for nxt in self.counts[k].values() for c in nxt.values())
                          for k in self.counts}

    def _padded(self, ids):
        return [self.bos] * (self.order - 1) + list(ids) + [self.eos]

    def _history(self, history):
        """The last ``order - 1`` ids of ``history`` (``bos`` before the first), as a tuple."""
        ids = [self.bos] * (self.order - 1) + [int(t) for t in history]
        return tuple(ids[len(ids) - self.order + 1:])

    @staticmethod
    def _by_history(grams):
        table = defaultdict(Counter)
        for gram, count in grams.items():
            table[gram[:-1]][gram[-1]] = count
        return dict(table)

    @staticmethod
    def _grams(table):
        return [history + (w,) for history, nxt in table.items() for w in nxt]

    def probability(self, token, history) -> float:
        """``P(token | history)``: the last ``order - 1`` ids of ``history`` count (``bos`` before a
        sentence's first token, so ``history`` may be the sentence so far).

        Shape:
            token an id, history a sequence of ids -> a float.
        """
        return self._probability(int(token), self._history(history))

    def _probability(self, token, history):
        k = len(history) + 1
        lower = self._probability(token, history[1:]) if history else 1.0 / self.vocab_size
        nxt = self.counts[k].get(history)
        if not nxt:  # a history never seen: the shorter one's distribution
            return lower
        total, d = sum(nxt.values()), self.discounts[k]
        return max(nxt.get(token, 0) - d, 0) / total + d * len(nxt) / total * lower

    def probabilities(self, history) -> np.ndarray:
        """``P(w | history)`` for every id ``w``: float64, summing to 1.

        Shape:
            history a sequence of ids -> (vocab_size,).
        """
        history = self._history(history)
        return np.array([self._probability(w, history) for w in range(self.vocab_size)])

    def log_probs(self, sentence) -> list:
        """The natural log-probability of each token of ``sentence``, then of ``eos``.

        Shape:
            sentence (n ids) -> a list of n + 1 floats.
        """
        ids = self._padded(_check_ids(sentence, self.vocab_size, "sentence"))
        n = self.order - 1
        return [math.log(self._probability(ids[j], tuple(ids[j - n:j]))) for j in range(n, len(ids))]

    def perplexity(self, sentences) -> float:
        """``exp`` of the mean negative log-probability of all predicted tokens (``eos`` included).

        Shape:
            sentences: lists of ids -> a float.
        """
        logs = [lp for sentence in sentences for lp in self.log_probs(sentence)]
        return math.exp(-sum(logs) / len(logs))
