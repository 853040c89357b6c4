"""The learning-rate schedule of the paper and the Adam optimizer it drives.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow.schedule`.
"""

import torch

from .._checks import check_positive
from .._training import ADAM_BETAS, ADAM_EPSILON


class NoamSchedule:
    """The learning rate of the paper: warm up linearly, then decay as 1/sqrt(step).

    ``lr = d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``,
    highest at ``step = warmup_steps``. Optimizers count from 0: step 0 gets
    the step-1 value. A plain callable, meant as ``lr_lambda`` of
    ``torch.optim.lr_scheduler.LambdaLR`` with the optimizer's base lr = 1.0
    (:func:`make_optimizer` does that).

    Args:
        d_model: model width.
        warmup_steps: steps of linear warm-up.

    Call:
        ``schedule(step)`` returns the learning rate at optimizer step ``step``
        as a Python float.
    """

    def __init__(self, d_model, warmup_steps=4000):
        check_positive(d_model=d_model, warmup_steps=warmup_steps)
        self.d_model, self.warmup_steps = d_model, warmup_steps

    def __call__(self, step):
        step = max(float(step), 1.0)
        return self.d_model ** -0.5 * min(step ** -0.5, step * self.warmup_steps ** -1.5)

    def get_config(self):
        """The constructor arguments (as Keras' ``get_config``)."""
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps}


def make_optimizer(model, d_model, warmup_steps=4000):
    """Adam with the paper's betas (0.9, 0.98) and epsilon 1e-9, driven by :class:`NoamSchedule`.

    Args:
        model: the model whose parameters are trained.
        d_model: width for the schedule (usually ``model.d_model``).
        warmup_steps: steps of linear warm-up.

    Returns:
        ``(optimizer, schedule)``: a ``torch.optim.Adam`` with base lr 1.0 and the
        ``torch.optim.lr_scheduler.LambdaLR`` that scales it by ``NoamSchedule``;
        call ``schedule.step()`` after every ``optimizer.step()``.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPSILON)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, NoamSchedule(d_model, warmup_steps))
    return optimizer, schedule
