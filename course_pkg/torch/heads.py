"""Task heads on top of a stack's final states.

Shapes: ``batch`` sequences of ``seq`` positions, ``d_model`` features,
``num_classes`` classes.
"""

import torch

from ..common.arguments import check_dropout, check_positive
from ..common.heads import check_default_token_index, check_row_indices, check_states, check_token_index
from .base import Layer, dense, dropout_layer
from .tokens import is_integer


def _dtype_name(tensor):
    return str(tensor.dtype).replace("torch.", "")


def select_token(x, token_index):
    """The state of one token per sequence: ``x[:, token_index]``.

    ``token_index`` is an int (the same position in every row) or an int tensor of one
    position per row (the last real token of right-padded rows, say); either way a
    position ``p`` must satisfy ``-seq <= p < seq``, a negative one counting from the end.

    Raises:
        TypeError: a ``token_index`` that is a bool or not integers.
        ValueError: a position outside the sequence, or not one position per row.

    Shape:
        x (batch, seq, d_model), token_index () or (batch,) -> (batch, d_model).
    """
    if isinstance(token_index, int):
        check_token_index(token_index, x.shape[1])
        return x[:, token_index]  # (batch, d_model)
    index = torch.as_tensor(token_index, device=x.device)  # (batch,)
    check_row_indices(tuple(index.shape), x.shape[0], is_integer(index), _dtype_name(index),
                      index.tolist() if index.dim() == 1 else None, x.shape[1])
    index = index.long()
    return x[torch.arange(x.shape[0], device=x.device), index]  # (batch, d_model)


class ClassificationHead(Layer):
    """Dropout and a linear layer on one token's final state: class logits.

    The head of the lecture notes: ``logits = W · dropout(h_t) + b`` with ``h_t`` the
    final state of the chosen token, ``[CLS]`` (position 0) for BERT, the last token
    for a decoder-only model whose last position has seen the whole sequence.

    Args:
        d_model: width of the states.
        num_classes: number of classes (the logits' last axis).
        dropout: dropout rate on the chosen state.
        token_index: which position to classify from (0: ``[CLS]``; -1: the last).

    Call:
        ``head(x, token_index=None)``; ``token_index`` overrides the constructor's
        (an int, or one position per row).

    Raises:
        TypeError: on call, hidden states ``x`` that are not floats; a ``token_index``
            that is a bool or not integers.
        ValueError: on call, ``x`` of another shape than (batch, seq, d_model); a
            ``token_index`` outside the sequence or not one per row (see ``select_token``).

    Shape:
        x (batch, seq, d_model) -> logits (batch, num_classes).
    """

    def __init__(self, d_model, num_classes, dropout=0.1, token_index=0):
        super().__init__()
        check_positive(d_model=d_model, num_classes=num_classes)
        check_dropout(dropout)
        check_default_token_index(token_index)
        self.d_model, self.num_classes, self.dropout = d_model, num_classes, dropout
        self.token_index = token_index
        self.state_dropout = dropout_layer(dropout)
        self.classifier = dense(d_model, num_classes)

    def forward(self, x, token_index=None):
        x = torch.as_tensor(x)
        check_states(tuple(x.shape), self.d_model, x.dtype.is_floating_point, _dtype_name(x))
        h = select_token(x, self.token_index if token_index is None else token_index)  # (batch, d_model)
        return self.classifier(self.state_dropout(h))  # (batch, num_classes)
