"""The decoder: masked self-attention, encoder-decoder attention, feed-forward (§3.1).

Shapes: ``batch`` sentences of ``src_len`` source and ``tgt_len`` target
positions, ``d_model`` features, ``heads`` attention heads of ``depth``
features each. Step-by-step decoding feeds ``new`` target positions after the
``past`` ones already in the cache.
"""

import keras
import tensorflow as tf

from ..common.arguments import (
    LAYER_NORM_EPSILON,
    check_activation,
    check_dropout,
    check_epsilon,
    check_flag,
    check_positive,
)
from ..common.decoder import check_enc_output
from .attention import MultiHeadAttention
from .base import Layer, dropout_layer, layer_norm
from .encoder import sublayer_connection
from .feed_forward import FeedForward
from .positional import PositionalEmbedding


@keras.saving.register_keras_serializable(package="course_pkg")
class DecoderLayer(Layer):
    """One decoder layer, post-LN as in the paper (pre-LN with ``norm_first=True``).

    Post-LN (the paper):

    ``x = norm1(x + dropout1(self_attn(x, x, x, look_ahead_mask)))``
    ``x = norm2(x + dropout2(cross_attn(x, enc_output, enc_output, padding_mask)))``
    ``x = norm3(x + dropout3(ffn(x)))``

    Pre-LN (``norm_first=True``): ``x = x + dropout_i(sublayer_i(norm_i(x)))`` for each
    sub-layer (the cross-attention normalises only its queries).

    The cross-attention takes its queries from the decoder and its keys and
    values from the encoder output. With ``cross_attention=False`` the layer has
    no cross-attention sub-layer (no ``cross_attn``, ``norm2``, ``dropout2``): a
    decoder-only block (GPT), whose ``enc_output`` may be ``None``; the
    sub-layers keep their numbers (``norm1`` before or after the self-attention,
    ``norm3`` the feed-forward's).

    Args:
        d_model, num_heads, dff, dropout: as for :class:`EncoderLayer`.
        norm_first, activation, layer_norm_eps: as for :class:`EncoderLayer`.
        cross_attention: whether the layer attends to an encoder output.

    Call:
        ``layer(x, enc_output, look_ahead_mask=None, padding_mask=None,
        return_attention=False)``; ``look_ahead_mask`` is the combined
        look-ahead + target padding mask (:func:`create_combined_mask`),
        ``padding_mask`` the source padding mask (:func:`create_padding_mask`).
        With ``return_attention=True`` returns
        ``(x, self_attention_weights, cross_attention_weights)`` (the last
        ``None`` without cross-attention).

    Shape:
        x (batch, tgt_len, d_model), enc_output (batch, src_len, d_model),
        look_ahead_mask (batch, 1, tgt_len, tgt_len), padding_mask (batch, 1, 1, src_len)
        -> (batch, tgt_len, d_model); self weights (batch, heads, tgt_len, tgt_len),
        cross weights (batch, heads, tgt_len, src_len).
    """

    def __init__(self, d_model, num_heads, dff, dropout=0.1, *, norm_first=False, activation="relu",
                 layer_norm_eps=LAYER_NORM_EPSILON, cross_attention=True, **kwargs):
        super().__init__(**kwargs)
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.cross_attention = check_flag("cross_attention", cross_attention)
        policy = self.dtype_policy
        self.self_attn = MultiHeadAttention(d_model, num_heads, name="self_attn", dtype=policy)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, num_heads, name="cross_attn", dtype=policy)
        self.ffn = FeedForward(d_model, dff, dropout, activation=activation, name="ffn", dtype=policy)
        self.norm1 = layer_norm(d_model, layer_norm_eps, name="norm1", dtype=policy)
        if cross_attention:
            self.norm2 = layer_norm(d_model, layer_norm_eps, name="norm2", dtype=policy)
        self.norm3 = layer_norm(d_model, layer_norm_eps, name="norm3", dtype=policy)
        self.dropout1 = dropout_layer(dropout, dtype=policy)
        if cross_attention:
            self.dropout2 = dropout_layer(dropout, dtype=policy)
        self.dropout3 = dropout_layer(dropout, dtype=policy)
        self.built = True

    def _check_enc_output(self, enc_output):
        check_enc_output(self.cross_attention, enc_output is None)

    def call(self, x, enc_output=None, look_ahead_mask=None, padding_mask=None,
             return_attention=False, training=None):
        self._check_enc_output(enc_output)
        x, self_weights, cross_weights = self._sublayers(  # (batch, tgt_len, d_model), weights or None
            x, lambda h: self.self_attn(h, h, h, mask=look_ahead_mask, need_weights=return_attention,
                                        training=training),
            # queries from the decoder, keys and values from the encoder
            lambda h: self.cross_attn(h, enc_output, enc_output, mask=padding_mask,
                                      need_weights=return_attention, training=training), training)
        return (x, self_weights, cross_weights) if return_attention else x

    def _sublayers(self, x, self_attend, cross_attend, training=None):
        """The three sub-layers, each wired by :func:`~course_pkg.tensorflow.encoder.sublayer_connection`;
        ``self_attend`` and ``cross_attend`` map their input to ``(output, extra)``, as the full
        call and :meth:`step` attend differently. Returns ``(x, self extra, cross extra)``, the
        last ``None`` without cross-attention.

        Shape:
            x (batch, tgt_len, d_model) -> (batch, tgt_len, d_model), extras.
        """
        norm_first = self.norm_first
        x, self_extra = sublayer_connection(x, self_attend, self.norm1, self.dropout1, norm_first, training)
        cross_extra = None
        if self.cross_attention:
            x, cross_extra = sublayer_connection(x, cross_attend, self.norm2, self.dropout2,
                                                 norm_first, training)
        x, _ = sublayer_connection(x, lambda h: (self.ffn(h, training=training), None), self.norm3,
                                   self.dropout3, norm_first, training)  # (batch, tgt_len, d_model)
        return x, self_extra, cross_extra

    def step(self, x, cache, look_ahead_mask=None, padding_mask=None, training=None):
        """Decode new positions only, reusing cached keys and values.

        ``cache`` holds this layer's ``self_k``/``self_v`` for the positions
        decoded so far and ``cross_k``/``cross_v`` of the encoder output (see
        :meth:`Decoder.init_cache`; none without cross-attention). The result
        equals the full call over the whole prefix, at the new positions,
        without recomputing the past.

        Shape:
            x (batch, new, d_model), cache["self_k"] (batch, heads, past, depth),
            look_ahead_mask (batch, 1, new, past + new) ->
            (batch, new, d_model), cache with (batch, heads, past + new, depth).
        """
        def self_attend(h):  # the new positions' keys and values join the cached ones
            k, v = self.self_attn.project_kv(h, h)  # (batch, heads, new, depth)
            k = tf.concat([cache["self_k"], k], axis=2)  # (batch, heads, past + new, depth)
            v = tf.concat([cache["self_v"], v], axis=2)  # (batch, heads, past + new, depth)
            attn, _ = self.self_attn.attend(h, k, v, look_ahead_mask,
                                            need_weights=False)  # (batch, new, d_model)
            return attn, (k, v)

        def cross_attend(h):  # the encoder's keys and values, projected once by Decoder.init_cache
            return self.cross_attn.attend(h, cache["cross_k"], cache["cross_v"], padding_mask,
                                          need_weights=False)  # (batch, new, d_model), None

        x, (k, v), _ = self._sublayers(x, self_attend, cross_attend, training)  # (batch, new, d_model)
        return x, {**cache, "self_k": k, "self_v": v}


