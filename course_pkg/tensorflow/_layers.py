"""Leaf layers, built at construction so that every weight exists at once.

Keras creates weights lazily, on the first call; the course builds every leaf
right away (the input width is always known) so that a freshly constructed
model can count its parameters, copy weights from PyTorch and be saved before
it has seen data, exactly like its PyTorch twin.
"""

import tensorflow as tf
from keras import layers

LAYER_NORM_EPSILON = 1e-6


def dense(in_features: int, out_features: int, name=None, dtype=None) -> layers.Dense:
    """``keras.layers.Dense`` (Glorot-uniform kernel, zero bias), built for ``in_features``."""
    layer = layers.Dense(out_features, name=name, dtype=dtype)
    layer.build((None, in_features))
    return layer


def layer_norm(d_model: int, name=None, dtype=None) -> layers.LayerNormalization:
    """``LayerNormalization`` with the course's epsilon, 1e-6 (Keras' default is 1e-3)."""
    layer = layers.LayerNormalization(epsilon=LAYER_NORM_EPSILON, name=name, dtype=dtype)
    layer.build((None, d_model))
    return layer


def embedding(vocab_size: int, d_model: int, name=None, dtype=None) -> layers.Embedding:
    """``keras.layers.Embedding`` (initialised U(-0.05, 0.05)), built."""
    layer = layers.Embedding(vocab_size, d_model, name=name, dtype=dtype)
    layer.build((None, None))
    return layer


def is_integer(tensor: tf.Tensor) -> bool:
    """Whether ``tensor`` holds integers (token ids)."""
    return tensor.dtype.is_integer
