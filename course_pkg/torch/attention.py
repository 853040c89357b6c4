"""Scaled dot-product attention and multi-head attention (Vaswani et al., 2017, §3.2).

Shapes: ``batch`` sequences, ``Tq`` queries attending to ``Tk`` keys (``seq``
either length, in the head helpers), ``...`` any leading axes; ``dk`` the depth
of queries and keys, ``dv`` that of values; ``d_model`` the model width,
``heads`` attention heads of ``depth = d_model // num_heads`` features each,
``kv_heads`` key/value heads (grouped-query attention: each shared by ``heads / kv_heads``
query heads).
"""

import math

import torch
import torch.nn.functional as F

from ..common.arguments import check_batch, check_features, check_flag
from ..common.attention import (
    check_attention_dtypes,
    check_heads,
    check_input_dtype,
    check_kv_heads,
    check_mask_dtype,
    check_matching_depth,
    check_num_kv_heads,
    check_rope_lengths,
    check_rope_positions,
)
from ..common.masks import check_mask_shape
from ..common.rotary import check_head_dim, check_theta
from .base import Layer, dense
from .rotary import RotaryEmbedding


def weighted_values(weights, value, blocked):
    """``weights @ value``, where a NaN or inf stored at a key reaches only the queries that attend to it.

    A blocked key gets a weight of exactly 0, but 0 * NaN is NaN: a NaN (or inf) stored there,
    e.g. at padding or at a future position under the look-ahead mask, would reach every query.
    The values of keys holding a non-finite number are read as 0 (a where-select, so finite
    values are kept bit for bit and valid input gives exactly ``weights @ value``), and the
    output row of each query that attends (unblocked) to such a key is set back to NaN.

    Shape:
        weights (..., Tq, Tk), value (..., Tk, dv), blocked (mask != 0) broadcastable to
        (..., Tq, Tk) -> (..., Tq, dv).
    """
    bad_key = (~torch.isfinite(value)).any(dim=-1)  # (..., Tk): a NaN or inf in the value
    zero = torch.zeros((), dtype=value.dtype, device=value.device)
    out = torch.matmul(weights, torch.where(bad_key[..., None], zero, value))  # (..., Tq, dv)
    poison = (~blocked & bad_key[..., None, :]).any(dim=-1)  # (..., Tq): attends to a bad key
    return torch.where(poison[..., None], torch.full((), math.nan, dtype=out.dtype, device=out.device),
                       out)


def check_input_dtypes(layer, **inputs):
    """Raise ``TypeError`` unless every input has the dtype of the layer's weights (or, for a
    layer without weights, that of the first input). Skipped under ``torch.autocast``, which
    casts the inputs of each operation itself.

    Keras layers cast floating inputs to their compute dtype instead, so the TensorFlow
    layers accept such inputs.
    """
    first = next(iter(inputs.values()))
    if torch.is_autocast_enabled(first.device.type):
        return
    param = next(layer.parameters(), None)
    expected, source = ((param.dtype, "the layer's weights") if param is not None
                        else (first.dtype, f"the first input, {next(iter(inputs))}"))
    for name, x in inputs.items():
        check_input_dtype(name, _dtype_name(x.dtype), _dtype_name(expected), source)


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _check_qkv(query, key, value):
    """Query, key and value as tensors (NumPy arrays converted, as TensorFlow does), checked:
    float dtypes, query and key alike, shapes that fit (see :func:`scaled_dot_product_attention`)."""
    query, key, value = (torch.as_tensor(t) for t in (query, key, value))
    check_matching_depth(query.shape, key.shape, value.shape)
    check_attention_dtypes([_dtype_name(t.dtype) for t in (query, key, value)],
                           [t.is_floating_point() for t in (query, key, value)])
    return query, key, value


