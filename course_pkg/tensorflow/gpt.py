"""GPT (Radford et al., 2018, 2019): the decoder alone, trained to predict the next token.

Shapes: ``batch`` sequences of ``seq`` tokens (``prompt`` of them before
generation, ``new`` fed per decoding step after ``past`` ones), ``d_model``
features, ``heads`` attention heads of ``depth`` features, logits over ``vocab``
tokens.
"""

import keras
import numpy as np
import tensorflow as tf

from ..common import huggingface as _hf
from ..common.checks import (
    check_activation,
    check_dropout,
    check_epsilon,
    check_flag,
    check_pad_id,
    check_positive,
    check_top_p,
)
from ..common.generation import check_generation, left_align, sample_next
from .base import Model, dense, dropout_layer, embedding, layer_norm
from .decoder import DecoderLayer
from .masks import create_look_ahead_mask, padding_mask_2d
from .positional import LearnedPositionalEncoding
from .tokens import check_tokens, token_ids


def top_k_filter(logits, k):
    """Keep the ``k`` largest logits of each row; the others become -inf (ties with the k-th kept).

    Shape:
        (..., vocab) -> (..., vocab).
    """
    check_positive(k=k)
    logits = tf.convert_to_tensor(logits)
    k = min(k, logits.shape[-1])
    kth = tf.math.top_k(logits, k).values[..., -1:]  # (..., 1)
    return tf.where(logits < kth, tf.constant(-np.inf, logits.dtype), logits)


def top_p_filter(logits, p):
    """Nucleus filtering: keep the most likely tokens whose probabilities first sum to ``p`` or more.

    A token is kept when the probability mass of the tokens ranked above it is below
    ``p`` (so the most likely token always stays); the others become -inf.

    Shape:
        (..., vocab) -> (..., vocab).
    """
    check_top_p(p)
    logits = tf.convert_to_tensor(logits)
    batch_dims = logits.shape.rank - 1
    order = tf.argsort(logits, axis=-1, direction="DESCENDING", stable=True)  # (..., vocab)
    sorted_logits = tf.gather(logits, order, batch_dims=batch_dims)
    probs = tf.nn.softmax(tf.cast(sorted_logits, tf.float32), axis=-1)
    before = tf.cumsum(probs, axis=-1) - probs  # mass ranked above each token
    remove = tf.gather(before >= p, tf.argsort(order, axis=-1), batch_dims=batch_dims)  # original order
    return tf.where(remove, tf.constant(-np.inf, logits.dtype), logits)


def causal_lm_inputs(model, tokens, padding_mask=None):
    """The token ids of a causal language model (:class:`GPT`, ``Llama``) as a tensor, checked
    against its ``vocab_size`` and ``max_len``, and their padding (1.0): ``padding_mask``,
    else the tokens equal to the model's ``pad_id``, else none.

    Shape:
        tokens, padding_mask (batch, seq) -> tokens (batch, seq) int, padding (batch, seq) float32.
    """
    tokens = token_ids(tokens)
    check_tokens(tokens, model.vocab_size, model.max_len)
    pad = padding_mask_2d(tokens, padding_mask, model.pad_id)
    return tokens, tf.zeros(tf.shape(tokens), tf.float32) if pad is None else pad


def real_token_positions(pad, count):
    """Each token's position: ``count`` plus the real tokens of its row before it (a padding token
    gets the position of the real token before it, or 0), so that left padding shifts no row.

    Shape:
        pad (batch, seq) 1.0 at padding, count (batch,) -> positions (batch, seq) int.
    """
    positions = tf.maximum(count[:, tf.newaxis] + tf.cumsum(1.0 - pad, axis=1) - 1.0, 0.0)  # (batch, seq)
    return tf.cast(positions, tf.int32)


