"""NumPy reference implementation: the oracle both frameworks are held to.

The course's Transformer a third time, in NumPy alone, in float64, importing no
framework. Its modules carry the names of the twins' modules
(:mod:`course_pkg.torch` and :mod:`course_pkg.tensorflow`) for the same concept,
so the oracle of ``course_pkg.torch.masks`` is :mod:`course_pkg.reference.masks`;
this package re-exports every function, so ``course_pkg.reference.<name>`` reads
the same whichever module holds ``<name>``.

Every function here is written for clarity, not speed, straight from the paper
(Vaswani et al., 2017). Layers take a ``params`` dict of NumPy arrays with the
canonical names that :func:`course_pkg.interop.get_weights` returns for the
same component, e.g. ``{"wq.kernel": (d_model, d_model), "wq.bias": ..., ...}``
for multi-head attention. Dense kernels have the Keras layout ``(in, out)``,
so a dense layer is ``x @ kernel + bias``.

Masks follow the course convention: float, 1.0 = blocked, 0.0 = may attend.

Shapes: ``batch`` sequences (or sentence pairs) of ``seq`` positions, ``src_len``
and ``tgt_len`` on the source and target sides, ``T`` target positions in the
training formulas; ``...`` any leading axes. ``d_model`` is the model width,
``heads`` the attention heads of ``depth`` features; ``Tq`` queries of depth
``dk`` attend to ``Tk`` keys (values of depth ``dv``); ``length`` counts the rows
of the position table. ``units`` is the GRU width (``u`` in its formulas, ``3u``
for its three gates), ``query_dim``/``key_dim`` the widths of an RNN attention's
queries and keys, ``in``/``out`` a dense kernel's input and output widths,
``vocab`` the (target) vocabulary size.

The training formulas (masked loss, label smoothing, the Noam schedule),
greedy decoding's step, the parameter counts (each next to its concept), and chapter 8's
prefix-LM mask, top-k probabilities, masked-LM corruption, RoPE on one vector, KV-cache bytes, the
grouped-query repeat and the perplexity are also the reference answers of the course's exercises
(``course_pkg.exercises``).
"""

from .attention import (
    combine_heads,
    grouped_query_attention,
    multi_head_attention,
    repeat_kv,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from .base import LAYER_NORM_EPSILON, dense, layer_norm, sub
from .bert import bert, mlm_inputs
from .causal_lm import (
    causal_lm_inputs,
    lm_logits,
    real_token_positions,
    top_k_filter,
    top_k_probabilities,
    top_p_filter,
    top_p_probabilities,
)
from .decoder import decoder, decoder_layer, decoder_layer_parameters
from .decoding import greedy_step
from .encoder import encoder, encoder_layer, encoder_layer_parameters
from .feed_forward import ACTIVATIONS, feed_forward, gelu, gelu_tanh, silu
from .gpt import gpt
from .llama import kv_cache_bytes, llama, llama_block
from .losses import log_softmax, masked_loss, perplexity, smoothed_targets, teacher_forcing
from .masks import (
    causal_padding_mask,
    create_combined_mask,
    create_look_ahead_mask,
    create_padding_mask,
    prefix_lm_mask,
)
from .normalization import rms_norm
from .positional import learned_positional_encoding, positional_embedding, positional_encoding
from .rnn_attention import bahdanau_attention, luong_attention, masked_softmax
from .rotary import apply_rotary, rope_rotate, rotary_cos_sin, rotate_half
from .schedule import noam_learning_rate
from .seq2seq import (
    attention_decoder,
    gru,
    gru_cell,
    gru_parameters,
    seq2seq,
    seq2seq_decoder,
    seq2seq_encoder,
    sigmoid,
)
from .transformer import transformer
from .vit import (
    attention_rollout,
    conv_stem,
    patch_embedding,
    patchify,
    vit,
    vit_embedding_parameters,
    vit_features,
)

__all__ = [
    # masks
    "create_padding_mask", "create_look_ahead_mask", "create_combined_mask", "prefix_lm_mask",
    "causal_padding_mask",
    # attention
    "softmax", "scaled_dot_product_attention", "split_heads", "combine_heads", "multi_head_attention",
    "grouped_query_attention",
    # the building blocks (base), positions, the feed-forward network
    "LAYER_NORM_EPSILON", "dense", "sub", "layer_norm",
    "positional_encoding", "positional_embedding", "learned_positional_encoding",
    "gelu", "gelu_tanh", "ACTIVATIONS", "feed_forward",
    # encoder, decoder, the whole model
    "encoder_layer", "encoder", "encoder_layer_parameters",
    "decoder_layer", "decoder", "decoder_layer_parameters", "transformer",
    # the model families (chapter 8)
    "bert", "mlm_inputs", "gpt", "top_k_filter", "top_p_filter", "top_k_probabilities", "top_p_probabilities",
    # what the decoder-only models (GPT, Llama) share: inputs, positions, the LM head
    "causal_lm_inputs", "real_token_positions", "lm_logits",
    # RNN seq2seq (chapter 1)
    "sigmoid", "gru_cell", "gru", "gru_parameters", "masked_softmax", "bahdanau_attention", "luong_attention",
    "seq2seq_encoder", "seq2seq_decoder", "attention_decoder", "seq2seq",
    # training and decoding
    "teacher_forcing", "log_softmax", "smoothed_targets", "masked_loss", "noam_learning_rate", "greedy_step",
    "perplexity",
    # Llama's components: RMSNorm, rotary position embeddings, SiLU (grouped-query attention and the
    # gated feed-forward: grouped_query_attention and feed_forward's option)
    "rms_norm", "rotary_cos_sin", "rotate_half", "apply_rotary", "silu",
    # Llama: a block and the decoder-only model; the exercises' RoPE by hand, KV-cache bytes, repeat_kv
    "llama_block", "llama", "rope_rotate", "kv_cache_bytes", "repeat_kv",
    # vision (chapter 9)
    "patchify", "patch_embedding", "conv_stem", "vit_features", "vit", "attention_rollout",
    "vit_embedding_parameters",
]
