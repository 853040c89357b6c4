"""RNN encoder-decoder (seq2seq) with and without attention, the Transformer's predecessor.

A GRU encoder reads the source; a GRU decoder writes the target either from one
fixed context vector, the encoder's final state (Cho et al., 2014), or while
attending over every encoder output (Bahdanau et al., 2015; Luong et al., 2015).

The recurrent layer is a single-layer GRU in the form Keras calls
``reset_after=True``, which is also PyTorch's (gates ordered z, r, h as in Keras)::

    z  = sigmoid(x W_z + b_z + h U_z + c_z)        update gate
    r  = sigmoid(x W_r + b_r + h U_r + c_r)        reset gate
    h~ = tanh(x W_h + b_h + r * (h U_h + c_h))     candidate
    h' = z * h + (1 - z) * h~

Both frameworks initialise it like Keras: Glorot-uniform input kernel W,
orthogonal recurrent kernel U, zero biases b and c.
"""

import torch
from torch import nn

from .._checks import (
    check_attention_mask,
    check_batch,
    check_choice,
    check_features,
    check_pad_id,
    check_positive,
    check_state,
    check_token_dtype,
    check_token_range,
    check_token_rank,
    unpack_pair,
)
from ._layers import dense, embedding, is_integer
from .masks import create_padding_mask

ATTENTION_TYPES = ("bahdanau", "luong_dot", "luong_general")
LUONG_SCORES = ("dot", "general")


# ------------------------------------------------------------------------ leaf layers
def _gru(input_size, units):
    """``nn.GRU`` (one layer, batch-first) initialised like Keras' ``GRU``.

    Glorot-uniform ``weight_ih``, orthogonal ``weight_hh``, zero biases.

    Shape:
        x (batch, seq, input_size), h0 (1, batch, units) ->
        outputs (batch, seq, units), h (1, batch, units).
    """
    layer = nn.GRU(input_size, units, batch_first=True)
    nn.init.xavier_uniform_(layer.weight_ih_l0)
    nn.init.orthogonal_(layer.weight_hh_l0)
    nn.init.zeros_(layer.bias_ih_l0)
    nn.init.zeros_(layer.bias_hh_l0)
    return layer


def _gru_cell(input_size, units):
    """``nn.GRUCell`` initialised like Keras' ``GRUCell``.

    Shape:
        x (batch, input_size), h (batch, units) -> h (batch, units).
    """
    cell = nn.GRUCell(input_size, units)
    nn.init.xavier_uniform_(cell.weight_ih)
    nn.init.orthogonal_(cell.weight_hh)
    nn.init.zeros_(cell.bias_ih)
    nn.init.zeros_(cell.bias_hh)
    return cell


def _projection(in_features, out_features):
    """A dense layer without bias (Glorot-uniform kernel), as in the attention papers."""
    layer = nn.Linear(in_features, out_features, bias=False)
    nn.init.xavier_uniform_(layer.weight)
    return layer


def _check_tokens(tokens, vocab_size):
    """Raise ``TypeError``/``ValueError`` unless ``tokens`` are ``(batch, length >= 1)`` ids."""
    check_token_dtype(is_integer(tokens), str(tokens.dtype))
    check_token_rank(tokens.shape)
    if tokens.shape[1] == 0:
        raise ValueError("token ids must hold at least one position, got length 0")
    if tokens.numel():
        check_token_range(int(tokens.min()), int(tokens.max()), vocab_size)


def _masked_softmax(scores, mask=None):
    """Softmax over the last axis in float32; blocked (mask != 0) keys get exactly 0.

    A fully blocked row gets all-zero weights (never NaN), as in
    :func:`~course_pkg.torch.scaled_dot_product_attention`.
    """
    scores = scores.float()  # (batch, Tq, Tk)
    if mask is not None:
        mask = torch.as_tensor(mask, device=scores.device)
        check_attention_mask(mask.shape, scores.shape)
        blocked = mask != 0  # (batch, Tq, Tk) after broadcasting
        scores = scores.masked_fill(blocked, torch.finfo(torch.float32).min)
    weights = torch.softmax(scores, dim=-1)  # (batch, Tq, Tk)
    if mask is not None:
        weights = weights.masked_fill(blocked, 0.0)  # exact zeros, also in full rows
    return weights


