"""Attention for the RNN encoder-decoder: Bahdanau's additive and Luong's multiplicative scores.

At each decoding step the decoder's state (the query) scores every encoder
output (the keys), a softmax turns the scores into weights, and the weighted
sum of the keys is the context vector (Bahdanau et al., 2015; Luong et al.,
2015). :class:`~course_pkg.tensorflow.AttentionDecoder` calls them once per step.

Shapes: ``batch`` sequences, ``Tq`` queries of ``query_dim`` features scored
against ``Tk`` keys of ``key_dim`` features, ``units`` features in the scores'
hidden layer.
"""

import keras
import tensorflow as tf
from keras import layers

from ..common.arguments import check_batch, check_choice, check_features, check_positive
from ..common.masks import check_mask_shape
from ..common.rnn_attention import LUONG_SCORES, RNN_MASK, check_luong_widths
from .attention import weighted_values
from .base import Layer


def _projection(in_features, out_features, name=None, dtype=None):
    """A dense layer without bias (Glorot-uniform kernel), as in the attention papers."""
    layer = layers.Dense(out_features, use_bias=False, name=name, dtype=dtype)
    layer.build((None, in_features))
    return layer


def _masked_softmax(scores, mask=None):
    """Softmax over the last axis in float32; blocked (mask != 0) keys get exactly 0.

    A fully blocked row gets all-zero weights (never NaN), as in
    :func:`~course_pkg.tensorflow.scaled_dot_product_attention`.
    """
    scores = tf.cast(scores, tf.float32)  # (batch, Tq, Tk)
    if mask is not None:
        mask = tf.convert_to_tensor(mask)
        check_mask_shape(mask.shape, scores.shape, **RNN_MASK)
        blocked = tf.broadcast_to(tf.not_equal(mask, 0), tf.shape(scores))  # (batch, Tq, Tk)
        scores = tf.where(blocked, tf.float32.min, scores)
    weights = tf.nn.softmax(scores, axis=-1)  # (batch, Tq, Tk)
    if mask is not None:
        weights = tf.where(blocked, 0.0, weights)  # exact zeros, also in full rows
    return weights


def _context(weights, keys, mask=None):
    """``weights @ keys``; a NaN or inf stored at a blocked key never reaches the context
    (its weight is exactly 0, but 0 * NaN would be NaN), as in
    :func:`~course_pkg.tensorflow.scaled_dot_product_attention`.

    Shape:
        weights (batch, Tq, Tk), keys (batch, Tk, key_dim) -> context (batch, Tq, key_dim).
    """
    if mask is None:
        return tf.matmul(weights, keys)
    return weighted_values(weights, keys, tf.not_equal(tf.convert_to_tensor(mask), 0))


@keras.saving.register_keras_serializable(package="course_pkg")
class BahdanauAttention(Layer):
    """Additive attention (Bahdanau et al., 2015): score(q, k) = vᵀ tanh(W1 q + W2 k).

    The projections ``w1`` (query_dim -> units), ``w2`` (key_dim -> units) and
    ``v`` (units -> 1) have no bias, as in the paper. The keys are also the values.

    Args:
        units: width of the hidden layer inside the score.
        query_dim: width of the queries (default ``units``).
        key_dim: width of the keys (default ``units``).

    Call:
        ``attention(query, keys, mask=None, projected_keys=None)`` returns
        ``(context, weights)``. ``projected_keys`` is ``project_keys(keys)``, the keys' half of
        the score, which no query changes: a decoder that queries the same keys at every step
        computes it once per sentence and passes it in (without it, each call computes it).
        ``mask`` is a course mask (1.0 = blocked) that broadcasts to
        (batch, Tq, Tk), e.g. (batch, 1, Tk) for source padding. Blocked keys
        get a weight of exactly 0; a fully blocked row gets all-zero weights and
        a zero context (never NaN). A NaN or inf stored at a blocked key never
        reaches the context; a query that attends to one gets an all-NaN
        context row. The softmax runs in float32. A floating query or keys of
        another dtype is cast to the layer's compute dtype (Keras does it); the
        torch layer refuses it with a ``TypeError``.

    Shape:
        query (batch, Tq, query_dim), keys (batch, Tk, key_dim), mask (batch, 1, Tk) ->
        context (batch, Tq, key_dim), weights (batch, Tq, Tk).
    """

    def __init__(self, units, query_dim=None, key_dim=None, **kwargs):
        super().__init__(**kwargs)
        query_dim = units if query_dim is None else query_dim
        key_dim = units if key_dim is None else key_dim
        check_positive(units=units, query_dim=query_dim, key_dim=key_dim)
        self.units, self.query_dim, self.key_dim = units, query_dim, key_dim
        self.w1 = _projection(query_dim, units, "w1", self.dtype_policy)
        self.w2 = _projection(key_dim, units, "w2", self.dtype_policy)
        self.v = _projection(units, 1, "v", self.dtype_policy)
        self.built = True

    def project_keys(self, keys):
        """``W2 k`` for every key: the part of the score that does not depend on the query.

        Shape:
            keys (batch, Tk, key_dim) -> (batch, Tk, units).
        """
        check_features(keys.shape, self.key_dim, "keys")
        return self.w2(keys)  # (batch, Tk, units)

    def call(self, query, keys, mask=None, projected_keys=None, training=None):
        query, keys = tf.convert_to_tensor(query), tf.convert_to_tensor(keys)
        check_features(query.shape, self.query_dim, "query")
        check_features(keys.shape, self.key_dim, "keys")
        check_batch(query.shape[0], keys=keys.shape)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)  # (batch, Tk, units)
        q = self.w1(query)[:, :, tf.newaxis, :]  # (batch, Tq, 1, units)
        k = projected_keys[:, tf.newaxis, :, :]  # (batch, 1, Tk, units)
        scores = self.v(tf.tanh(q + k))[..., 0]  # (batch, Tq, Tk)
        weights = tf.cast(_masked_softmax(scores, mask), keys.dtype)  # (batch, Tq, Tk)
        return _context(weights, keys, mask), weights  # (batch, Tq, key_dim), (batch, Tq, Tk)

    def get_config(self):
        """The recorded arguments, ``query_dim`` and ``key_dim`` resolved (``None`` is ``units``).

        Layers with weights of the same shapes then have the same configuration, whether a width
        was given or left to its default (:func:`course_pkg.interop.copy_weights` compares them).
        """
        return {**super().get_config(), "query_dim": self.query_dim, "key_dim": self.key_dim}


