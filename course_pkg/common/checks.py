"""Argument checks shared by both frameworks (framework-free, pure Python).

Each framework subpackage turns its tensors' static facts (shape tuples, dtype
names, Python ints) into plain values and calls these functions, so that the
two implementations reject bad input with the very same messages.
"""

from __future__ import annotations

from typing import Optional, Sequence

Shape = Sequence[Optional[int]]


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


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` unless every keyword value is a positive int."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


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


def check_dropout(rate: float) -> None:
    """Raise ``ValueError`` unless ``0 <= rate < 1``."""
    if not isinstance(rate, (int, float)) or not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout must be a float in [0, 1), got {rate!r}")


def check_mask_shape(
    mask_shape: Shape,
    scores_shape: Shape,
    what: str = "logits",
    layout: str = "(..., q_len, k_len)",
    hint: str = "(batch, 1, 1, k_len) for padding or (q_len, k_len) / (batch, 1, q_len, k_len) "
                "for look-ahead masks",
) -> None:
    """Raise ``ValueError`` unless the mask broadcasts to the attention scores' shape.

    Broadcasting may only add or stretch axes of the mask, never the scores:
    a ``(batch, 1, 1, Tk)`` mask fits ``(batch, heads, Tq, Tk)`` logits, a
    ``(Tk,)`` mask for other keys does not. ``None`` (unknown) matches anything.
    The message names the scores (``what``: the Transformer's ``"logits"``, the
    RNN attention's ``"weights"``), their ``layout`` and a ``hint`` of masks that fit.
    """
    mask_shape, scores_shape = tuple(mask_shape), tuple(scores_shape)
    ok = len(mask_shape) <= len(scores_shape) and all(
        m is None or s is None or m in (1, s)
        for m, s in zip(reversed(mask_shape), reversed(scores_shape))
    )
    if not ok:
        raise ValueError(
            f"mask of shape {mask_shape} does not broadcast to the attention {what} of shape "
            f"{scores_shape} {layout}; expected e.g. {hint}"
        )


# check_mask_shape's message for the RNN attentions (Bahdanau, Luong): weights (batch, Tq, Tk).
RNN_MASK = {"what": "weights", "layout": "(batch, q_len, k_len)",
            "hint": "(batch, 1, k_len) for source padding: create_padding_mask(src_tokens)[:, 0]"}


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


def check_features(shape: Shape, d_model: int, what: str = "input") -> None:
    """Raise ``ValueError`` unless ``shape`` is ``(batch, length, d_model)``."""
    shape = tuple(shape)
    if len(shape) != 3 or (shape[-1] is not None and shape[-1] != d_model):
        raise ValueError(
            f"{what} must have shape (batch, length, {d_model}), got {shape}"
        )


def check_table_size(**values) -> None:
    """Raise ``TypeError`` for a value that is not an int (a NumPy integer will do), ``ValueError``
    for a negative one: the sizes of a table (``positional_encoding(length, d_model)``)."""
    import numpy as np  # here, so that importing this module stays pure Python

    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int >= 0, got {value!r} (a {type(value).__name__})")
        if value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")


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


def check_enc_output(cross_attention: bool, enc_output_is_none: bool) -> None:
    """Raise ``ValueError`` when a layer with cross-attention gets no encoder output."""
    if cross_attention and enc_output_is_none:
        raise ValueError("enc_output is None, but this DecoderLayer has a cross-attention "
                         "(cross_attention=True): pass the encoder output")


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


def check_segment_ids(is_integer: bool, dtype_name: str, shape: Shape, tokens_shape: Shape,
                      lowest=None, highest=None, type_vocab_size: int = 2) -> None:
    """Raise unless BERT's ``segment_ids`` are integers (``TypeError``) of the tokens' shape, in
    ``[0, type_vocab_size)`` (``ValueError``; ``lowest``/``highest`` ``None``: unknown or empty)."""
    if not is_integer:
        raise TypeError(f"segment_ids must be an integer tensor (int32 or int64), got dtype {dtype_name}; "
                        "cast them to int32 or int64 first")
    if tuple(shape) != tuple(tokens_shape):
        raise ValueError(f"segment_ids must have the tokens' shape {tuple(tokens_shape)}, got {tuple(shape)}")
    if lowest is not None and (lowest < 0 or highest >= type_vocab_size):
        raise ValueError(f"segment_ids must lie in [0, {type_vocab_size}) for type_vocab_size="
                         f"{type_vocab_size}, got ids from {lowest} to {highest}")


def check_token_dtype(is_integer: bool, dtype_name: str) -> None:
    """Raise ``TypeError`` for token ids that are not integers."""
    if not is_integer:
        raise TypeError(
            f"token ids must be an integer tensor (int32 or int64), got dtype "
            f"{dtype_name}; cast them to int32 or int64 first"
        )


def check_token_rank(shape: Shape) -> None:
    """Raise ``ValueError`` unless token ids are ``(batch, length)``."""
    if len(tuple(shape)) != 2:
        raise ValueError(f"token ids must have shape (batch, length), got {tuple(shape)}")


def check_token_range(lowest: int, highest: int, vocab_size: int) -> None:
    """Raise ``ValueError`` unless every id lies in ``[0, vocab_size)``."""
    if lowest < 0 or highest >= vocab_size:
        raise ValueError(
            f"token ids must lie in [0, {vocab_size}) for vocab_size={vocab_size}, "
            f"got ids from {lowest} to {highest}"
        )


def check_length(length: Optional[int], max_len: int) -> None:
    """Raise ``ValueError`` for sequences longer than the model's ``max_len`` positions."""
    if length is not None and length > max_len:
        raise ValueError(
            f"sequence length {length} exceeds max_len={max_len}: the model has max_len positions "
            "(the rows of its positional table; for a rotary model such as Llama, the length it was "
            "built for); build the model with a larger max_len or truncate the input"
        )


def unpack_pair(inputs, model="Transformer"):
    """Split ``(src_tokens, tgt_tokens)`` passed as one argument (as Keras' ``fit`` does)."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
        return inputs[0], inputs[1]
    if isinstance(inputs, dict) and set(inputs) == {"src_tokens", "tgt_tokens"}:
        return inputs["src_tokens"], inputs["tgt_tokens"]
    raise TypeError(
        f"{model} expects (src_tokens, tgt_tokens): two arguments, a pair, or a dict with "
        f"those keys; got a single {type(inputs).__name__}"
    )


def check_choice(name, value, choices):
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def check_pad_id(pad_id, vocab_size):
    """Raise ``ValueError`` unless ``pad_id`` is an int in ``[0, vocab_size)``."""
    if isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < vocab_size:
        raise ValueError(f"pad_id must be an int in [0, {vocab_size}), got {pad_id!r}")


def check_state(shape, units, what="state"):
    """Raise ``ValueError`` unless ``shape`` is ``(batch, units)``."""
    shape = tuple(shape)
    if len(shape) != 2 or (shape[-1] is not None and shape[-1] != units):
        raise ValueError(f"{what} must have shape (batch, {units}), got {shape}")


def check_batch(batch, **shapes):
    """Raise ``ValueError`` unless every shape's first axis is ``batch`` (``None`` matches)."""
    for name, shape in shapes.items():
        if batch is not None and shape[0] is not None and shape[0] != batch:
            raise ValueError(f"{name} has batch size {shape[0]}, expected {batch} (that of the first input)")


def check_label_range(lowest: int, highest: int, vocab_size: int, pad_id) -> None:
    """Raise ``ValueError`` unless every label that counts (not ``pad_id``) lies in ``[0, vocab_size)``.

    ``lowest`` and ``highest`` are taken over the counted labels only (``lowest > highest``: none).
    """
    if lowest <= highest and (lowest < 0 or highest >= vocab_size):
        raise ValueError(
            f"labels must lie in [0, {vocab_size}) (or be pad_id={pad_id}), got labels from "
            f"{lowest} to {highest}: the logits score {vocab_size} target tokens"
        )


def check_label_smoothing(label_smoothing) -> None:
    """Raise ``ValueError`` unless ``0 <= label_smoothing < 1``."""
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= float(label_smoothing) < 1.0:
        raise ValueError(f"label_smoothing must be a float in [0, 1), got {label_smoothing!r}")


PRECISIONS = ("fp32", "bf16", "fp16")  # Trainer(precision=...)


def check_precision(precision) -> str:
    """Raise ``ValueError`` unless ``precision`` is ``"fp32"``, ``"bf16"`` or ``"fp16"``."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}")
    return precision


def check_loss_shapes(labels_shape: Shape, logits_shape: Shape) -> None:
    """Raise ``ValueError`` unless labels ``(batch, tgt_len)`` fit logits ``(batch, tgt_len, vocab)``."""
    labels_shape, logits_shape = tuple(labels_shape), tuple(logits_shape)
    ok = len(labels_shape) == 2 and len(logits_shape) == 3 and all(
        a is None or b is None or a == b for a, b in zip(labels_shape, logits_shape))
    if not ok:
        raise ValueError(
            f"labels of shape {labels_shape} do not fit logits of shape {logits_shape}: "
            "expected labels (batch, tgt_len) and logits (batch, tgt_len, vocab)"
        )


def check_reiterable(batches, epochs, what) -> None:
    """Raise ``ValueError`` for a one-shot iterator that ``epochs > 1`` would pass over again."""
    if epochs > 1 and iter(batches) is batches:
        raise ValueError(
            f"{what} is a one-shot iterator (e.g. a generator), but epochs={epochs} passes over "
            "it several times; pass a list, a DataLoader or a tf.data.Dataset"
        )


def check_budget(max_steps, time_budget) -> None:
    """Raise ``ValueError`` for ``max_steps`` < 1 or a ``time_budget`` that is not a finite number
    of seconds >= 0 (NaN, inf, negative; ``None``: no limit)."""
    if max_steps is not None:
        check_positive(max_steps=max_steps)
    if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(
            time_budget, (int, float)) or not 0 <= time_budget < float("inf")):
        raise ValueError(f"time_budget must be a number of seconds >= 0, got {time_budget!r}")


def check_language(lang, languages, what="lang") -> str:
    """Return ``lang``; raise ``ValueError`` unless it is one of ``languages`` (num2words' codes)."""
    if not isinstance(lang, str) or lang not in languages:
        few = ", ".join(repr(x) for x in ("de", "en", "es", "fr", "it", "nl", "pt", "ru") if x in languages)
        raise ValueError(
            f"{what}={lang!r} is not a language num2words supports; valid codes include "
            f"{few} ({len(languages)} in all, see course_pkg.data.supported_languages())"
        )
    return lang


def check_count(name, value, minimum) -> int:
    """Return ``int(value)``; raise ``ValueError`` unless it is an int (or NumPy integer) ``>= minimum``."""
    import numpy as np  # here, so that importing this module stays pure Python

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_checkpoint_info(info, where, checkpoint_format) -> None:
    """Raise ``ValueError`` unless ``info`` holds the fields that ``Trainer.save`` writes in both frameworks.

    ``info`` is the torch checkpoint's dict or the TensorFlow checkpoint's
    ``config.json``; ``where`` (the file) starts every message.
    """
    if not isinstance(info, dict) or info.get("format") != checkpoint_format:
        raise ValueError(f"{where} is not a checkpoint written by Trainer.save")
    problems = []
    if not isinstance(info.get("model_class"), str):
        problems.append(f"model_class must be a string, got {info.get('model_class')!r:.60}")
    if not isinstance(info.get("config"), dict):
        problems.append(f"config must be a dict, got {info.get('config')!r:.60}")
    step = info.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        problems.append(f"step must be an int >= 0, got {step!r:.60}")
    if problems:
        raise ValueError(f"{where} is a damaged checkpoint: " + "; ".join(problems))


# The feed-forward activations: ReLU (the paper), exact (erf) GELU (BERT), GELU's tanh
# approximation (GPT-2's ``gelu_new``) and SiLU, x·sigmoid(x) (Llama's gated feed-forward).
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")


def check_activation(activation) -> str:
    """Raise ``ValueError`` unless ``activation`` is one of :data:`ACTIVATIONS`."""
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


# The course's LayerNorm epsilon (torch's default is 1e-5, Keras' 1e-3; BERT uses 1e-12, GPT-2 1e-5).
LAYER_NORM_EPSILON = 1e-6


def check_epsilon(eps, name="layer_norm_eps") -> float:
    """Raise ``ValueError`` naming ``name`` unless ``eps`` (a norm's epsilon) is a finite float > 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0.0 < float(eps) < float("inf"):
        raise ValueError(f"{name} must be a positive float, got {eps!r}")
    return float(eps)


_NOT_GIVEN = object()


def check_flag(name, value, *, none=_NOT_GIVEN) -> bool:
    """Return ``value`` if it is a bool (``norm_first``, ``cross_attention``, a tokenizer's
    ``lowercase``), or ``none`` for ``None`` when ``none`` is given; else ``TypeError``.

    A str is refused, never read as a truth value: ``"false"`` is a non-empty str, so Python
    would read it as true.
    """
    if value is None and none is not _NOT_GIVEN:
        return none
    if isinstance(value, bool):
        return value
    allowed = "True, False or None" if none is not _NOT_GIVEN else "True or False"
    hint = " (a str is not read as a flag: pass True or False)" if isinstance(value, str) else ""
    raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r:.40}{hint}")


def check_top_p(p) -> float:
    """Raise ``ValueError`` unless ``p`` (the nucleus of ``top_p_filter``) is a float in (0, 1]."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be a float in (0, 1], got {p!r}")
    return p


def check_start(start) -> int:
    """Raise ``ValueError`` unless ``start`` (a first position) is an int >= 0."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an int >= 0, got {start!r}")
    return start


def check_padding_mask_2d(shape: Shape, tokens_shape: Shape, is_bool: bool) -> None:
    """A (batch, seq) padding mask of the course's convention (1 = padding), with the tokens' shape."""
    if is_bool:
        raise TypeError("padding_mask must be float or int with 1 = padding (the course's convention), "
                        "not bool; Hugging Face's attention_mask is its complement: 1 - attention_mask")
    if tuple(shape) != tuple(tokens_shape):
        raise ValueError(f"padding_mask must have the tokens' shape {tuple(tokens_shape)} (batch, seq), "
                         f"got {tuple(shape)}")
