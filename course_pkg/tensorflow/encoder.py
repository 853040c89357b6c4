"""The encoder: a stack of self-attention + feed-forward layers (Vaswani et al., 2017, §3.1).

Shapes: ``batch`` source sequences of ``seq`` positions, ``d_model`` features,
``heads`` attention heads.
"""

import keras
from keras import layers

from .._checks import check_dropout, check_positive
from ._layers import Layer, layer_norm
from .attention import MultiHeadAttention
from .feed_forward import FeedForward
from .positional import PositionalEmbedding


@keras.saving.register_keras_serializable(package="course_pkg")
class EncoderLayer(Layer):
    """One encoder layer, post-LN as in the paper.

    ``x = norm1(x + dropout1(self_attn(x, x, x, mask)))``
    ``x = norm2(x + dropout2(ffn(x)))``

    Args:
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dff: feed-forward hidden width.
        dropout: dropout rate on each sub-layer's output (and inside the FFN).

    Call:
        ``layer(x, mask=None, return_attention=False)``; ``mask`` is a course
        mask (1.0 = blocked), typically the source padding mask. With
        ``return_attention=True`` returns ``(x, attention_weights)``.

    Shape:
        x (batch, seq, d_model), mask (batch, 1, 1, seq) -> (batch, seq, d_model);
        attention_weights (batch, heads, seq, seq).
    """

    def __init__(self, d_model, num_heads, dff, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.self_attn = MultiHeadAttention(d_model, num_heads, name="self_attn", dtype=self.dtype_policy)
        self.ffn = FeedForward(d_model, dff, dropout, name="ffn", dtype=self.dtype_policy)
        self.norm1 = layer_norm(d_model, "norm1", self.dtype_policy)
        self.norm2 = layer_norm(d_model, "norm2", self.dtype_policy)
        self.dropout1 = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.dropout2 = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, x, mask=None, return_attention=False, training=None):
        attn, weights = self.self_attn(x, x, x, mask=mask,
                                       training=training)  # (batch, seq, d_model), (batch, heads, seq, seq)
        x = self.norm1(x + self.dropout1(attn, training=training))  # (batch, seq, d_model)
        x = self.norm2(x + self.dropout2(self.ffn(x, training=training),
                                         training=training))  # (batch, seq, d_model)
        return (x, weights) if return_attention else x

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads, "dff": self.dff,
                "dropout": self.dropout}


@keras.saving.register_keras_serializable(package="course_pkg")
class Encoder(Layer):
    """Positional embedding, dropout, then ``num_layers`` encoder layers.

    Args:
        num_layers: number of :class:`EncoderLayer` (6 in the paper).
        d_model, num_heads, dff, dropout: as for :class:`EncoderLayer`.
        vocab_size: source vocabulary size.
        max_len: longest source sequence.

    Call:
        ``encoder(tokens, mask=None, return_attention=False)``; with
        ``return_attention=True`` returns ``(x, [attention_weights per layer])``.

    Shape:
        tokens (batch, seq) int, mask (batch, 1, 1, seq) -> (batch, seq, d_model).
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
            EncoderLayer(d_model, num_heads, dff, dropout, name=f"layer_{i}", dtype=self.dtype_policy)
            for i in range(num_layers)
        ]
        self.built = True

    def call(self, tokens, mask=None, return_attention=False, training=None):
        x = self.embedding_dropout(self.embedding(tokens), training=training)  # (batch, seq, d_model)
        maps = []
        for layer in self.layers:
            x, weights = layer(x, mask=mask, return_attention=True,
                               training=training)  # weights: (batch, heads, seq, seq)
            maps.append(weights)
        return (x, maps) if return_attention else x

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff, "vocab_size": self.vocab_size,
                "max_len": self.max_len, "dropout": self.dropout}
