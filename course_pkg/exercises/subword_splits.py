"""Exercise 7.4, on section 7.7's Unigram model: the best split of a word under a table of pieces
with log-probabilities, found by dynamic programming (the Viterbi algorithm). How its parameters
are drawn, the reference answer (:class:`course_pkg.subword.Unigram`, SentencePiece's rules), and
what a wrong answer is told (:func:`explain_viterbi`: the word, its split and score, the best's).

:data:`SPECS` holds the exercise's :class:`~course_pkg.exercises.catalog.Exercise` arguments as a
keyword dict; the catalog builds the entry from it (so this module does not import it).
"""

from __future__ import annotations

import numpy as np

from .. import subword
from .comparison import to_numpy

WORDS = ["unbelievable", "playground", "transformers", "tokenization", "rethinking", "overlapping",
         "understanding", "replaying", "uncountable", "preheating", "misreading", "undertaking"]
MARGIN = 0.1  # the best split beats every other by at least this much: no ties, no float32 doubt


def splits(scores, word) -> list:
    """Every split of ``word`` into pieces of ``scores`` (dict piece -> log-probability), each as
    ``(score, pieces)``. Exponentially many in general; the drawn words have a few hundred."""
    if not word:
        return [(0.0, [])]
    out = []
    for end in range(1, len(word) + 1):
        head = word[:end]
        if head in scores:
            out += [(scores[head] + score, [head] + rest) for score, rest in splits(scores, word[end:])]
    return out


def greedy_split(pieces, word) -> list:
    """The longest piece of the table first, then the longest of the rest...: a wrong answer."""
    out, start = [], 0
    while start < len(word):
        end = max(e for e in range(start + 1, len(word) + 1) if word[start:e] in pieces)
        out.append(word[start:end])
        start = end
    return out


def fewest_pieces(pieces, word) -> list:
    """The split with the fewest pieces (the best score among those): a wrong answer."""
    return min(splits(pieces, word), key=lambda split: (len(split[1]), -split[0]))[1]


def draw_viterbi(rng) -> dict:
    """A table of pieces with log-probabilities, sorted, and three words to split.

    Every character of the words is a piece (so every word has a split), scored -7 to -5; each
    word adds four of its substrings of 2 to 5 characters, scored -11 to -2 (one decimal). Drawn
    again until, in every word, the best split beats the next by at least :data:`MARGIN` and holds a
    piece longer than a character, and in one word at least greedy longest-match is not the best
    split, in one the split with the fewest pieces is not.

    Shape:
        -> {"pieces": source of [(piece, log-probability), ...], "words": source of three str}.
    """
    while True:
        words = [str(w) for w in rng.choice(WORDS, 3, replace=False)]
        scores = {c: round(float(rng.uniform(-7, -5)), 1) for c in sorted(set("".join(words)))}
        for word in words:
            for _ in range(4):
                size = int(rng.integers(2, 6))
                start = int(rng.integers(0, len(word) - size + 1))
                scores[word[start:start + size]] = round(float(rng.uniform(-11, -2)), 1)
        good, greedy_wrong, fewest_wrong = True, False, False
        for word in words:
            ranked = sorted(splits(scores, word), key=lambda s: -s[0])
            best = ranked[0][1]
            good = good and ranked[0][0] - ranked[1][0] >= MARGIN and max(map(len, best)) > 1
            greedy_wrong = greedy_wrong or greedy_split(scores, word) != best
            fewest_wrong = fewest_wrong or fewest_pieces(scores, word) != best
        if good and greedy_wrong and fewest_wrong:
            pieces = sorted(scores.items())
            return {"pieces": repr(pieces), "words": repr(words)}


def expected_viterbi(pieces, word) -> list:
    """The reference answer of exercise 7.4 for one word: the ids (indices in ``pieces``) of its
    best split, by :class:`course_pkg.subword.Unigram` (no normalisation, no ``▁``).

    Shape:
        pieces [(str, float), ...], word str -> a list of ints.
    """
    table = [(piece, score) for piece, score in pieces] + [("<unk>", 0.0, "unknown")]
    tok = subword.Unigram(table, add_dummy_prefix=False, remove_extra_whitespaces=False,
                          escape_whitespaces=False)
    return tok.encode(word)


def explain_viterbi(params, result):
    """What a wrong answer of exercise 7.4 gets wrong, in the exercise's terms: the first word
    whose ids are not the best split's, the learner's split and its score, the best split and its
    score (a split that does not spell the word, or an id that is no piece's, said so). ``None``
    where ``result`` cannot be read as lists of ids: the general message then says what differs.

    Shape:
        params {"pieces": [(str, float), ...], "words": [str, ...]}, result one list of ids per
        word -> str or None.
    """
    pieces, words = params["pieces"], params["words"]
    if not isinstance(result, (list, tuple)) or len(result) != len(words):
        return None
    for word, value in zip(words, result):
        best, given = expected_viterbi(pieces, word), _ids(value)
        if given is None:
            return None
        if given == best:
            continue
        call, answer = f"viterbi_split(pieces, {word!r})", f"the best split is {_shown(pieces, best, False)}"
        outside = [i for i in given if not 0 <= i < len(pieces)]
        if outside:
            return (f"{call} gave the ids {given}: {outside[0]} is not an id of pieces "
                    f"(0 to {len(pieces) - 1}); {answer}")
        spelt = "".join(pieces[i][0] for i in given)
        wrong = "" if spelt == word else f", which spells {spelt!r}, not {word!r}"
        return f"{call} gave {_shown(pieces, given)}{wrong}; {answer}"
    return None


def _ids(value):
    """``value`` as a list of ints (ints, or floats without a fraction, in one row), else None."""
    array = to_numpy(value)
    if array.ndim != 1 or array.dtype.kind not in "iuf" or not np.array_equal(array, np.round(array)):
        return None
    return [int(i) for i in array]


def _shown(pieces, ids, with_ids=True) -> str:
    """``['pl', 'ay'] (ids [3, 7]), score -9.1``: a split as the learner reads it."""
    if not ids:
        return "no pieces at all (ids [])"
    split = [pieces[i][0] for i in ids]
    return f"{split}{f' (ids {ids})' if with_ids else ''}, score {sum(pieces[i][1] for i in ids):.1f}"


def _per_word(answer, params):
    return [answer(params["pieces"], word) for word in params["words"]]


SPECS = [
    dict(id="7.4", chapter="07_tokenization", title="The best split by dynamic programming (Viterbi)",
         points=3, answer="viterbi_split", draw=draw_viterbi,
         expected=lambda pieces, words: [expected_viterbi(pieces, word) for word in words],
         call=_per_word, exact=True, explain=explain_viterbi),
]