@keras.saving.register_keras_serializable(package="course_pkg")
class Decoder(Layer):
    """Positional embedding, dropout, then ``num_layers`` decoder layers.

    With ``norm_first=True`` (pre-LN) a final layer normalisation, ``final_norm``,
    follows the last layer, as in pre-LN stacks.

    Args:
        num_layers, d_model, num_heads, dff, dropout: as for :class:`Encoder`.
        vocab_size: target vocabulary size.
        max_len: longest target sequence.
        norm_first, activation, layer_norm_eps, cross_attention: as for :class:`DecoderLayer`.

    Call:
        ``decoder(tokens, enc_output, look_ahead_mask=None, padding_mask=None,
        return_attention=False)``; ``look_ahead_mask`` is the combined
        look-ahead + target padding mask (:func:`create_combined_mask`),
        ``padding_mask`` the source padding mask (:func:`create_padding_mask`),
        both course masks (1.0 = blocked). With ``return_attention=True``
        returns ``(x, [self weights per layer], [cross weights per layer])``
        (``None`` entries without cross-attention, where ``enc_output`` may be ``None``).

    Shape:
        tokens (batch, tgt_len) int, enc_output (batch, src_len, d_model),
        look_ahead_mask (batch, 1, tgt_len, tgt_len), padding_mask (batch, 1, 1, src_len)
        -> (batch, tgt_len, d_model).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1, *,
                 norm_first=False, activation="relu", layer_norm_eps=LAYER_NORM_EPSILON,
                 cross_attention=True, **kwargs):
        super().__init__(**kwargs)
        check_positive(num_layers=num_layers)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout = vocab_size, max_len, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.cross_attention = check_flag("cross_attention", cross_attention)
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_len, name="embedding",
                                             dtype=self.dtype_policy)
        self.embedding_dropout = dropout_layer(dropout, dtype=self.dtype_policy)
        self.layers = [
            DecoderLayer(d_model, num_heads, dff, dropout, norm_first=norm_first, activation=activation,
                         layer_norm_eps=layer_norm_eps, cross_attention=cross_attention,
                         name=f"layer_{i}", dtype=self.dtype_policy)
            for i in range(num_layers)
        ]
        self.final_norm = (layer_norm(d_model, layer_norm_eps, name="final_norm", dtype=self.dtype_policy)
                           if norm_first else None)
        self.built = True

    def call(self, tokens, enc_output=None, look_ahead_mask=None, padding_mask=None,
             return_attention=False, training=None):
        x = self.embedding_dropout(self.embedding(tokens), training=training)  # (batch, tgt_len, d_model)
        self_maps, cross_maps = [], []
        for layer in self.layers:
            if not return_attention:  # no weights formed: the fused kernel
                x = layer(x, enc_output, look_ahead_mask=look_ahead_mask, padding_mask=padding_mask,
                          training=training)
                continue
            x, self_weights, cross_weights = layer(
                x, enc_output, look_ahead_mask=look_ahead_mask, padding_mask=padding_mask,
                return_attention=True, training=training
            )
            self_maps.append(self_weights)  # (batch, heads, tgt_len, tgt_len)
            cross_maps.append(cross_weights)  # (batch, heads, tgt_len, src_len)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (batch, tgt_len, d_model)
        return (x, self_maps, cross_maps) if return_attention else x

    def init_cache(self, enc_output=None, batch_size=None):
        """Start incremental decoding: project the encoder output once per layer.

        Returns one dict per layer with ``cross_k``, ``cross_v``
        (batch, heads, src_len, depth) and empty ``self_k``, ``self_v``
        (batch, heads, 0, depth), to be grown by :meth:`step`. Without
        cross-attention, ``enc_output`` may be ``None`` and ``batch_size`` gives the batch.
        """
        depth = self.d_model // self.num_heads
        if enc_output is None:
            self.layers[0]._check_enc_output(enc_output)
            check_positive(batch_size=batch_size)
            empty = tf.zeros((batch_size, self.num_heads, 0, depth), self.compute_dtype)
            return [{"self_k": empty, "self_v": empty} for _ in self.layers]
        cache = []
        for layer in self.layers:
            if not layer.cross_attention:
                empty = tf.zeros((tf.shape(enc_output)[0], self.num_heads, 0, depth), self.compute_dtype)
                cache.append({"self_k": empty, "self_v": empty})
                continue
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
        if self.final_norm is not None:
            x = self.final_norm(x)  # (batch, new, d_model)
        return x, new_cache
