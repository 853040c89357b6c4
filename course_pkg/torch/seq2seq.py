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

Shapes: ``batch`` sentence pairs of ``src_len`` source and ``tgt_len`` target
positions (``seq`` either, in the GRU helpers, which read ``input_size``
features), ``embedding_dim`` embedding and ``units`` GRU features, logits over
``vocab_size`` (``target_vocab_size`` in :class:`Seq2Seq`) target tokens;
step-by-step decoding feeds ``new`` target tokens at a time. The attention
layers the decoder attends with live in :mod:`course_pkg.torch.rnn_attention`.
"""

import torch
from torch import nn

from ..common.arguments import check_batch, check_choice, check_features, check_pad_id, check_positive
from ..common.seq2seq import ATTENTION_TYPES, check_attention_requested, check_some_positions, check_state
from ..common.transformer import unpack_pair
from .base import Layer, Model, dense, embedding
from .masks import create_padding_mask
from .rnn_attention import BahdanauAttention, LuongAttention
from .tokens import check_token_ids, check_tokens, token_ids


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


def _check_tokens(tokens, vocab_size, device):
    """``tokens`` as a tensor on ``device`` (narrow and unsigned integers as int64); raise
    ``TypeError``/``ValueError`` unless they are ``(batch, seq)`` ids, ``seq >= 1``."""
    tokens = token_ids(tokens)
    check_tokens(tokens, vocab_size)
    check_some_positions(tokens.shape[1])
    return tokens.to(device)


def _check_pair(src_tokens, tgt_tokens):
    """Raise unless source and target are integer ``(batch, length)`` ids of one batch size."""
    for tokens in (src_tokens, tgt_tokens):
        check_token_ids(tokens)
    check_batch(src_tokens.shape[0], tgt_tokens=tgt_tokens.shape)




# ---------------------------------------------------------------- encoder and decoders
class Seq2SeqEncoder(Layer):
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
        self.vocab_size, self.embedding_dim = vocab_size, embedding_dim
        self.units, self.pad_id = units, pad_id
        self.embedding = embedding(vocab_size, embedding_dim)
        self.rnn = _gru(embedding_dim, units)

    def forward(self, tokens):
        tokens = _check_tokens(tokens, self.vocab_size, self.embedding.weight.device)
        x = self.embedding(tokens)  # (batch, src_len, embedding_dim)
        outputs, _ = self.rnn(x)  # (batch, src_len, units)
        positions = torch.arange(1, tokens.shape[1] + 1, device=tokens.device)  # (src_len,)
        # lengths up to the last non-pad token (0 if all pad)
        lengths = torch.where(tokens != self.pad_id, positions, 0).amax(dim=1)  # (batch,)
        states = torch.cat([torch.zeros_like(outputs[:, :1]), outputs], dim=1)  # (batch, 1 + src_len, units)
        state = states[torch.arange(tokens.shape[0], device=tokens.device), lengths]  # (batch, units)
        return outputs, state


class Seq2SeqDecoder(Layer):
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
        tokens = _check_tokens(tokens, self.vocab_size, self.embedding.weight.device)
        context = state if context is None else context
        check_state(state.shape, self.units, "state")
        check_state(context.shape, self.units, "context")
        check_batch(tokens.shape[0], state=state.shape, context=context.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        context = context[:, None, :].expand(-1, tokens.shape[1], -1).to(x.dtype)  # (batch, tgt_len, units)
        outputs, state = self.rnn(torch.cat([x, context], dim=-1),
                                  state[None])  # (batch, tgt_len, units), (1, batch, units)
        return self.final_layer(outputs), state[0]  # (batch, tgt_len, vocab_size), (batch, units)


class AttentionDecoder(Layer):
    """GRU decoder that attends over the encoder outputs at every step (Bahdanau et al., 2015).

    At step t, with s_0 the encoder's final state::

        c_t, a_t = attention(query=s_{t-1}, keys=enc_output, mask=padding_mask)
        s_t      = GRU([embedding(y_t); c_t], s_{t-1})
        logits_t = final_layer(s_t)

    The query is the *previous* state for every score (Bahdanau's order; Luong
    et al. query with the new state and add an attentional layer): one decoder,
    only the score changes. The keys' half of the score (``attention.project_keys``)
    does not depend on the state: it is computed once per call, not at every step (once per
    sentence under teacher forcing; decoding token by token calls the decoder once per token).

    Args:
        vocab_size: target vocabulary size (the logits' last axis).
        embedding_dim: embedding width.
        units: GRU width; the encoder outputs must be as wide.
        attention: ``"bahdanau"`` (:class:`BahdanauAttention`), ``"luong_dot"``
            or ``"luong_general"`` (:class:`LuongAttention`).

    Call:
        ``decoder(tokens, enc_output, state, padding_mask=None, return_attention=False)``
        returns ``(logits, state)``, or ``(logits, state, weights)`` with
        ``return_attention=True``. ``padding_mask`` is a course mask (1.0 = blocked),
        e.g. ``create_padding_mask(src_tokens, pad_id)[:, 0]``. Calling with
        tgt_len = 1 and feeding back the returned state decodes step by step
        and gives the same logits as the full teacher-forced call.

    Shape:
        tokens (batch, tgt_len) int, enc_output (batch, src_len, units),
        state (batch, units), padding_mask (batch, 1, src_len) ->
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

    def forward(self, tokens, enc_output, state, padding_mask=None, return_attention=False):
        tokens = _check_tokens(tokens, self.vocab_size, self.embedding.weight.device)
        check_features(enc_output.shape, self.units, "enc_output")
        check_state(state.shape, self.units, "state")
        check_batch(tokens.shape[0], enc_output=enc_output.shape, state=state.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        projected_keys = self.attention.project_keys(enc_output)  # once per call, not per step
        states, weights = [], []
        for t in range(tokens.shape[1]):
            context, w = self.attention(  # (batch, 1, units), (batch, 1, src_len)
                state[:, None, :], enc_output, padding_mask, projected_keys=projected_keys)
            state = self.rnn(torch.cat([x[:, t], context[:, 0]], dim=-1), state)  # (batch, units)
            states.append(state)
            weights.append(w[:, 0])
        states = torch.stack(states, dim=1)  # (batch, tgt_len, units)
        weights = torch.stack(weights, dim=1)  # (batch, tgt_len, src_len)
        logits = self.final_layer(states)  # (batch, tgt_len, vocab_size)
        return (logits, state, weights) if return_attention else (logits, state)


# ------------------------------------------------------------------------ whole model
class Seq2Seq(Model):
    """GRU encoder-decoder: :class:`Seq2SeqEncoder` + a decoder with or without attention.

    Args:
        input_vocab_size: source vocabulary size.
        target_vocab_size: target vocabulary size (the logits' last axis).
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
        logits (batch, tgt_len, target_vocab_size), weights (batch, tgt_len, src_len).
    """

    def __init__(self, input_vocab_size, target_vocab_size, embedding_dim, units, attention=None, pad_id=0):
        super().__init__()
        check_choice("attention", attention, (None,) + ATTENTION_TYPES)
        self.input_vocab_size, self.target_vocab_size = input_vocab_size, target_vocab_size
        self.embedding_dim, self.units = embedding_dim, units
        self.attention_type, self.pad_id = attention, pad_id
        self.encoder = Seq2SeqEncoder(input_vocab_size, embedding_dim, units, pad_id)
        if attention is None:
            self.decoder = Seq2SeqDecoder(target_vocab_size, embedding_dim, units)
        else:
            self.decoder = AttentionDecoder(target_vocab_size, embedding_dim, units, attention)

    def forward(self, src_tokens, tgt_tokens=None, return_attention=False):
        if tgt_tokens is None:
            src_tokens, tgt_tokens = unpack_pair(src_tokens, "Seq2Seq")
        check_attention_requested(return_attention, self.attention_type)
        src_tokens, tgt_tokens = self._as_tokens(src_tokens), self._as_tokens(tgt_tokens)
        _check_pair(src_tokens, tgt_tokens)
        enc_output, state = self.encoder(src_tokens)  # (batch, src_len, units), (batch, units)
        if self.attention_type is None:
            logits, _ = self.decoder(tgt_tokens, state)  # (batch, tgt_len, target_vocab_size)
            return logits
        src_mask = create_padding_mask(src_tokens, self.pad_id)[:, 0]  # (batch, 1, src_len)
        logits, _, weights = self.decoder(tgt_tokens, enc_output, state, src_mask,
                                          return_attention=True)  # (batch, tgt_len, target_vocab_size)
        return (logits, weights) if return_attention else logits

    def _as_tokens(self, tokens):
        """Token ids as a tensor on the model's device (lists and arrays welcome)."""
        return token_ids(tokens).to(self.encoder.embedding.weight.device)

    def start_decoding(self, src_tokens):
        """Encode the source; return the state that :meth:`decode_step` grows.

        The state is a dict of batch-first tensors: the decoder state, and the
        fixed context (without attention) or the encoder outputs and the source
        mask (with attention). This and :meth:`decode_step` are what
        ``greedy_decode`` and ``beam_search`` need.
        """
        src_tokens = self._as_tokens(src_tokens)
        enc_output, state = self.encoder(src_tokens)  # (batch, src_len, units), (batch, units)
        if self.attention_type is None:
            return {"state": state, "context": state}
        return {"state": state, "enc_output": enc_output,
                "src_mask": create_padding_mask(src_tokens, self.pad_id)[:, 0]}  # (batch, 1, src_len)

    def decode_step(self, tgt_tokens, state):
        """Logits for new target tokens, continuing the recurrence from ``state``.

        Gives the logits that ``model(src, prefix)`` gives at the new positions
        (within float rounding); each step costs O(new).

        Shape:
            tgt_tokens (batch, new) int -> logits (batch, new, target_vocab_size), state.
        """
        tgt_tokens = self._as_tokens(tgt_tokens)
        if self.attention_type is None:
            logits, new_state = self.decoder(tgt_tokens, state["state"], state["context"])
        else:
            logits, new_state = self.decoder(tgt_tokens, state["enc_output"], state["state"],
                                             state["src_mask"])  # (batch, new, target_vocab_size)
        return logits, {**state, "state": new_state}
