"""Argument checks of rotary position embeddings (``rotary``; ``attention`` and ``llama`` check
their rotary arguments with them too): the frequencies' base, an even head width, integer
positions, the shapes of the rotated tensor and its cosines and sines.
"""

from __future__ import annotations

from typing import Optional

from .arguments import Shape


def check_theta(theta, name: str = "theta") -> float:
    """Return ``float(theta)``; raise ``ValueError`` naming ``name`` unless it is a finite number > 0."""
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not 0.0 < theta < float("inf"):
        raise ValueError(f"{name} must be a positive float (the rotary frequencies' base), got {theta!r}")
    return float(theta)


def check_head_dim(head_dim, name: str = "head_dim") -> int:
    """Raise ``ValueError`` naming ``name`` unless ``head_dim`` is an even positive int: RoPE rotates
    pairs of features."""
    if isinstance(head_dim, bool) or not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2:
        raise ValueError(f"{name} must be an even positive int (rotary embeddings rotate pairs of "
                         f"features), got {head_dim!r}")
    return head_dim


def check_positions(shape: Shape, batch: Optional[int], seq: Optional[int], is_integer: bool,
                    dtype_name: str, what: str = "positions") -> None:
    """Raise unless ``what`` holds integer positions of shape ``(batch, seq)`` (or ``(1, seq)``, shared
    by every row): ``TypeError`` for another dtype, ``ValueError`` for another shape. ``None`` (unknown)
    matches anything."""
    if not is_integer:
        raise TypeError(f"{what} must hold integer positions (int32 or int64), got dtype {dtype_name}")
    shape = tuple(shape)
    ok = (len(shape) == 2
          and (shape[0] is None or batch is None or shape[0] in (1, batch))
          and (shape[1] is None or seq is None or shape[1] == seq))
    if not ok:
        raise ValueError(f"{what} must have shape (batch, seq) = ({batch}, {seq}), or (1, {seq}) for "
                         f"every row alike, got {shape}")


def check_rotary_shapes(x_shape: Shape, cos_shape: Shape, sin_shape: Shape) -> None:
    """Raise ``ValueError`` unless ``x`` is (batch, heads, seq, head_dim) with an even head_dim and
    ``cos``, ``sin`` are both (batch or 1, seq, head_dim)."""
    x_shape, cos_shape, sin_shape = tuple(x_shape), tuple(cos_shape), tuple(sin_shape)
    if len(x_shape) != 4 or (x_shape[-1] is not None and x_shape[-1] % 2):
        raise ValueError(f"x must have shape (batch, heads, seq, head_dim) with an even head_dim, "
                         f"got {x_shape}")
    for what, shape in (("cos", cos_shape), ("sin", sin_shape)):
        expected = (x_shape[0], x_shape[2], x_shape[3])
        ok = len(shape) == 3 and all(s is None or e is None or s == e or (i == 0 and s == 1)
                                     for i, (s, e) in enumerate(zip(shape, expected)))
        if not ok:
            raise ValueError(f"{what} must have shape (batch, seq, head_dim) = {expected} (or batch 1), "
                             f"got {shape}")
