"""The RNN encoder-decoder (seq2seq) with and without attention: the GRU, the encoder, the two
decoders, the whole model, and the GRU's parameter count.

Mirrors ``course_pkg.torch.seq2seq`` and ``course_pkg.tensorflow.seq2seq``, which also hold the GRU;
the attention layers live in :mod:`course_pkg.reference.rnn_attention`.
"""

import numpy as np

from .base import dense, sub
from .rnn_attention import bahdanau_attention, luong_attention


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


def gru_parameters(input_dim, units):
    """Trainable parameters of Keras' ``GRU`` (reset_after=True) and ``torch.nn.GRU`` alike.

    3 gates, each with an input kernel, a recurrent kernel and two biases.
    """
    return 3 * (input_dim * units + units * units + 2 * units)
