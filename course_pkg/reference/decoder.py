"""The decoder layer and the decoder (post-LN or pre-LN, with or without cross-attention), and
their parameter count.

Mirrors ``course_pkg.torch.decoder`` and ``course_pkg.tensorflow.decoder``.
:func:`decoder_layer_parameters` is the reference answer of an exercise.
"""

import numpy as np

from .attention import multi_head_attention
from .base import LAYER_NORM_EPSILON, layer_norm, num_layers, sub
from .encoder import sublayer_connection
from .feed_forward import feed_forward
from .positional import positional_embedding


def decoder_layer(params, x, enc_output, num_heads, look_ahead_mask=None, padding_mask=None,
                  norm_first=False, activation="relu", eps=LAYER_NORM_EPSILON, cross_attention=True):
    """Decoder layer, post-LN or pre-LN; without its cross-attention when ``cross_attention`` is False.

    Returns ``(x, self_weights, cross_weights)`` (``cross_weights`` None without cross-attention).
    """
    x = np.asarray(x, np.float64)
    norm = lambda i: lambda y: layer_norm(sub(params, f"norm{i}"), y, eps)  # noqa: E731
    self_attend = lambda h: multi_head_attention(  # noqa: E731
        sub(params, "self_attn"), h, h, h, num_heads, look_ahead_mask)
    cross_attend = lambda h: multi_head_attention(  # noqa: E731
        sub(params, "cross_attn"), h, enc_output, enc_output, num_heads, padding_mask)
    ffn = lambda h: (feed_forward(sub(params, "ffn"), h, activation), None)  # noqa: E731
    x, self_w = sublayer_connection(x, self_attend, norm(1), norm_first)
    cross_w = None
    if cross_attention:
        x, cross_w = sublayer_connection(x, cross_attend, norm(2), norm_first)
    x, _ = sublayer_connection(x, ffn, norm(3), norm_first)
    return x, self_w, cross_w


def decoder(params, tokens, enc_output, num_heads, look_ahead_mask=None, padding_mask=None,
            norm_first=False, activation="relu", eps=LAYER_NORM_EPSILON, cross_attention=True):
    """Embedding + N decoder layers (+ the final LayerNorm when pre-LN).

    Returns ``(x, [self per layer], [cross per layer])``.
    """
    x = positional_embedding(sub(params, "embedding"), tokens)
    self_maps, cross_maps = [], []
    for i in range(num_layers(params)):
        x, s, c = decoder_layer(
            sub(params, f"layers.{i}"), x, enc_output, num_heads, look_ahead_mask, padding_mask,
            norm_first, activation, eps, cross_attention
        )
        self_maps.append(s)
        cross_maps.append(c)
    if norm_first:
        x = layer_norm(sub(params, "final_norm"), x, eps)
    return x, self_maps, cross_maps


def decoder_layer_parameters(d_model, dff):
    """Trainable parameters of a decoder layer: two multi-head attentions, the
    feed-forward network, 3 layer norms."""
    return 8 * (d_model * d_model + d_model) + (d_model * dff + dff) + (dff * d_model + d_model) \
        + 3 * 2 * d_model
