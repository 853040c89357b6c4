"""Attention masks (float, 1.0 = blocked, 0.0 = may attend), and chapter 8's prefix-LM mask.

Mirrors ``course_pkg.torch.masks`` and ``course_pkg.tensorflow.masks``. :func:`prefix_lm_mask` has no
twin: it is the reference answer of exercise 8.1.
"""

import numpy as np


def create_padding_mask(tokens, pad_id=0):
    """1.0 where ``tokens == pad_id``. Shape: (batch, seq) -> (batch, 1, 1, seq)."""
    tokens = np.asarray(tokens)
    return (tokens == pad_id).astype(np.float32)[:, np.newaxis, np.newaxis, :]


def create_look_ahead_mask(size):
    """1.0 strictly above the diagonal. Shape: (size, size)."""
    return np.triu(np.ones((size, size), dtype=np.float32), k=1)


def create_combined_mask(tokens, pad_id=0):
    """Element-wise max of look-ahead and padding masks. Shape: (batch, 1, seq, seq)."""
    tokens = np.asarray(tokens)
    return np.maximum(create_look_ahead_mask(tokens.shape[1]), create_padding_mask(tokens, pad_id))


def causal_padding_mask(pad, past=0):
    """A decoder-only model's mask: the look-ahead mask of the positions after the first ``past``, with
    padding keys (``pad`` 1.0) blocked. Shape: pad (batch, seq) -> (batch, 1, seq - past, seq)."""
    pad = np.asarray(pad, np.float64)
    return np.maximum(create_look_ahead_mask(pad.shape[1])[past:], pad[:, np.newaxis, np.newaxis, :])


def prefix_lm_mask(tokens, prompt_lengths, pad_id=0):
    """A decoder-only model's mask when the prompt is read both ways (a prefix LM, as in T5's study).

    Position ``i`` of row ``b`` may attend to key ``j`` when ``j`` is not padding and either
    ``j <= i`` (the causal rule) or ``j < prompt_lengths[b]`` (the whole prompt, the future
    included). With every prompt length 0 it is :func:`create_combined_mask`.

    Shape: tokens (batch, seq), prompt_lengths (batch,) -> (batch, 1, seq, seq).
    """
    tokens = np.asarray(tokens)
    seq = tokens.shape[1]
    causal = np.arange(seq)[np.newaxis, :] <= np.arange(seq)[:, np.newaxis]  # (seq, seq): j <= i
    prompt = np.arange(seq)[np.newaxis, :] < np.asarray(prompt_lengths)[:, np.newaxis]  # (batch, seq)
    visible = (causal[np.newaxis] | prompt[:, np.newaxis, :]) & (tokens != pad_id)[:, np.newaxis, :]
    return (~visible).astype(np.float32)[:, np.newaxis]
