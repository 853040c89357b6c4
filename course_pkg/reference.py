"""NumPy reference implementation: the oracle both frameworks are held to.

Every function here is written for clarity, not speed, straight from the paper
(Vaswani et al., 2017). Layers take a ``params`` dict of NumPy arrays with the
canonical names that :func:`course_pkg.interop.get_weights` returns for the
same component, e.g. ``{"wq.kernel": (d_model, d_model), "wq.bias": ..., ...}``
for multi-head attention. Dense kernels have the Keras layout ``(in, out)``,
so a dense layer is ``x @ kernel + bias``.

Masks follow the course convention: float, 1.0 = blocked, 0.0 = may attend.

Shapes: ``batch`` sequences (or sentence pairs) of ``seq`` positions, ``src_len``
and ``tgt_len`` on the source and target sides, ``T`` target positions in the
training formulas; ``...`` any leading axes. ``d_model`` is the model width,
``heads`` the attention heads of ``depth`` features; ``Tq`` queries of depth
``dk`` attend to ``Tk`` keys (values of depth ``dv``); ``length`` counts the rows
of the position table. ``units`` is the GRU width (``u`` in its formulas, ``3u``
for its three gates), ``query_dim``/``key_dim`` the widths of an RNN attention's
queries and keys, ``in``/``out`` a dense kernel's input and output widths,
``vocab`` the (target) vocabulary size.

The training formulas (masked loss, label smoothing, the Noam schedule),
greedy decoding's step, the parameter counts at the end, and chapter 7's prefix-LM mask,
top-k probabilities and masked-LM corruption are also the reference answers of the
course's exercises (``course_pkg.exercises``).
"""

from __future__ import annotations

import math

import numpy as np

LAYER_NORM_EPSILON = 1e-6


# ----------------------------------------------------------------------------- masks
def create_padding_mask(tokens, pad_id=0):
    """1.0 where ``tokens == pad_id``. Shape: (batch, seq) -> (batch, 1, 1, seq)."""
    tokens = np.asarray(tokens)
    return (tokens == pad_id).astype(np.float32)[:, np.newaxis, np.newaxis, :]


def create_look_ahead_mask(size):
    """1.0 strictly above the diagonal. Shape: (size, size)."""
    return np.triu(np.ones((size, size), dtype=np.float32), k=1)


def create_combined_mask(tokens, pad_id=0):
    """Element-wise max of look-ahead and padding masks. Shape: (batch, 1, seq, seq)."""
    tokens = np.asarray(tokens)
    return np.maximum(create_look_ahead_mask(tokens.shape[1]), create_padding_mask(tokens, pad_id))


def prefix_lm_mask(tokens, prompt_lengths, pad_id=0):
    """A decoder-only model's mask when the prompt is read both ways (a prefix LM, as in T5's study).

    Position ``i`` of row ``b`` may attend to key ``j`` when ``j`` is not padding and either
    ``j <= i`` (the causal rule) or ``j < prompt_lengths[b]`` (the whole prompt, the future
    included). With every prompt length 0 it is :func:`create_combined_mask`.

    Shape: tokens (batch, seq), prompt_lengths (batch,) -> (batch, 1, seq, seq).
    """
    tokens = np.asarray(tokens)
    seq = tokens.shape[1]
    causal = np.arange(seq)[np.newaxis, :] <= np.arange(seq)[:, np.newaxis]  # (seq, seq): j <= i
    prompt = np.arange(seq)[np.newaxis, :] < np.asarray(prompt_lengths)[:, np.newaxis]  # (batch, seq)
    visible = (causal[np.newaxis] | prompt[:, np.newaxis, :]) & (tokens != pad_id)[:, np.newaxis, :]
    return (~visible).astype(np.float32)[:, np.newaxis]


# ------------------------------------------------------------------------- attention
def softmax(x, axis=-1):
    """Numerically stable softmax."""
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_dot_product_attention(query, key, value, mask=None):
    """softmax(q kᵀ / √d_k) v, with masked weights exactly 0.

    Shape: (..., Tq, dk), (..., Tk, dk), (..., Tk, dv) -> (..., Tq, dv), (..., Tq, Tk).
    A fully masked row gets all-zero weights (and a zero output).
    """
    query, key, value = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    logits = query @ np.swapaxes(key, -1, -2) / np.sqrt(key.shape[-1])  # (..., Tq, Tk)
    if mask is None:
        weights = softmax(logits)
    else:
        blocked = np.broadcast_to(np.asarray(mask) != 0, logits.shape)
        weights = softmax(np.where(blocked, np.finfo(logits.dtype).min, logits))
        weights = np.where(blocked, 0.0, weights)
    return weights @ value, weights


