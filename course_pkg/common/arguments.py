"""Argument checks that many modules share (framework-free, pure Python), and their constants.

Positive sizes, dropout rates, flags, choices, norm epsilons, feed-forward activations, pad ids,
batch sizes, feature widths, counts and num2words languages: checks of no one concept that serve
three or more modules (both twins' layers, ``course_pkg.data``, ``course_pkg.subword``), so that
every caller refuses bad input with the very same message. A check of one concept lives in the
``common`` module named after the twin module it serves (:mod:`course_pkg.common.attention`, ...),
even when other modules use it too.
"""

from __future__ import annotations

from typing import Optional, Sequence

Shape = Sequence[Optional[int]]


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` unless every keyword value is a positive int."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_dropout(rate: float) -> None:
    """Raise ``ValueError`` unless ``0 <= rate < 1``."""
    if not isinstance(rate, (int, float)) or not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout must be a float in [0, 1), got {rate!r}")


def check_features(shape: Shape, d_model: int, what: str = "input") -> None:
    """Raise ``ValueError`` unless ``shape`` is ``(batch, length, d_model)``."""
    shape = tuple(shape)
    if len(shape) != 3 or (shape[-1] is not None and shape[-1] != d_model):
        raise ValueError(
            f"{what} must have shape (batch, length, {d_model}), got {shape}"
        )


def check_choice(name, value, choices):
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_pad_id(pad_id, vocab_size):
    """Raise ``ValueError`` unless ``pad_id`` is an int in ``[0, vocab_size)``."""
    if isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < vocab_size:
        raise ValueError(f"pad_id must be an int in [0, {vocab_size}), got {pad_id!r}")


def check_batch(batch, **shapes):
    """Raise ``ValueError`` unless every shape's first axis is ``batch`` (``None`` matches)."""
    for name, shape in shapes.items():
        if batch is not None and shape[0] is not None and shape[0] != batch:
            raise ValueError(f"{name} has batch size {shape[0]}, expected {batch} (that of the first input)")


def check_language(lang, languages, what="lang") -> str:
    """Return ``lang``; raise ``ValueError`` unless it is one of ``languages`` (num2words' codes)."""
    if not isinstance(lang, str) or lang not in languages:
        few = ", ".join(repr(x) for x in ("de", "en", "es", "fr", "it", "nl", "pt", "ru") if x in languages)
        raise ValueError(
            f"{what}={lang!r} is not a language num2words supports; valid codes include "
            f"{few} ({len(languages)} in all, see course_pkg.data.supported_languages())"
        )
    return lang


def check_count(name, value, minimum) -> int:
    """Return ``int(value)``; raise ``ValueError`` unless it is an int (or NumPy integer) ``>= minimum``."""
    import numpy as np  # here, so that importing this module stays pure Python

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


# The feed-forward activations: ReLU (the paper), exact (erf) GELU (BERT), GELU's tanh
# approximation (GPT-2's ``gelu_new``) and SiLU, x·sigmoid(x) (Llama's gated feed-forward).
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")


def check_activation(activation) -> str:
    """Raise ``ValueError`` unless ``activation`` is one of :data:`ACTIVATIONS`."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


# The course's LayerNorm epsilon (torch's default is 1e-5, Keras' 1e-3; BERT uses 1e-12, GPT-2 1e-5).
LAYER_NORM_EPSILON = 1e-6


def check_epsilon(eps, name="layer_norm_eps") -> float:
    """Raise ``ValueError`` naming ``name`` unless ``eps`` (a norm's epsilon) is a finite float > 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 < float(eps) < float("inf"):
        raise ValueError(f"{name} must be a positive float, got {eps!r}")
    return float(eps)


_NOT_GIVEN = object()


def check_flag(name, value, *, none=_NOT_GIVEN) -> bool:
    """Return ``value`` if it is a bool (``norm_first``, ``cross_attention``, a tokenizer's
    ``lowercase``), or ``none`` for ``None`` when ``none`` is given; else ``TypeError``.

    A str is refused, never read as a truth value: ``"false"`` is a non-empty str, so Python
    would read it as true.
    """
    if value is None and none is not _NOT_GIVEN:
        return none
    if isinstance(value, bool):
        return value
    allowed = "True, False or None" if none is not _NOT_GIVEN else "True or False"
    hint = " (a str is not read as a flag: pass True or False)" if isinstance(value, str) else ""
    raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r:.40}{hint}")
