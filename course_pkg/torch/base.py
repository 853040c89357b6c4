"""What every course layer is built from: a base class and leaf layers built at once.

:class:`Layer` (and :class:`Model`) is the base of every course class. Its
Keras twin holds the Keras plumbing (masks by keyword, no Keras mask
propagation); PyTorch needs none of it, so here it only gives the two things
both frameworks share:

* ``get_config()`` returns the constructor's arguments, recorded when the layer
  was built (:mod:`course_pkg.common.config`; Keras adds its own keys: name,
  dtype, trainable), so that no class lists them a second time;
* ``from_config(config)`` builds the layer back from it, as in Keras.

The leaf layers (:func:`dense`, :func:`layer_norm`, :func:`embedding`, :func:`dropout`) start
from the same distributions as their Keras twins: PyTorch and Keras initialise
differently by default (Kaiming-uniform vs Glorot-uniform kernels, N(0, 1) vs
U(-0.05, 0.05) embeddings), so the course builds every leaf through these
functions and the two implementations train from the same starting point.
"""

import torch
from torch import nn

from ..common.arguments import LAYER_NORM_EPSILON, check_epsilon
from ..common.config import record_arguments, recorded_arguments


class Layer(nn.Module):
    """Base of the course's PyTorch layers (and models).

    * Every subclass records its constructor's arguments when it is built.
    * ``get_config()`` returns them (Keras adds its own keys: name, dtype,
      trainable).
    * ``from_config(config)`` builds the layer back from them, as in Keras.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        record_arguments(cls)

    def get_config(self):
        """The constructor's arguments, defaults included (Keras adds name, dtype and trainable)."""
        return recorded_arguments(self)

    @classmethod
    def from_config(cls, config):
        """A new layer built from :meth:`get_config`'s dict (as Keras' ``from_config``)."""
        return cls(**config)


Model = Layer  # In PyTorch a model is a module like any layer (Keras has keras.Model).


def dense(in_features: int, out_features: int, use_bias: bool = True) -> nn.Linear:
    """``nn.Linear`` with a Glorot-uniform weight and a zero bias (Keras' ``Dense``); no bias when
    ``use_bias`` is False (Llama's projections)."""
    layer = nn.Linear(in_features, out_features, bias=use_bias)
    nn.init.xavier_uniform_(layer.weight)
    if use_bias:
        nn.init.zeros_(layer.bias)
    return layer


def layer_norm(d_model: int, eps: float = LAYER_NORM_EPSILON) -> nn.LayerNorm:
    """``nn.LayerNorm`` with the course's epsilon, 1e-6 by default (torch's default is 1e-5).

    BERT uses 1e-12, GPT-2 1e-5: the layers take it as ``layer_norm_eps``.
    """
    return nn.LayerNorm(d_model, eps=check_epsilon(eps))


class Dropout(nn.Dropout):
    """``nn.Dropout`` whose mask, on the CPU, is drawn as uniform numbers compared with the rate.

    The same distribution (each element kept with probability ``1 - p`` and scaled by
    ``1 / (1 - p)``, the identity in eval mode), from a different random stream: on the CPU,
    ``nn.Dropout`` draws its mask with ``bernoulli_``, about twice as slow as ``torch.rand`` and
    a comparison (forward and backward), and the Bernoulli draws took about a quarter of a
    training step of the course's Transformer there (``benchmarks/training_speed.py``). On
    other devices ``nn.Dropout``'s fused kernel runs.

    Shape:
        (...) -> (...), the input's shape and dtype.
    """

    def forward(self, x):
        if not self.training or self.p in (0.0, 1.0) or self.inplace or x.device.type != "cpu":
            return super().forward(x)
        keep = torch.rand(x.shape, device=x.device) >= self.p  # (...): True with probability 1 - p
        return x * (keep.to(x.dtype) * (1.0 / (1.0 - self.p)))  # (...)


def dropout_layer(rate: float) -> Dropout:
    """The course's :class:`Dropout` (Keras' ``Dropout`` in TensorFlow)."""
    return Dropout(rate)


def embedding(vocab_size: int, d_model: int) -> nn.Embedding:
    """``nn.Embedding`` initialised U(-0.05, 0.05) (Keras' ``Embedding``)."""
    layer = nn.Embedding(vocab_size, d_model)
    nn.init.uniform_(layer.weight, -0.05, 0.05)
    return layer


class Bias(Layer):
    """A learned vector added along the last axis, initialised to 0 (the MLM decoder's bias).

    Shape:
        (..., size) -> (..., size).
    """

    def __init__(self, size: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(size))

    def forward(self, x):
        return x + self.bias
