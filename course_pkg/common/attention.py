"""The checks of attention (``attention``: scaled dot-product and multi-head attention).

Heads that split ``d_model`` exactly, the masks' dtype, query/key/value shapes and dtypes that fit,
grouped-query attention's key/value heads (``llama`` checks its own with :func:`check_num_kv_heads`
too), and the rotary positions an attention reads. Each framework turns its tensors' static facts
into plain values and calls these, so that both refuse alike.
"""

from __future__ import annotations

from typing import Optional

from .arguments import Shape


def check_heads(d_model: int, num_heads: int) -> int:
    """Return ``depth = d_model // num_heads``; raise if the split is not exact."""
    for name, value in (("d_model", d_model), ("num_heads", num_heads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}: "
            "each head gets d_model / num_heads features, so choose d_model as a "
            "multiple of num_heads"
        )
    return d_model // num_heads


def check_mask_dtype(is_bool: bool) -> None:
    """Raise ``TypeError`` for boolean masks, whose polarity is ambiguous."""
    if is_bool:
        raise TypeError(
            "course masks are float with 1.0 = blocked; a boolean mask means 'blocked' in "
            "torch.nn.MultiheadAttention but 'may attend' in F.scaled_dot_product_attention "
            "and Keras, so convert it first with from_blocked_mask(mask) or from_attend_mask(mask)"
        )


def check_matching_depth(q_shape: Shape, k_shape: Shape, v_shape: Shape) -> None:
    """Raise ``ValueError`` unless query/key depths and key/value lengths agree, key and value
    have the same leading axes and those of the query broadcast with them (a 1 is shared)."""
    if len(q_shape) < 2 or len(k_shape) < 2 or len(v_shape) < 2:
        raise ValueError(
            "query, key and value need at least 2 axes (..., length, depth), got "
            f"shapes {tuple(q_shape)}, {tuple(k_shape)}, {tuple(v_shape)}"
        )
    qd, kd = q_shape[-1], k_shape[-1]
    if qd is not None and kd is not None and qd != kd:
        raise ValueError(
            f"query depth {qd} differs from key depth {kd}: "
            "the dot product q·k needs equal depths"
        )
    kl, vl = k_shape[-2], v_shape[-2]
    if kl is not None and vl is not None and kl != vl:
        raise ValueError(
            f"key length {kl} differs from value length {vl}: "
            "each key needs exactly one value"
        )
    kb, vb = tuple(k_shape[:-2]), tuple(v_shape[:-2])
    if len(kb) != len(vb) or any(k is not None and v is not None and k != v for k, v in zip(kb, vb)):
        raise ValueError(
            f"key leading axes {kb} differ from value leading axes {vb}: "
            "each key needs exactly one value"
        )
    qb = tuple(q_shape[:-2])
    if any(q is not None and k is not None and q != k and 1 not in (q, k)
           for q, k in zip(reversed(qb), reversed(kb))):
        raise ValueError(
            f"query leading axes {qb} do not broadcast with key leading axes {kb}: "
            "each batch (or head) axis must be the same in both, or 1 in one of them"
        )


def check_same_dtype(query_dtype: str, key_dtype: str) -> None:
    """Raise ``TypeError`` unless query and key have the same dtype (names without ``torch.``)."""
    if query_dtype != key_dtype:
        raise TypeError(
            f"query and key must have the same dtype, got {query_dtype} and {key_dtype}; "
            "cast one of them first"
        )


def check_floating(name: str, is_floating: bool, dtype_name: str) -> None:
    """Raise ``TypeError`` naming the argument ``name`` unless it holds floats."""
    if not is_floating:
        raise TypeError(f"{name} must be a floating-point tensor (float16, bfloat16, float32 or float64), "
                        f"got dtype {dtype_name}; cast it first")


def check_attention_dtypes(dtypes, floating) -> None:
    """Raise ``TypeError`` unless query, key and value hold floats and query and key share a dtype.

    ``dtypes``: the three dtype names (without ``torch.``), ``floating``: whether each is a float.
    """
    for name, dtype, is_floating in zip(("query", "key", "value"), dtypes, floating):
        check_floating(name, is_floating, dtype)
    check_same_dtype(dtypes[0], dtypes[1])


def check_input_dtype(what: str, dtype: str, expected: str, source: str) -> None:
    """Raise ``TypeError`` unless input ``what`` has dtype ``expected`` (that of ``source``)."""
    if dtype != expected:
        raise TypeError(f"{what} has dtype {dtype}, expected {expected} (that of {source}); cast it first")


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


def check_kv_heads(k_shape: Shape, v_shape: Shape, num_kv_heads: int, depth: int) -> None:
    """Raise ``ValueError`` unless projected keys and values are (batch, kv_heads, Tk, depth), as
    ``project_kv`` returns them."""
    for what, shape in (("k", tuple(k_shape)), ("v", tuple(v_shape))):
        expected = (num_kv_heads, depth)  # axes 1 and 3
        if len(shape) != 4 or any(s is not None and s != e for s, e in zip(shape[1::2], expected)):
            raise ValueError(f"{what} must have shape (batch, kv_heads, Tk, depth) = (batch, {num_kv_heads}, "
                             f"Tk, {depth}), as project_kv returns it, got {shape}")
