"""Move weights between the TensorFlow and PyTorch implementations.

Both implementations name their sub-layers alike (``encoder.layers.0.self_attn.wq``),
so a weight has one canonical name in both, and the NumPy oracle
(:mod:`course_pkg.reference`) reads the same names:

=====================  =====================================  ==========================
leaf layer             canonical entries                      PyTorch parameter
=====================  =====================================  ==========================
dense                  ``<path>.kernel`` (in, out),           ``weight`` (out, in) = kernelᵀ,
                       ``<path>.bias``                        ``bias``
layer normalisation    ``<path>.gamma``, ``<path>.beta``      ``weight``, ``bias``
embedding              ``<path>.embeddings`` (vocab, d)       ``weight``
=====================  =====================================  ==========================

Example::

    from course_pkg import interop, tensorflow as ctf, torch as cpt

    tf_model = ctf.Transformer(2, 128, 4, 512, 1000, 1000, 64)
    pt_model = cpt.Transformer(2, 128, 4, 512, 1000, 1000, 64)
    interop.copy_weights(tf_model, pt_model)   # now they compute the same function

This module imports a framework only when it is handed one of its objects.
"""

from __future__ import annotations

import sys

import numpy as np


def _framework(layer) -> str:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(layer, torch.nn.Module):
        return "torch"
    keras = sys.modules.get("keras")
    if keras is not None and isinstance(layer, keras.layers.Layer):
        return "tensorflow"
    raise TypeError(
        f"expected a course_pkg layer from course_pkg.torch or course_pkg.tensorflow, "
        f"got {type(layer).__module__}.{type(layer).__name__}"
    )


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


# ------------------------------------------------------------------------- torch side
def _torch_slots(module) -> dict:
    """canonical name -> (parameter, transpose?) for every weight of a torch module."""
    from torch import nn

    slots = {}
    for path, leaf in module.named_modules():
        if isinstance(leaf, nn.Linear):
            slots[_join(path, "kernel")] = (leaf.weight, True)
            if leaf.bias is not None:
                slots[_join(path, "bias")] = (leaf.bias, False)
        elif isinstance(leaf, nn.LayerNorm):
            slots[_join(path, "gamma")] = (leaf.weight, False)
            slots[_join(path, "beta")] = (leaf.bias, False)
        elif isinstance(leaf, nn.Embedding):
            slots[_join(path, "embeddings")] = (leaf.weight, False)
    return slots


# ------------------------------------------------------------------------- keras side
def _keras_children(layer):
    """(attribute name, sub-layer) pairs in the order they were assigned."""
    import keras

    for name, value in vars(layer).items():
        if name.startswith("_"):
            continue
        if isinstance(value, keras.layers.Layer):
            yield name, value
        elif isinstance(value, (list, tuple)) and value and all(
            isinstance(v, keras.layers.Layer) for v in value
        ):
            for i, v in enumerate(value):
                yield f"{name}.{i}", v


def _keras_slots(layer, prefix: str = "") -> dict:
    """canonical name -> (variable, transpose?) for every weight of a Keras layer."""
    from keras import layers

    if isinstance(layer, layers.Dense):
        slots = {_join(prefix, "kernel"): (layer.kernel, False)}
        if layer.use_bias:
            slots[_join(prefix, "bias")] = (layer.bias, False)
        return slots
    if isinstance(layer, layers.LayerNormalization):
        return {_join(prefix, "gamma"): (layer.gamma, False), _join(prefix, "beta"): (layer.beta, False)}
    if isinstance(layer, layers.Embedding):
        return {_join(prefix, "embeddings"): (layer.embeddings, False)}
    if layer.weights and not layer.built:
        raise ValueError(f"Keras layer {layer.name!r} is not built yet")
    slots = {}
    for name, child in _keras_children(layer):
        slots.update(_keras_slots(child, _join(prefix, name)))
    return slots


def _slots(layer) -> dict:
    return _torch_slots(layer) if _framework(layer) == "torch" else _keras_slots(layer)


# ----------------------------------------------------------------------------- API
def get_weights(layer) -> dict:
    """Every weight of ``layer`` as a float32 NumPy array, under its canonical name.

    Dense kernels come in the Keras layout ``(in, out)`` whatever the framework.
    The dict is what :mod:`course_pkg.reference` takes as ``params``.
    """
    out = {}
    for name, (var, transpose) in _slots(layer).items():
        if hasattr(var, "detach"):  # torch
            value = var.detach().float().cpu().numpy()
        else:  # keras
            value = np.asarray(var.numpy(), dtype=np.float32)
        out[name] = value.T if transpose else value
    return out


def set_weights(layer, weights: dict) -> None:
    """Load canonical ``weights`` (as :func:`get_weights` returns them) into ``layer``.

    Every weight of ``layer`` must be given, with its exact shape; otherwise a
    ``ValueError`` lists what is missing, unexpected or mis-shaped and nothing
    is changed.
    """
    slots = _slots(layer)
    missing = sorted(set(slots) - set(weights))
    unexpected = sorted(set(weights) - set(slots))
    problems = []
    if missing:
        problems.append(f"missing {missing}")
    if unexpected:
        problems.append(f"unexpected {unexpected}")
    for name in sorted(set(slots) & set(weights)):
        var, transpose = slots[name]
        want = tuple(var.shape)[::-1] if transpose else tuple(var.shape)
        got = tuple(np.shape(weights[name]))
        if got != want:
            problems.append(f"{name}: expected shape {want}, got {got}")
    if problems:
        raise ValueError(f"cannot load weights into {type(layer).__name__}: " + "; ".join(problems))

    if _framework(layer) == "torch":
        import torch

        with torch.no_grad():
            for name, (param, transpose) in slots.items():
                value = np.asarray(weights[name])
                value = value.T if transpose else value
                param.copy_(torch.as_tensor(np.ascontiguousarray(value), dtype=param.dtype))
    else:
        for name, (var, _) in slots.items():
            var.assign(np.asarray(weights[name], dtype=var.dtype))


def _config(layer) -> dict:
    return layer.get_config() if hasattr(layer, "get_config") else {}


def copy_weights(src, dst) -> None:
    """Copy every weight of ``src`` into ``dst``, across frameworks or within one.

    ``src`` and ``dst`` must be instances of the same course class (e.g. a
    ``course_pkg.tensorflow.EncoderLayer`` and a ``course_pkg.torch.EncoderLayer``)
    built with the same arguments; otherwise ``ValueError`` and ``dst`` is left
    as it was.
    """
    if type(src).__name__ != type(dst).__name__:
        raise ValueError(
            f"copy_weights needs two instances of the same class, got "
            f"{type(src).__name__} and {type(dst).__name__}"
        )
    src_cfg, dst_cfg = _config(src), _config(dst)
    shared = {k for k in src_cfg.keys() & dst_cfg.keys() if k not in {"name", "trainable", "dtype"}}
    differ = {k: (src_cfg[k], dst_cfg[k]) for k in sorted(shared) if src_cfg[k] != dst_cfg[k]}
    if differ:
        raise ValueError(f"copy_weights needs the same constructor arguments; differ (src, dst): {differ}")
    set_weights(dst, get_weights(src))
