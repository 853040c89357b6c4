"""The encoder: a stack of self-attention + feed-forward layers (Vaswani et al., 2017, §3.1).

Shapes: ``batch`` source sequences of ``seq`` positions, ``d_model`` features,
``heads`` attention heads.
"""

import keras

from ..common.checks import (
    LAYER_NORM_EPSILON,
    check_activation,
    check_dropout,
    check_epsilon,
    check_flag,
    check_positive,
)
from .attention import MultiHeadAttention
from .base import Layer, dropout_layer, layer_norm
from .feed_forward import FeedForward
from .positional import PositionalEmbedding


@keras.saving.register_keras_serializable(package="course_pkg")
class EncoderLayer(Layer):
    """One encoder layer, post-LN as in the paper (pre-LN with ``norm_first=True``).

    Post-LN (the paper, BERT):

    ``x = norm1(x + dropout1(self_attn(x, x, x, mask)))``
    ``x = norm2(x + dropout2(ffn(x)))``

    Pre-LN (GPT-2, ViT; trains deep stacks without warm-up):

    ``x = x + dropout1(self_attn(norm1(x), ..., mask))``
    ``x = x + dropout2(ffn(norm2(x)))``

    Args:
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dff: feed-forward hidden width.
        dropout: dropout rate on each sub-layer's output (and inside the FFN).
        norm_first: pre-LN when True; post-LN (the paper) when False.
        activation: the feed-forward activation, ``"relu"``, ``"gelu"`` or ``"gelu_tanh"``
            (see :class:`FeedForward`).
        layer_norm_eps: the epsilon of both layer normalisations (1e-6; BERT 1e-12, GPT-2 1e-5).

    Call:
        ``layer(x, mask=None, return_attention=False)``; ``mask`` is a course
        mask (1.0 = blocked), typically the source padding mask. With
        ``return_attention=True`` returns ``(x, attention_weights)``.

    Shape:
        x (batch, seq, d_model), mask (batch, 1, 1, seq) -> (batch, seq, d_model);
        attention_weights (batch, heads, seq, seq).
    """

    def __init__(self, d_model, num_heads, dff, dropout=0.1, *, norm_first=False, activation="relu",
                 layer_norm_eps=LAYER_NORM_EPSILON, **kwargs):
        super().__init__(**kwargs)
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.self_attn = MultiHeadAttention(d_model, num_heads, name="self_attn", dtype=self.dtype_policy)
        self.ffn = FeedForward(d_model, dff, dropout, activation=activation, name="ffn",
                               dtype=self.dtype_policy)
        self.norm1 = layer_norm(d_model, layer_norm_eps, name="norm1", dtype=self.dtype_policy)
        self.norm2 = layer_norm(d_model, layer_norm_eps, name="norm2", dtype=self.dtype_policy)
        self.dropout1 = dropout_layer(dropout, dtype=self.dtype_policy)
        self.dropout2 = dropout_layer(dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, x, mask=None, return_attention=False, training=None):
        # Post-LN (the paper) normalises after each residual sum; pre-LN normalises each sub-layer's input.
        h = self.norm1(x) if self.norm_first else x  # (batch, seq, d_model)
        attn, weights = self.self_attn(h, h, h, mask=mask, need_weights=return_attention,
                                       training=training)  # (batch, seq, d_model), (batch, heads, seq, seq)
        attn = self.dropout1(attn, training=training)
        x = x + attn if self.norm_first else self.norm1(x + attn)  # (batch, seq, d_model)
        h = self.norm2(x) if self.norm_first else x
        out = self.dropout2(self.ffn(h, training=training), training=training)  # (batch, seq, d_model)
        x = x + out if self.norm_first else self.norm2(x + out)  # (batch, seq, d_model)
        return (x, weights) if return_attention else x

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "num_heads": self.num_heads, "dff": self.dff,
                "dropout": self.dropout, "norm_first": self.norm_first, "activation": self.activation,
                "layer_norm_eps": self.layer_norm_eps}


@keras.saving.register_keras_serializable(package="course_pkg")
class Encoder(Layer):
    """Positional embedding, dropout, then ``num_layers`` encoder layers.

    With ``norm_first=True`` (pre-LN) a final layer normalisation, ``final_norm``,
    follows the last layer, as in pre-LN stacks (GPT-2, ViT): each pre-LN layer
    adds to an un-normalised residual stream.

    Args:
        num_layers: number of :class:`EncoderLayer` (6 in the paper).
        d_model, num_heads, dff, dropout: as for :class:`EncoderLayer`.
        vocab_size: source vocabulary size.
        max_len: longest source sequence.
        norm_first, activation, layer_norm_eps: as for :class:`EncoderLayer`.

    Call:
        ``encoder(tokens, mask=None, return_attention=False)``; with
        ``return_attention=True`` returns ``(x, [attention_weights per layer])``.

    Shape:
        tokens (batch, seq) int, mask (batch, 1, 1, seq) -> (batch, seq, d_model).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1, *,
                 norm_first=False, activation="relu", layer_norm_eps=LAYER_NORM_EPSILON, **kwargs):
        super().__init__(**kwargs)
        check_positive(num_layers=num_layers)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout = vocab_size, max_len, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_len, name="embedding",
                                             dtype=self.dtype_policy)
        self.embedding_dropout = dropout_layer(dropout, dtype=self.dtype_policy)
        self.layers = [
            EncoderLayer(d_model, num_heads, dff, dropout, norm_first=norm_first, activation=activation,
                         layer_norm_eps=layer_norm_eps, name=f"layer_{i}", dtype=self.dtype_policy)
            for i in range(num_layers)
        ]
        self.final_norm = (layer_norm(d_model, layer_norm_eps, name="final_norm", dtype=self.dtype_policy)
                           if norm_first else None)
        self.built = True

    def call(self, tokens, mask=None, return_attention=False, training=None):
        x = self.embedding_dropout(self.embedding(tokens), training=training)  # (batch, seq, d_model)
        maps = []
        for layer in self.layers:
            if not return_attention:  # no weights formed: the fused kernel
                x = layer(x, mask=mask, training=training)
                continue
            x, weights = layer(x, mask=mask, return_attention=True,
                               training=training)  # weights: (batch, heads, seq, seq)
            maps.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (batch, seq, d_model)
        return (x, maps) if return_attention else x

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff, "vocab_size": self.vocab_size,
                "max_len": self.max_len, "dropout": self.dropout, "norm_first": self.norm_first,
                "activation": self.activation, "layer_norm_eps": self.layer_norm_eps}