# -------------------------------------------------------------------------- attention
class BahdanauAttention(nn.Module):
    """Additive attention (Bahdanau et al., 2015): score(q, k) = vᵀ tanh(W1 q + W2 k).

    The projections ``w1`` (query_dim -> units), ``w2`` (key_dim -> units) and
    ``v`` (units -> 1) have no bias, as in the paper. The keys are also the values.

    Args:
        units: width of the hidden layer inside the score.
        query_dim: width of the queries (default ``units``).
        key_dim: width of the keys (default ``units``).

    Call:
        ``attention(query, keys, mask=None)`` returns ``(context, weights)``.
        ``mask`` is a course mask (1.0 = blocked) that broadcasts to
        (batch, Tq, Tk), e.g. (batch, 1, Tk) for source padding. Blocked keys
        get a weight of exactly 0; a fully blocked row gets all-zero weights and
        a zero context (never NaN). The softmax runs in float32.

    Shape:
        query (batch, Tq, query_dim), keys (batch, Tk, key_dim), mask (batch, 1, Tk) ->
        context (batch, Tq, key_dim), weights (batch, Tq, Tk).
    """

    def __init__(self, units, query_dim=None, key_dim=None):
        super().__init__()
        query_dim = units if query_dim is None else query_dim
        key_dim = units if key_dim is None else key_dim
        check_positive(units=units, query_dim=query_dim, key_dim=key_dim)
        self.units, self.query_dim, self.key_dim = units, query_dim, key_dim
        self.w1 = _projection(query_dim, units)
        self.w2 = _projection(key_dim, units)
        self.v = _projection(units, 1)

    def forward(self, query, keys, mask=None):
        check_features(query.shape, self.query_dim, "query")
        check_features(keys.shape, self.key_dim, "keys")
        check_batch(query.shape[0], keys=keys.shape)
        q = self.w1(query)[:, :, None, :]  # (batch, Tq, 1, units)
        k = self.w2(keys)[:, None, :, :]  # (batch, 1, Tk, units)
        scores = self.v(torch.tanh(q + k))[..., 0]  # (batch, Tq, Tk)
        weights = _masked_softmax(scores, mask).to(keys.dtype)  # (batch, Tq, Tk)
        return torch.matmul(weights, keys), weights  # (batch, Tq, key_dim), (batch, Tq, Tk)

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"units": self.units, "query_dim": self.query_dim, "key_dim": self.key_dim}


class LuongAttention(nn.Module):
    """Multiplicative attention (Luong et al., 2015): score(q, k) = qᵀ k or qᵀ W k.

    ``score="dot"`` has no weights and needs queries and keys of equal width;
    ``score="general"`` learns ``w`` (key_dim -> units, no bias). Scores are
    not scaled (unlike the Transformer's √d_k). The keys are also the values.

    Args:
        units: width of the queries (and of the keys for ``"dot"``).
        score: ``"dot"`` or ``"general"``.
        key_dim: width of the keys (default ``units``); ``"dot"`` needs ``units``.

    Call:
        ``attention(query, keys, mask=None)`` returns ``(context, weights)``;
        masking as in :class:`BahdanauAttention`.

    Shape:
        query (batch, Tq, units), keys (batch, Tk, key_dim), mask (batch, 1, Tk) ->
        context (batch, Tq, key_dim), weights (batch, Tq, Tk).
    """

    def __init__(self, units, score="dot", key_dim=None):
        super().__init__()
        check_choice("score", score, LUONG_SCORES)
        key_dim = units if key_dim is None else key_dim
        check_positive(units=units, key_dim=key_dim)
        if score == "dot" and key_dim != units:
            raise ValueError(
                f'score="dot" needs keys as wide as the queries: key_dim={key_dim} != '
                f'units={units}; use score="general" to compare different widths'
            )
        self.units, self.score, self.key_dim = units, score, key_dim
        if score == "general":
            self.w = _projection(key_dim, units)

    def forward(self, query, keys, mask=None):
        check_features(query.shape, self.units, "query")
        check_features(keys.shape, self.key_dim, "keys")
        check_batch(query.shape[0], keys=keys.shape)
        k = self.w(keys) if self.score == "general" else keys  # (batch, Tk, units)
        scores = torch.matmul(query, k.transpose(1, 2))  # (batch, Tq, Tk)
        weights = _masked_softmax(scores, mask).to(keys.dtype)  # (batch, Tq, Tk)
        return torch.matmul(weights, keys), weights  # (batch, Tq, key_dim), (batch, Tq, Tk)

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"units": self.units, "score": self.score, "key_dim": self.key_dim}


