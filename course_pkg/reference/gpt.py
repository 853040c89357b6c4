"""GPT (chapter 8): the decoder alone under the causal mask.

Mirrors ``course_pkg.torch.gpt`` and ``course_pkg.tensorflow.gpt``. Its inputs, positions, LM head
and sampling filters are those of every decoder-only model, in :mod:`course_pkg.reference.causal_lm`.
"""

import numpy as np

from .base import layer_norm, sub
from .causal_lm import causal_lm_inputs, lm_logits, real_token_positions
from .decoder import decoder_layer
from .masks import causal_padding_mask


def gpt(params, tokens, num_heads, padding_mask=None, activation="gelu_tanh", eps=1e-5):
    """GPT: token + learned position embeddings, pre-LN decoder blocks without cross-attention under the
    causal mask, a final LayerNorm, the LM head (tied to the token embedding unless ``lm_head`` is given).

    ``padding_mask`` is (batch, seq), 1.0 at padding: padding keys are blocked and positions count real
    tokens only (a row's first real token is at position 0).

    Shape: tokens (batch, seq) -> logits (batch, seq, vocab).
    """
    tokens, pad = causal_lm_inputs(tokens, padding_mask)
    positions = real_token_positions(pad, 0)  # (batch, seq)
    x = params["token_embedding.embeddings"].astype(np.float64)[tokens]  # (batch, seq, d_model)
    x = x + params["position_embedding.table.embeddings"][positions]
    mask = causal_padding_mask(pad)  # (batch, 1, seq, seq)
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, _, _ = decoder_layer(sub(params, f"blocks.{i}"), x, None, num_heads, mask, None, True, activation,
                                eps, cross_attention=False)
    return lm_logits(params, layer_norm(sub(params, "final_norm"), x, eps))
