"""Data for the model families of chapter 8: masked-LM inputs, a classification task, prompts.

Framework-free (Python and NumPy only), like the rest of :mod:`course_pkg.data`:

* :func:`mask_for_mlm` draws BERT's masked-language-model inputs (the 80/10/10 rule);
* :func:`make_number_classification` labels numbers written in words with a property of the
  number (its parity, its number of digits), split by number like the translation corpus;
* :func:`encode_prompts` and :func:`prompt_ids` turn the translation pairs into text for a
  decoder-only model, ``quatre-vingt-dix-sept = ninety-seven``, trained on the answer only.

The labels that a loss must skip are ``<pad>`` (0), as everywhere in the course, so
``masked_loss(labels, logits)`` scores exactly the masked positions / the answer tokens.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..common.arguments import check_count, check_language
from .batching import pad_batch
from .corpora import Corpus, split_corpus, split_sizes
from .num2words_cache import supported_languages, words_for
from .vocab import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, Vocab

MASK = "<mask>"
"""The token that replaces most of the positions a masked language model must predict."""

CLASSIFICATION_TASKS = {
    "parity": ("even", "odd"),
    "digits": ("1 digit", "2 digits", "3 digits", "4 digits", "5 digits"),
}
"""The properties :func:`make_number_classification` can label, with their class names."""


def _label(number: int, task: str) -> int:
    if task == "parity":
        return number % 2
    return len(str(number)) - 1  # "digits": 0 for 0..9, ..., 4 for 10 000..99 999


def with_mask_token(vocab) -> Vocab:
    """``vocab`` with :data:`MASK` inserted after the four special tokens, as id 4.

    The ids of the ordinary tokens move up by one; the tokenizer is kept. A vocabulary that
    holds ``<mask>`` already is returned as it is.
    """
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a course_pkg.data.Vocab, got {type(vocab).__name__}")
    if MASK in vocab:
        return vocab
    n = len(SPECIAL_TOKENS)
    return Vocab(vocab.itos[:n] + [MASK] + vocab.itos[n:], vocab.tokenizer)


def _checked_mlm_arguments(tokens, rng, mask_id, vocab_size, special_ids, rate, ignore_id):
    """:func:`mask_for_mlm`'s arguments checked: ``(array, mask_id, special, ordinary)``, the tokens
    as an array, the checked ``mask_id``, the set of special ids (``mask_id`` among them) and the
    ordinary ids that may replace a token; ``TypeError`` / ``ValueError`` saying what is wrong."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    array = np.asarray(tokens)
    if array.ndim not in (1, 2):
        raise ValueError(f"tokens must be (batch, length) or (length,), got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integer ids, got dtype {array.dtype}")
    vocab_size = check_count("vocab_size", vocab_size, 2)
    mask_id = check_count("mask_id", mask_id, 0)
    if mask_id >= vocab_size:
        raise ValueError(f"mask_id={mask_id} is not an id of a vocabulary of {vocab_size}")
    if array.size and (int(array.min()) < 0 or int(array.max()) >= vocab_size):
        raise ValueError(f"token ids must lie in [0, {vocab_size}), got ids from {int(array.min())} "
                         f"to {int(array.max())}")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1:
        raise ValueError(f"rate must be a probability in (0, 1], got {rate!r}")
    special = {check_count("special_ids", int(i) if isinstance(i, np.integer) else i, 0)
               for i in special_ids} | {mask_id}
    ordinary = np.array([i for i in range(vocab_size) if i not in special], dtype=np.int64)
    if ordinary.size == 0:
        raise ValueError("the vocabulary has no ordinary token to choose: every id is special")
    if isinstance(ignore_id, bool) or not isinstance(ignore_id, (int, np.integer)) or (
            0 <= ignore_id < vocab_size and ignore_id not in special):
        raise ValueError(f"ignore_id must be a special id or a negative int (it marks the positions "
                         f"not chosen), got {ignore_id!r}")
    return array, mask_id, special, ordinary