@keras.saving.register_keras_serializable(package="course_pkg")
class LuongAttention(Layer):
    """Multiplicative attention (Luong et al., 2015): score(q, k) = qᵀ k or qᵀ W k.

    ``score="dot"`` has no weights and needs queries and keys of equal width;
    ``score="general"`` learns ``w`` (key_dim -> units, no bias). Scores are
    not scaled (unlike the Transformer's √d_k). The keys are also the values.

    Args:
        units: width of the queries (and of the keys for ``"dot"``).
        score: ``"dot"`` or ``"general"``.
        key_dim: width of the keys (default ``units``); ``"dot"`` needs ``units``.

    Call:
        ``attention(query, keys, mask=None, projected_keys=None)`` returns
        ``(context, weights)``; ``projected_keys`` (``project_keys(keys)``), masking and dtypes
        as in :class:`BahdanauAttention`.

    Shape:
        query (batch, Tq, units), keys (batch, Tk, key_dim), mask (batch, 1, Tk) ->
        context (batch, Tq, key_dim), weights (batch, Tq, Tk).
    """

    def __init__(self, units, score="dot", key_dim=None, **kwargs):
        super().__init__(**kwargs)
        check_choice("score", score, LUONG_SCORES)
        key_dim = units if key_dim is None else key_dim
        check_positive(units=units, key_dim=key_dim)
        check_luong_widths(score, key_dim, units)
        self.units, self.score, self.key_dim = units, score, key_dim
        if score == "general":
            self.w = _projection(key_dim, units, "w", self.dtype_policy)
        self.built = True

    def project_keys(self, keys):
        """The keys as the score reads them: ``W k`` (``"general"``), the keys themselves (``"dot"``).

        Shape:
            keys (batch, Tk, key_dim) -> (batch, Tk, units).
        """
        check_features(keys.shape, self.key_dim, "keys")
        return self.w(keys) if self.score == "general" else keys  # (batch, Tk, units)

    def call(self, query, keys, mask=None, projected_keys=None, training=None):
        query, keys = tf.convert_to_tensor(query), tf.convert_to_tensor(keys)
        check_features(query.shape, self.units, "query")
        check_features(keys.shape, self.key_dim, "keys")
        check_batch(query.shape[0], keys=keys.shape)
        k = self.project_keys(keys) if projected_keys is None else projected_keys  # (batch, Tk, units)
        scores = tf.matmul(query, k, transpose_b=True)  # (batch, Tq, Tk)
        weights = tf.cast(_masked_softmax(scores, mask), keys.dtype)  # (batch, Tq, Tk)
        return _context(weights, keys, mask), weights  # (batch, Tq, key_dim), (batch, Tq, Tk)

    def get_config(self):
        """The recorded arguments, ``key_dim`` resolved (``None`` is ``units``).

        Layers with weights of the same shapes then have the same configuration, whether the width
        was given or left to its default (:func:`course_pkg.interop.copy_weights` compares them).
        """
        return {**super().get_config(), "key_dim": self.key_dim}
