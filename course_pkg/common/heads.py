"""The checks of the classification heads (``heads``): the hidden states a head reads and the
position (``token_index``) it reads them at."""

from __future__ import annotations

from typing import Optional

from .arguments import Shape


def check_states(shape: Shape, d_model: int, is_floating: bool, dtype_name: str, what: str = "x") -> None:
    """Raise unless ``what`` are hidden states ``(batch, seq, d_model)`` of a float dtype:
    ``TypeError`` for another dtype, ``ValueError`` for another shape."""
    shape = tuple(shape)
    if not is_floating:
        raise TypeError(f"{what} (the hidden states) must be a floating-point tensor, got dtype "
                        f"{dtype_name}: pass the states of a stack, not token ids")
    if len(shape) != 3 or (shape[-1] is not None and shape[-1] != d_model):
        raise ValueError(f"{what} (the hidden states) must have shape (batch, seq, {d_model}), got {shape}")


def check_token_index(token_index, seq: Optional[int]) -> None:
    """Raise ``ValueError`` unless the int ``token_index`` is a position of a sequence of ``seq``
    (``-seq <= token_index < seq``: negative counts from the end); ``TypeError`` for a bool.
    ``seq`` ``None`` (unknown): only the type is checked."""
    if isinstance(token_index, bool):
        raise TypeError(f"token_index must be an int or one int index per row, got {token_index!r}")
    if seq is not None and not -seq <= token_index < seq:
        raise ValueError(f"token_index {token_index} is outside a sequence of {seq} positions "
                         f"(expected -{seq} <= token_index < {seq})")


def check_default_token_index(token_index) -> None:
    """Raise ``ValueError`` unless ``token_index`` (a constructor's default position) is an int."""
    if isinstance(token_index, bool) or not isinstance(token_index, int):
        raise ValueError(f"token_index must be an int, got {token_index!r}")


def check_row_indices(shape: Shape, batch: Optional[int], is_integer: bool, dtype_name: str,
                      values=None, seq: Optional[int] = None) -> None:
    """Raise unless a per-row ``token_index`` is one int position per row, each as
    :func:`check_token_index` wants it: ``TypeError`` for another dtype, ``ValueError`` for
    another shape than ``(batch,)`` or a position outside the sequence (``values``: the
    indices as a list, ``None`` where unknown)."""
    shape = tuple(shape)
    if not is_integer:
        raise TypeError(f"token_index must be an int or one int index per row, got dtype {dtype_name}")
    if len(shape) != 1 or (batch is not None and shape[0] is not None and shape[0] != batch):
        raise ValueError(f"token_index must be an int or one index per row, shape ({batch},), "
                         f"got shape {shape}")
    if values is None or seq is None:
        return
    for row, index in enumerate(values):
        if not -seq <= index < seq:
            raise ValueError(f"token_index {index} (row {row}) is outside a sequence of {seq} positions "
                             f"(expected -{seq} <= token_index < {seq})")
