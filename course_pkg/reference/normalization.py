"""RMSNorm, the normalisation of Llama: x / √(mean(x²) + ε) · scale.

Mirrors ``course_pkg.torch.normalization`` and ``course_pkg.tensorflow.normalization``.
"""

import numpy as np

from ..common.arguments import LAYER_NORM_EPSILON


def rms_norm(params, x, eps=LAYER_NORM_EPSILON):
    """RMSNorm over the last axis with ``scale``, in float64. Shape: (..., d_model) -> (..., d_model)."""
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x ** 2, axis=-1, keepdims=True) + eps) * params["scale"]