def dense(params, x, name):
    """``x @ params[name.kernel] + params[name.bias]``."""
    return x @ params[f"{name}.kernel"] + params[f"{name}.bias"]


def sub(params, prefix):
    """The entries of ``params`` below ``prefix``, with the prefix removed."""
    start = prefix + "."
    return {k[len(start):]: v for k, v in params.items() if k.startswith(start)}


def split_heads(x, num_heads):
    """Shape: (batch, seq, d_model) -> (batch, heads, seq, depth)."""
    batch, seq, d_model = x.shape
    return x.reshape(batch, seq, num_heads, d_model // num_heads).transpose(0, 2, 1, 3)


def combine_heads(x):
    """Shape: (batch, heads, seq, depth) -> (batch, seq, heads * depth)."""
    batch, heads, seq, depth = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, seq, heads * depth)


def multi_head_attention(params, query, key, value, num_heads, mask=None):
    """Multi-head attention with the weights ``wq, wk, wv, wo`` in ``params``.

    Shape: (batch, Tq, d_model), (batch, Tk, d_model) x2 ->
    (batch, Tq, d_model), (batch, heads, Tq, Tk).
    """
    q = split_heads(dense(params, np.asarray(query, np.float64), "wq"), num_heads)
    k = split_heads(dense(params, np.asarray(key, np.float64), "wk"), num_heads)
    v = split_heads(dense(params, np.asarray(value, np.float64), "wv"), num_heads)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return dense(params, combine_heads(out), "wo"), weights


# --------------------------------------------------------------- position and layers
def positional_encoding(length, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...). Shape: (length, d_model)."""
    pos = np.arange(length, dtype=np.float64)[:, np.newaxis]  # (length, 1)
    two_i = (np.arange(d_model) // 2 * 2).astype(np.float64)  # 0, 0, 2, 2, 4, 4, ...
    angles = pos / np.power(10000.0, two_i / d_model)  # (length, d_model)
    pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return pe.astype(np.float32)


def positional_embedding(params, tokens):
    """Embedding × √d_model + positional encoding. Shape: (batch, seq) -> (batch, seq, d_model)."""
    table = params["token_embedding.embeddings"]
    d_model = table.shape[1]
    x = table[np.asarray(tokens)].astype(np.float64) * np.sqrt(d_model)
    return x + positional_encoding(x.shape[1], d_model)


def learned_positional_encoding(params, x, start=0):
    """``x + table[start:start + seq]`` with the learned table ``table.embeddings`` (max_len, d_model).

    Shape: (batch, seq, d_model) -> (batch, seq, d_model).
    """
    x = np.asarray(x, np.float64)
    table = params["table.embeddings"]
    if start + x.shape[1] > table.shape[0]:
        raise ValueError(f"positions {start}..{start + x.shape[1] - 1} exceed the table's "
                         f"{table.shape[0]} rows")
    return x + table[start:start + x.shape[1]]


def layer_norm(params, x, eps=LAYER_NORM_EPSILON):
    """LayerNorm over the last axis with ``gamma``, ``beta``."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * params["gamma"] + params["beta"]


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    """Exact GELU: x Φ(x) = 0.5 x (1 + erf(x / √2)) (BERT)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def gelu_tanh(x):
    """GELU's tanh approximation: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))) (GPT-2's gelu_new)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "gelu": gelu, "gelu_tanh": gelu_tanh}


def feed_forward(params, x, activation="relu"):
    """act(x W1 + b1) W2 + b2, act = max(0, .) in the paper. Shape: (..., d_model) -> (..., d_model)."""
    return dense(params, ACTIVATIONS[activation](dense(params, np.asarray(x, np.float64), "w1")), "w2")


def encoder_layer(params, x, num_heads, mask=None, norm_first=False, activation="relu",
                  eps=LAYER_NORM_EPSILON):
    """Encoder layer, post-LN (the paper) or pre-LN (``norm_first``).

    Returns ``(x, self_attention_weights)``.
    """
    x = np.asarray(x, np.float64)
    norm1, norm2 = sub(params, "norm1"), sub(params, "norm2")
    if norm_first:
        h = layer_norm(norm1, x, eps)
        attn, weights = multi_head_attention(sub(params, "self_attn"), h, h, h, num_heads, mask)
        x = x + attn
        x = x + feed_forward(sub(params, "ffn"), layer_norm(norm2, x, eps), activation)
        return x, weights
    attn, weights = multi_head_attention(sub(params, "self_attn"), x, x, x, num_heads, mask)
    x = layer_norm(norm1, x + attn, eps)
    x = layer_norm(norm2, x + feed_forward(sub(params, "ffn"), x, activation), eps)
    return x, weights