def causal_padding_mask(pad, past=0):
    """The causal (look-ahead) mask of the positions after the first ``past``, with padding keys
    blocked (1.0 = blocked): ``past=0`` for a whole sequence, the cached length for a decoding step.

    Shape:
        pad (batch, seq) 1.0 at padding, for all seq positions -> (batch, 1, seq - past, seq).
    """
    look_ahead = create_look_ahead_mask(tf.shape(pad)[1])[past:]  # (seq - past, seq)
    return tf.maximum(look_ahead, pad[:, tf.newaxis, tf.newaxis, :])  # (batch, 1, seq - past, seq)


def generate_tokens(model, prompt_tokens, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                    do_sample=False, seed=None, use_cache=True, padding_mask=None, eos_id=None):
    """The loop of :meth:`GPT.generate` (see there for the arguments), for any causal language model
    with GPT's ``init_cache``/``decode_step`` API and ``token_embedding``, ``vocab_size``, ``max_len``,
    ``pad_id`` (GPT, ``Llama``).

    Shape:
        prompt_tokens, padding_mask (batch, prompt) -> (batch, prompt + steps) int64.
    """
    tokens, pad = causal_lm_inputs(model, prompt_tokens, padding_mask)
    fewest_real = float(tf.reduce_min(tf.reduce_sum(1.0 - pad, axis=1))) if tokens.shape[0] else 1
    check_generation(tuple(tokens.shape), max_new_tokens, model.max_len, temperature, top_k, top_p,
                     do_sample, fewest_real)
    tokens, pad = left_align(tokens.numpy().astype(np.int64), pad.numpy())
    tokens, pad = tf.constant(tokens), tf.constant(pad, tf.float32)
    rng = np.random.default_rng(seed)
    done = np.zeros(tokens.shape[0], dtype=bool)
    if use_cache:
        logits, state = model.decode_step(tokens, model.init_cache(tokens.shape[0]), pad)
    for step in range(max_new_tokens):
        if not use_cache:
            logits = model(tokens, padding_mask=pad, training=False)
        last = tf.cast(logits[:, -1], tf.float32)  # (batch, vocab)
        if do_sample:
            last = last / temperature
            last = last if top_k is None else top_k_filter(last, top_k)
            last = last if top_p is None else top_p_filter(last, top_p)
            nxt = sample_next(tf.nn.softmax(last, axis=-1).numpy(), rng)  # (batch,)
        else:
            nxt = tf.argmax(last, axis=-1).numpy()
        if eos_id is not None:
            nxt = np.where(done, eos_id, nxt)
            done |= nxt == eos_id
        nxt = tf.constant(np.asarray(nxt, np.int64)[:, None])  # (batch, 1)
        tokens = tf.concat([tokens, nxt], axis=1)
        pad = tf.concat([pad, tf.zeros(tf.shape(nxt), tf.float32)], axis=1)
        if eos_id is not None and done.all():
            break
        if use_cache and step + 1 < max_new_tokens:
            logits, state = model.decode_step(nxt, state)
    return tokens


