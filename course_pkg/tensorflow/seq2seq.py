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
layers the decoder attends with live in :mod:`course_pkg.tensorflow.rnn_attention`.
"""

import keras
import tensorflow as tf
from keras import layers

from ..common.arguments import check_batch, check_choice, check_features, check_pad_id, check_positive
from ..common.seq2seq import ATTENTION_TYPES, check_attention_requested, check_some_positions, check_state
from ..common.transformer import unpack_pair
from .base import Layer, Model, dense, embedding
from .masks import create_padding_mask
from .rnn_attention import BahdanauAttention, LuongAttention
from .tokens import check_token_ids, check_tokens, token_ids


# ------------------------------------------------------------------------ leaf layers
def _gru(input_size, units, name=None, dtype=None):
    """``keras.layers.GRU`` (returning every output and the final state), built.

    Glorot-uniform ``kernel``, orthogonal ``recurrent_kernel``, zero biases.

    Shape:
        x (batch, seq, input_size), initial_state (batch, units) ->
        outputs (batch, seq, units), state (batch, units).
    """
    layer = layers.GRU(units, return_sequences=True, return_state=True, name=name, dtype=dtype)
    layer.build((None, None, input_size))
    return layer


def _gru_cell(input_size, units, name=None, dtype=None):
    """``keras.layers.GRUCell``, built.

    Shape:
        x (batch, input_size), h (batch, units) -> h (batch, units), h (batch, units).
    """
    cell = layers.GRUCell(units, name=name, dtype=dtype)
    cell.build((None, input_size))
    return cell


def _check_tokens(tokens, vocab_size):
    """``tokens`` as a tensor (of any integer dtype); raise ``TypeError``/``ValueError``
    unless they are ``(batch, seq)`` ids, ``seq >= 1``.

    Inside a ``tf.function`` only the static checks run.
    """
    tokens = token_ids(tokens)
    check_tokens(tokens, vocab_size)
    check_some_positions(tokens.shape[1])
    return tokens


def _check_pair(src_tokens, tgt_tokens):
    """Raise unless source and target are integer ``(batch, length)`` ids of one batch size."""
    for tokens in (src_tokens, tgt_tokens):
        check_token_ids(tokens)
    check_batch(src_tokens.shape[0], tgt_tokens=tgt_tokens.shape)




# ---------------------------------------------------------------- encoder and decoders
@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, vocab_size, embedding_dim, units, pad_id=0, **kwargs):
        super().__init__(**kwargs)
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        check_pad_id(pad_id, vocab_size)
        self.vocab_size, self.embedding_dim = vocab_size, embedding_dim
        self.units, self.pad_id = units, pad_id
        self.embedding = embedding(vocab_size, embedding_dim, "embedding", self.dtype_policy)
        self.rnn = _gru(embedding_dim, units, "rnn", self.dtype_policy)
        self.built = True

    def call(self, tokens, training=None):
        tokens = _check_tokens(tokens, self.vocab_size)
        x = self.embedding(tokens)  # (batch, src_len, embedding_dim)
        outputs, _ = self.rnn(x, training=training)  # (batch, src_len, units)
        positions = tf.range(1, tf.shape(tokens)[1] + 1)  # (src_len,)
        # lengths up to the last non-pad token (0 if all pad)
        lengths = tf.reduce_max(tf.where(tokens != self.pad_id, positions, 0), axis=1)  # (batch,)
        states = tf.concat([tf.zeros_like(outputs[:, :1]), outputs], axis=1)  # (batch, 1 + src_len, units)
        state = tf.gather(states, lengths, batch_dims=1)  # (batch, units)
        return outputs, state


@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, vocab_size, embedding_dim, units, **kwargs):
        super().__init__(**kwargs)
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.embedding = embedding(vocab_size, embedding_dim, "embedding", self.dtype_policy)
        self.rnn = _gru(embedding_dim + units, units, "rnn", self.dtype_policy)
        self.final_layer = dense(units, vocab_size, "final_layer", self.dtype_policy)
        self.built = True

    def call(self, tokens, state, context=None, training=None):
        state = tf.convert_to_tensor(state)
        tokens = _check_tokens(tokens, self.vocab_size)
        context = state if context is None else tf.convert_to_tensor(context)
        check_state(state.shape, self.units, "state")
        check_state(context.shape, self.units, "context")
        check_batch(tokens.shape[0], state=state.shape, context=context.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        context = tf.repeat(tf.cast(context, x.dtype)[:, tf.newaxis, :], tf.shape(tokens)[1],
                            axis=1)  # (batch, tgt_len, units)
        outputs, state = self.rnn(tf.concat([x, context], axis=-1), initial_state=state,
                                  training=training)  # (batch, tgt_len, units), (batch, units)
        return self.final_layer(outputs), state  # (batch, tgt_len, vocab_size), (batch, units)


@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, vocab_size, embedding_dim, units, attention="bahdanau", **kwargs):
        super().__init__(**kwargs)
        check_choice("attention", attention, ATTENTION_TYPES)
        check_positive(vocab_size=vocab_size, embedding_dim=embedding_dim, units=units)
        self.vocab_size, self.embedding_dim, self.units = vocab_size, embedding_dim, units
        self.attention_type = attention
        self.embedding = embedding(vocab_size, embedding_dim, "embedding", self.dtype_policy)
        if attention == "bahdanau":
            self.attention = BahdanauAttention(units, name="attention", dtype=self.dtype_policy)
        else:
            self.attention = LuongAttention(units, attention[len("luong_"):], name="attention",
                                            dtype=self.dtype_policy)
        self.rnn = _gru_cell(embedding_dim + units, units, "rnn", self.dtype_policy)
        self.final_layer = dense(units, vocab_size, "final_layer", self.dtype_policy)
        self.built = True

    def call(self, tokens, enc_output, state, padding_mask=None, return_attention=False, training=None):
        enc_output = tf.cast(enc_output, self.compute_dtype)
        state = tf.cast(state, self.compute_dtype)
        tokens = _check_tokens(tokens, self.vocab_size)
        check_features(enc_output.shape, self.units, "enc_output")
        check_state(state.shape, self.units, "state")
        check_batch(tokens.shape[0], enc_output=enc_output.shape, state=state.shape)
        x = self.embedding(tokens)  # (batch, tgt_len, embedding_dim)
        projected_keys = self.attention.project_keys(enc_output)  # once per call, not per step

        def step(carry, x_t):  # x_t (batch, embedding_dim): one time step, run by tf.scan
            state, _ = carry
            context, w = self.attention(  # (batch, 1, units), (batch, 1, src_len)
                state[:, tf.newaxis, :], enc_output, padding_mask, projected_keys=projected_keys,
                training=training)
            state, _ = self.rnn(tf.concat([x_t, context[:, 0]], axis=-1), state,
                                training=training)  # (batch, units)
            return state, w[:, 0]

        initial = (state, tf.zeros_like(enc_output[:, :, 0]))  # (batch, units), (batch, src_len)
        states, weights = tf.scan(step, tf.transpose(x, (1, 0, 2)),
                                  initializer=initial)  # (tgt_len, batch, ...)
        states = tf.transpose(states, (1, 0, 2))  # (batch, tgt_len, units)
        weights = tf.transpose(weights, (1, 0, 2))  # (batch, tgt_len, src_len)
        logits = self.final_layer(states)  # (batch, tgt_len, vocab_size)
        state = states[:, -1]  # (batch, units)
        return (logits, state, weights) if return_attention else (logits, state)


# ------------------------------------------------------------------------ whole model
@keras.saving.register_keras_serializable(package="course_pkg")
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

    def __init__(self, input_vocab_size, target_vocab_size, embedding_dim, units, attention=None, pad_id=0,
                 **kwargs):
        super().__init__(**kwargs)
        check_choice("attention", attention, (None,) + ATTENTION_TYPES)
        self.input_vocab_size, self.target_vocab_size = input_vocab_size, target_vocab_size
        self.embedding_dim, self.units = embedding_dim, units
        self.attention_type, self.pad_id = attention, pad_id
        self.encoder = Seq2SeqEncoder(input_vocab_size, embedding_dim, units, pad_id,
                                      name="encoder", dtype=self.dtype_policy)
        if attention is None:
            self.decoder = Seq2SeqDecoder(target_vocab_size, embedding_dim, units,
                                          name="decoder", dtype=self.dtype_policy)
        else:
            self.decoder = AttentionDecoder(target_vocab_size, embedding_dim, units, attention,
                                            name="decoder", dtype=self.dtype_policy)
        self.built = True

    def call(self, src_tokens, tgt_tokens=None, return_attention=False, training=None):
        if tgt_tokens is None:
            src_tokens, tgt_tokens = unpack_pair(src_tokens, "Seq2Seq")
        check_attention_requested(return_attention, self.attention_type)
        src_tokens, tgt_tokens = token_ids(src_tokens), token_ids(tgt_tokens)
        _check_pair(src_tokens, tgt_tokens)
        enc_output, state = self.encoder(src_tokens,
                                         training=training)  # (batch, src_len, units), (batch, units)
        if self.attention_type is None:
            logits, _ = self.decoder(tgt_tokens, state,
                                     training=training)  # (batch, tgt_len, target_vocab_size)
            return logits
        src_mask = create_padding_mask(src_tokens, self.pad_id)[:, 0]  # (batch, 1, src_len)
        logits, _, weights = self.decoder(tgt_tokens, enc_output, state, src_mask, return_attention=True,
                                          training=training)  # (batch, tgt_len, target_vocab_size)
        return (logits, weights) if return_attention else logits

    def start_decoding(self, src_tokens):
        """Encode the source; return the state that :meth:`decode_step` grows.

        The state is a dict of batch-first tensors: the decoder state, and the
        fixed context (without attention) or the encoder outputs and the source
        mask (with attention). This and :meth:`decode_step` are what
        ``greedy_decode`` and ``beam_search`` need.
        """
        src_tokens = token_ids(src_tokens)
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
        tgt_tokens = token_ids(tgt_tokens)
        if self.attention_type is None:
            logits, new_state = self.decoder(tgt_tokens, state["state"], state["context"])
        else:
            logits, new_state = self.decoder(tgt_tokens, state["enc_output"], state["state"],
                                             state["src_mask"])  # (batch, new, target_vocab_size)
        return logits, {**state, "state": new_state}
