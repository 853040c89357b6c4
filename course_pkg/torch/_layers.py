"""Leaf layers with the same initialisation as their Keras counterparts.

PyTorch and Keras initialise differently by default (Kaiming-uniform vs
Glorot-uniform kernels, N(0, 1) vs U(-0.05, 0.05) embeddings). The course builds
every leaf through these three functions so that the two implementations start
training from the same distributions.
"""

import torch
from torch import nn

LAYER_NORM_EPSILON = 1e-6


def dense(in_features: int, out_features: int) -> nn.Linear:
    """``nn.Linear`` with a Glorot-uniform weight and a zero bias (Keras' ``Dense``)."""
    layer = nn.Linear(in_features, out_features)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def layer_norm(d_model: int) -> nn.LayerNorm:
    """``nn.LayerNorm`` with the course's epsilon, 1e-6 (torch's default is 1e-5)."""
    return nn.LayerNorm(d_model, eps=LAYER_NORM_EPSILON)


def embedding(vocab_size: int, d_model: int) -> nn.Embedding:
    """``nn.Embedding`` initialised U(-0.05, 0.05) (Keras' ``Embedding``)."""
    layer = nn.Embedding(vocab_size, d_model)
    nn.init.uniform_(layer.weight, -0.05, 0.05)
    return layer


def is_integer(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` holds integers (token ids)."""
    return not tensor.dtype.is_floating_point and not tensor.dtype.is_complex and tensor.dtype != torch.bool
