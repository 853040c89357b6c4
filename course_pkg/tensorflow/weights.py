"""TensorFlow's half of :mod:`course_pkg.interop`: where each canonical weight lives in a layer.

A *slot* is ``(variable, transpose?)``: the variable that holds a canonical
weight, and whether the canonical layout is its transpose (never, in Keras: the
canonical layout is Keras' own). :mod:`course_pkg.interop` documents the
canonical names and layouts.
"""

import numpy as np
from keras import layers

from .base import Bias
from .normalization import RMSNorm


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _children(layer):
    """(attribute name, sub-layer) pairs in the order they were assigned."""
    for name, value in vars(layer).items():
        if name.startswith("_"):
            continue
        if isinstance(value, layers.Layer):
            yield name, value
        elif isinstance(value, (list, tuple)) and value and all(
            isinstance(v, layers.Layer) for v in value
        ):
            for i, v in enumerate(value):
                yield f"{name}.{i}", v


def weight_slots(layer, prefix: str = "") -> dict:
    """canonical name -> slot, for every weight of ``layer``."""
    if isinstance(layer, layers.Dense):
        slots = {_join(prefix, "kernel"): (layer.kernel, False)}
        if layer.use_bias:
            slots[_join(prefix, "bias")] = (layer.bias, False)
        return slots
    if isinstance(layer, Bias):
        return {_join(prefix, "bias"): (layer.bias, False)}
    if isinstance(layer, RMSNorm):
        return {_join(prefix, "scale"): (layer.scale, False)}
    if isinstance(layer, layers.LayerNormalization):
        return {_join(prefix, "gamma"): (layer.gamma, False), _join(prefix, "beta"): (layer.beta, False)}
    if isinstance(layer, layers.Embedding):
        return {_join(prefix, "embeddings"): (layer.embeddings, False)}
    if isinstance(layer, (layers.GRU, layers.GRUCell)):
        cell = layer.cell if isinstance(layer, layers.GRU) else layer
        if not cell.built:
            raise ValueError(f"Keras layer {layer.name!r} is not built yet")
        slots = {_join(prefix, "kernel"): (cell.kernel, False),
                 _join(prefix, "recurrent_kernel"): (cell.recurrent_kernel, False)}
        if cell.use_bias:
            slots[_join(prefix, "bias")] = (cell.bias, False)
        return slots
    if layer.weights and not layer.built:
        raise ValueError(f"Keras layer {layer.name!r} is not built yet")
    slots = {}
    for name, child in _children(layer):
        slots.update(weight_slots(child, _join(prefix, name)))
    return slots


def read(slot) -> np.ndarray:
    """The slot's weight as a new float32 array, in the canonical layout."""
    variable, transpose = slot
    value = np.asarray(variable.numpy(), dtype=np.float32)
    return value.T if transpose else value


def write(slots: dict, weights: dict) -> None:
    """Load ``weights`` (canonical name -> array, every shape already checked) into ``slots``."""
    for name, (variable, transpose) in slots.items():
        value = np.asarray(weights[name])
        value = value.T if transpose else value
        variable.assign(np.asarray(value, dtype=variable.dtype))
