"""What every course layer is built from: a base class and leaf layers built at once.

:class:`Layer` (and :class:`Model`) is the base of every course class. It holds
the Keras plumbing, so that each class reads like its PyTorch twin:

* masks go by keyword: Keras fills a ``mask`` argument that is not passed
  explicitly from its first input's Keras mask, so a mask passed by position
  would arrive twice; :class:`Layer` passes every argument after the first by
  name;
* no Keras mask propagation (``compute_mask`` returns ``None``): the course
  passes its masks explicitly;
* ``get_config()`` returns Keras' own keys (name, dtype, trainable) and the
  constructor's arguments, recorded when the layer was built
  (:mod:`course_pkg.common.config`), so that no class lists them a second time.

The leaf layers (:func:`dense`, :func:`layer_norm`, :func:`embedding`, :func:`dropout_layer`) start
from the same distributions as their PyTorch twins and are built at
construction: Keras creates weights lazily, on the first call, but the course
builds every leaf right away (the input width is always known) so that a
freshly constructed model can count its parameters, copy weights from PyTorch
and be saved before it has seen data.
"""

import functools
import inspect

import keras
import tensorflow as tf
from keras import layers

from ..common.arguments import LAYER_NORM_EPSILON, check_epsilon
from ..common.config import record_arguments, recorded_arguments


@functools.lru_cache(maxsize=None)
def _argument_names(call):
    """The parameter names of a layer class's ``call`` after ``self`` and the inputs."""
    return tuple(inspect.signature(call).parameters)[2:]


class Layer(layers.Layer):
    """Base of the course's Keras layers.

    * Arguments after the first go to ``call`` by keyword when ``call`` takes a
      ``mask``: Keras would otherwise fill a missing ``mask`` from the input's
      Keras mask, and a mask passed by position would arrive twice.
    * ``compute_mask`` returns ``None``: the course passes its masks explicitly.
    * Every subclass records its constructor's arguments when it is built.
    * ``get_config()`` returns Keras' own keys (name, dtype, trainable) and them.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        record_arguments(cls)

    def __call__(self, *args, **kwargs):
        names = _argument_names(type(self).call)
        if "mask" in names and len(args) > 1:
            if len(args) - 1 > len(names):
                raise TypeError(f"{type(self).__name__} takes at most {len(names) + 1} arguments, "
                                f"got {len(args)}")
            for name, value in zip(names, args[1:]):
                if name in kwargs:
                    raise TypeError(f"{type(self).__name__} got multiple values for argument {name!r}")
                kwargs[name] = value
            args = args[:1]
        if "mask" in names:
            kwargs.setdefault("mask", None)
        return super().__call__(*args, **kwargs)

    def compute_mask(self, *args, **kwargs):
        """No Keras mask propagation: the course passes its masks explicitly."""
        return None

    def get_config(self):
        """The constructor's arguments, defaults included, added to Keras' (name, dtype, trainable)."""
        return {**super().get_config(), **recorded_arguments(self)}


class Model(Layer, keras.Model):
    """Base of the course's Keras models: a :class:`Layer` that is also a ``keras.Model``."""


def dense(in_features: int, out_features: int, name=None, dtype=None, use_bias: bool = True) -> layers.Dense:
    """``keras.layers.Dense`` (Glorot-uniform kernel, zero bias), built for ``in_features``; no bias when
    ``use_bias`` is False (Llama's projections)."""
    layer = layers.Dense(out_features, use_bias=use_bias, name=name, dtype=dtype)
    layer.build((None, in_features))
    return layer


def layer_norm(d_model: int, eps: float = LAYER_NORM_EPSILON, name=None,
               dtype=None) -> layers.LayerNormalization:
    """``LayerNormalization`` with the course's epsilon, 1e-6 by default (Keras' default is 1e-3).

    BERT uses 1e-12, GPT-2 1e-5: the layers take it as ``layer_norm_eps``.
    """
    layer = layers.LayerNormalization(epsilon=check_epsilon(eps), name=name, dtype=dtype)
    layer.build((None, d_model))
    return layer


def dropout_layer(rate: float, name=None, dtype=None) -> layers.Dropout:
    """Keras' ``Dropout`` (the PyTorch twin draws its CPU mask faster than ``nn.Dropout``)."""
    return layers.Dropout(rate, name=name, dtype=dtype)


def embedding(vocab_size: int, d_model: int, name=None, dtype=None) -> layers.Embedding:
    """``keras.layers.Embedding`` (initialised U(-0.05, 0.05)), built."""
    layer = layers.Embedding(vocab_size, d_model, name=name, dtype=dtype)
    layer.build((None, None))
    return layer


@keras.saving.register_keras_serializable(package="course_pkg")
class Bias(Layer):
    """A learned vector added along the last axis, initialised to 0 (the MLM decoder's bias).

    Shape:
        (..., size) -> (..., size).
    """

    def __init__(self, size: int, **kwargs):
        super().__init__(**kwargs)
        self.bias = self.add_weight(shape=(size,), initializer="zeros", name="bias")
        self.built = True

    def call(self, x):
        return x + tf.cast(self.bias, x.dtype)