def decoder_layer(params, x, enc_output, num_heads, look_ahead_mask=None, padding_mask=None,
                  norm_first=False, activation="relu", eps=LAYER_NORM_EPSILON, cross_attention=True):
    """Decoder layer, post-LN or pre-LN; without its cross-attention when ``cross_attention`` is False.

    Returns ``(x, self_weights, cross_weights)`` (``cross_weights`` None without cross-attention).
    """
    x = np.asarray(x, np.float64)
    norm = lambda i, y: layer_norm(sub(params, f"norm{i}"), y, eps)  # noqa: E731
    self_attend = lambda h: multi_head_attention(  # noqa: E731
        sub(params, "self_attn"), h, h, h, num_heads, look_ahead_mask)
    cross_attend = lambda h: multi_head_attention(  # noqa: E731
        sub(params, "cross_attn"), h, enc_output, enc_output, num_heads, padding_mask)
    ffn = lambda h: feed_forward(sub(params, "ffn"), h, activation)  # noqa: E731
    cross_w = None
    if norm_first:
        attn, self_w = self_attend(norm(1, x))
        x = x + attn
        if cross_attention:
            attn, cross_w = cross_attend(norm(2, x))
            x = x + attn
        return x + ffn(norm(3, x)), self_w, cross_w
    attn, self_w = self_attend(x)
    x = norm(1, x + attn)
    if cross_attention:
        attn, cross_w = cross_attend(x)
        x = norm(2, x + attn)
    return norm(3, x + ffn(x)), self_w, cross_w


def _num_layers(params):
    return len({k.split(".")[1] for k in params if k.startswith("layers.")})


def encoder(params, tokens, num_heads, mask=None, norm_first=False, activation="relu",
            eps=LAYER_NORM_EPSILON):
    """Embedding + N encoder layers (+ the final LayerNorm when pre-LN).

    Returns ``(x, [weights per layer])``.
    """
    x = positional_embedding(sub(params, "embedding"), tokens)
    maps = []
    for i in range(_num_layers(params)):
        x, w = encoder_layer(sub(params, f"layers.{i}"), x, num_heads, mask, norm_first, activation, eps)
        maps.append(w)
    if norm_first:
        x = layer_norm(sub(params, "final_norm"), x, eps)
    return x, maps


def decoder(params, tokens, enc_output, num_heads, look_ahead_mask=None, padding_mask=None,
            norm_first=False, activation="relu", eps=LAYER_NORM_EPSILON, cross_attention=True):
    """Embedding + N decoder layers (+ the final LayerNorm when pre-LN).

    Returns ``(x, [self per layer], [cross per layer])``.
    """
    x = positional_embedding(sub(params, "embedding"), tokens)
    self_maps, cross_maps = [], []
    for i in range(_num_layers(params)):
        x, s, c = decoder_layer(
            sub(params, f"layers.{i}"), x, enc_output, num_heads, look_ahead_mask, padding_mask,
            norm_first, activation, eps, cross_attention
        )
        self_maps.append(s)
        cross_maps.append(c)
    if norm_first:
        x = layer_norm(sub(params, "final_norm"), x, eps)
    return x, self_maps, cross_maps


def transformer(params, src, tgt, num_heads, pad_id=0):
    """The whole model. Returns ``(logits, attention_maps)``.

    ``attention_maps`` has the keys ``encoder_self``, ``decoder_self`` and
    ``decoder_cross``, each a list with one (batch, heads, Tq, Tk) array per layer.
    """
    src_mask = create_padding_mask(src, pad_id)  # (batch, 1, 1, src_len)
    tgt_mask = create_combined_mask(tgt, pad_id)  # (batch, 1, tgt_len, tgt_len)
    enc, enc_maps = encoder(sub(params, "encoder"), src, num_heads, src_mask)
    dec, self_maps, cross_maps = decoder(sub(params, "decoder"), tgt, enc, num_heads, tgt_mask, src_mask)
    logits = dense(params, dec, "final_layer")  # (batch, tgt_len, vocab)
    return logits, {"encoder_self": enc_maps, "decoder_self": self_maps, "decoder_cross": cross_maps}


