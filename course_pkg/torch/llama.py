"""Llama (Touvron et al., 2023): GPT's decoder-only stack with RMSNorm, rotary positions, a gated
(SwiGLU) feed-forward and grouped-query attention.

Its inputs, positions, LM head and generation loop are GPT's, those of every decoder-only model of
the course (:mod:`course_pkg.torch.causal_lm`, whose
:class:`~course_pkg.torch.causal_lm.CausalLM` is its base), and so is its mask
(:func:`~course_pkg.torch.masks.causal_padding_mask`).

Shapes: ``batch`` sequences of ``seq`` tokens (``new`` fed per decoding step after ``past`` ones),
``d_model`` features, ``heads`` query heads and ``kv_heads`` key/value heads of ``depth`` features,
logits over ``vocab`` tokens.
"""

import torch
from torch import nn

from ..common.arguments import check_dropout, check_epsilon, check_flag, check_pad_id, check_positive
from ..common.attention import check_num_kv_heads
from ..common.huggingface import llama as _hf
from ..common.rotary import check_theta
from .attention import MultiHeadAttention
from .base import Layer, dense, dropout_layer, embedding
from .causal_lm import CausalLM, causal_lm_inputs, real_token_positions, step_inputs
from .feed_forward import FeedForward
from .masks import causal_padding_mask
from .normalization import RMSNorm


class LlamaBlock(Layer):
    """One Llama block: pre-norm self-attention, then a pre-norm gated feed-forward, each added to x.

    ``x = x + dropout1(attention(attention_norm(x), mask, positions))``
    ``x = x + dropout2(feed_forward(ffn_norm(x)))``

    ``attention`` is a :class:`MultiHeadAttention` without biases, with ``num_kv_heads``
    key/value heads (grouped-query attention) and rotary position embeddings of base
    ``rope_theta`` on its queries and keys; ``feed_forward`` a gated :class:`FeedForward`
    without biases, ``w2(silu(w1 x) * w3 x)`` (SwiGLU); the norms are :class:`RMSNorm`.

    Args:
        d_model, num_heads, dff: the block's sizes.
        num_kv_heads: key/value heads, a divisor of ``num_heads`` (``None``: ``num_heads``;
            1: multi-query attention).
        rope_theta: base of the rotary frequencies (10000 in Llama 2, 500000 in Llama 3).
        rms_norm_eps: epsilon of the two RMSNorms.
        dropout: dropout rate on each sub-layer's output (Llama has none: 0.0).

    Call:
        ``block(x, mask=None, positions=None, return_attention=False)``: ``mask`` is a course
        mask (1.0 = blocked), the causal mask with the padding; ``positions`` the int position
        of each token (default ``arange(seq)`` in every row). With ``return_attention=True``
        returns ``(x, attention_weights)``. :meth:`step` decodes with a key/value cache.

    Shape:
        x (batch, seq, d_model), mask (batch, 1, seq, seq), positions (batch, seq)
        -> (batch, seq, d_model); attention_weights (batch, heads, seq, seq).
    """

    def __init__(self, d_model, num_heads, dff, num_kv_heads=None, rope_theta=10000.0, rms_norm_eps=1e-6,
                 dropout=0.0):
        super().__init__()
        num_kv_heads = check_num_kv_heads(num_heads, num_kv_heads)
        check_theta(rope_theta, "rope_theta")
        check_epsilon(rms_norm_eps, "rms_norm_eps")
        check_dropout(dropout)
        self.d_model, self.num_heads, self.dff, self.num_kv_heads = d_model, num_heads, dff, num_kv_heads
        self.rope_theta, self.rms_norm_eps, self.dropout = float(rope_theta), float(rms_norm_eps), dropout
        self.attention_norm = RMSNorm(d_model, rms_norm_eps)
        self.attention = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, use_bias=False,
                                            rope_theta=rope_theta)
        self.dropout1 = dropout_layer(dropout)
        self.ffn_norm = RMSNorm(d_model, rms_norm_eps)
        self.feed_forward = FeedForward(d_model, dff, 0.0, activation="silu", gated=True, use_bias=False)
        self.dropout2 = dropout_layer(dropout)

    def forward(self, x, mask=None, positions=None, return_attention=False):
        h = self.attention_norm(x)  # (batch, seq, d_model)
        attn, weights = self.attention(h, h, h, mask=mask, need_weights=return_attention,
                                       positions=positions)  # (batch, seq, d_model)
        x = x + self.dropout1(attn)
        out = self.feed_forward(self.ffn_norm(x))  # (batch, seq, d_model)
        x = x + self.dropout2(out)
        return (x, weights) if return_attention else x

    def step(self, x, cache, mask=None, positions=None):
        """Decode new positions only, reusing the cached (rotated) keys and values.

        ``cache`` holds ``self_k``/``self_v``, the keys (already rotated) and values of the
        positions decoded so far; ``positions`` are those of the new tokens. The result equals
        the full call over the whole prefix, at the new positions.

        Shape:
            x (batch, new, d_model), cache["self_k"] (batch, kv_heads, past, depth),
            mask (batch, 1, new, past + new), positions (batch, new) ->
            (batch, new, d_model), cache with (batch, kv_heads, past + new, depth).
        """
        h = self.attention_norm(x)  # (batch, new, d_model)
        k, v = self.attention.project_kv(h, h, positions=positions)  # (batch, kv_heads, new, depth)
        k = torch.cat([cache["self_k"], k], dim=2)  # (batch, kv_heads, past + new, depth)
        v = torch.cat([cache["self_v"], v], dim=2)  # (batch, kv_heads, past + new, depth)
        attn, _ = self.attention.attend(h, k, v, mask, need_weights=False,
                                        positions=positions)  # (batch, new, d_model)
        x = x + self.dropout1(attn)
        out = self.feed_forward(self.ffn_norm(x))  # (batch, new, d_model)
        x = x + self.dropout2(out)
        return x, {**cache, "self_k": k, "self_v": v}

    def get_config(self):
        """The recorded arguments, ``num_kv_heads`` resolved (``None`` is ``num_heads``).

        Blocks with weights of the same shapes then have the same configuration, whether the
        number was given or left to its default (:func:`course_pkg.interop.copy_weights` compares them).
        """
        return {**super().get_config(), "num_kv_heads": self.num_kv_heads}


