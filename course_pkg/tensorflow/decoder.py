"""The decoder: masked self-attention, encoder-decoder attention, feed-forward (§3.1).

Shapes: ``batch`` sentences of ``src_len`` source and ``tgt_len`` target
positions, ``d_model`` features, ``heads`` attention heads of ``depth``
features each. Step-by-step decoding feeds ``new`` target positions after the
``past`` ones already in the cache.
"""

import keras
import tensorflow as tf
from keras import layers

from .._checks import check_dropout, check_positive
from ._layers import Layer, layer_norm
from .attention import MultiHeadAttention
from .feed_forward import FeedForward
from .positional import PositionalEmbedding


@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, d_model, num_heads, dff, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.self_attn = MultiHeadAttention(d_model, num_heads, name="self_attn", dtype=self.dtype_policy)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, name="cross_attn", dtype=self.dtype_policy)
        self.ffn = FeedForward(d_model, dff, dropout, name="ffn", dtype=self.dtype_policy)
        self.norm1 = layer_norm(d_model, "norm1", self.dtype_policy)
        self.norm2 = layer_norm(d_model, "norm2", self.dtype_policy)
        self.norm3 = layer_norm(d_model, "norm3", self.dtype_policy)
        self.dropout1 = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.dropout2 = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.dropout3 = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, x, enc_output, look_ahead_mask=None, padding_mask=None,
             return_attention=False, training=None):
        attn, self_weights = self.self_attn(x, x, x, mask=look_ahead_mask,
                                            training=training)  # (batch, tgt_len, d_model)
        x = self.norm1(x + self.dropout1(attn, training=training))  # (batch, tgt_len, d_model)
        attn, cross_weights = self.cross_attn(x, enc_output, enc_output, mask=padding_mask,
                                              training=training)
        x = self.norm2(x + self.dropout2(attn, training=training))  # (batch, tgt_len, d_model)
        x = self.norm3(x + self.dropout3(self.ffn(x, training=training),
                                         training=training))  # (batch, tgt_len, d_model)
        return (x, self_weights, cross_weights) if return_attention else x

    def step(self, x, cache, look_ahead_mask=None, padding_mask=None, training=None):
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
        k = tf.concat([cache["self_k"], k], axis=2)  # (batch, heads, past + new, depth)
        v = tf.concat([cache["self_v"], v], axis=2)  # (batch, heads, past + new, depth)
        attn, _ = self.self_attn.attend(x, k, v, look_ahead_mask)  # (batch, new, d_model)
        x = self.norm1(x + self.dropout1(attn, training=training))
        attn, _ = self.cross_attn.attend(x, cache["cross_k"], cache["cross_v"], padding_mask)
        x = self.norm2(x + self.dropout2(attn, training=training))
        x = self.norm3(x + self.dropout3(self.ffn(x, training=training),
                                         training=training))  # (batch, new, d_model)
        return x, {**cache, "self_k": k, "self_v": v}

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads, "dff": self.dff,
                "dropout": self.dropout}


@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        check_positive(num_layers=num_layers)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout = vocab_size, max_len, dropout
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_len, name="embedding",
                                             dtype=self.dtype_policy)
        self.embedding_dropout = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.layers = [
            DecoderLayer(d_model, num_heads, dff, dropout, name=f"layer_{i}", dtype=self.dtype_policy)
            for i in range(num_layers)
        ]
        self.built = True

    def call(self, tokens, enc_output, look_ahead_mask=None, padding_mask=None,
             return_attention=False, training=None):
        x = self.embedding_dropout(self.embedding(tokens), training=training)  # (batch, tgt_len, d_model)
        self_maps, cross_maps = [], []
        for layer in self.layers:
            x, self_weights, cross_weights = layer(
                x, enc_output, look_ahead_mask=look_ahead_mask, padding_mask=padding_mask,
                return_attention=True, training=training
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

    def step(self, tokens, cache, look_ahead_mask=None, padding_mask=None, training=None):
        """Decode the new ``tokens`` that follow the positions already in ``cache``.

        Shape:
            tokens (batch, new) int, look_ahead_mask (batch, 1, new, past + new)
            -> (batch, new, d_model), the grown cache.
        """
        past = tf.shape(cache[0]["self_k"])[2]  # dynamic: may be compiled
        x = self.embedding_dropout(self.embedding(tokens, start=past),
                                   training=training)  # (batch, new, d_model)
        new_cache = []
        for layer, layer_cache in zip(self.layers, cache):
            x, layer_cache = layer.step(x, layer_cache, look_ahead_mask, padding_mask, training=training)
            new_cache.append(layer_cache)
        return x, new_cache

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff, "vocab_size": self.vocab_size,
                "max_len": self.max_len, "dropout": self.dropout}
