"""The position-wise feed-forward network (Vaswani et al., 2017, §3.3).

Shapes: ``batch`` sequences of ``seq`` positions, ``d_model`` features in and
out, ``dff`` hidden features.
"""

import keras
import tensorflow as tf
from keras import layers

from .._checks import check_dropout, check_positive
from ._layers import Layer, dense


@keras.saving.register_keras_serializable(package="course_pkg")
class FeedForward(Layer):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to every position alike.

    Dropout acts on the hidden layer, as in ``torch.nn.TransformerEncoderLayer``.

    Args:
        d_model: input and output width.
        dff: hidden width (2048 in the paper, 4 × d_model).
        dropout: dropout rate on the hidden activations.

    Shape:
        (batch, seq, d_model) -> (batch, seq, d_model).
    """

    def __init__(self, d_model, dff, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        check_positive(d_model=d_model, dff=dff)
        check_dropout(dropout)
        self.d_model, self.dff, self.dropout = d_model, dff, dropout
        self.w1 = dense(d_model, dff, "w1", self.dtype_policy)
        self.hidden_dropout = layers.Dropout(dropout, dtype=self.dtype_policy)
        self.w2 = dense(dff, d_model, "w2", self.dtype_policy)
        self.built = True

    def call(self, x, training=None):
        hidden = tf.nn.relu(self.w1(x))  # (batch, seq, dff)
        return self.w2(self.hidden_dropout(hidden, training=training))  # (batch, seq, d_model)

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "d_model": self.d_model, "dff": self.dff, "dropout": self.dropout}
