"""What every decoder-only (causal) language model of the course shares: ``GPT`` and ``Llama``
differ in their blocks and positions, not in this plumbing.

Their inputs (token ids checked against the model, the padding), the positions that count real
tokens only, the bookkeeping of a decoding step with a key/value cache, the sampling filters
(temperature, top-k, top-p) and the generation loop, and :class:`CausalLM`, the base class that
gives both the LM head over the token embedding and ``generate``. The causal mask with padding
is :func:`~course_pkg.tensorflow.masks.causal_padding_mask`.

Shapes: ``batch`` sequences of ``seq`` tokens (``prompt`` of them before generation, ``new``
fed per decoding step after ``past`` ones), ``d_model`` features, logits over ``vocab`` tokens;
``...`` any leading axes.
"""

import numpy as np
import tensorflow as tf

from ..common.arguments import check_positive
from ..common.causal_lm import check_generation, check_top_p, left_align, sample_next
from .base import Model
from .masks import causal_padding_mask, padding_mask_2d
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
    """The token ids of a causal language model (``GPT``, ``Llama``) as a tensor, checked
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


def step_inputs(model, tokens, state, padding_mask=None):
    """The inputs of a decoding step of a causal language model after the tokens of ``state``.

    The new tokens and their padding as :func:`causal_lm_inputs` gives them (and checked against
    ``max_len`` after the ``past`` cached ones), the causal mask of the new positions over all
    of them with padding keys blocked (:func:`~course_pkg.tensorflow.masks.causal_padding_mask`),
    and the state's padding and count of real tokens per row, grown by the new tokens.

    Shape:
        tokens, padding_mask (batch, new), state["pad"] (batch, past), state["count"] (batch,)
        -> tokens (batch, new), pad (batch, new), mask (batch, 1, new, past + new),
        {"pad": (batch, past + new), "count": (batch,)}.
    """
    tokens, pad = causal_lm_inputs(model, tokens, padding_mask)
    past = state["pad"].shape[1]
    check_tokens(tokens, model.vocab_size, model.max_len, past)
    all_pad = tf.concat([state["pad"], pad], axis=1)  # (batch, past + new)
    grown = {"pad": all_pad, "count": state["count"] + tf.reduce_sum(1.0 - pad, axis=1)}
    return tokens, pad, causal_padding_mask(all_pad, past), grown


def generate_tokens(model, prompt_tokens, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                    do_sample=False, seed=None, use_cache=True, padding_mask=None, eos_id=None):
    """The loop of :meth:`CausalLM.generate` (see there for the arguments), for any causal language
    model with its ``init_cache``/``decode_step`` API and ``token_embedding``, ``vocab_size``,
    ``max_len``, ``pad_id`` (``GPT``, ``Llama``).

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


class CausalLM(Model):
    """The base of the decoder-only language models (``GPT``, ``Llama``): what they do alike.

    A subclass builds ``token_embedding``, ``blocks``, ``final_norm`` and ``lm_head`` (``None``
    when the head is tied to the token embedding), sets ``num_layers``, ``d_model``,
    ``num_heads``, ``dff``, ``vocab_size``, ``max_len``, ``dropout``, ``tie_embeddings`` and
    ``pad_id``, and defines the call, ``init_cache`` and ``decode_step``. This class gives it
    the LM head (``x @ token_embeddingᵀ`` or ``lm_head(x)``) and :meth:`generate`; the
    configuration is the subclass's constructor arguments, recorded by the base ``Layer``.

    Shape:
        tokens, padding_mask (batch, seq) -> logits (batch, seq, vocab).
    """

    def _logits(self, x):
        """The LM head: ``x @ token_embeddingᵀ`` (tied) or ``lm_head(x)``."""
        if self.lm_head is None:
            table = tf.cast(self.token_embedding.embeddings, x.dtype)  # (vocab, d_model)
            return tf.matmul(x, table, transpose_b=True)  # (batch, seq, vocab)
        return self.lm_head(x)  # (batch, seq, vocab)

    def generate(self, prompt_tokens, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                 do_sample=False, seed=None, use_cache=True, padding_mask=None, eos_id=None):
        """Continue each prompt by ``max_new_tokens`` tokens, greedily or by sampling.

        Args:
            prompt_tokens: the prompts (batch, prompt), at least one real token each.
            max_new_tokens: tokens to add; ``prompt + max_new_tokens <= max_len``.
            temperature: divides the logits before sampling (< 1 sharper, > 1 flatter).
            top_k: sample among the ``top_k`` most likely tokens only
                (:func:`~course_pkg.tensorflow.top_k_filter`).
            top_p: sample in the nucleus of probability ``top_p``
                (:func:`~course_pkg.tensorflow.top_p_filter`).
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
