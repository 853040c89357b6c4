"""The decoder: masked self-attention, encoder-decoder attention, feed-forward (§3.1).

Shapes: ``batch`` sentences of ``src_len`` source and ``tgt_len`` target
positions, ``d_model`` features, ``heads`` attention heads of ``depth``
features each. Step-by-step decoding feeds ``new`` target positions after the
``past`` ones already in the cache.
"""

import torch
from torch import nn

from .._checks import check_dropout, check_positive
from ._layers import Layer, layer_norm
from .attention import MultiHeadAttention
from .feed_forward import FeedForward
from .positional import PositionalEmbedding


class DecoderLayer(Layer):
    """One decoder layer, post-LN as in the paper.

    ``x = norm1(x + dropout1(self_attn(x, x, x, look_ahead_mask)))``
    ``x = norm2(x + dropout2(cross_attn(x, enc_output, enc_output, padding_mask)))``
    ``x = norm3(x + dropout3(ffn(x)))``

    The cross-attention takes its queries from the decoder and its keys and
    values from the encoder output.

    Args:
        d_model, num_heads, dff, dropout: as for :class:`EncoderLayer`.

    Call:
        ``layer(x, enc_output, look_ahead_mask=None, padding_mask=None,
        return_attention=False)``; ``look_ahead_mask`` is the combined
        look-ahead + target padding mask (:func:`create_combined_mask`),
        ``padding_mask`` the source padding mask (:func:`create_padding_mask`).
        With ``return_attention=True`` returns
        ``(x, self_attention_weights, cross_attention_weights)``.

    Shape:
        x (batch, tgt_len, d_model), enc_output (batch, src_len, d_model),
        look_ahead_mask (batch, 1, tgt_len, tgt_len), padding_mask (batch, 1, 1, src_len)
        -> (batch, tgt_len, d_model); self weights (batch, heads, tgt_len, tgt_len),
        cross weights (batch, heads, tgt_len, src_len).
    """

    def __init__(self, d_model, num_heads, dff, dropout=0.1):
        super().__init__()
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, dff, dropout)
        self.norm1 = layer_norm(d_model)
        self.norm2 = layer_norm(d_model)
        self.norm3 = layer_norm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, x, enc_output, look_ahead_mask=None, padding_mask=None,
                return_attention=False):
        attn, self_weights = self.self_attn(x, x, x, mask=look_ahead_mask)  # (batch, tgt_len, d_model)
        x = self.norm1(x + self.dropout1(attn))  # (batch, tgt_len, d_model)
        attn, cross_weights = self.cross_attn(x, enc_output, enc_output, mask=padding_mask)
        x = self.norm2(x + self.dropout2(attn))  # (batch, tgt_len, d_model)
        x = self.norm3(x + self.dropout3(self.ffn(x)))  # (batch, tgt_len, d_model)
        return (x, self_weights, cross_weights) if return_attention else x

    def step(self, x, cache, look_ahead_mask=None, padding_mask=None):
        """Decode new positions only, reusing cached keys and values.

        ``cache`` holds this layer's ``self_k``/``self_v`` for the positions
        decoded so far and ``cross_k``/``cross_v`` of the encoder output (see
        :meth:`Decoder.init_cache`). The result equals the full call over the
        whole prefix, at the new positions, without recomputing the past.

        Shape:
            x (batch, new, d_model), cache["self_k"] (batch, heads, past, depth),
            look_ahead_mask (batch, 1, new, past + new) ->
            (batch, new, d_model), cache with (batch, heads, past + new, depth).
        """
        k, v = self.self_attn.project_kv(x, x)  # (batch, heads, new, depth)
        k = torch.cat([cache["self_k"], k], dim=2)  # (batch, heads, past + new, depth)
        v = torch.cat([cache["self_v"], v], dim=2)  # (batch, heads, past + new, depth)
        attn, _ = self.self_attn.attend(x, k, v, look_ahead_mask)  # (batch, new, d_model)
        x = self.norm1(x + self.dropout1(attn))
        attn, _ = self.cross_attn.attend(x, cache["cross_k"], cache["cross_v"], padding_mask)
        x = self.norm2(x + self.dropout2(attn))
        x = self.norm3(x + self.dropout3(self.ffn(x)))  # (batch, new, d_model)
        return x, {**cache, "self_k": k, "self_v": v}

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads, "dff": self.dff,
                "dropout": self.dropout}


