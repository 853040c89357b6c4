"""GPT (Radford et al., 2018, 2019): the decoder alone, trained to predict the next token.

Its inputs, positions, LM head and generation loop are those of every decoder-only model of
the course (:mod:`course_pkg.torch.causal_lm`, whose
:class:`~course_pkg.torch.causal_lm.CausalLM` is its base), and so is its mask
(:func:`~course_pkg.torch.masks.causal_padding_mask`).

Shapes: ``batch`` sequences of ``seq`` tokens (``new`` fed per decoding step after
``past`` ones), ``d_model`` features, ``heads`` attention heads of ``depth`` features,
logits over ``vocab`` tokens.
"""

import torch
from torch import nn

from ..common.arguments import (
    check_activation,
    check_dropout,
    check_epsilon,
    check_flag,
    check_pad_id,
    check_positive,
)
from ..common.huggingface import gpt2 as _hf
from .base import dense, dropout_layer, embedding, layer_norm
from .causal_lm import CausalLM, causal_lm_inputs, real_token_positions, step_inputs
from .decoder import DecoderLayer
from .masks import causal_padding_mask
from .positional import LearnedPositionalEncoding


class GPT(CausalLM):
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
        :meth:`~course_pkg.torch.causal_lm.CausalLM.generate` (the base class's)
        continues prompts;
        :meth:`init_cache`/:meth:`decode_step` decode with a key/value cache.

    Shape:
        tokens, padding_mask (batch, seq) -> logits (batch, seq, vocab).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, dropout=0.1, *,
                 activation="gelu_tanh", layer_norm_eps=1e-5, tie_embeddings=True, pad_id=None):
        super().__init__()
        check_positive(num_layers=num_layers, vocab_size=vocab_size)
        check_dropout(dropout)
        if pad_id is not None:
            check_pad_id(pad_id, vocab_size)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.dropout, self.pad_id = vocab_size, max_len, dropout, pad_id
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.tie_embeddings = check_flag("tie_embeddings", tie_embeddings)
        self.token_embedding = embedding(vocab_size, d_model)
        self.position_embedding = LearnedPositionalEncoding(max_len, d_model)
        self.embedding_dropout = dropout_layer(dropout)
        self.blocks = nn.ModuleList(
            [DecoderLayer(d_model, num_heads, dff, dropout, norm_first=True, activation=activation,
                          layer_norm_eps=layer_norm_eps, cross_attention=False) for _ in range(num_layers)]
        )
        self.final_norm = layer_norm(d_model, layer_norm_eps)
        self.lm_head = None if tie_embeddings else dense(d_model, vocab_size)

    def _embed(self, tokens, pad, count):
        """Token + position embeddings; positions count the real tokens of each row from ``count``."""
        positions = real_token_positions(pad, count)  # (batch, seq)
        x = self.token_embedding(tokens)  # (batch, seq, d_model)
        x = self.position_embedding(x, positions=positions)  # (batch, seq, d_model)
        return self.embedding_dropout(x)

    def forward(self, tokens, padding_mask=None, return_attention=False):
        tokens, pad = causal_lm_inputs(self, tokens, padding_mask)
        x = self._embed(tokens, pad, torch.zeros(tokens.shape[0], device=tokens.device))
        mask = causal_padding_mask(pad)  # (batch, 1, seq, seq)
        maps = []
        for block in self.blocks:
            if not return_attention:  # no weights formed: the fused kernel
                x = block(x, None, look_ahead_mask=mask)
                continue
            x, weights, _ = block(x, None, look_ahead_mask=mask, return_attention=True)
            maps.append(weights)  # (batch, heads, seq, seq)
        logits = self._logits(self.final_norm(x))  # (batch, seq, vocab)
        return (logits, maps) if return_attention else logits

    def init_cache(self, batch_size):
        """An empty decoding state: each block's key/value cache (batch, heads, 0, depth), the padding
        seen so far (batch, 0) and the count of real tokens per row (batch,)."""
        check_positive(batch_size=batch_size)
        weight = self.token_embedding.weight
        empty = weight.new_zeros((batch_size, self.num_heads, 0, self.d_model // self.num_heads))
        return {"layers": [{"self_k": empty, "self_v": empty} for _ in self.blocks],
                "pad": weight.new_zeros((batch_size, 0)), "count": weight.new_zeros((batch_size,))}

    def decode_step(self, tokens, state, padding_mask=None):
        """Logits for ``tokens`` that follow the ones in ``state``, reusing the cached keys and values.

        Equal (within float rounding) to the logits of the full call on the whole sequence, at the new
        positions, at O(new) cost per step.

        Shape:
            tokens (batch, new), padding_mask (batch, new) -> logits (batch, new, vocab), the grown state.
        """
        # tokens, pad (batch, new); mask (batch, 1, new, past + new); grown: the state's pad and count
        tokens, pad, mask, grown = step_inputs(self, tokens, state, padding_mask)
        x = self._embed(tokens, pad, state["count"])  # (batch, new, d_model)
        caches = []  # one per block, state["layers"] of the next step
        for block, cache in zip(self.blocks, state["layers"]):
            x, cache = block.step(x, cache, mask)
            caches.append(cache)
        logits = self._logits(self.final_norm(x))  # (batch, new, vocab)
        return logits, {"layers": caches, **grown}


def gpt_from_huggingface(source, config=None):
    """A course :class:`GPT` with the configuration and weights of a Hugging Face GPT-2.

    Args:
        source: a ``transformers`` ``GPT2LMHeadModel`` or ``GPT2Model``, or its state dict.
        config: its ``GPT2Config`` (or the config's dict); taken from ``source`` when it is a model.

    Returns:
        The course model, in eval mode (mapping in :mod:`course_pkg.common.huggingface.gpt2`).

    Raises:
        ValueError: the configuration is another family's (its ``model_type``) or lacks a size;
            an entry is missing, unexpected or of another shape than the configuration gives
            it (the message names the checkpoint's own key, the shape found and the shape
            expected). ``TypeError``: an entry is not numbers. No model is returned then.
    """
    return _hf.gpt_from_huggingface(GPT, source, config).eval()
