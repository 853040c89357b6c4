"""The learning-rate schedule of the paper and the Adam optimizer it drives.

Same names, signatures and numbers as :mod:`course_pkg.torch.schedule`.
"""

import keras
import tensorflow as tf

from .._checks import check_positive
from .._training import ADAM_BETAS, ADAM_EPSILON


@keras.saving.register_keras_serializable(package="course_pkg")
class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of the paper: warm up linearly, then decay as 1/sqrt(step).

    ``lr = d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``,
    highest at ``step = warmup_steps``. Optimizers count from 0: step 0 gets
    the step-1 value. A Keras ``LearningRateSchedule``, meant as the
    ``learning_rate`` of a Keras optimizer (:func:`make_optimizer` does that),
    which evaluates it at its ``iterations`` before every update.

    Args:
        d_model: model width.
        warmup_steps: steps of linear warm-up.

    Call:
        ``schedule(step)`` returns the learning rate at optimizer step ``step``
        as a float32 scalar tensor.
    """

    def __init__(self, d_model, warmup_steps=4000):
        check_positive(d_model=d_model, warmup_steps=warmup_steps)
        self.d_model, self.warmup_steps = d_model, warmup_steps

    def __call__(self, step):
        step = tf.maximum(tf.cast(step, tf.float32), 1.0)
        return self.d_model ** -0.5 * tf.minimum(step ** -0.5, step * self.warmup_steps ** -1.5)

    def get_config(self):
        """The constructor arguments (as Keras' ``get_config``)."""
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps}


def make_optimizer(model, d_model, warmup_steps=4000):
    """Adam with the paper's betas (0.9, 0.98) and epsilon 1e-9, driven by :class:`NoamSchedule`.

    Args:
        model: unused (a Keras optimizer learns the variables it is given at
            each step); kept so that the call is the same as in PyTorch.
        d_model: width for the schedule (usually ``model.d_model``).
        warmup_steps: steps of linear warm-up.

    Returns:
        ``(optimizer, schedule)``: a ``keras.optimizers.Adam`` whose learning
        rate is the :class:`NoamSchedule`, and that schedule; the optimizer
        evaluates it by itself at every step.
    """
    schedule = NoamSchedule(d_model, warmup_steps)
    optimizer = keras.optimizers.Adam(learning_rate=schedule, beta_1=ADAM_BETAS[0],
                                      beta_2=ADAM_BETAS[1], epsilon=ADAM_EPSILON)
    return optimizer, schedule
