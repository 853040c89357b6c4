"""GPT (chapter 8): the decoder alone under the causal mask; the sampling filters and the
distributions that top-k and top-p sampling draw from.

Mirrors ``course_pkg.torch.gpt`` and ``course_pkg.tensorflow.gpt``, which also keep ``top_k_filter``
and ``top_p_filter``. :func:`top_k_probabilities` is the reference answer of exercise 8.2.
"""

import numpy as np

from .attention import softmax
from .base import dense, layer_norm, sub
from .decoder import decoder_layer
from .masks import create_look_ahead_mask


def gpt(params, tokens, num_heads, padding_mask=None, activation="gelu_tanh", eps=1e-5):
    """GPT: token + learned position embeddings, pre-LN decoder blocks without cross-attention under the
    causal mask, a final LayerNorm, the LM head (tied to the token embedding unless ``lm_head`` is given).

    ``padding_mask`` is (batch, seq), 1.0 at padding: padding keys are blocked and positions count real
    tokens only (a row's first real token is at position 0).

    Shape: tokens (batch, seq) -> logits (batch, seq, vocab).
    """
    tokens = np.asarray(tokens)
    pad = np.zeros(tokens.shape) if padding_mask is None else np.asarray(padding_mask, np.float64)
    positions = np.maximum(np.cumsum(1 - pad, axis=1) - 1, 0).astype(int)  # (batch, seq)
    table = params["token_embedding.embeddings"].astype(np.float64)
    x = table[tokens] + params["position_embedding.table.embeddings"][positions]
    mask = np.maximum(create_look_ahead_mask(tokens.shape[1]), pad[:, None, None, :])
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, _, _ = decoder_layer(sub(params, f"blocks.{i}"), x, None, num_heads, mask, None, True, activation,
                                eps, cross_attention=False)
    x = layer_norm(sub(params, "final_norm"), x, eps)
    return dense(params, x, "lm_head") if "lm_head.kernel" in params else x @ table.T


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
