"""The checks of the positional encodings (``positional``): a table's sizes, a first position."""

from __future__ import annotations


def check_table_size(**values) -> None:
    """Raise ``TypeError`` for a value that is not an int (a NumPy integer will do), ``ValueError``
    for a negative one: the sizes of a table (``positional_encoding(length, d_model)``)."""
    import numpy as np  # here, so that importing this module stays pure Python

    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int >= 0, got {value!r} (a {type(value).__name__})")
        if value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def check_start(start) -> int:
    """Raise ``ValueError`` unless ``start`` (a first position) is an int >= 0."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an int >= 0, got {start!r}")
    return start