# ============================================================================
# The model families (chapter 7): BERT, GPT, sampling filters
# ============================================================================
def bert(params, tokens, num_heads, segment_ids=None, padding_mask=None, activation="gelu", eps=1e-12):
    """BERT: embeddings (token + position + segment, LayerNorm), post-LN encoder layers, pooler, MLM head.

    ``padding_mask`` is (batch, seq), 1.0 at padding. Returns ``(sequence_output, pooled, mlm_logits)``.

    Shape: tokens (batch, seq) -> (batch, seq, d_model), (batch, d_model), (batch, seq, vocab).
    """
    tokens = np.asarray(tokens)
    segment_ids = np.zeros_like(tokens) if segment_ids is None else np.asarray(segment_ids)
    table = params["token_embedding.embeddings"].astype(np.float64)
    x = table[tokens] + params["segment_embedding.embeddings"][segment_ids]
    x = learned_positional_encoding(sub(params, "position_embedding"), x)
    x = layer_norm(sub(params, "embedding_norm"), x, eps)
    mask = None if padding_mask is None else np.asarray(padding_mask, np.float64)[:, None, None, :]
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, _ = encoder_layer(sub(params, f"blocks.{i}"), x, num_heads, mask, False, activation, eps)
    pooled = np.tanh(dense(params, x[:, 0], "pooler"))
    h = layer_norm(sub(params, "mlm_norm"), ACTIVATIONS[activation](dense(params, x, "mlm_dense")), eps)
    return x, pooled, h @ table.T + params["mlm_bias.bias"]


def gpt(params, tokens, num_heads, padding_mask=None, activation="gelu_tanh", eps=1e-5):
    """GPT: token + learned position embeddings, pre-LN decoder blocks without cross-attention under the
    causal mask, a final LayerNorm, the LM head (tied to the token embedding unless ``lm_head`` is given).

    ``padding_mask`` is (batch, seq), 1.0 at padding: padding keys are blocked and positions count real
    tokens only (a row's first real token is at position 0).

    Shape: tokens (batch, seq) -> logits (batch, seq, vocab).
    """
    tokens = np.asarray(tokens)
    pad = np.zeros(tokens.shape) if padding_mask is None else np.asarray(padding_mask, np.float64)
    positions = np.maximum(np.cumsum(1 - pad, axis=1) - 1, 0).astype(int)  # (batch, seq)
    table = params["token_embedding.embeddings"].astype(np.float64)
    x = table[tokens] + params["position_embedding.table.embeddings"][positions]
    mask = np.maximum(create_look_ahead_mask(tokens.shape[1]), pad[:, None, None, :])
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, _, _ = decoder_layer(sub(params, f"blocks.{i}"), x, None, num_heads, mask, None, True, activation,
                                eps, cross_attention=False)
    x = layer_norm(sub(params, "final_norm"), x, eps)
    return dense(params, x, "lm_head") if "lm_head.kernel" in params else x @ table.T


def top_k_filter(logits, k):
    """The ``k`` largest logits of each row kept (ties with the k-th too), the others -inf. Shape: kept."""
    logits = np.asarray(logits, np.float64)
    kth = np.sort(logits, axis=-1)[..., -min(k, logits.shape[-1])][..., None]
    return np.where(logits < kth, -np.inf, logits)


def top_p_filter(logits, p):
    """Keep a token when the probability of the tokens ranked above it is below ``p``; the others -inf."""
    logits = np.asarray(logits, np.float64)
    order = np.argsort(-logits, axis=-1, kind="stable")
    probs = softmax(np.take_along_axis(logits, order, axis=-1))
    before = np.cumsum(probs, axis=-1) - probs
    remove = np.empty_like(before, dtype=bool)
    np.put_along_axis(remove, order, before >= p, axis=-1)
    return np.where(remove, -np.inf, logits)


# ============================================================================
# RNN seq2seq (GRU encoder-decoder, Bahdanau / Luong attention)
# ============================================================================
# GRU weights have the canonical (Keras, reset_after=True) layout: ``kernel``
# (in, 3u), ``recurrent_kernel`` (u, 3u), ``bias`` (2, 3u) = (input bias,
# recurrent bias), gates ordered (z, r, h) along the last axis.
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return 1.0 / (1.0 + np.exp(-x))