class Decoder(Layer):
    """Positional embedding, dropout, then ``num_layers`` decoder layers.

    Args:
        num_layers, d_model, num_heads, dff, dropout: as for :class:`Encoder`.
        vocab_size: target vocabulary size.
        max_len: longest target sequence.

    Call:
        ``decoder(tokens, enc_output, look_ahead_mask=None, padding_mask=None,
        return_attention=False)``; ``look_ahead_mask`` is the combined
        look-ahead + target padding mask (:func:`create_combined_mask`),
        ``padding_mask`` the source padding mask (:func:`create_padding_mask`),
        both course masks (1.0 = blocked). With ``return_attention=True``
        returns ``(x, [self weights per layer], [cross weights per layer])``.

    Shape:
        tokens (batch, tgt_len) int, enc_output (batch, src_len, d_model),
        look_ahead_mask (batch, 1, tgt_len, tgt_len), padding_mask (batch, 1, 1, src_len)
        -> (batch, tgt_len, d_model).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1):
        super().__init__()
        check_positive(num_layers=num_layers)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout = vocab_size, max_len, dropout
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_len)
        self.embedding_dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            [DecoderLayer(d_model, num_heads, dff, dropout) for _ in range(num_layers)]
        )

    def forward(self, tokens, enc_output, look_ahead_mask=None, padding_mask=None,
                return_attention=False):
        x = self.embedding_dropout(self.embedding(tokens))  # (batch, tgt_len, d_model)
        self_maps, cross_maps = [], []
        for layer in self.layers:
            x, self_weights, cross_weights = layer(
                x, enc_output, look_ahead_mask=look_ahead_mask, padding_mask=padding_mask,
                return_attention=True
            )
            self_maps.append(self_weights)  # (batch, heads, tgt_len, tgt_len)
            cross_maps.append(cross_weights)  # (batch, heads, tgt_len, src_len)
        return (x, self_maps, cross_maps) if return_attention else x

    def init_cache(self, enc_output):
        """Start incremental decoding: project the encoder output once per layer.

        Returns one dict per layer with ``cross_k``, ``cross_v``
        (batch, heads, src_len, depth) and empty ``self_k``, ``self_v``
        (batch, heads, 0, depth), to be grown by :meth:`step`.
        """
        cache = []
        for layer in self.layers:
            cross_k, cross_v = layer.cross_attn.project_kv(enc_output, enc_output)
            empty = cross_k[:, :, :0]  # (batch, heads, 0, depth)
            cache.append({"self_k": empty, "self_v": empty, "cross_k": cross_k, "cross_v": cross_v})
        return cache

    def step(self, tokens, cache, look_ahead_mask=None, padding_mask=None):
        """Decode the new ``tokens`` that follow the positions already in ``cache``.

        Shape:
            tokens (batch, new) int, look_ahead_mask (batch, 1, new, past + new)
            -> (batch, new, d_model), the grown cache.
        """
        past = cache[0]["self_k"].shape[2]
        x = self.embedding_dropout(self.embedding(tokens, start=past))  # (batch, new, d_model)
        new_cache = []
        for layer, layer_cache in zip(self.layers, cache):
            x, layer_cache = layer.step(x, layer_cache, look_ahead_mask, padding_mask)
            new_cache.append(layer_cache)
        return x, new_cache

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff, "vocab_size": self.vocab_size,
                "max_len": self.max_len, "dropout": self.dropout}
