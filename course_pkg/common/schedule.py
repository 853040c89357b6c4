"""The framework-free half of the two ``schedule`` modules: the Noam schedule's factor (its
arguments checked) and Adam's constants of the paper."""

from .arguments import check_positive

ADAM_BETAS, ADAM_EPSILON = (0.9, 0.98), 1e-9  # Vaswani et al. (2017), section 5.3


def noam_scale(d_model, warmup_steps, peak_learning_rate) -> float:
    """The factor of the Noam schedule's ``min(step ** -0.5, step * warmup_steps ** -1.5)``.

    ``d_model ** -0.5`` (the paper's), or ``peak_learning_rate * warmup_steps ** 0.5`` when the
    peak is given instead, so that the rate at ``step = warmup_steps`` is that peak. Raises
    ``ValueError`` unless exactly one of the two is given, ``d_model`` and ``warmup_steps``
    positive ints and the peak a positive number.
    """
    check_positive(warmup_steps=warmup_steps)
    if (d_model is None) == (peak_learning_rate is None):
        raise ValueError("give the Noam schedule either d_model (the paper's peak, "
                         "(d_model * warmup_steps) ** -0.5) or peak_learning_rate, not "
                         f"{'both' if d_model is not None else 'neither'}")
    if d_model is not None:
        check_positive(d_model=d_model)
        return d_model ** -0.5
    if (isinstance(peak_learning_rate, bool) or not isinstance(peak_learning_rate, (int, float))
            or not 0.0 < float(peak_learning_rate) < float("inf")):
        raise ValueError(f"peak_learning_rate must be a positive number, got {peak_learning_rate!r}")
    return float(peak_learning_rate) * warmup_steps ** 0.5
