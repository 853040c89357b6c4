"""The learning-rate schedule of the paper and the Adam optimizer it drives.

Same names, signatures and numbers as :mod:`course_pkg.torch.schedule`.
"""

import keras
import tensorflow as tf

from ..common.config import record_arguments, recorded_arguments
from ..common.schedule import ADAM_BETAS, ADAM_EPSILON, noam_scale


@keras.saving.register_keras_serializable(package="course_pkg")
@record_arguments
class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of the paper: warm up linearly, then decay as 1/sqrt(step).

    ``lr = d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``,
    highest at ``step = warmup_steps``, where it is ``(d_model * warmup_steps) ** -0.5``.
    Give ``peak_learning_rate`` instead of ``d_model`` to choose that peak
    directly: the same curve, scaled. Optimizers count from 0: step 0 gets
    the step-1 value. A Keras ``LearningRateSchedule``, meant as the
    ``learning_rate`` of a Keras optimizer (:func:`make_optimizer` does that),
    which evaluates it at its ``iterations`` before every update.

    Args:
        d_model: model width (the paper's choice of the scale).
        warmup_steps: steps of linear warm-up.
        peak_learning_rate: the rate at ``step = warmup_steps``, instead of
            ``d_model``; give exactly one of the two.

    Raises:
        ValueError: both or neither of ``d_model`` and ``peak_learning_rate``, a
            size that is not a positive int, a peak that is not a positive number.

    Call:
        ``schedule(step)`` returns the learning rate at optimizer step ``step``
        as a float32 scalar tensor.
    """

    def __init__(self, d_model=None, warmup_steps=4000, peak_learning_rate=None):
        self._scale = noam_scale(d_model, warmup_steps, peak_learning_rate)
        self.d_model, self.warmup_steps = d_model, warmup_steps
        self.peak_learning_rate = peak_learning_rate

    def __call__(self, step):
        step = tf.maximum(tf.cast(step, tf.float32), 1.0)
        return self._scale * tf.minimum(step ** -0.5, step * self.warmup_steps ** -1.5)

    def get_config(self):
        """The constructor's arguments, defaults included (as Keras' ``get_config``), recorded by
        ``course_pkg.common.config.record_arguments`` (a schedule has no course base class)."""
        return recorded_arguments(self)


def make_optimizer(model, d_model=None, warmup_steps=4000, peak_learning_rate=None):
    """Adam with the paper's betas (0.9, 0.98) and epsilon 1e-9, driven by :class:`NoamSchedule`.

    Args:
        model: unused (a Keras optimizer learns the variables it is given at
            each step); kept so that the call is the same as in PyTorch.
        d_model: width for the schedule (usually ``model.d_model``).
        warmup_steps: steps of linear warm-up.
        peak_learning_rate: the schedule's peak, instead of ``d_model``
            (:class:`NoamSchedule`).

    Returns:
        ``(optimizer, schedule)``: a ``keras.optimizers.Adam`` whose learning
        rate is the :class:`NoamSchedule`, and that schedule; the optimizer
        evaluates it by itself at every step.
    """
    schedule = NoamSchedule(d_model, warmup_steps, peak_learning_rate)
    optimizer = keras.optimizers.Adam(learning_rate=schedule, beta_1=ADAM_BETAS[0],
                                      beta_2=ADAM_BETAS[1], epsilon=ADAM_EPSILON)
    return optimizer, schedule