def gru_cell(params, x, h):
    """One GRU step (Keras' reset_after=True form, which is also PyTorch's).

    z = σ(x W_z + b_z + h U_z + c_z), r = σ(x W_r + b_r + h U_r + c_r),
    h~ = tanh(x W_h + b_h + r (h U_h + c_h)), h' = z h + (1 - z) h~.

    Shape: x (batch, in), h (batch, units) -> (batch, units).
    """
    u = h.shape[-1]
    xw = x @ params["kernel"] + params["bias"][0]  # (batch, 3u)
    hu = h @ params["recurrent_kernel"] + params["bias"][1]  # (batch, 3u)
    z = sigmoid(xw[:, :u] + hu[:, :u])
    r = sigmoid(xw[:, u:2 * u] + hu[:, u:2 * u])
    candidate = np.tanh(xw[:, 2 * u:] + r * hu[:, 2 * u:])
    return z * h + (1.0 - z) * candidate


def gru(params, x, h):
    """A GRU over the time axis.

    Shape: x (batch, seq, in), h (batch, units) -> (batch, seq, units), (batch, units).
    """
    outputs = []
    for t in range(x.shape[1]):
        h = gru_cell(params, x[:, t], h)
        outputs.append(h)
    return np.stack(outputs, axis=1), h


def _project(params, x, name):
    """A dense layer, with or without ``<name>.bias``."""
    return x @ params[f"{name}.kernel"] + params.get(f"{name}.bias", 0.0)


def masked_softmax(scores, mask=None):
    """Softmax over the last axis; blocked (mask != 0) entries exactly 0, full rows all 0."""
    if mask is None:
        return softmax(scores)
    blocked = np.broadcast_to(np.asarray(mask) != 0, scores.shape)
    weights = softmax(np.where(blocked, np.finfo(scores.dtype).min, scores))
    return np.where(blocked, 0.0, weights)


def bahdanau_attention(params, query, keys, mask=None):
    """score = vᵀ tanh(W1 q + W2 k) with bias-free ``w1, w2, v``.

    Shape: (batch, Tq, query_dim), (batch, Tk, key_dim) -> (batch, Tq, key_dim), (batch, Tq, Tk).
    """
    query, keys = np.asarray(query, np.float64), np.asarray(keys, np.float64)
    q = _project(params, query, "w1")[:, :, np.newaxis, :]  # (batch, Tq, 1, units)
    k = _project(params, keys, "w2")[:, np.newaxis, :, :]  # (batch, 1, Tk, units)
    scores = _project(params, np.tanh(q + k), "v")[..., 0]  # (batch, Tq, Tk)
    weights = masked_softmax(scores, mask)
    return weights @ keys, weights


def luong_attention(params, query, keys, score="dot", mask=None):
    """score = qᵀ k (``"dot"``) or qᵀ W k (``"general"``, bias-free ``w``); not scaled.

    Shape: (batch, Tq, units), (batch, Tk, key_dim) -> (batch, Tq, key_dim), (batch, Tq, Tk).
    """
    query, keys = np.asarray(query, np.float64), np.asarray(keys, np.float64)
    k = _project(params, keys, "w") if score == "general" else keys  # (batch, Tk, units)
    weights = masked_softmax(query @ np.swapaxes(k, -1, -2), mask)  # (batch, Tq, Tk)
    return weights @ keys, weights


def seq2seq_encoder(params, tokens, pad_id=0):
    """Embedding + GRU; the state is the output at the last non-pad token (zeros if none).

    Shape: (batch, src_len) -> outputs (batch, src_len, units), state (batch, units).
    """
    tokens = np.asarray(tokens)
    x = params["embedding.embeddings"][tokens].astype(np.float64)
    units = params["rnn.recurrent_kernel"].shape[0]
    outputs, _ = gru(sub(params, "rnn"), x, np.zeros((tokens.shape[0], units)))
    state = np.zeros((tokens.shape[0], units))
    for b in range(tokens.shape[0]):
        real = np.nonzero(tokens[b] != pad_id)[0]
        if real.size:
            state[b] = outputs[b, real[-1]]
    return outputs, state


def seq2seq_decoder(params, tokens, state, context=None):
    """Decoder without attention: the fixed ``context`` (default ``state``) joins every input.

    Shape: (batch, tgt_len), (batch, units) -> logits (batch, tgt_len, vocab), state (batch, units).
    """
    state = np.asarray(state, np.float64)
    context = state if context is None else np.asarray(context, np.float64)
    x = params["embedding.embeddings"][np.asarray(tokens)].astype(np.float64)
    context = np.broadcast_to(context[:, np.newaxis, :], x.shape[:2] + context.shape[-1:])
    outputs, state = gru(sub(params, "rnn"), np.concatenate([x, context], axis=-1), state)
    return dense(params, outputs, "final_layer"), state