# ---------------------------------------------------------------- encoder and decoders
class Seq2SeqEncoder(nn.Module):
    """Token embedding, then a single-layer GRU over the source.

    The final ``state`` is the GRU state after the last non-pad token of each
    sequence (trailing padding is skipped; a pad token inside a sequence is read
    like any other token; an all-pad sequence gets the zero initial state).
    ``outputs`` are computed at every position, pads included: mask them in the
    attention (the attention decoders take a source mask).

    Args:
        vocab_size: source vocabulary size.
        embedding_dim: embedding width.
        units: GRU width.
        pad_id: the padding token id.

    Shape:
        tokens (batch, src_len) int -> outputs (batch, src_len, units), state (batch, units).
    """

    def __init__(self, vocab_size, embedding_dim, units, pad_id=0):
        super().__init__()
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        check_pad_id(pad_id, vocab_size)
        self.vocab_size, self.embedding_dim, self.units, self.pad_id = vocab_size, embedding_dim, units, pad_id
        self.embedding = embedding(vocab_size, embedding_dim)
        self.rnn = _gru(embedding_dim, units)

    def forward(self, tokens):
        _check_tokens(tokens, self.vocab_size)
        x = self.embedding(tokens)  # (batch, src_len, embedding_dim)
        outputs, _ = self.rnn(x)  # (batch, src_len, units)
        positions = torch.arange(1, tokens.shape[1] + 1, device=tokens.device)  # (src_len,)
        lengths = torch.where(tokens != self.pad_id, positions, 0).amax(dim=1)  # (batch,) up to the last non-pad
        states = torch.cat([torch.zeros_like(outputs[:, :1]), outputs], dim=1)  # (batch, 1 + src_len, units)
        state = states[torch.arange(tokens.shape[0], device=tokens.device), lengths]  # (batch, units)
        return outputs, state

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"vocab_size": self.vocab_size, "embedding_dim": self.embedding_dim,
                "units": self.units, "pad_id": self.pad_id}


class Seq2SeqDecoder(nn.Module):
    """GRU decoder without attention, from a fixed context vector (Cho et al., 2014).

    The context (the encoder's final state) initialises the GRU and is also
    concatenated to every input embedding; ``final_layer`` maps each GRU output
    to the logits.

    Args:
        vocab_size: target vocabulary size (the logits' last axis).
        embedding_dim: embedding width.
        units: GRU width (the encoder's).

    Call:
        ``decoder(tokens, state, context=None)`` returns ``(logits, state)``.
        ``context`` defaults to ``state``, right for the full teacher-forced call
        from the encoder's state. To decode step by step, call with tgt_len = 1,
        feed back the returned state and pass the encoder's final state as
        ``context`` at every step: this gives the same logits as the full call.

    Shape:
        tokens (batch, tgt_len) int, state (batch, units), context (batch, units) ->
        logits (batch, tgt_len, vocab_size), state (batch, units).
    """

    def __init__(self, vocab_size, embedding_dim, units):
        super().__init__()
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.embedding = embedding(vocab_size, embedding_dim)
        self.rnn = _gru(embedding_dim + units, units)
        self.final_layer = dense(units, vocab_size)

    def forward(self, tokens, state, context=None):
        _check_tokens(tokens, self.vocab_size)
        context = state if context is None else context
        check_state(state.shape, self.units, "state")
        check_state(context.shape, self.units, "context")
        check_batch(tokens.shape[0], state=state.shape, context=context.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        context = context[:, None, :].expand(-1, tokens.shape[1], -1).to(x.dtype)  # (batch, tgt_len, units)
        outputs, state = self.rnn(torch.cat([x, context], dim=-1), state[None])  # (batch, tgt_len, units), (1, batch, units)
        return self.final_layer(outputs), state[0]  # (batch, tgt_len, vocab_size), (batch, units)

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"vocab_size": self.vocab_size, "embedding_dim": self.embedding_dim, "units": self.units}