class Llama(CausalLM):
    """A decoder-only Transformer in Llama's layout: :class:`LlamaBlock` layers under the causal mask.

    ``x = token_embedding(t)`` (no position table: the blocks rotate queries and keys by their
    positions), ``num_layers`` :class:`LlamaBlock`, a final :class:`RMSNorm` ``final_norm``
    and the LM head: its own dense layer ``lm_head`` without bias (Llama) or ``x @
    token_embeddingᵀ`` (tied). With the weights of a Hugging Face ``LlamaForCausalLM``
    (:func:`llama_from_huggingface`) it computes its logits.

    Padding, left or right, as in GPT: ``padding_mask`` (1.0 = padding) blocks padding
    keys, and positions count real tokens only (a row's first real token is at position 0, as
    Hugging Face's ``generate`` does for left padding); outputs at padding positions mean nothing.

    Args:
        num_layers, d_model, num_heads, dff: the stack's sizes.
        vocab_size: number of token ids.
        max_len: the longest sequence (Hugging Face's ``max_position_embeddings``); no weight
            depends on it.
        dropout: dropout rate on each sub-layer's output (0.0, as Llama).
        num_kv_heads, rope_theta, rms_norm_eps: of the blocks (and ``rms_norm_eps`` of ``final_norm``).
        tie_embeddings: the LM head is the transposed token embedding (True) or its own dense
            layer ``lm_head`` (False, Llama 2 7B; small Llama 3.2 models tie).
        pad_id: when given, tokens equal to it are padding unless a ``padding_mask`` is passed.

    Call:
        ``llama(tokens, padding_mask=None, return_attention=False)`` returns the next-token
        logits at every position (and the list of attention maps).
        :meth:`~course_pkg.torch.causal_lm.CausalLM.generate` (the base class's, GPT's loop)
        continues prompts; :meth:`init_cache`/:meth:`decode_step`
        decode with a key/value cache that keeps ``num_kv_heads`` heads.

    Shape:
        tokens, padding_mask (batch, seq) -> logits (batch, seq, vocab).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.0, *,
                 num_kv_heads=None, rope_theta=10000.0, rms_norm_eps=1e-6, tie_embeddings=False, pad_id=None):
        super().__init__()
        check_positive(num_layers=num_layers, vocab_size=vocab_size, max_len=max_len)
        check_dropout(dropout)
        num_kv_heads = check_num_kv_heads(num_heads, num_kv_heads)
        check_theta(rope_theta, "rope_theta")
        check_epsilon(rms_norm_eps, "rms_norm_eps")
        if pad_id is not None:
            check_pad_id(pad_id, vocab_size)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout, self.pad_id = vocab_size, max_len, dropout, pad_id
        self.num_kv_heads, self.rope_theta = num_kv_heads, float(rope_theta)
        self.rms_norm_eps = float(rms_norm_eps)
        self.tie_embeddings = check_flag("tie_embeddings", tie_embeddings)
        self.token_embedding = embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            [LlamaBlock(d_model, num_heads, dff, num_kv_heads, rope_theta, rms_norm_eps, dropout)
             for _ in range(num_layers)]
        )
        self.final_norm = RMSNorm(d_model, rms_norm_eps)
        self.lm_head = (None if tie_embeddings
                        else dense(d_model, vocab_size, use_bias=False))

    def forward(self, tokens, padding_mask=None, return_attention=False):
        tokens, pad = causal_lm_inputs(self, tokens, padding_mask)
        start = torch.zeros(tokens.shape[0], device=tokens.device)  # (batch,): no token before
        positions = real_token_positions(pad, start)  # (batch, seq)
        x = self.token_embedding(tokens)  # (batch, seq, d_model)
        mask = causal_padding_mask(pad)  # (batch, 1, seq, seq)
        maps = []
        for block in self.blocks:
            if not return_attention:  # no weights formed: the fused kernel
                x = block(x, mask, positions=positions)
                continue
            x, weights = block(x, mask, positions=positions, return_attention=True)
            maps.append(weights)  # (batch, heads, seq, seq)
        logits = self._logits(self.final_norm(x))  # (batch, seq, vocab)
        return (logits, maps) if return_attention else logits

    def init_cache(self, batch_size):
        """An empty decoding state: each block's key/value cache (batch, kv_heads, 0, depth), the
        padding seen so far (batch, 0) and the count of real tokens per row (batch,)."""
        check_positive(batch_size=batch_size)
        weight = self.token_embedding.weight
        depth = self.d_model // self.num_heads
        empty = weight.new_zeros((batch_size, self.num_kv_heads, 0, depth))
        return {"layers": [{"self_k": empty, "self_v": empty} for _ in self.blocks],
                "pad": weight.new_zeros((batch_size, 0)), "count": weight.new_zeros((batch_size,))}

    def decode_step(self, tokens, state, padding_mask=None):
        """Logits for ``tokens`` that follow the ones in ``state``, reusing the cached keys and values.

        Equal (within float rounding) to the logits of the full call on the whole sequence, at the
        new positions, at O(new) cost per step.

        Shape:
            tokens (batch, new), padding_mask (batch, new) -> logits (batch, new, vocab), the grown state.
        """
        # tokens, pad (batch, new); mask (batch, 1, new, past + new); grown: the state's pad and count
        tokens, pad, mask, grown = step_inputs(self, tokens, state, padding_mask)
        positions = real_token_positions(pad, state["count"])  # (batch, new)
        x = self.token_embedding(tokens)  # (batch, new, d_model)
        caches = []  # one per block, state["layers"] of the next step
        for block, cache in zip(self.blocks, state["layers"]):
            x, cache = block.step(x, cache, mask, positions)
            caches.append(cache)
        logits = self._logits(self.final_norm(x))  # (batch, new, vocab)
        return logits, {"layers": caches, **grown}

    def get_config(self):
        """The recorded arguments, ``num_kv_heads`` resolved (``None`` is ``num_heads``).

        Models with weights of the same shapes then have the same configuration, whether the
        number was given or left to its default (:func:`course_pkg.interop.copy_weights` compares them).
        """
        return {**super().get_config(), "num_kv_heads": self.num_kv_heads}


def llama_from_huggingface(source, config=None):
    """A course :class:`Llama` with the configuration and weights of a Hugging Face Llama.

    Args:
        source: a ``transformers`` ``LlamaForCausalLM`` or ``LlamaModel``, or its state dict.
        config: its ``LlamaConfig`` (or the config's dict); taken from ``source`` when it is a model.

    Returns:
        The course model, in eval mode (mapping in :mod:`course_pkg.common.huggingface.llama`).

    Raises:
        ValueError: the configuration is another family's (its ``model_type``), lacks a size, or
            asks for what the course's Llama does not compute (scaled rotary embeddings, biases,
            another activation than SiLU, another ``head_dim``; the message names the key); an
            entry is missing, unexpected or of another shape than the configuration gives it (the
            message names the checkpoint's own key). ``TypeError``: an entry is not numbers. No
            model is returned then.
    """
    return _hf.llama_from_huggingface(Llama, source, config).eval()
