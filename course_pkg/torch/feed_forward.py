"""The position-wise feed-forward network (Vaswani et al., 2017, §3.3), and its gated form (SwiGLU,
Shazeer 2020, as in Llama).

Shapes: ``batch`` sequences of ``seq`` positions, ``d_model`` features in and
out, ``dff`` hidden features.
"""

import torch

from ..common.arguments import check_activation, check_dropout, check_flag, check_positive
from .base import Layer, dense, dropout_layer


def gelu(x):
    """Exact GELU, x Φ(x) with the normal CDF Φ written with erf (BERT's ``gelu``)."""
    return torch.nn.functional.gelu(x)


def gelu_tanh(x):
    """GELU's tanh approximation, 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))) (GPT-2's ``gelu_new``)."""
    return torch.nn.functional.gelu(x, approximate="tanh")


def silu(x):
    """SiLU (swish), x·sigmoid(x) (Llama's ``silu``)."""
    return torch.nn.functional.silu(x)


# The feed-forward activations by name: ReLU (the paper), exact GELU, tanh-approximate GELU, SiLU.
ACTIVATION_FUNCTIONS = {"relu": torch.relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu}


class FeedForward(Layer):
    """FFN(x) = act(x W1 + b1) W2 + b2, applied to every position alike; act = ReLU in the paper.

    Gated (``gated=True``): FFN(x) = (act(x W1 + b1) ⊙ (x W3 + b3)) W2 + b2, a third dense layer ``w3``
    gating the hidden layer elementwise; with ``activation="silu"`` and ``use_bias=False`` this is
    Llama's SwiGLU (``w1`` = Hugging Face's ``gate_proj``, ``w3`` = ``up_proj``, ``w2`` = ``down_proj``).

    Dropout acts on the hidden layer, as in ``torch.nn.TransformerEncoderLayer``.

    Args:
        d_model: input and output width.
        dff: hidden width (2048 in the paper, 4 × d_model).
        dropout: dropout rate on the hidden activations.
        activation: ``"relu"`` (the paper), ``"gelu"`` (exact GELU, x Φ(x), as BERT) or
            ``"gelu_tanh"`` (its tanh approximation, as GPT-2) or ``"silu"`` (x·sigmoid(x), as
            Llama); anything else: ``ValueError``.
        gated: add the gate ``w3`` (see above); ``False``: the paper's network.
        use_bias: ``False``: no biases in ``w1``, ``w2``, ``w3`` (Llama).

    Shape:
        (batch, seq, d_model) -> (batch, seq, d_model).
    """

    def __init__(self, d_model, dff, dropout=0.1, activation="relu", gated=False, use_bias=True):
        super().__init__()
        check_positive(d_model=d_model, dff=dff)
        check_dropout(dropout)
        activation = check_activation(activation)
        gated, use_bias = check_flag("gated", gated), check_flag("use_bias", use_bias)
        self.d_model, self.dff, self.dropout = d_model, dff, dropout
        self.activation, self.gated, self.use_bias = activation, gated, use_bias
        self.w1 = dense(d_model, dff, use_bias)
        self.hidden_dropout = dropout_layer(dropout)
        self.w2 = dense(dff, d_model, use_bias)
        self.w3 = dense(d_model, dff, use_bias) if gated else None

    def forward(self, x):
        hidden = ACTIVATION_FUNCTIONS[self.activation](self.w1(x))  # (batch, seq, dff)
        if self.gated:
            hidden = hidden * self.w3(x)  # (batch, seq, dff)
        return self.w2(self.hidden_dropout(hidden))  # (batch, seq, d_model)
