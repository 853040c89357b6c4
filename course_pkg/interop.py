"""Move weights between the TensorFlow and PyTorch implementations.

Both implementations name their sub-layers alike (``encoder.layers.0.self_attn.wq``),
so a weight has one canonical name in both, and the NumPy oracle
(:mod:`course_pkg.reference`) reads the same names. The paper's Encoder and Decoder call
their stack ``layers`` and BERT, GPT and the ViT call theirs ``blocks`` (as their papers
do), and both spellings stay: the canonical names (``encoder.layers.0...``,
``blocks.0...``) are those of saved checkpoints and of the book's stored outputs.


=====================  =====================================  ==========================
leaf layer             canonical entries                      PyTorch parameter
=====================  =====================================  ==========================
dense                  ``<path>.kernel`` (in, out),           ``weight`` (out, in) = kernelᵀ,
                       ``<path>.bias``                        ``bias``
layer normalisation    ``<path>.gamma``, ``<path>.beta``      ``weight``, ``bias``
RMSNorm                ``<path>.scale`` (d,)                  ``scale``
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

Each framework owns its half of the mapping (``course_pkg.torch.weights``,
``course_pkg.tensorflow.weights``: which parameter holds which canonical
entry); this module dispatches to it and checks names and shapes. It imports
a framework only when it is handed one of its objects.
"""

from __future__ import annotations

import importlib
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


def _half(layer):
    """The framework module that knows where ``layer`` keeps each canonical weight."""
    return importlib.import_module(f"course_pkg.{_framework(layer)}.weights")


def _canonical_shape(slot) -> tuple:
    """The shape of a slot's weight (``(parameter or variable, transpose?)``) in the canonical layout."""
    weight, transpose = slot
    return tuple(weight.shape)[::-1] if transpose else tuple(weight.shape)


# ----------------------------------------------------------------------------- API
def get_weights(layer) -> dict:
    """Every weight of ``layer`` as a float32 NumPy array, under its canonical name.

    Dense kernels come in the Keras layout ``(in, out)`` whatever the framework.
    The dict is what :mod:`course_pkg.reference` takes as ``params``.
    """
    half = _half(layer)
    return {name: half.read(slot) for name, slot in half.weight_slots(layer).items()}


def set_weights(layer, weights: dict) -> None:
    """Load canonical ``weights`` (as :func:`get_weights` returns them) into ``layer``.

    Every weight of ``layer`` must be given, with its exact shape; otherwise a
    ``ValueError`` lists what is missing, unexpected or mis-shaped and nothing
    is changed.
    """
    half = _half(layer)
    slots = half.weight_slots(layer)
    missing = sorted(set(slots) - set(weights))
    unexpected = sorted(set(weights) - set(slots))
    problems = []
    if missing:
        problems.append(f"missing {missing}")
    if unexpected:
        problems.append(f"unexpected {unexpected}")
    for name in sorted(set(slots) & set(weights)):
        want = _canonical_shape(slots[name])
        got = tuple(np.shape(weights[name]))
        if got != want:
            problems.append(f"{name}: expected shape {want}, got {got}")
    if problems:
        raise ValueError(f"cannot load weights into {type(layer).__name__}: " + "; ".join(problems))

    half.write(slots, weights)


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
