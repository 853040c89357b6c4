"""Llama: a block (RMSNorm, grouped-query attention with rotary positions, the SwiGLU feed-forward) and
the decoder-only model under the causal mask, in float64.

Mirrors ``course_pkg.torch.llama`` and ``course_pkg.tensorflow.llama``; the components are
:func:`rms_norm`, :func:`grouped_query_attention` (``num_kv_heads``, ``rope_theta``) and
:func:`feed_forward` (``gated``). Its inputs, positions and LM head are GPT's, those of every
decoder-only model, in :mod:`course_pkg.reference.causal_lm`.
"""

import numpy as np

from .attention import grouped_query_attention
from .base import sub
from .causal_lm import causal_lm_inputs, lm_logits, real_token_positions
from .feed_forward import feed_forward
from .masks import causal_padding_mask
from .normalization import rms_norm


def llama_block(params, x, num_heads, mask=None, positions=None, num_kv_heads=None, rope_theta=10000.0,
                eps=1e-6):
    """``x + attention(attention_norm(x))``, then ``x + feed_forward(ffn_norm(x))`` (SwiGLU), the
    attention grouped-query (``num_kv_heads``) with queries and keys rotated to ``positions``.

    Shape: x (batch, seq, d_model), mask (batch, 1, seq, seq), positions (batch, seq) ->
    (batch, seq, d_model), attention weights (batch, heads, seq, seq).
    """
    h = rms_norm(sub(params, "attention_norm"), x, eps)
    attn, weights = grouped_query_attention(sub(params, "attention"), h, h, h, num_heads, mask, num_kv_heads,
                                            rope_theta, positions)
    x = x + attn
    h = rms_norm(sub(params, "ffn_norm"), x, eps)
    return x + feed_forward(sub(params, "feed_forward"), h, "silu", gated=True), weights


def llama(params, tokens, num_heads, padding_mask=None, num_kv_heads=None, rope_theta=10000.0, eps=1e-6):
    """Llama: token embeddings, :func:`llama_block` layers under the causal mask, a final RMSNorm, the LM head
    (``lm_head``, or the token embedding's transpose when ``params`` has no ``lm_head``).

    Padding as in GPT: ``padding_mask`` (batch, seq) is 1.0 at padding, whose keys are blocked; the
    positions that rotate queries and keys count real tokens only (a row's first real one is at 0).

    Shape: tokens (batch, seq) -> logits (batch, seq, vocab).
    """
    tokens, pad = causal_lm_inputs(tokens, padding_mask)
    positions = real_token_positions(pad, 0)  # (batch, seq)
    x = params["token_embedding.embeddings"].astype(np.float64)[tokens]  # (batch, seq, d_model)
    mask = causal_padding_mask(pad)  # (batch, 1, seq, seq)
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, _ = llama_block(sub(params, f"blocks.{i}"), x, num_heads, mask, positions, num_kv_heads,
                           rope_theta, eps)
    return lm_logits(params, rms_norm(sub(params, "final_norm"), x, eps))


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, tokens, bytes_per_value, batch=1):
    """The bytes of a decoder's key/value cache: a key and a value of ``num_kv_heads × head_dim`` numbers
    per token, per layer and per sequence of the batch, ``bytes_per_value`` bytes each (2 in bfloat16)."""
    return 2 * num_layers * num_kv_heads * head_dim * tokens * bytes_per_value * batch
