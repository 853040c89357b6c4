"""Scoring translations: exact match, corpus BLEU and chrF, accuracy by source length.

Framework-free (pure Python; BLEU and chrF import ``sacrebleu`` when first called).
Predictions and references are detokenized strings, one per example::

    from course_pkg.evaluation import accuracy_by_length, corpus_bleu, corpus_chrf, exact_match

    exact_match(predictions, references)        # 0.93: the fraction translated exactly
    corpus_bleu(predictions, references)        # 97.1: sacrebleu's BLEU, 0-100
    corpus_chrf(predictions, references)        # 98.4: sacrebleu's chrF, 0-100
    by_length = accuracy_by_length(predictions, references, sources)
    lengths = sorted(by_length)                  # plot [by_length[n][1] for n in lengths]
"""

from __future__ import annotations

from typing import Callable, Iterable


def _as_texts(**named) -> list:
    """The arguments as lists of strings; raise unless they are equally long."""
    lists = []
    for name, texts in named.items():
        if isinstance(texts, (str, bytes)) or not hasattr(texts, "__iter__"):
            raise TypeError(f"{name} must be a list of strings, one per example, "
                            f"got {type(texts).__name__}")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"{name}[{i}] must be a string (decode token ids to text first), "
                                f"got {type(text).__name__}")
        lists.append(texts)
    if len({len(texts) for texts in lists}) > 1:
        raise ValueError("need one entry per example in each argument, got lengths "
                         + ", ".join(f"{name}={len(t)}" for name, t in zip(named, lists)))
    return lists


def exact_match(predictions: Iterable[str], references: Iterable[str]) -> float:
    """Fraction of the predictions equal to their reference, character for character.

    Returns 0.0 for no examples.
    """
    predictions, references = _as_texts(predictions=predictions, references=references)
    if not predictions:
        return 0.0
    return sum(p == r for p, r in zip(predictions, references)) / len(predictions)


def corpus_bleu(predictions: Iterable[str], references: Iterable[str]) -> float:
    """Corpus BLEU of the predictions against one reference each, from ``sacrebleu`` (0 to 100).

    sacrebleu tokenizes the detokenized strings itself (its default ``13a``
    tokenizer), so scores compare across papers and tools.

    Returns 0.0 for no examples, as :func:`exact_match` does (and as sacrebleu
    scores empty strings): no translation, no credit.
    """
    return _sacrebleu_score("corpus_bleu", predictions, references)


def corpus_chrf(predictions: Iterable[str], references: Iterable[str]) -> float:
    """Corpus chrF of the predictions against one reference each, from ``sacrebleu`` (0 to 100).

    chrF is an F-score over character n-grams (up to 6 characters, recall
    weighted twice as much as precision: sacrebleu's defaults), so a nearly
    right word ("chats" for "chat") earns partial credit where BLEU gives none;
    it suits small models and small test sets, where BLEU is often near 0.

    Returns 0.0 for no examples, as :func:`corpus_bleu` does: no translation,
    no credit.
    """
    return _sacrebleu_score("corpus_chrf", predictions, references)


def _sacrebleu_score(metric: str, predictions, references) -> float:
    """sacrebleu's ``metric`` (``"corpus_bleu"``, ``"corpus_chrf"``) on one reference each; 0.0 for none."""
    predictions, references = _as_texts(predictions=predictions, references=references)
    if not predictions:
        return 0.0
    try:
        import sacrebleu
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(f"{metric} needs sacrebleu: pip install sacrebleu") from error
    return float(getattr(sacrebleu, metric)(predictions, [references]).score)


def accuracy_by_length(predictions: Iterable[str], references: Iterable[str],
                       sources: Iterable[str], tokenizer: Callable[[str], list] = str.split) -> dict:
    """Exact match grouped by the source's length in tokens, to plot accuracy against length.

    Args:
        predictions, references, sources: one string per example.
        tokenizer: splits a source into the tokens that are counted (default:
            whitespace; e.g. ``course_pkg.data.Tokenizer("fr").tokenize``).

    Returns:
        ``{length: (count, exact_match)}``, sorted by length: how many sources
        have that many tokens and the fraction of them translated exactly;
        ``{}`` for no examples.
    """
    predictions, references, sources = _as_texts(predictions=predictions, references=references,
                                                 sources=sources)
    groups: dict = {}
    for prediction, reference, source in zip(predictions, references, sources):
        hits = groups.setdefault(len(tokenizer(source)), [])
        hits.append(prediction == reference)
    return {length: (len(hits), sum(hits) / len(hits)) for length, hits in sorted(groups.items())}
