"""The building blocks every other module uses: a dense layer, a layer norm, a ``params`` subtree.

Mirrors ``course_pkg.torch.base`` and ``course_pkg.tensorflow.base``, where the twins build their
leaf layers (dense, layer norm); ``LAYER_NORM_EPSILON`` is the one of ``course_pkg.common.arguments``.
Here a layer is a function of its ``params``: :func:`dense` and :func:`layer_norm` apply one,
:func:`sub` picks a component's weights out of a model's, :func:`num_layers` counts an encoder's
or a decoder's layers.
"""

import numpy as np

from ..common.arguments import LAYER_NORM_EPSILON


def dense(params, x, name):
    """``x @ params[name.kernel] + params[name.bias]`` (no bias where ``params`` holds none: Llama's)."""
    bias = params.get(f"{name}.bias")
    return x @ params[f"{name}.kernel"] + (0.0 if bias is None else bias)


def sub(params, prefix):
    """The entries of ``params`` below ``prefix``, with the prefix removed."""
    start = prefix + "."
    return {k[len(start):]: v for k, v in params.items() if k.startswith(start)}


def num_layers(params):
    """How many layers ``layers.<i>`` an encoder's or a decoder's ``params`` hold."""
    return len({k.split(".")[1] for k in params if k.startswith("layers.")})


def layer_norm(params, x, eps=LAYER_NORM_EPSILON):
    """LayerNorm over the last axis with ``gamma``, ``beta``."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * params["gamma"] + params["beta"]
