"""Argument checks of the Llama components (framework-free, pure Python): RMSNorm, rotary position
embeddings (RoPE) and grouped-query attention.

As in :mod:`course_pkg.common.checks`, each framework subpackage turns its tensors' static facts
(shape tuples, dtype names, Python ints) into plain values and calls these functions, so that the
two implementations reject bad input with the very same messages.
"""

from __future__ import annotations

from typing import Optional, Sequence

Shape = Sequence[Optional[int]]


def check_num_kv_heads(num_heads: int, num_kv_heads) -> int:
    """Return the number of key/value heads (``num_heads`` for ``None``); raise ``ValueError`` unless
    it is a positive int that divides ``num_heads``."""
    if num_kv_heads is None:
        return num_heads
    if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, int) or num_kv_heads < 1:
        raise ValueError(f"num_kv_heads must be a positive int or None, got {num_kv_heads!r}")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}: each key/value head "
            "is shared by num_heads / num_kv_heads query heads, so choose a divisor of num_heads "
            "(num_heads: multi-head, 1: multi-query attention)"
        )
    return num_kv_heads


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


def check_last_axis(shape: Shape, size: int, what: str = "x") -> None:
    """Raise ``ValueError`` unless ``shape`` is ``(..., size)``."""
    shape = tuple(shape)
    if not shape or (shape[-1] is not None and shape[-1] != size):
        raise ValueError(f"{what} must have shape (..., {size}), got {shape}")


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


def check_rope_positions(rope_theta, positions_is_none: bool) -> None:
    """Raise ``ValueError`` for positions given to an attention without rotary embeddings, which would
    ignore them."""
    if rope_theta is None and not positions_is_none:
        raise ValueError("positions are only read by rotary position embeddings, and this attention has "
                         "rope_theta=None: it would ignore them; build it with rope_theta set, or leave "
                         "positions out")


def check_rope_lengths(q_len: Optional[int], k_len: Optional[int]) -> None:
    """Raise ``ValueError`` when queries and keys of different lengths would get default positions."""
    if q_len is not None and k_len is not None and q_len != k_len:
        raise ValueError(f"with rotary embeddings and queries ({q_len}) and keys ({k_len}) of different "
                         "lengths, pass positions, or call project_kv and attend with their own positions")


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


def check_kv_heads(k_shape: Shape, v_shape: Shape, num_kv_heads: int, depth: int) -> None:
    """Raise ``ValueError`` unless projected keys and values are (batch, kv_heads, Tk, depth), as
    ``project_kv`` returns them."""
    for what, shape in (("k", tuple(k_shape)), ("v", tuple(v_shape))):
        expected = (num_kv_heads, depth)  # axes 1 and 3
        if len(shape) != 4 or any(s is not None and s != e for s, e in zip(shape[1::2], expected)):
            raise ValueError(f"{what} must have shape (batch, kv_heads, Tk, depth) = (batch, {num_kv_heads}, "
                             f"Tk, {depth}), as project_kv returns it, got {shape}")
