"""The position-wise feed-forward network (Vaswani et al., 2017, §3.3).

Shapes: ``batch`` sequences of ``seq`` positions, ``d_model`` features in and
out, ``dff`` hidden features.
"""

import torch

from ..common.checks import check_activation, check_dropout, check_positive
from .base import Layer, dense, dropout_layer


def gelu(x):
    """Exact GELU, x Φ(x) with the normal CDF Φ written with erf (BERT's ``gelu``)."""
    return torch.nn.functional.gelu(x)


def gelu_tanh(x):
    """GELU's tanh approximation, 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))) (GPT-2's ``gelu_new``)."""
    return torch.nn.functional.gelu(x, approximate="tanh")


# The feed-forward activations by name: ReLU (the paper), exact GELU, tanh-approximate GELU.
ACTIVATION_FUNCTIONS = {"relu": torch.relu, "gelu": gelu, "gelu_tanh": gelu_tanh}


class FeedForward(Layer):
    """FFN(x) = act(x W1 + b1) W2 + b2, applied to every position alike; act = ReLU in the paper.

    Dropout acts on the hidden layer, as in ``torch.nn.TransformerEncoderLayer``.

    Args:
        d_model: input and output width.
        dff: hidden width (2048 in the paper, 4 × d_model).
        dropout: dropout rate on the hidden activations.
        activation: ``"relu"`` (the paper), ``"gelu"`` (exact GELU, x Φ(x), as BERT) or
            ``"gelu_tanh"`` (its tanh approximation, as GPT-2); anything else: ``ValueError``.

    Shape:
        (batch, seq, d_model) -> (batch, seq, d_model).
    """

    def __init__(self, d_model, dff, dropout=0.1, activation="relu"):
        super().__init__()
        check_positive(d_model=d_model, dff=dff)
        check_dropout(dropout)
        self.d_model, self.dff, self.dropout = d_model, dff, dropout
        self.activation = check_activation(activation)
        self.w1 = dense(d_model, dff)
        self.hidden_dropout = dropout_layer(dropout)
        self.w2 = dense(dff, d_model)

    def forward(self, x):
        hidden = ACTIVATION_FUNCTIONS[self.activation](self.w1(x))  # (batch, seq, dff)
        return self.w2(self.hidden_dropout(hidden))  # (batch, seq, d_model)

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "dff": self.dff, "dropout": self.dropout,
                "activation": self.activation}