def attention_decoder(params, tokens, enc_output, state, padding_mask=None, attention="bahdanau"):
    """Decoder with attention; the query at step t is the previous state s_{t-1}.

    Returns ``(logits (batch, tgt_len, vocab), state (batch, units), weights (batch, tgt_len, src_len))``.
    """
    state, enc_output = np.asarray(state, np.float64), np.asarray(enc_output, np.float64)
    x = params["embedding.embeddings"][np.asarray(tokens)].astype(np.float64)
    att = sub(params, "attention")
    states, weights = [], []
    for t in range(x.shape[1]):
        if attention == "bahdanau":
            context, w = bahdanau_attention(att, state[:, np.newaxis], enc_output, padding_mask)
        else:
            context, w = luong_attention(att, state[:, np.newaxis], enc_output,
                                         attention[len("luong_"):], padding_mask)
        state = gru_cell(sub(params, "rnn"), np.concatenate([x[:, t], context[:, 0]], axis=-1), state)
        states.append(state)
        weights.append(w[:, 0])
    logits = dense(params, np.stack(states, axis=1), "final_layer")
    return logits, state, np.stack(weights, axis=1)


def seq2seq(params, src, tgt, attention=None, pad_id=0):
    """The whole RNN seq2seq model. Returns ``(logits, weights)``; ``weights`` is None without attention."""
    enc_output, state = seq2seq_encoder(sub(params, "encoder"), src, pad_id)
    if attention is None:
        logits, _ = seq2seq_decoder(sub(params, "decoder"), tgt, state)
        return logits, None
    src_mask = (np.asarray(src) == pad_id).astype(np.float64)[:, np.newaxis, :]  # (batch, 1, src_len)
    logits, _, weights = attention_decoder(sub(params, "decoder"), tgt, enc_output, state, src_mask,
                                           attention)
    return logits, weights


# ============================================================================
# Training: teacher forcing, the masked loss with label smoothing, the Noam schedule
# ============================================================================
def teacher_forcing(target, bos_id=1, eos_id=2):
    """What the decoder reads and what it must predict: ``(<bos> y, y <eos>)``.

    Shape: a list of ``T`` ids -> two lists of ``T + 1`` ids.
    """
    return [bos_id] + list(target), list(target) + [eos_id]


