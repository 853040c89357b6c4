"""Task heads on top of a stack's final states.

Shapes: ``batch`` sequences of ``seq`` positions, ``d_model`` features,
``num_classes`` classes.
"""

import keras
import tensorflow as tf

from ..common.arguments import check_dropout, check_positive
from ..common.heads import check_default_token_index, check_row_indices, check_states, check_token_index
from .base import Layer, dense, dropout_layer
from .tokens import is_integer


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
    index = tf.convert_to_tensor(token_index)  # (batch,)
    shape = (None,) if index.shape.rank is None else tuple(index.shape)  # unknown rank: in a tf.function
    values = index.numpy().tolist() if tf.executing_eagerly() and len(shape) == 1 else None
    check_row_indices(shape, x.shape[0], is_integer(index), index.dtype.name, values, x.shape[1])
    index = tf.cast(index, tf.int32)
    if index.shape.rank is None:  # checked when it runs; (batch,) for the layers after
        index = tf.ensure_shape(index, (x.shape[0],))
    index = tf.where(index < 0, index + tf.shape(x)[1], index)  # negative counts from the end
    return tf.gather(x, index, batch_dims=1)  # (batch, d_model)


@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, d_model, num_classes, dropout=0.1, token_index=0, **kwargs):
        super().__init__(**kwargs)
        check_positive(d_model=d_model, num_classes=num_classes)
        check_dropout(dropout)
        check_default_token_index(token_index)
        self.d_model, self.num_classes, self.dropout = d_model, num_classes, dropout
        self.token_index = token_index
        self.state_dropout = dropout_layer(dropout, dtype=self.dtype_policy)
        self.classifier = dense(d_model, num_classes, "classifier", self.dtype_policy)
        self.built = True

    def call(self, x, token_index=None, training=None):
        x = tf.convert_to_tensor(x)
        check_states(tuple(x.shape), self.d_model, x.dtype.is_floating, x.dtype.name)
        h = select_token(x, self.token_index if token_index is None else token_index)  # (batch, d_model)
        return self.classifier(self.state_dropout(h, training=training))  # (batch, num_classes)
