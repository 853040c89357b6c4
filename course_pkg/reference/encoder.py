"""The encoder layer and the encoder (post-LN as in the paper, or pre-LN), and their parameter count.

Mirrors ``course_pkg.torch.encoder`` and ``course_pkg.tensorflow.encoder``.
:func:`encoder_layer_parameters` is the reference answer of an exercise.
"""

import numpy as np

from .attention import multi_head_attention
from .base import LAYER_NORM_EPSILON, layer_norm, num_layers, sub
from .feed_forward import feed_forward
from .positional import positional_embedding


def sublayer_connection(x, sublayer, norm, norm_first):
    """One sub-layer with its residual connection and layer normalisation (no dropout: the
    reference computes inference): post-LN ``norm(x + sublayer(x))``, pre-LN
    ``x + sublayer(norm(x))``. ``sublayer`` returns ``(output, extra)``; returns ``(x, extra)``.
    """
    if norm_first:
        out, extra = sublayer(norm(x))
        return x + out, extra
    out, extra = sublayer(x)
    return norm(x + out), extra


def encoder_layer(params, x, num_heads, mask=None, norm_first=False, activation="relu",
                  eps=LAYER_NORM_EPSILON):
    """Encoder layer, post-LN (the paper) or pre-LN (``norm_first``).

    Returns ``(x, self_attention_weights)``.
    """
    x = np.asarray(x, np.float64)
    norm = lambda i: lambda y: layer_norm(sub(params, f"norm{i}"), y, eps)  # noqa: E731
    self_attend = lambda h: multi_head_attention(sub(params, "self_attn"), h, h, h, num_heads, mask)  # noqa: E731
    ffn = lambda h: (feed_forward(sub(params, "ffn"), h, activation), None)  # noqa: E731
    x, weights = sublayer_connection(x, self_attend, norm(1), norm_first)
    x, _ = sublayer_connection(x, ffn, norm(2), norm_first)
    return x, weights


def encoder(params, tokens, num_heads, mask=None, norm_first=False, activation="relu",
            eps=LAYER_NORM_EPSILON):
    """Embedding + N encoder layers (+ the final LayerNorm when pre-LN).

    Returns ``(x, [weights per layer])``.
    """
    x = positional_embedding(sub(params, "embedding"), tokens)
    maps = []
    for i in range(num_layers(params)):
        x, w = encoder_layer(sub(params, f"layers.{i}"), x, num_heads, mask, norm_first, activation, eps)
        maps.append(w)
    if norm_first:
        x = layer_norm(sub(params, "final_norm"), x, eps)
    return x, maps


def encoder_layer_parameters(d_model, dff):
    """Trainable parameters of an encoder layer: multi-head attention (4 dense layers),
    the feed-forward network, 2 layer norms."""
    return 4 * (d_model * d_model + d_model) + (d_model * dff + dff) + (dff * d_model + d_model) \
        + 2 * 2 * d_model
