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

A GRU (Keras ``GRU`` / ``GRUCell``; torch ``nn.GRU`` with one layer, or
``nn.GRUCell``) has the canonical entries of Keras' ``reset_after=True`` GRU:
``<path>.kernel`` (in, 3·units), ``<path>.recurrent_kernel`` (units, 3·units)
and ``<path>.bias`` (2, 3·units) = (input bias, recurrent bias), the gates
ordered (z, r, h) along the last axis. PyTorch orders them (r, z, n) along the
first axis of ``weight_ih`` / ``weight_hh``, which are the transposes, and keeps
the two biases as ``bias_ih`` and ``bias_hh``.

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
        elif isinstance(leaf, (nn.GRU, nn.GRUCell)):
            slots.update(_torch_gru_slots(path, leaf))
    return slots


def _swap_gates(rows: int) -> list:
    """Row order that turns torch's gate blocks (r, z, n) into Keras' (z, r, h), and back."""
    units = rows // 3
    return [*range(units, 2 * units), *range(units), *range(2 * units, 3 * units)]


class _TorchGRUWeight:
    """A torch GRU weight seen in the canonical (Keras) layout.

    It offers what :func:`get_weights` and :func:`set_weights` use of a torch
    parameter (``shape``, ``dtype``, ``detach()``, ``copy_()``) and converts on
    the way: ``weight_ih`` (3u, in) <-> ``kernel`` (in, 3u) and ``weight_hh``
    (3u, u) <-> ``recurrent_kernel`` (u, 3u) are transposed with their gate
    blocks reordered; ``bias_ih`` and ``bias_hh`` (3u,) <-> the two rows of
    ``bias`` (2, 3u).
    """

    def __init__(self, *params):  # one weight matrix, or the two bias vectors
        self.params = params
        self.dtype = params[0].dtype
        rows = params[0].shape[0]
        self.order = _swap_gates(rows)
        self.shape = (params[0].shape[1], rows) if len(params) == 1 else (len(params), rows)

    def detach(self):
        if len(self.params) == 1:
            return self.params[0].detach()[self.order].T
        import torch

        return torch.stack([p.detach()[self.order] for p in self.params])

    def copy_(self, value):
        if len(self.params) == 1:
            self.params[0].copy_(value.T[self.order])
        else:
            for param, row in zip(self.params, value):
                param.copy_(row[self.order])


def _torch_gru_slots(path: str, leaf) -> dict:
    """canonical name -> (_TorchGRUWeight, False) for an ``nn.GRU`` (one layer) or ``nn.GRUCell``."""
    from torch import nn

    suffix = "_l0" if isinstance(leaf, nn.GRU) else ""
    if isinstance(leaf, nn.GRU) and (leaf.num_layers != 1 or leaf.bidirectional):
        raise ValueError(f"GRU {path!r}: only single-layer, unidirectional nn.GRU can be mapped")
    if not leaf.bias:
        raise ValueError(f"GRU {path!r}: only GRUs with biases can be mapped")
    w_ih, w_hh, b_ih, b_hh = (getattr(leaf, name + suffix)
                              for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    return {
        _join(path, "kernel"): (_TorchGRUWeight(w_ih), False),
        _join(path, "recurrent_kernel"): (_TorchGRUWeight(w_hh), False),
        _join(path, "bias"): (_TorchGRUWeight(b_ih, b_hh), False),
    }


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
            value = var.detach().float().cpu().numpy().copy()  # never a view of the model
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


# Constructor arguments that no weight depends on: copying between, say, a
# training model (dropout 0.1) and an inference one (dropout 0.0) is fine.
_NOT_ARCHITECTURE = {"name", "trainable", "dtype", "dropout", "pad_id"}


def copy_weights(src, dst) -> None:
    """Copy every weight of ``src`` into ``dst``, across frameworks or within one.

    ``src`` and ``dst`` must be instances of the same course class (e.g. a
    ``course_pkg.tensorflow.EncoderLayer`` and a ``course_pkg.torch.EncoderLayer``)
    built with the same arguments (``dropout`` and ``pad_id`` may differ: no
    weight depends on them); otherwise ``ValueError`` and ``dst`` is left as it was.
    """
    if type(src).__name__ != type(dst).__name__:
        raise ValueError(
            f"copy_weights needs two instances of the same class, got "
            f"{type(src).__name__} and {type(dst).__name__}"
        )
    src_cfg, dst_cfg = _config(src), _config(dst)
    shared = (src_cfg.keys() & dst_cfg.keys()) - _NOT_ARCHITECTURE
    differ = {k: (src_cfg[k], dst_cfg[k]) for k in sorted(shared) if src_cfg[k] != dst_cfg[k]}
    if differ:
        raise ValueError(f"copy_weights needs the same constructor arguments; differ (src, dst): {differ}")
    set_weights(dst, get_weights(src))
