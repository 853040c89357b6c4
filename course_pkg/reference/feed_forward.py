"""The position-wise feed-forward network, its gated form (SwiGLU) and its activations (ReLU, exact
GELU, tanh GELU, SiLU).

Mirrors ``course_pkg.torch.feed_forward`` and ``course_pkg.tensorflow.feed_forward``, which also keep
``gelu``, ``gelu_tanh`` and the activations by name.
"""

import math

import numpy as np

from .base import dense

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """Exact GELU: x Φ(x) = 0.5 x (1 + erf(x / √2)) (BERT)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def gelu_tanh(x):
    """GELU's tanh approximation: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))) (GPT-2's gelu_new)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    """SiLU: x · sigmoid(x) = x / (1 + e^(-x)) (Llama)."""
    x = np.asarray(x, np.float64)
    return x / (1.0 + np.exp(-x))


ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu}


def feed_forward(params, x, activation="relu", gated=False):
    """act(x W1 + b1) W2 + b2, act = max(0, .) in the paper; gated: (act(x W1 + b1) ⊙ (x W3 + b3)) W2 + b2
    (SwiGLU with SiLU, as Llama). Biases only where ``params`` holds them.

    Shape: (..., d_model) -> (..., d_model).
    """
    x = np.asarray(x, np.float64)
    hidden = ACTIVATIONS[activation](dense(params, x, "w1"))  # (..., dff)
    if gated:
        hidden = hidden * dense(params, x, "w3")  # (..., dff)
    return dense(params, hidden, "w2")