def mask_for_mlm(tokens, rng, mask_id, vocab_size, special_ids=(PAD_ID, BOS_ID, EOS_ID, UNK_ID), rate=0.15,
                 ignore_id=PAD_ID):
    """BERT's masked-LM corruption: choose positions, hide most of them, keep their labels.

    Each ordinary token (not in ``special_ids``, not ``mask_id``) is chosen independently with
    probability ``rate``. A chosen token is replaced by ``mask_id`` with probability 0.8, by a
    random ordinary token with probability 0.1, and left as it is with probability 0.1 (the
    80/10/10 rule of Devlin et al., 2019: the model cannot tell which visible tokens it will be
    asked about, so it must keep a good representation of every one). Special tokens
    (padding, ``<bos>``, ``<eos>``...) are never chosen nor drawn as replacements.

    Args:
        tokens: integer ids, ``(batch, length)`` or ``(length,)``.
        rng: a ``numpy.random.Generator`` (``np.random.default_rng(seed)``): the same state
            gives the same result.
        mask_id: the id of ``<mask>``, in ``[0, vocab_size)``.
        vocab_size: the number of ids; every id of ``tokens`` lies in ``[0, vocab_size)``.
        special_ids: ids that are never chosen nor drawn (default: the course's four specials).
        rate: the probability that an ordinary token is chosen, in ``(0, 1]``.
        ignore_id: the label of the positions that were not chosen (default ``<pad>`` = 0,
            which the course's losses skip); a special id or a negative number.

    Returns:
        ``(inputs, labels, positions)``: the corrupted ids (a new array), the original id at
        each chosen position and ``ignore_id`` elsewhere, and the boolean mask of the chosen
        positions.

    Shape:
        tokens (batch, length) -> inputs (batch, length) int64, labels (batch, length) int64,
        positions (batch, length) bool; a 1-D input gives 1-D outputs.
    """
    array, mask_id, special, ordinary = _checked_mlm_arguments(tokens, rng, mask_id, vocab_size,
                                                               special_ids, rate, ignore_id)
    array = array.astype(np.int64)
    candidates = ~np.isin(array, list(special))
    positions = candidates & (rng.random(array.shape) < rate)
    action = rng.random(array.shape)  # < 0.8: <mask>; < 0.9: a random token; else kept
    replacements = ordinary[rng.integers(0, ordinary.size, array.shape)]
    inputs = array.copy()
    inputs[positions & (action < 0.8)] = mask_id
    swap = positions & (action >= 0.8) & (action < 0.9)
    inputs[swap] = replacements[swap]
    labels = np.where(positions, array, np.int64(ignore_id))
    return inputs, labels, positions


def make_number_classification(lang="en", task="parity", max_number=99_999, size=30_000, seed=0,
                               splits=(0.8, 0.1, 0.1)) -> Corpus:
    """Numbers written in words, labelled with a property of the number.

    ``task="parity"``: 0 for an even number, 1 for an odd one (two classes, told by the last
    word alone: *ninety-seven* is odd). ``task="digits"``: the number of digits less one (five
    classes, told by the structure: is there a *thousand*, what comes before it). The numbers
    are drawn and split **by number** exactly as :func:`make_number_corpus` draws them with the
    same ``max_number``, ``size``, ``seed`` and ``splits``, so the two corpora hold the same
    numbers in the same splits and the same order.

    Args:
        lang: a language code of ``num2words`` (see :func:`supported_languages`).
        task: a key of :data:`CLASSIFICATION_TASKS`.
        max_number, size, seed, splits: as in :func:`make_number_corpus`.

    Returns:
        a :class:`Corpus` whose pairs are ``(text, label)``, ``label`` an int in
        ``[0, len(CLASSIFICATION_TASKS[task]))``; ``corpus.numbers`` holds the numbers.
    """
    check_language(lang, supported_languages(), "lang")
    if task not in CLASSIFICATION_TASKS:
        raise ValueError(f"task must be one of {sorted(CLASSIFICATION_TASKS)}, got {task!r}")
    max_number = check_count("max_number", max_number, 0)
    population = max_number + 1
    size = population if size is None else check_count("size", size, 1)
    if size > population:
        raise ValueError(f"size={size} distinct numbers cannot be drawn from 0..{max_number}")
    n_train, n_valid, _ = split_sizes(size, splits)
    numbers = [int(n) for n in np.random.default_rng(seed).choice(population, size=size, replace=False)]
    pairs = [(text, _label(n, task)) for text, n in zip(words_for(numbers, lang), numbers)]
    return split_corpus(pairs, numbers, n_train, n_valid, lang, None)


