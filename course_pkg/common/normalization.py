"""The checks of RMSNorm (``normalization``): the width of the input's last axis."""

from __future__ import annotations

from .arguments import Shape


def check_last_axis(shape: Shape, size: int, what: str = "x") -> None:
    """Raise ``ValueError`` unless ``shape`` is ``(..., size)``."""
    shape = tuple(shape)
    if not shape or (shape[-1] is not None and shape[-1] != size):
        raise ValueError(f"{what} must have shape (..., {size}), got {shape}")
