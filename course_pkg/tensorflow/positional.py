"""Positional encoding and the token embedding it is added to (Vaswani et al., 2017, §3.4-3.5).

Shapes: ``batch`` sequences of ``seq`` tokens, embedded in ``d_model``
features; the position table has ``length`` rows (``max_len`` in the layer).
"""

import math

import keras
import tensorflow as tf

from ..common.arguments import check_features, check_positive
from ..common.positional import check_start, check_table_size
from ..common.tokens import check_length, check_token_rank
from .base import Layer, embedding
from .tokens import check_tokens, token_ids


def positional_encoding(length, d_model):
    """The sinusoidal position table.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model)).
    Angles are computed in float64 so that long tables stay exact in float32.

    Raises:
        TypeError: ``length`` or ``d_model`` not an int; ValueError: a negative one.

    Shape:
        () -> (length, d_model) float32.
    """
    check_table_size(length=length, d_model=d_model)
    pos = tf.range(length, dtype=tf.float64)[:, tf.newaxis]  # (length, 1)
    two_i = tf.range(d_model) // 2 * 2  # 0, 0, 2, 2, ...
    angles = pos / tf.pow(tf.constant(10000.0, tf.float64),
                          tf.cast(two_i, tf.float64) / d_model)  # (length, d_model)
    even = tf.range(d_model) % 2 == 0  # (d_model,)
    return tf.cast(tf.where(even, tf.sin(angles), tf.cos(angles)), tf.float32)



@keras.saving.register_keras_serializable(package="course_pkg")
class PositionalEmbedding(Layer):
    """Token embedding × √d_model plus the positional encoding.

    Args:
        vocab_size: number of token ids.
        d_model: embedding width.
        max_len: longest sequence the position table covers.

    Call:
        ``embedding(tokens, start=0)``: the tokens sit at positions
        ``start, start + 1, ...`` (``start > 0`` when decoding step by step).

    Shape:
        tokens (batch, seq) int -> (batch, seq, d_model).
    """

    def __init__(self, vocab_size, d_model, max_len, **kwargs):
        super().__init__(**kwargs)
        check_positive(vocab_size=vocab_size, d_model=d_model, max_len=max_len)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_len = max_len
        self.token_embedding = embedding(vocab_size, d_model, "token_embedding", self.dtype_policy)
        self.pe = positional_encoding(max_len, d_model)  # a constant, not a weight
        self.built = True

    def call(self, tokens, start=0, training=None):
        tokens = token_ids(tokens)
        check_tokens(tokens, self.vocab_size, self.max_len, start)
        seq = tf.shape(tokens)[1]
        x = self.token_embedding(tokens) * math.sqrt(self.d_model)  # (batch, seq, d_model)
        return x + tf.cast(self.pe[start:start + seq], x.dtype)  # (batch, seq, d_model)


@keras.saving.register_keras_serializable(package="course_pkg")
class LearnedPositionalEncoding(Layer):
    """A learned position table added to its input: the alternative to the sinusoidal one.

    BERT, GPT-2 and ViT learn one vector per position instead of computing
    :func:`positional_encoding`; the table (``table``, an embedding of
    ``max_len`` rows, canonical weight ``table.embeddings``) starts
    U(-0.05, 0.05) and trains with the model. Unlike the sinusoidal table, it
    cannot extend past ``max_len``.

    Args:
        max_len: number of positions (rows of the table).
        d_model: width of each position vector.

    Call:
        ``layer(x, start=0)`` returns ``x + table[start:start + seq]``: the inputs sit
        at positions ``start, start + 1, ...`` (``start > 0`` when decoding step by step).
        ``start + seq > max_len``: ``ValueError``. ``layer(x, positions=ids)`` adds the rows
        ``table[ids]`` instead, one position per token (left-padded batches: each row
        counts from its first real token).

    Shape:
        x (batch, seq, d_model) -> (batch, seq, d_model).
    """

    def __init__(self, max_len, d_model, **kwargs):
        super().__init__(**kwargs)
        check_positive(max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        self.table = embedding(max_len, d_model, "table", self.dtype_policy)  # (max_len, d_model)
        self.built = True

    def call(self, x, start=0, positions=None, training=None):
        x = tf.convert_to_tensor(x)
        check_features(x.shape, self.d_model, "x")
        if positions is not None:  # (batch, seq) int
            positions = tf.convert_to_tensor(positions)
            check_token_rank(positions.shape)
            if tf.executing_eagerly() and tf.size(positions) > 0:
                check_length(int(tf.reduce_max(positions)) + 1, self.max_len)
            return x + tf.cast(tf.gather(self.table.embeddings, positions), x.dtype)  # (batch, seq, d_model)
        if not isinstance(start, int) and tf.executing_eagerly():  # a tensor: known when eager
            start = int(start)
        if isinstance(start, int):
            check_start(start)
            if x.shape[1] is not None:
                check_length(start + x.shape[1], self.max_len)
        seq = tf.shape(x)[1]
        table = self.table.embeddings[start:start + seq]  # (seq, d_model)
        return x + tf.cast(table, x.dtype)  # (batch, seq, d_model)
