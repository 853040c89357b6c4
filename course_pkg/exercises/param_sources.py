"""The exercises' parameters as source text: how a drawn value is written into a notebook's
parameter cell, and how that text is read back (the catalog and the exercise modules alike)."""

from __future__ import annotations

import numpy as np


def floats(values, decimals=1) -> str:
    """``np.array([...])`` with ``decimals`` places (-0.0 printed as 0.0)."""
    rounded = np.round(np.asarray(values, dtype=float), decimals) + 0.0
    return f"np.array({rounded.tolist()!r})"


def evaluate(source: str):
    """The value of one parameter's source (NumPy only, no builtins)."""
    return eval(source, {"np": np, "__builtins__": {}})  # sources come from draw(), never from users
