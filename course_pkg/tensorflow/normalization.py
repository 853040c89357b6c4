"""RMSNorm (Zhang & Sennrich, 2019), the normalisation of Llama: LayerNorm without the mean and the shift.

Shapes: ``...`` any leading axes (``batch, seq`` in the models), ``d_model`` features.
"""

import keras
import tensorflow as tf

from ..common.arguments import LAYER_NORM_EPSILON, check_epsilon, check_positive
from ..common.normalization import check_last_axis
from .base import Layer


@keras.saving.register_keras_serializable(package="course_pkg")
class RMSNorm(Layer):
    """y = x / √(mean(x², last axis) + ε) · scale: each position scaled to unit root mean square.

    Unlike LayerNorm it neither subtracts the mean nor adds a bias. As Hugging Face's
    ``LlamaRMSNorm``, the normalisation runs in float32 and is cast back to the input's dtype
    before the (learned) ``scale`` multiplies it.

    Args:
        d_model: the width of the last axis; ``scale`` has ``d_model`` entries, initialised to 1.
        epsilon: added to the mean square, > 0 (Llama: 1e-5 or 1e-6).

    Raises:
        ValueError: on call, an input whose last axis is not ``d_model``.

    Shape:
        (..., d_model) -> (..., d_model).
    """

    def __init__(self, d_model, epsilon=LAYER_NORM_EPSILON, **kwargs):
        check_positive(d_model=d_model)
        epsilon = check_epsilon(epsilon, "epsilon")
        super().__init__(**kwargs)
        self.d_model, self.epsilon = d_model, epsilon
        self.scale = self.add_weight(shape=(d_model,), initializer="ones", name="scale")
        self.built = True

    def call(self, x):
        check_last_axis(x.shape, self.d_model, "x")
        x32 = tf.cast(x, tf.float32)  # (..., d_model)
        mean_square = tf.reduce_mean(tf.square(x32), axis=-1, keepdims=True)  # (..., 1)
        normed = tf.cast(x32 * tf.math.rsqrt(mean_square + self.epsilon), x.dtype)  # (..., d_model)
        return normed * tf.cast(self.scale, x.dtype)  # (..., d_model)