@keras.saving.register_keras_serializable(package="course_pkg")
class GPT(Model):
    """A decoder-only Transformer (GPT-2's layout): pre-LN blocks without cross-attention.

    ``x = dropout(token_embedding(t) + position_embedding)``, ``num_layers``
    :class:`DecoderLayer` (``norm_first=True``, ``cross_attention=False``, GELU tanh,
    epsilon 1e-5) under the causal (look-ahead) mask, a final layer norm and the LM
    head: ``x @ token_embeddingᵀ`` (tied, GPT-2) or a dense layer. With the weights of
    a Hugging Face ``GPT2LMHeadModel`` (:func:`gpt_from_huggingface`) it computes its
    logits in eval mode. Dropout sits where the course's layers put it.

    Padding, left or right: ``padding_mask`` (1.0 = padding) blocks padding keys, and
    positions count real tokens only (a row's first real token is at position 0,
    as Hugging Face's ``generate`` does for left padding); outputs at padding
    positions mean nothing.

    Args:
        num_layers, d_model, num_heads, dff: the stack's sizes.
        vocab_size: number of token ids.
        max_len: positions of the learned table (1024 in GPT-2).
        dropout: dropout rate.
        activation, layer_norm_eps: of the blocks ("gelu_tanh", 1e-5).
        tie_embeddings: the LM head is the transposed token embedding (True) or its own
            dense layer ``lm_head`` (False).
        pad_id: when given, tokens equal to it are padding unless a ``padding_mask`` is passed.

    Call:
        ``gpt(tokens, padding_mask=None, return_attention=False)`` returns the
        next-token logits at every position (and the list of attention maps).
        :meth:`generate` continues prompts; :meth:`init_cache`/:meth:`decode_step`
        decode with a key/value cache.

    Shape:
        tokens, padding_mask (batch, seq) -> logits (batch, seq, vocab).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1, *,
                 activation="gelu_tanh", layer_norm_eps=1e-5, tie_embeddings=True, pad_id=None, **kwargs):
        super().__init__(**kwargs)
        check_positive(num_layers=num_layers, vocab_size=vocab_size)
        check_dropout(dropout)
        if pad_id is not None:
            check_pad_id(pad_id, vocab_size)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout, self.pad_id = vocab_size, max_len, dropout, pad_id
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.tie_embeddings = check_flag("tie_embeddings", tie_embeddings)
        policy = self.dtype_policy
        self.token_embedding = embedding(vocab_size, d_model, "token_embedding", policy)
        self.position_embedding = LearnedPositionalEncoding(max_len, d_model, name="position_embedding",
                                                            dtype=policy)
        self.embedding_dropout = dropout_layer(dropout, dtype=policy)
        self.blocks = [
            DecoderLayer(d_model, num_heads, dff, dropout, norm_first=True, activation=activation,
                         layer_norm_eps=layer_norm_eps, cross_attention=False, name=f"block_{i}",
                         dtype=policy)
            for i in range(num_layers)
        ]
        self.final_norm = layer_norm(d_model, layer_norm_eps, name="final_norm", dtype=policy)
        self.lm_head = None if tie_embeddings else dense(d_model, vocab_size, "lm_head", policy)
        self.built = True

    def _logits(self, x):
        if self.lm_head is None:
            table = tf.cast(self.token_embedding.embeddings, x.dtype)  # (vocab, d_model)
            return tf.matmul(x, table, transpose_b=True)  # (batch, seq, vocab)
        return self.lm_head(x)  # (batch, seq, vocab)

    def _embed(self, tokens, pad, count, training=None):
        """Token + position embeddings; positions count the real tokens of each row from ``count``."""
        positions = real_token_positions(pad, count)  # (batch, seq)
        x = self.token_embedding(tokens)  # (batch, seq, d_model)
        x = self.position_embedding(x, positions=positions)  # (batch, seq, d_model)
        return self.embedding_dropout(x, training=training)

    def call(self, tokens, padding_mask=None, return_attention=False, training=None):
        tokens, pad = causal_lm_inputs(self, tokens, padding_mask)
        x = self._embed(tokens, pad, tf.zeros(tf.shape(tokens)[:1]), training=training)
        mask = causal_padding_mask(pad)  # (batch, 1, seq, seq)
        maps = []
        for block in self.blocks:
            if not return_attention:  # no weights formed: the fused kernel
                x = block(x, None, look_ahead_mask=mask, training=training)
                continue
            x, weights, _ = block(x, None, look_ahead_mask=mask, return_attention=True, training=training)
            maps.append(weights)  # (batch, heads, seq, seq)
        logits = self._logits(self.final_norm(x))  # (batch, seq, vocab)
        return (logits, maps) if return_attention else logits

    def init_cache(self, batch_size):
        """An empty decoding state: each block's key/value cache (batch, heads, 0, depth), the padding
        seen so far (batch, 0) and the count of real tokens per row (batch,)."""
        check_positive(batch_size=batch_size)
        empty = tf.zeros((batch_size, self.num_heads, 0, self.d_model // self.num_heads), self.compute_dtype)
        return {"layers": [{"self_k": empty, "self_v": empty} for _ in self.blocks],
                "pad": tf.zeros((batch_size, 0)), "count": tf.zeros((batch_size,))}

    def decode_step(self, tokens, state, padding_mask=None):
        """Logits for ``tokens`` that follow the ones in ``state``, reusing the cached keys and values.

        Equal (within float rounding) to the logits of the full call on the whole sequence, at the new
        positions, at O(new) cost per step.

        Shape:
            tokens (batch, new), padding_mask (batch, new) -> logits (batch, new, vocab), the grown state.
        """
        tokens, pad = causal_lm_inputs(self, tokens, padding_mask)
        past = state["pad"].shape[1]
        check_tokens(tokens, self.vocab_size, self.max_len, past)
        x = self._embed(tokens, pad, state["count"])  # (batch, new, d_model)
        all_pad = tf.concat([state["pad"], pad], axis=1)  # (batch, past + new)
        mask = causal_padding_mask(all_pad, past)  # (batch, 1, new, past + new)
        caches = []  # one per block, state["layers"] of the next step
        for block, cache in zip(self.blocks, state["layers"]):
            x, cache = block.step(x, cache, mask)
            caches.append(cache)
        logits = self._logits(self.final_norm(x))  # (batch, new, vocab)
        return logits, {"layers": caches, "pad": all_pad,
                        "count": state["count"] + tf.reduce_sum(1.0 - pad, axis=1)}

    def generate(self, prompt_tokens, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                 do_sample=False, seed=None, use_cache=True, padding_mask=None, eos_id=None):
        """Continue each prompt by ``max_new_tokens`` tokens, greedily or by sampling.

        Args:
            prompt_tokens: the prompts (batch, prompt), at least one real token each.
            max_new_tokens: tokens to add; ``prompt + max_new_tokens <= max_len``.
            temperature: divides the logits before sampling (< 1 sharper, > 1 flatter).
            top_k: sample among the ``top_k`` most likely tokens only (:func:`top_k_filter`).
            top_p: sample in the nucleus of probability ``top_p`` (:func:`top_p_filter`).
            do_sample: sample (True) or take the most likely token (False, greedy;
                temperature, top_k and top_p are then ignored).
            seed: seed of the sampler (NumPy's ``default_rng``): the same seed, weights and
                prompts give the same tokens, in PyTorch and in TensorFlow alike.
            use_cache: decode with the key/value cache (O(1) per token in the prefix) or
                recompute the whole sequence at each step (same tokens).
            padding_mask: 1.0 at padding, left or right (or from ``pad_id``); the real tokens
                of each row are moved to its end (order kept) so that the new tokens follow
                them: the result is left-padded.
            eos_id: when given, a row stops at ``eos_id`` (then repeats it) and generation
                ends when every row has.

        Returns:
            An int64 tensor (batch, prompt + steps): the (left-aligned) prompts and the new
            tokens, ``steps <= max_new_tokens``.
        """
        return generate_tokens(self, prompt_tokens, max_new_tokens, temperature, top_k, top_p, do_sample,
                               seed, use_cache, padding_mask, eos_id)

    def get_config(self):
        """The constructor arguments, added to the base class's configuration."""
        return {**super().get_config(), "num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff, "vocab_size": self.vocab_size,
                "max_len": self.max_len, "dropout": self.dropout, "activation": self.activation,
                "layer_norm_eps": self.layer_norm_eps, "tie_embeddings": self.tie_embeddings,
                "pad_id": self.pad_id}


def gpt_from_huggingface(source, config=None):
    """A course :class:`GPT` with the configuration and weights of a Hugging Face GPT-2.

    Args:
        source: a ``transformers`` ``GPT2LMHeadModel`` or ``GPT2Model``, or its state dict.
        config: its ``GPT2Config`` (or the config's dict); taken from ``source`` when it is a model.

    Returns:
        The course model (call it with ``training=False``, the default; mapping in
        :mod:`course_pkg.common.huggingface`).

    Raises:
        ValueError: the configuration is another family's (its ``model_type``) or lacks a size;
            an entry is missing, unexpected or of another shape than the configuration gives
            it (the message names the checkpoint's own key, the shape found and the shape
            expected). ``TypeError``: an entry is not numbers. No model is returned then.
    """
    return _hf.gpt_from_huggingface(GPT, source, config)