def scaled_dot_product_attention(query, key, value, mask=None):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V.

    Args:
        query: queries.
        key: keys, one per value.
        value: values.
        mask: optional course mask (1.0 = blocked, 0.0 = may attend), float
            or int, that broadcasts to the logits' shape ``(..., Tq, Tk)``.
            Boolean masks are refused: their polarity differs between
            libraries, so convert them with ``from_blocked_mask`` or
            ``from_attend_mask`` first.

    Returns:
        ``(output, attention_weights)``. Blocked positions get a weight of
        exactly 0; a fully blocked row gets all-zero weights and a zero output
        (never NaN). A NaN or inf stored in the value of a blocked key (padding,
        or a future position under the look-ahead mask) never reaches the
        output (a weight of 0 times NaN would be NaN); a query that attends to
        such a key gets an all-NaN output row, so a genuine NaN is not hidden.
        Finite values give exactly ``weights @ value``. The softmax runs in
        float32 whatever the input dtype.

    Raises:
        ValueError: depths, lengths or the leading (batch) axes of key and
            value that differ, query and key leading axes that do not
            broadcast, or a mask that does not broadcast.
        TypeError: a query, key or value that is not floats (integers),
            query and key of different dtypes, or a boolean mask.

    Shape:
        query (..., Tq, dk), key (..., Tk, dk), value (..., Tk, dv) ->
        output (..., Tq, dv), attention_weights (..., Tq, Tk).
    """
    query, key, value = _check_qkv(query, key, value)
    query = query / math.sqrt(key.shape[-1])  # scale first: half-precision logits overflow later
    logits = torch.matmul(query, key.transpose(-2, -1)).float()  # (..., Tq, Tk)
    if mask is not None:
        mask = torch.as_tensor(mask, device=logits.device)
        check_mask_dtype(mask.dtype == torch.bool)
        check_mask_shape(mask.shape, logits.shape)
        blocked = mask != 0  # (..., Tq, Tk) after broadcasting
        logits = logits.masked_fill(blocked, torch.finfo(torch.float32).min)
    weights = torch.softmax(logits, dim=-1)  # (..., Tq, Tk)
    if mask is None:
        weights = weights.to(value.dtype)
        return torch.matmul(weights, value), weights  # (..., Tq, dv), (..., Tq, Tk)
    weights = weights.masked_fill(blocked, 0.0).to(value.dtype)  # exact zeros, also in full rows
    return weighted_values(weights, value, blocked), weights  # no 0 * NaN from blocked keys


_FUSED = {"enabled": True, "always_guard": False}  # set by set_fused_attention and set_fused_guards


def set_fused_attention(enabled):
    """Let :class:`MultiHeadAttention` use the fused kernel when no weights are requested
    (``True``, the default) or force the explicit path everywhere (``False``). Returns the
    previous setting, so ``old = set_fused_attention(False); ...; set_fused_attention(old)``
    compares both paths.
    """
    previous = _FUSED["enabled"]
    _FUSED["enabled"] = check_flag("enabled", enabled)
    return previous


def set_fused_guards(always):
    """Run the guards of :func:`fused_attention` (fully blocked rows zeroed, non-finite values
    read as 0) at every call (``True``) or only where a fully blocked row or a non-finite value
    is present (``False``, the default). Returns the previous setting, so
    ``old = set_fused_guards(True); ...; set_fused_guards(old)`` tests or times both variants.
    PyTorch asks where needed only in eager mode on the CPU: on accelerators and under
    ``torch.compile`` the guards always run, whatever the setting.
    """
    previous = _FUSED["always_guard"]
    _FUSED["always_guard"] = check_flag("always", always)
    return previous


def fused_attention(query, key, value, mask=None):
    """The output of :func:`scaled_dot_product_attention`, from the framework's attention
    kernel (no weights are returned).

    In PyTorch this is ``torch.nn.functional.scaled_dot_product_attention``, a fused kernel
    that never forms the weights (flash or memory-efficient attention on GPUs, a fused
    CPU kernel). The TensorFlow function composes what ``keras.ops.dot_product_attention``
    computes on that backend, which has no fused kernel (see there). Under ``torch.compile``
    the guards below run unconditionally, so the kernel compiles as one graph.

    Same mask and guarantees as :func:`scaled_dot_product_attention`: the course mask
    (1.0 = blocked) is turned into the kernel's boolean mask (``True`` = may attend); a
    fully blocked row gives a zero output (the kernel would give NaN: such rows attend
    everywhere inside the kernel and are zeroed after); a NaN or inf stored in the value
    of a blocked key never reaches the output, and a query attending to such a key gets
    an all-NaN row. Equal to the explicit path to float rounding (the kernel scales the
    logits itself and accumulates in its own order); in float16/bfloat16 the kernel
    chooses its accumulation precision. The guards (zeroed rows, non-finite values) run
    only when a fully blocked row or a non-finite value is present, in eager mode on the
    CPU; on accelerators they always run (asking would wait for the device), and so they do
    everywhere after ``set_fused_guards(True)``.

    Raises:
        ValueError, TypeError: as :func:`scaled_dot_product_attention`.

    Shape:
        query (..., Tq, dk), key (..., Tk, dk), value (..., Tk, dv) -> output (..., Tq, dv).
    """
    query, key, value = _check_qkv(query, key, value)
    if mask is None:
        return F.scaled_dot_product_attention(query, key, value)  # (..., Tq, dv)
    mask = torch.as_tensor(mask, device=query.device)
    check_mask_dtype(mask.dtype == torch.bool)
    logits_shape = (*torch.broadcast_shapes(query.shape[:-2], key.shape[:-2]), query.shape[-2], key.shape[-2])
    check_mask_shape(mask.shape, logits_shape)
    attend = mask == 0  # the kernel's polarity: True = may attend, (..., Tq or 1, Tk)
    row_open = attend.any(dim=-1, keepdim=True)  # (..., Tq or 1, 1): False on fully blocked rows
    # In eager mode on the CPU each guard runs only where needed (asking costs little there);
    # on accelerators both always run, as asking would stop the host until the device answers,
    # and so they do under torch.compile, where asking (bool() of a tensor) would break the graph.
    ask = (query.device.type == "cpu" and not _FUSED["always_guard"]
           and not torch.compiler.is_compiling())
    all_open = ask and bool(row_open.all())
    # One float32 sum asks whether any value is NaN or inf (a sum that overflows to inf only
    # takes the guarded path, which is exact for finite values too).
    all_finite = ask and bool(torch.isfinite(value.detach().sum(dtype=torch.float32)))
    if not all_finite:  # a blocked key's NaN would reach every query: read as 0
        bad_key = (~torch.isfinite(value.detach())).any(dim=-1)  # (..., Tk): a NaN or inf in the value
        value = torch.where(bad_key[..., None], torch.zeros((), dtype=value.dtype, device=value.device),
                            value)
    out = F.scaled_dot_product_attention(  # (..., Tq, dv)
        query, key, value, attn_mask=attend if all_open else attend | ~row_open)
    if not all_open:  # fully blocked rows attended everywhere in the kernel: zero them
        out = torch.where(row_open, out, torch.zeros((), dtype=out.dtype, device=out.device))
    if all_finite:
        return out
    poison = (attend & bad_key[..., None, :]).any(dim=-1, keepdim=True)  # (..., Tq, 1): attends to a bad key
    return torch.where(poison, torch.full((), math.nan, dtype=out.dtype, device=out.device), out)


def repeat_kv(x, num_repeats):
    """Each key/value head repeated ``num_repeats`` times along the heads axis (Hugging Face's
    ``repeat_kv``): query heads 0 .. num_repeats - 1 share key/value head 0, and so on.

    Shape:
        (batch, kv_heads, T, depth) -> (batch, kv_heads * num_repeats, T, depth).
    """
    if num_repeats == 1:
        return x
    return torch.repeat_interleave(x, num_repeats, dim=1)  # (batch, kv_heads * num_repeats, T, depth)


class MultiHeadAttention(Layer):
    """Multi-head attention: ``num_heads`` attentions over ``d_model / num_heads`` features.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W^Q_i, K W^K_i, V W^V_i). The per-head projections are
    stored together as the four dense layers ``wq, wk, wv, wo`` (with bias by default).

    Args:
        d_model: model width; must be a multiple of ``num_heads``.
        num_heads: number of heads; each gets ``depth = d_model // num_heads``.
        num_kv_heads: key/value heads (``None``: ``num_heads``); must divide ``num_heads``.
            Fewer is grouped-query attention (1: multi-query): ``wk`` and ``wv`` project to
            ``num_kv_heads * depth`` features, :meth:`project_kv` returns (and a decoding cache
            keeps) only those heads, and :meth:`attend` repeats each ``num_heads // num_kv_heads``
            times (``repeat_kv``) before attending.
        use_bias: ``False``: no biases in ``wq, wk, wv, wo`` (Llama).
        rope_theta: ``None``, or the base of rotary position embeddings
            (:class:`~course_pkg.torch.rotary.RotaryEmbedding`, ``depth`` even) applied to the
            projected queries and keys, which then take integer ``positions`` (batch, seq),
            by default 0 .. seq - 1 in every row.

    Raises:
        TypeError: on call, a query, key or value whose dtype differs from that
            of the layer's weights (outside ``torch.autocast``). The TensorFlow
            layer casts floating inputs to its compute dtype instead (Keras).

    Call:
        ``mha(query, key, value, mask=None, need_weights=True)`` returns
        ``(output, attention_weights)`` from the explicit
        :func:`scaled_dot_product_attention`. With ``need_weights=False`` it
        returns ``(output, None)`` from the fused kernel (:func:`fused_attention`),
        unless ``set_fused_attention(False)`` forces the explicit path.
        ``mha(..., positions=...)`` (with ``rope_theta`` only: else ``ValueError``) gives
        queries and keys their positions; without, queries and keys of different lengths
        are refused under RoPE (``ValueError``).

    Shape:
        query (batch, Tq, d_model), key and value (batch, Tk, d_model),
        mask broadcastable to (batch, heads, Tq, Tk), positions (batch or 1, T) ->
        output (batch, Tq, d_model), attention_weights (batch, heads, Tq, Tk).
    """

    def __init__(self, d_model, num_heads, num_kv_heads=None, use_bias=True, rope_theta=None):
        super().__init__()
        depth = check_heads(d_model, num_heads)
        num_kv_heads = check_num_kv_heads(num_heads, num_kv_heads)
        use_bias = check_flag("use_bias", use_bias)
        if rope_theta is not None:
            rope_theta = check_theta(rope_theta, "rope_theta")
            check_head_dim(depth, "head_dim = d_model // num_heads")
        self.depth = depth
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads, self.use_bias, self.rope_theta = num_kv_heads, use_bias, rope_theta
        self.wq = dense(d_model, d_model, use_bias)
        self.wk = dense(d_model, num_kv_heads * depth, use_bias)
        self.wv = dense(d_model, num_kv_heads * depth, use_bias)
        self.wo = dense(d_model, d_model, use_bias)
        self.rotary = None if rope_theta is None else RotaryEmbedding(depth, rope_theta)

    def split_heads(self, x, num_heads=None):
        """(batch, seq, heads * depth) -> (batch, heads, seq, depth), ``heads`` = ``num_heads``
        (the layer's by default; ``num_kv_heads`` for keys and values)."""
        batch, seq = x.shape[0], x.shape[1]
        heads = self.num_heads if num_heads is None else num_heads
        x = x.reshape(batch, seq, heads, self.depth)  # (batch, seq, heads, depth)
        return x.transpose(1, 2)  # (batch, heads, seq, depth)

    def combine_heads(self, x):
        """(batch, heads, seq, depth) -> (batch, seq, d_model)."""
        batch, seq = x.shape[0], x.shape[2]
        x = x.transpose(1, 2)  # (batch, seq, heads, depth)
        return x.reshape(batch, seq, self.d_model)  # (batch, seq, d_model)

    def forward(self, query, key, value, mask=None, need_weights=True, positions=None):
        check_features(query.shape, self.d_model, "query")
        check_features(key.shape, self.d_model, "key")
        check_features(value.shape, self.d_model, "value")
        check_batch(query.shape[0], key=key.shape, value=value.shape)
        check_input_dtypes(self, query=query, key=key, value=value)
        check_rope_positions(self.rope_theta, positions is None)
        if self.rotary is not None and positions is None:
            check_rope_lengths(query.shape[1], key.shape[1])
        # Checked once, here: the unchecked halves of project_kv and attend follow.
        k, v = self._project_kv(key, value, positions)  # (batch, kv_heads, Tk, depth) each
        return self._attend(query, k, v, mask, need_weights, positions)  # (batch, Tq, d_model), weights

    def project_kv(self, key, value, positions=None):
        """Project and split keys and values: the part a decoding cache can keep (only the
        ``num_kv_heads`` key/value heads; with ``rope_theta``, the keys rotated to their
        ``positions``, as Hugging Face's cache keeps them).

        Shape:
            key, value (batch, Tk, d_model), positions (batch or 1, Tk) ->
            k, v (batch, kv_heads, Tk, depth).
        """
        check_features(key.shape, self.d_model, "key")
        check_features(value.shape, self.d_model, "value")
        check_input_dtypes(self, key=key, value=value)
        check_rope_positions(self.rope_theta, positions is None)
        return self._project_kv(key, value, positions)  # (batch, kv_heads, Tk, depth) each

    def _project_kv(self, key, value, positions):
        """:meth:`project_kv` without its checks, for a caller that has checked them (the layer's own call).

        Shape:
            key, value (batch, Tk, d_model), positions (batch or 1, Tk) ->
            k, v (batch, kv_heads, Tk, depth).
        """
        k = self.split_heads(self.wk(key), self.num_kv_heads)  # (batch, kv_heads, Tk, depth)
        v = self.split_heads(self.wv(value), self.num_kv_heads)  # (batch, kv_heads, Tk, depth)
        if self.rotary is not None:
            k = self.rotary(k, positions)  # (batch, kv_heads, Tk, depth)
        return k, v

    def attend(self, query, k, v, mask=None, need_weights=True, positions=None):
        """Attend from ``query`` to keys/values already projected by :meth:`project_kv`.

        With ``need_weights=False`` the weights are ``None`` and the fused kernel runs
        (see the class's Call section). With ``rope_theta``, the queries are rotated to their
        ``positions``; each key/value head is repeated for its ``num_heads // num_kv_heads``
        query heads before either path.

        Shape:
            query (batch, Tq, d_model), k and v (batch, kv_heads, Tk, depth),
            positions (batch or 1, Tq) ->
            output (batch, Tq, d_model), attention_weights (batch, heads, Tq, Tk).
        """
        check_features(query.shape, self.d_model, "query")
        check_input_dtypes(self, query=query)
        check_rope_positions(self.rope_theta, positions is None)
        check_kv_heads(k.shape, v.shape, self.num_kv_heads, self.depth)
        return self._attend(query, k, v, mask, need_weights, positions)  # (batch, Tq, d_model), weights

    def _attend(self, query, k, v, mask, need_weights, positions):
        """:meth:`attend` without its checks, for a caller that has checked them (the layer's own call).

        Shape:
            query (batch, Tq, d_model), k and v (batch, kv_heads, Tk, depth),
            positions (batch or 1, Tq) ->
            output (batch, Tq, d_model), attention_weights (batch, heads, Tq, Tk).
        """
        q = self.split_heads(self.wq(query))  # (batch, heads, Tq, depth)
        if self.rotary is not None:
            q = self.rotary(q, positions)  # (batch, heads, Tq, depth)
        groups = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)  # (batch, heads, Tk, depth) each
        if need_weights or not _FUSED["enabled"]:
            out, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, heads, Tq, depth)
        else:
            out, weights = fused_attention(q, k, v, mask), None  # (batch, heads, Tq, depth)
        return self.wo(self.combine_heads(out)), (weights if need_weights else None)  # (batch, Tq, d_model)

    def get_config(self):
        """The recorded arguments, ``num_kv_heads`` resolved (``None`` is ``num_heads``).

        Layers with weights of the same shapes then have the same configuration, whether the
        number was given or left to its default (:func:`course_pkg.interop.copy_weights` compares them).
        """
        return {**super().get_config(), "num_kv_heads": self.num_kv_heads}
