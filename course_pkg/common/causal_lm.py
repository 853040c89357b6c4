"""What the decoder-only models (``causal_lm``: GPT's and Llama's ``generate``) do the same way in
both frameworks (NumPy only): the arguments' checks, left alignment of padded prompts, sampling."""

from __future__ import annotations

import numpy as np

from .arguments import check_positive


def check_top_p(p) -> float:
    """Raise ``ValueError`` unless ``p`` (the nucleus of ``top_p_filter``) is a float in (0, 1]."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be a float in (0, 1], got {p!r}")
    return p


def check_generation(shape, max_new_tokens, max_len, temperature, top_k, top_p, do_sample, fewest_real):
    """Raise ``ValueError``/``TypeError`` for bad arguments of ``generate``."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if shape[1] + max_new_tokens > max_len:
        raise ValueError(f"prompt of {shape[1]} tokens + max_new_tokens={max_new_tokens} exceeds "
                         f"max_len={max_len}")
    if fewest_real < 1:
        raise ValueError("every prompt needs at least one real (non-padding) token")
    if not isinstance(do_sample, bool):
        raise TypeError(f"do_sample must be True or False, got {do_sample!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
        raise ValueError(f"temperature must be a float > 0, got {temperature!r}")
    if top_k is not None:
        check_positive(top_k=top_k)
    if top_p is not None:
        check_top_p(top_p)


def left_align(tokens: np.ndarray, pad: np.ndarray):
    """Move each row's padding to its start, keeping the order of the real tokens (a stable sort).

    Shape: tokens, pad (batch, seq) -> the same.
    """
    order = np.argsort(np.asarray(pad) == 0, axis=1, kind="stable")  # padding (False) first
    return np.take_along_axis(tokens, order, axis=1), np.take_along_axis(pad, order, axis=1)


def sample_next(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One token per row drawn from ``probs`` (batch, vocab) with ``rng`` (float64, renormalised)."""
    probs = np.asarray(probs, dtype=np.float64)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    u = rng.random(probs.shape[0])  # (batch,)
    cdf = np.cumsum(probs, axis=-1)
    return np.minimum((cdf < u[:, None] * cdf[:, -1:]).sum(axis=-1), probs.shape[-1] - 1)