def log_softmax(x, axis=-1):
    """Numerically stable log-softmax, in float64."""
    x = np.asarray(x, dtype=np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def smoothed_targets(labels, vocab_size, epsilon):
    """``(1 - ε) · one_hot(label) + ε / vocab_size``, as Keras and torch smooth labels.

    Shape: (...) int -> (..., vocab).
    """
    return (1 - epsilon) * np.eye(vocab_size)[np.asarray(labels)] + epsilon / vocab_size


def masked_loss(labels, logits, pad_id=0, label_smoothing=0.0):
    """Cross-entropy against :func:`smoothed_targets`, averaged over the labels that are not ``pad_id``.

    ``label_smoothing = 0`` gives the plain cross-entropy ``-log p[label]``; a
    batch whose labels are all ``pad_id`` gives 0.

    Shape: labels (batch, T) int, logits (batch, T, vocab) -> ().
    """
    labels = np.asarray(labels)
    log_probs = log_softmax(logits)  # (batch, T, vocab)
    keep = labels != pad_id  # (batch, T)
    safe = np.where(keep, labels, 0)  # (batch, T): pad ids may lie outside the vocabulary
    targets = smoothed_targets(safe, log_probs.shape[-1], label_smoothing)  # (batch, T, vocab)
    per_token = -(targets * log_probs).sum(axis=-1)  # (batch, T)
    return (per_token * keep).sum() / max(keep.sum(), 1)


def noam_learning_rate(step, d_model=None, warmup_steps=4000, peak_learning_rate=None):
    """The paper's schedule: ``d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5)``.

    Linear warm-up to the peak at ``step = warmup_steps``, then decay as
    1/√step. Optimizers count from 0: step 0 gets the step-1 value. Given
    ``peak_learning_rate`` instead of ``d_model``, the same curve scaled so that
    its peak is that rate: ``peak · min(step / warmup_steps, √(warmup_steps / step))``.
    """
    step = max(step, 1)
    if peak_learning_rate is not None:
        return peak_learning_rate * min(step / warmup_steps, (warmup_steps / step) ** 0.5)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


# ============================================================================
# Decoding and parameter counts
# ============================================================================
def greedy_step(logits, done, pad_id=0):
    """One step of greedy decoding: each row's most likely id, ``pad_id`` for rows already done.

    Shape: logits (batch, vocab), done (batch,) bool -> (batch,) int.
    """
    return np.where(np.asarray(done), pad_id, np.argmax(np.asarray(logits), axis=-1))


def top_k_probabilities(logits, k, temperature=1.0):
    """The distribution that top-k sampling draws from: softmax of ``logits / temperature``
    over each row's ``k`` largest logits, 0 elsewhere (ties at the k-th value are all kept).

    Shape: logits (..., vocab) -> (..., vocab), each row summing to 1.
    """
    logits = np.asarray(logits, dtype=np.float64) / temperature
    kth = np.sort(logits, axis=-1)[..., -k][..., np.newaxis]  # (..., 1): the k-th largest
    return softmax(np.where(logits >= kth, logits, -np.inf))


def top_p_probabilities(logits, p, temperature=1.0):
    """The distribution that top-p (nucleus) sampling draws from: the smallest set of most
    likely tokens whose probabilities reach ``p``, renormalised; 0 elsewhere.

    Shape: logits (..., vocab) -> (..., vocab), each row summing to 1.
    """
    probs = softmax(np.asarray(logits, dtype=np.float64) / temperature)
    order = np.argsort(-probs, axis=-1, kind="stable")
    sorted_probs = np.take_along_axis(probs, order, axis=-1)
    before = np.cumsum(sorted_probs, axis=-1) - sorted_probs  # mass of the more likely tokens
    keep_sorted = before < p  # the most likely token is always kept
    keep = np.zeros_like(keep_sorted)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    kept = np.where(keep, probs, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def mlm_inputs(tokens, select_draws, action_draws, random_tokens, mask_id, rate, special_ids=(0, 1, 2, 3)):
    """BERT's masked-LM corruption (the 80/10/10 rule) for given uniform draws.

    A token that is neither special nor ``mask_id`` is chosen where ``select_draws < rate``; a
    chosen token becomes ``mask_id`` where ``action_draws < 0.8``, ``random_tokens`` where
    ``0.8 <= action_draws < 0.9``, and stays as it is otherwise. The labels hold the original
    token at the chosen positions and 0 (``<pad>``, skipped by the loss) elsewhere.
    :func:`course_pkg.data.mask_for_mlm` draws the three arrays from a generator.

    Shape: every argument (batch, seq) -> (inputs (batch, seq), labels (batch, seq)).
    """
    tokens = np.asarray(tokens)
    chosen = ~np.isin(tokens, list(special_ids) + [mask_id]) & (np.asarray(select_draws) < rate)
    action = np.asarray(action_draws)
    inputs = np.where(chosen & (action < 0.8), mask_id, tokens)
    inputs = np.where(chosen & (action >= 0.8) & (action < 0.9), np.asarray(random_tokens), inputs)
    return inputs, np.where(chosen, tokens, 0)


def gru_parameters(input_dim, units):
    """Trainable parameters of Keras' ``GRU`` (reset_after=True) and ``torch.nn.GRU`` alike.

    3 gates, each with an input kernel, a recurrent kernel and two biases.
    """
    return 3 * (input_dim * units + units * units + 2 * units)


def encoder_layer_parameters(d_model, dff):
    """Trainable parameters of an encoder layer: multi-head attention (4 dense layers),
    the feed-forward network, 2 layer norms."""
    return 4 * (d_model * d_model + d_model) + (d_model * dff + dff) + (dff * d_model + d_model) \
        + 2 * 2 * d_model


def decoder_layer_parameters(d_model, dff):
    """Trainable parameters of a decoder layer: two multi-head attentions, the
    feed-forward network, 3 layer norms."""
    return 8 * (d_model * d_model + d_model) + (d_model * dff + dff) + (dff * d_model + d_model) \
        + 3 * 2 * d_model


# ----------------------------------------------------------------------------- vision (chapter 8)
# Images are channels-last, ``(batch, height, width, channels)``, as in Keras; a ``p``×``p``
# patch is flattened row by row, each pixel's channels together: index (row·p + col)·C + channel.
# ``patches`` = (height / p)·(width / p); ``tokens`` = patches + 1 with a class token.

def patchify(images, patch_size):
    """Cut images into non-overlapping ``patch_size`` × ``patch_size`` patches, row by row, each flattened.

    Shape: (batch, height, width, channels) -> (batch, patches, patch_size · patch_size · channels).
    """
    images = np.asarray(images)
    batch, height, width, channels = images.shape
    p = patch_size
    x = images.reshape(batch, height // p, p, width // p, p, channels)
    x = x.transpose(0, 1, 3, 2, 4, 5)  # (batch, rows, cols, p, p, channels)
    return x.reshape(batch, (height // p) * (width // p), p * p * channels)


def patch_embedding(params, images, patch_size):
    """Each patch through one dense layer ``projection``: a strided convolution written as a
    matrix product. Shape: (batch, height, width, channels) -> (batch, patches, d_model)."""
    return dense(params, patchify(np.asarray(images, np.float64), patch_size), "projection")


def conv_stem(params, images):
    """A ViT's convolutional stem: per layer ``stem.<i>`` a 3 × 3 convolution (stride 1, zero
    padding keeping the size) whose kernel is a dense kernel over each pixel's 3 × 3 window
    flattened like a patch, then GELU.

    Shape: (batch, height, width, channels) -> (batch, height, width, stem_channels[-1])."""
    x = np.asarray(images, np.float64)
    i = 0
    while f"stem.{i}.kernel" in params:
        batch, height, width, channels = x.shape
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        windows = np.stack([padded[:, r:r + height, c:c + width] for r in range(3) for c in range(3)],
                           axis=3)  # (batch, height, width, 9, channels), row by row
        x = gelu(dense(params, windows.reshape(batch, height, width, 9 * channels), f"stem.{i}"))
        i += 1
    return x


def vit_features(params, images, patch_size, num_heads, pooling="cls", eps=LAYER_NORM_EPSILON,
                 activation="gelu"):
    """The ViT's token sequence after its final layer norm (Hugging Face's ``last_hidden_state``).

    The convolutional stem first if ``params`` has one (``stem.0.kernel``, see :func:`conv_stem`),
    then the patches' embeddings, the class token in front (``pooling="cls"``; none with
    ``"mean"``), plus the learned position table; then the pre-LN encoder layers and
    ``final_norm``. Returns ``(features, [attention weights per layer])``.

    Shape: (batch, height, width, channels) -> (batch, tokens, d_model),
    weights (batch, heads, tokens, tokens).
    """
    if "stem.0.kernel" in params:
        images = conv_stem(params, images)  # (batch, height, width, stem_channels)
    x = patch_embedding(sub(params, "patch_embedding"), images, patch_size)  # (batch, patches, d)
    if pooling == "cls":
        cls = np.asarray(params["class_token.embeddings"], np.float64)  # (1, d_model)
        x = np.concatenate([np.broadcast_to(cls, (x.shape[0], 1, x.shape[2])), x], axis=1)
    x = learned_positional_encoding(sub(params, "position_embedding"), x)  # (batch, tokens, d_model)
    maps = []
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, weights = encoder_layer(sub(params, f"blocks.{i}"), x, num_heads, norm_first=True,
                                   activation=activation, eps=eps)
        maps.append(weights)
    return layer_norm(sub(params, "final_norm"), x, eps), maps


def vit(params, images, patch_size, num_heads, pooling="cls", eps=LAYER_NORM_EPSILON,
        activation="gelu"):
    """The ViT: :func:`vit_features`, pooled (the class token's vector, or the mean over the
    patches), then the classification ``head`` if ``params`` has one.

    Returns ``(logits or pooled features, [attention weights per layer])``.
    Shape: (batch, height, width, channels) -> (batch, classes) or (batch, d_model).
    """
    x, maps = vit_features(params, images, patch_size, num_heads, pooling, eps, activation)
    pooled = x[:, 0] if pooling == "cls" else x.mean(axis=1)  # (batch, d_model)
    if "head.kernel" in params:
        return dense(params, pooled, "head"), maps
    return pooled, maps


def attention_rollout(maps, residual=0.5):
    """Attention rollout (Abnar and Zuidema, 2020): how much each token draws on each input token
    through all layers. Per layer, heads averaged and the residual path added,
    ``A = residual·I + (1 - residual)·mean_heads(weights)``; the layers' ``A`` multiplied.

    Shape: [(batch, heads, tokens, tokens) per layer] -> (batch, tokens, tokens); rows sum to 1.
    """
    rollout = None
    for weights in maps:
        a = np.asarray(weights, np.float64).mean(axis=1)  # (batch, tokens, tokens)
        a = residual * np.eye(a.shape[-1]) + (1.0 - residual) * a
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a if rollout is None else a @ rollout
    return rollout


def vit_embedding_parameters(image_size, patch_size, num_channels, d_model):
    """``(tokens, parameters)`` of a ViT's input side: the patches plus the class token, and the
    trainable parameters of the patch projection, the class token and the position table."""
    tokens = (image_size // patch_size) ** 2 + 1
    projection = patch_size * patch_size * num_channels * d_model + d_model
    return tokens, projection + d_model + tokens * d_model