class AttentionDecoder(nn.Module):
    """GRU decoder that attends over the encoder outputs at every step (Bahdanau et al., 2015).

    At step t, with s_0 the encoder's final state::

        c_t, a_t = attention(query=s_{t-1}, keys=enc_outputs, mask=src_mask)
        s_t      = GRU([embedding(y_t); c_t], s_{t-1})
        logits_t = final_layer(s_t)

    The query is the *previous* state for every score (Bahdanau's order; Luong
    et al. query with the new state and add an attentional layer): one decoder,
    only the score changes.

    Args:
        vocab_size: target vocabulary size (the logits' last axis).
        embedding_dim: embedding width.
        units: GRU width; the encoder outputs must be as wide.
        attention: ``"bahdanau"`` (:class:`BahdanauAttention`), ``"luong_dot"``
            or ``"luong_general"`` (:class:`LuongAttention`).

    Call:
        ``decoder(tokens, enc_outputs, state, src_mask=None, return_attention=False)``
        returns ``(logits, state)``, or ``(logits, state, weights)`` with
        ``return_attention=True``. ``src_mask`` is a course mask (1.0 = blocked),
        e.g. ``create_padding_mask(src_tokens, pad_id)[:, 0]``. Calling with
        tgt_len = 1 and feeding back the returned state decodes step by step
        and gives the same logits as the full teacher-forced call.

    Shape:
        tokens (batch, tgt_len) int, enc_outputs (batch, src_len, units),
        state (batch, units), src_mask (batch, 1, src_len) ->
        logits (batch, tgt_len, vocab_size), state (batch, units),
        weights (batch, tgt_len, src_len).
    """

    def __init__(self, vocab_size, embedding_dim, units, attention="bahdanau"):
        super().__init__()
        check_choice("attention", attention, ATTENTION_TYPES)
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.attention_type = attention
        self.embedding = embedding(vocab_size, embedding_dim)
        if attention == "bahdanau":
            self.attention = BahdanauAttention(units)
        else:
            self.attention = LuongAttention(units, attention[len("luong_"):])
        self.rnn = _gru_cell(embedding_dim + units, units)
        self.final_layer = dense(units, vocab_size)

    def forward(self, tokens, enc_outputs, state, src_mask=None, return_attention=False):
        _check_tokens(tokens, self.vocab_size)
        check_features(enc_outputs.shape, self.units, "enc_outputs")
        check_state(state.shape, self.units, "state")
        check_batch(tokens.shape[0], enc_outputs=enc_outputs.shape, state=state.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        states, weights = [], []
        for t in range(tokens.shape[1]):
            context, w = self.attention(state[:, None, :], enc_outputs, src_mask)  # (batch, 1, units), (batch, 1, src_len)
            state = self.rnn(torch.cat([x[:, t], context[:, 0]], dim=-1), state)  # (batch, units)
            states.append(state)
            weights.append(w[:, 0])
        states = torch.stack(states, dim=1)  # (batch, tgt_len, units)
        weights = torch.stack(weights, dim=1)  # (batch, tgt_len, src_len)
        logits = self.final_layer(states)  # (batch, tgt_len, vocab_size)
        return (logits, state, weights) if return_attention else (logits, state)

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"vocab_size": self.vocab_size, "embedding_dim": self.embedding_dim,
                "units": self.units, "attention": self.attention_type}


