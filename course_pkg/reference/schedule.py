"""The learning-rate schedule of the paper (Noam).

Mirrors ``course_pkg.torch.schedule`` and ``course_pkg.tensorflow.schedule`` (``NoamSchedule``).
"""


def noam_learning_rate(step, d_model=None, warmup_steps=4000, peak_learning_rate=None):
    """The paper's schedule: ``d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5)``.

    Linear warm-up to the peak at ``step = warmup_steps``, then decay as
    1/√step. Optimizers count from 0: step 0 gets the step-1 value. Given
    ``peak_learning_rate`` instead of ``d_model``, the same curve scaled so that
    its peak is that rate: ``peak · min(step / warmup_steps, √(warmup_steps / step))``.
    """
    step = max(step, 1)
    if peak_learning_rate is not None:
        return peak_learning_rate * min(step / warmup_steps, (warmup_steps / step) ** 0.5)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
