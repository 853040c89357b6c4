"""BERT (chapter 8): the encoder alone, and the masked-LM corruption it is pre-trained on.

Mirrors ``course_pkg.torch.bert`` and ``course_pkg.tensorflow.bert``. :func:`mlm_inputs` is the
reference answer of exercise 8.3 and the oracle of :func:`course_pkg.data.mask_for_mlm`.
"""

import numpy as np

from .base import dense, layer_norm, sub
from .encoder import encoder_layer
from .feed_forward import ACTIVATIONS
from .positional import learned_positional_encoding


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