# ------------------------------------------------------------------------ whole model
class Seq2Seq(nn.Module):
    """GRU encoder-decoder: :class:`Seq2SeqEncoder` + a decoder with or without attention.

    Args:
        src_vocab_size: source vocabulary size.
        tgt_vocab_size: target vocabulary size (the logits' last axis).
        embedding_dim: embedding width, in the encoder and in the decoder.
        units: GRU width, in the encoder and in the decoder.
        attention: ``None`` for :class:`Seq2SeqDecoder` (fixed context), or
            ``"bahdanau"``, ``"luong_dot"``, ``"luong_general"`` for
            :class:`AttentionDecoder`.
        pad_id: the source padding id (skipped by the encoder's final state,
            blocked in the attention).

    Call:
        ``model(src_tokens, tgt_tokens)`` returns the logits; so does
        ``model((src_tokens, tgt_tokens))``, the form Keras' ``fit`` uses.
        ``tgt_tokens`` are the decoder inputs (teacher forcing: the target
        shifted right). With attention,
        ``logits, weights = model(src_tokens, tgt_tokens, return_attention=True)``
        also returns the attention weights of the same forward pass.

    Shape:
        src_tokens (batch, src_len) int, tgt_tokens (batch, tgt_len) int ->
        logits (batch, tgt_len, tgt_vocab_size), weights (batch, tgt_len, src_len).
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, embedding_dim, units, attention=None, pad_id=0):
        super().__init__()
        check_choice("attention", attention, (None,) + ATTENTION_TYPES)
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.embedding_dim, self.units, self.attention_type, self.pad_id = embedding_dim, units, attention, pad_id
        self.encoder = Seq2SeqEncoder(src_vocab_size, embedding_dim, units, pad_id)
        if attention is None:
            self.decoder = Seq2SeqDecoder(tgt_vocab_size, embedding_dim, units)
        else:
            self.decoder = AttentionDecoder(tgt_vocab_size, embedding_dim, units, attention)

    def forward(self, src_tokens, tgt_tokens=None, return_attention=False):
        if tgt_tokens is None:
            src_tokens, tgt_tokens = unpack_pair(src_tokens, "Seq2Seq")
        if return_attention and self.attention_type is None:
            raise ValueError("return_attention=True needs attention weights, but this Seq2Seq "
                             "was built with attention=None")
        enc_outputs, state = self.encoder(src_tokens)  # (batch, src_len, units), (batch, units)
        if self.attention_type is None:
            logits, _ = self.decoder(tgt_tokens, state)  # (batch, tgt_len, tgt_vocab_size)
            return logits
        src_mask = create_padding_mask(src_tokens, self.pad_id)[:, 0]  # (batch, 1, src_len)
        logits, _, weights = self.decoder(tgt_tokens, enc_outputs, state, src_mask,
                                          return_attention=True)  # (batch, tgt_len, tgt_vocab_size)
        return (logits, weights) if return_attention else logits

    def start_decoding(self, src_tokens):
        """Encode the source; return the state that :meth:`decode_step` grows.

        The state is a dict of batch-first tensors: the decoder state, and the
        fixed context (without attention) or the encoder outputs and the source
        mask (with attention). This and :meth:`decode_step` are what
        ``greedy_decode`` and ``beam_search`` need.
        """
        src_tokens = torch.as_tensor(src_tokens)
        enc_outputs, state = self.encoder(src_tokens)  # (batch, src_len, units), (batch, units)
        if self.attention_type is None:
            return {"state": state, "context": state}
        return {"state": state, "enc_outputs": enc_outputs,
                "src_mask": create_padding_mask(src_tokens, self.pad_id)[:, 0]}  # (batch, 1, src_len)

    def decode_step(self, tgt_tokens, state):
        """Logits for new target tokens, continuing the recurrence from ``state``.

        Gives the logits that ``model(src, prefix)`` gives at the new positions
        (within float rounding); each step costs O(new).

        Shape:
            tgt_tokens (batch, new) int -> logits (batch, new, tgt_vocab_size), state.
        """
        tgt_tokens = torch.as_tensor(tgt_tokens)
        if self.attention_type is None:
            logits, new_state = self.decoder(tgt_tokens, state["state"], state["context"])
        else:
            logits, new_state = self.decoder(tgt_tokens, state["enc_outputs"], state["state"],
                                             state["src_mask"])  # (batch, new, tgt_vocab_size)
        return logits, {**state, "state": new_state}

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"src_vocab_size": self.src_vocab_size, "tgt_vocab_size": self.tgt_vocab_size,
                "embedding_dim": self.embedding_dim, "units": self.units,
                "attention": self.attention_type, "pad_id": self.pad_id}
