"""The encoder: a stack of self-attention + feed-forward layers (Vaswani et al., 2017, §3.1).

Shapes: ``batch`` source sequences of ``seq`` positions, ``d_model`` features,
``heads`` attention heads.
"""

from torch import nn

from ..common.arguments import (
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


def sublayer_connection(x, sublayer, norm, dropout, norm_first):
    """One sub-layer wrapped in dropout, a residual connection and layer normalisation (§3.1,
    §5.4): the wiring of every sub-layer of :class:`EncoderLayer` and
    :class:`~course_pkg.torch.decoder.DecoderLayer`, in one place for both orders.

    Post-LN (``norm_first=False``, the paper): ``norm(x + dropout(sublayer(x)))``.
    Pre-LN (``norm_first=True``): ``x + dropout(sublayer(norm(x)))``.

    ``sublayer`` maps its input to ``(output, extra)``; ``extra`` (attention weights, the keys
    and values of a decoding step, or ``None``) is returned beside the new ``x``.

    Shape:
        x (batch, seq, d_model) -> (batch, seq, d_model), extra.
    """
    if norm_first:  # pre-LN: normalise the sub-layer's input; the residual stream stays un-normalised
        out, extra = sublayer(norm(x))  # (batch, seq, d_model)
        return x + dropout(out), extra  # (batch, seq, d_model)
    out, extra = sublayer(x)  # post-LN: normalise the residual sum, (batch, seq, d_model)
    return norm(x + dropout(out)), extra  # (batch, seq, d_model)


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
                 layer_norm_eps=LAYER_NORM_EPSILON):
        super().__init__()
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.dropout = d_model, num_heads, dff, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, dff, dropout, activation=activation)
        self.norm1 = layer_norm(d_model, layer_norm_eps)
        self.norm2 = layer_norm(d_model, layer_norm_eps)
        self.dropout1 = dropout_layer(dropout)
        self.dropout2 = dropout_layer(dropout)

    def forward(self, x, mask=None, return_attention=False):
        # Each sub-layer wrapped in dropout, residual and LayerNorm, post-LN or pre-LN (sublayer_connection).
        x, weights = sublayer_connection(  # (batch, seq, d_model), (batch, heads, seq, seq) or None
            x, lambda h: self.self_attn(h, h, h, mask=mask, need_weights=return_attention),
            self.norm1, self.dropout1, self.norm_first)
        x, _ = sublayer_connection(x, lambda h: (self.ffn(h), None), self.norm2,
                                   self.dropout2, self.norm_first)  # (batch, seq, d_model)
        return (x, weights) if return_attention else x


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
                 norm_first=False, activation="relu", layer_norm_eps=LAYER_NORM_EPSILON):
        super().__init__()
        check_positive(num_layers=num_layers)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout = vocab_size, max_len, dropout
        self.norm_first = check_flag("norm_first", norm_first)
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.embedding = PositionalEmbedding(vocab_size, d_model, max_len)
        self.embedding_dropout = dropout_layer(dropout)
        self.layers = nn.ModuleList(
            [EncoderLayer(d_model, num_heads, dff, dropout, norm_first=norm_first, activation=activation,
                          layer_norm_eps=layer_norm_eps) for _ in range(num_layers)]
        )
        self.final_norm = layer_norm(d_model, layer_norm_eps) if norm_first else None

    def forward(self, tokens, mask=None, return_attention=False):
        x = self.embedding_dropout(self.embedding(tokens))  # (batch, seq, d_model)
        maps = []
        for layer in self.layers:
            if not return_attention:  # no weights formed: the fused kernel
                x = layer(x, mask=mask)
                continue
            x, weights = layer(x, mask=mask, return_attention=True)  # weights: (batch, heads, seq, seq)
            maps.append(weights)
        if self.final_norm is not None:
            x = self.final_norm(x)  # (batch, seq, d_model)
        return (x, maps) if return_attention else x
