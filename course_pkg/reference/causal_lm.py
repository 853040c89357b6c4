"""The plumbing of the decoder-only language models (:func:`~course_pkg.reference.gpt.gpt`,
``course_pkg.reference.llama.llama``): their inputs, the positions that count real tokens
only, the LM head, the sampling filters and the distributions that top-k and top-p sampling draw
from. Their mask is :func:`~course_pkg.reference.masks.causal_padding_mask`.

Mirrors ``course_pkg.torch.causal_lm`` and ``course_pkg.tensorflow.causal_lm``, whose generation
loop (``generate_tokens``) and decoding-step bookkeeping have no oracle here: what the loop draws
from has, in :func:`top_k_filter`, :func:`top_p_filter` and the distributions.
:func:`top_k_probabilities` is the reference answer of exercise 8.2.
"""

import numpy as np

from .attention import softmax
from .base import dense


def causal_lm_inputs(tokens, padding_mask=None):
    """The token ids as an int array and their padding (1.0 = padding), all 0.0 without a
    ``padding_mask`` (the twins' also check the ids against the model and read its ``pad_id``).

    Shape: tokens, padding_mask (batch, seq) -> tokens (batch, seq) int, padding (batch, seq) float64.
    """
    tokens = np.asarray(tokens)
    return tokens, np.zeros(tokens.shape) if padding_mask is None else np.asarray(padding_mask, np.float64)


def real_token_positions(pad, count):
    """Each token's position: ``count`` plus the real tokens of its row before it (a padding token
    gets the position of the real token before it, or 0); ``count`` 0 for a whole sequence.

    Shape: pad (batch, seq) 1.0 at padding, count (batch,) or a number -> positions (batch, seq) int.
    """
    count = np.asarray(count, np.float64)[..., np.newaxis]  # (batch, 1) or (1,)
    return np.maximum(count + np.cumsum(1 - pad, axis=1) - 1, 0).astype(int)  # (batch, seq)


def lm_logits(params, x):
    """The LM head: ``x @ lm_head.kernel (+ lm_head.bias)``, or the token embedding's transpose
    (tied) when ``params`` has no ``lm_head``.

    Shape: x (batch, seq, d_model) -> logits (batch, seq, vocab).
    """
    if "lm_head.kernel" in params:
        return dense(params, x, "lm_head")
    return x @ params["token_embedding.embeddings"].astype(np.float64).T


def top_k_filter(logits, k):
    """The ``k`` largest logits of each row kept (ties with the k-th too), the others -inf. Shape: kept."""
    logits = np.asarray(logits, np.float64)
    kth = np.sort(logits, axis=-1)[..., -min(k, logits.shape[-1])][..., None]
    return np.where(logits < kth, -np.inf, logits)


def top_p_filter(logits, p):
    """Keep a token when the probability of the tokens ranked above it is below ``p``; the others -inf."""
    logits = np.asarray(logits, np.float64)
    order = np.argsort(-logits, axis=-1, kind="stable")
    probs = softmax(np.take_along_axis(logits, order, axis=-1))
    before = np.cumsum(probs, axis=-1) - probs
    remove = np.empty_like(before, dtype=bool)
    np.put_along_axis(remove, order, before >= p, axis=-1)
    return np.where(remove, -np.inf, logits)


def top_k_probabilities(logits, k, temperature=1.0):
    """The distribution that top-k sampling draws from: softmax of ``logits / temperature``
    over each row's ``k`` largest logits, 0 elsewhere (ties at the k-th value are all kept).

    Shape: logits (..., vocab) -> (..., vocab), each row summing to 1.
    """
    logits = np.asarray(logits, dtype=np.float64) / temperature
    kth = np.sort(logits, axis=-1)[..., -k][..., np.newaxis]  # (..., 1): the k-th largest
    return softmax(np.where(logits >= kth, logits, -np.inf))


def top_p_probabilities(logits, p, temperature=1.0):
    """The distribution that top-p (nucleus) sampling draws from: the smallest set of most
    likely tokens whose probabilities reach ``p``, renormalised; 0 elsewhere.

    Shape: logits (..., vocab) -> (..., vocab), each row summing to 1.
    """
    probs = softmax(np.asarray(logits, dtype=np.float64) / temperature)
    order = np.argsort(-probs, axis=-1, kind="stable")
    sorted_probs = np.take_along_axis(probs, order, axis=-1)
    before = np.cumsum(sorted_probs, axis=-1) - sorted_probs  # mass of the more likely tokens
    keep_sorted = before < p  # the most likely token is always kept
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)
