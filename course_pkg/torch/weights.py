"""PyTorch's half of :mod:`course_pkg.interop`: where each canonical weight lives in a module.

A *slot* is ``(parameter, transpose?)``: the parameter that holds a canonical
weight, and whether the canonical layout is its transpose (``nn.Linear`` keeps
``weight`` as (out, in), the canonical kernel is (in, out)). A GRU's weights are
wrapped in :class:`_GRUWeight`, which converts between torch's gate layout and
the canonical (Keras) one. :mod:`course_pkg.interop` documents the canonical
names and layouts.
"""

import numpy as np
import torch
from torch import nn

from .base import Bias
from .normalization import RMSNorm


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _swap_gates(rows: int) -> list:
    """Row order that turns torch's gate blocks (r, z, n) into Keras' (z, r, h), and back."""
    units = rows // 3
    return [*range(units, 2 * units), *range(units), *range(2 * units, 3 * units)]


class _GRUWeight:
    """A torch GRU weight seen in the canonical (Keras) layout.

    It offers what :func:`read` and :func:`write` use of a torch parameter
    (``shape``, ``dtype``, ``detach()``, ``copy_()``) and converts on the way:
    ``weight_ih`` (3u, in) <-> ``kernel`` (in, 3u) and ``weight_hh`` (3u, u) <->
    ``recurrent_kernel`` (u, 3u) are transposed with their gate blocks reordered;
    ``bias_ih`` and ``bias_hh`` (3u,) <-> the two rows of ``bias`` (2, 3u).
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
        return torch.stack([p.detach()[self.order] for p in self.params])

    def copy_(self, value):
        if len(self.params) == 1:
            self.params[0].copy_(value.T[self.order])
        else:
            for param, row in zip(self.params, value):
                param.copy_(row[self.order])


def _gru_slots(path: str, leaf) -> dict:
    """canonical name -> slot for an ``nn.GRU`` (one layer) or ``nn.GRUCell``."""
    suffix = "_l0" if isinstance(leaf, nn.GRU) else ""
    if isinstance(leaf, nn.GRU) and (leaf.num_layers != 1 or leaf.bidirectional):
        raise ValueError(f"GRU {path!r}: only single-layer, unidirectional nn.GRU can be mapped")
    if not leaf.bias:
        raise ValueError(f"GRU {path!r}: only GRUs with biases can be mapped")
    w_ih, w_hh, b_ih, b_hh = (getattr(leaf, name + suffix)
                              for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    return {
        _join(path, "kernel"): (_GRUWeight(w_ih), False),
        _join(path, "recurrent_kernel"): (_GRUWeight(w_hh), False),
        _join(path, "bias"): (_GRUWeight(b_ih, b_hh), False),
    }


def weight_slots(layer) -> dict:
    """canonical name -> slot, for every weight of ``layer``."""
    slots = {}
    for path, leaf in layer.named_modules():
        if isinstance(leaf, nn.Linear):
            slots[_join(path, "kernel")] = (leaf.weight, True)
            if leaf.bias is not None:
                slots[_join(path, "bias")] = (leaf.bias, False)
        elif isinstance(leaf, nn.LayerNorm):
            slots[_join(path, "gamma")] = (leaf.weight, False)
            slots[_join(path, "beta")] = (leaf.bias, False)
        elif isinstance(leaf, nn.Embedding):
            slots[_join(path, "embeddings")] = (leaf.weight, False)
        elif isinstance(leaf, Bias):
            slots[_join(path, "bias")] = (leaf.bias, False)
        elif isinstance(leaf, RMSNorm):
            slots[_join(path, "scale")] = (leaf.scale, False)
        elif isinstance(leaf, (nn.GRU, nn.GRUCell)):
            slots.update(_gru_slots(path, leaf))
    return slots


def read(slot) -> np.ndarray:
    """The slot's weight as a new float32 array, in the canonical layout."""
    param, transpose = slot
    value = param.detach().float().cpu().numpy().copy()  # never a view of the model
    return value.T if transpose else value


def write(slots: dict, weights: dict) -> None:
    """Load ``weights`` (canonical name -> array, every shape already checked) into ``slots``."""
    with torch.no_grad():
        for name, (param, transpose) in slots.items():
            value = np.asarray(weights[name])
            value = value.T if transpose else value
            param.copy_(torch.as_tensor(np.ascontiguousarray(value), dtype=param.dtype))