def _check_pairs(pairs, what="pairs"):
    if isinstance(pairs, str) or not isinstance(pairs, Iterable):
        raise TypeError(f"{what} must be a list of (prompt_text, answer_text), got {type(pairs).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError(f"{what} is empty")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2 or not all(isinstance(t, str) for t in pair):
            raise TypeError(f"pair {i} must be (prompt_text, answer_text), got {pair!r:.80}")
    return pairs


def _check_vocab(vocab, sep):
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a course_pkg.data.Vocab, got {type(vocab).__name__}")
    if sep not in vocab:
        raise ValueError(f"the separator {sep!r} is not a token of the vocabulary: build it from "
                         f"prompt_texts(pairs, sep)")
    return vocab.token_to_id(sep)


def prompt_texts(pairs, sep="=") -> list:
    """``"source = target"`` for each pair: the texts a decoder-only model reads (and its vocabulary)."""
    return [f"{source} {sep} {target}" for source, target in _check_pairs(pairs)]


def encode_prompts(pairs, vocab, sep="=", max_len=None):
    """Encode ``(prompt, answer)`` pairs for a decoder-only model trained on the answer only.

    The sequence is ``<bos> prompt sep answer <eos>``. The model reads it without its last
    token and predicts it shifted left by one (teacher forcing, as for chapter 6's decoder);
    the labels of the positions that predict the prompt or the separator are ``<pad>``, which
    the course's ``masked_loss`` skips, so the loss and the accuracy score the answer and its
    ``<eos>`` only.

    Args:
        pairs: non-empty list of ``(prompt_text, answer_text)``.
        vocab: a :class:`Vocab` holding both sides and ``sep`` (build it from
            :func:`prompt_texts`).
        sep: the separator token between prompt and answer.
        max_len: the longest input allowed (the model's ``max_len``); ``ValueError`` names the
            first pair that is longer.

    Returns:
        ``(inputs, labels)`` int64 arrays, right-padded with ``<pad>`` = 0.

    Shape:
        N pairs -> inputs (N, L), labels (N, L), L the longest ``<bos> prompt sep answer``.
    """
    pairs = _check_pairs(pairs)
    sep_id = _check_vocab(vocab, sep)
    inputs, labels = [], []
    for i, (prompt, answer) in enumerate(pairs):
        head = [BOS_ID] + vocab.encode(prompt) + [sep_id]
        full = head + vocab.encode(answer) + [EOS_ID]
        if max_len is not None and len(full) - 1 > max_len:
            raise ValueError(f"pair {i} takes {len(full) - 1} positions, more than max_len={max_len}: "
                             f"{pairs[i]!r:.120}")
        inputs.append(full[:-1])
        labels.append([PAD_ID] * (len(head) - 1) + full[len(head):])
    return pad_batch(inputs), pad_batch(labels)


def prompt_ids(prompts, vocab, sep="=") -> list:
    """``<bos> prompt sep`` as ids, one list per prompt text: what a decoder-only model continues.

    Shape:
        N texts -> N lists of ids (of different lengths).
    """
    if isinstance(prompts, str):
        raise TypeError("prompt_ids expects a list of prompt texts, got a single str")
    sep_id = _check_vocab(vocab, sep)
    return [[BOS_ID] + vocab.encode(text) + [sep_id] for text in prompts]


__all__ = ["MASK", "CLASSIFICATION_TASKS", "with_mask_token", "mask_for_mlm",
           "make_number_classification", "prompt_texts", "encode_prompts", "prompt_ids"]
