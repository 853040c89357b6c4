"""The course's Transformer in PyTorch.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow`. Imports
PyTorch only.
"""

from .attention import (
    MultiHeadAttention,
    fused_attention,
    scaled_dot_product_attention,
    set_fused_attention,
)
from .bert import BERT, bert_from_huggingface
from .causal_lm import top_k_filter, top_p_filter
from .data import make_batches
from .decoder import Decoder, DecoderLayer
from .decoding import beam_search, greedy_decode, translate
from .distributed import init_distributed
from .encoder import Encoder, EncoderLayer
from .feed_forward import FeedForward
from .gpt import GPT, gpt_from_huggingface
from .heads import ClassificationHead
from .llama import Llama, LlamaBlock, llama_from_huggingface
from .losses import masked_accuracy, masked_loss
from .masks import (
    create_combined_mask,
    create_look_ahead_mask,
    create_padding_mask,
    from_attend_mask,
    from_blocked_mask,
    to_attend_mask,
    to_blocked_mask,
)
from .normalization import RMSNorm
from .positional import LearnedPositionalEncoding, PositionalEmbedding, positional_encoding
from .rotary import RotaryEmbedding, apply_rotary, rotary_cos_sin
from .schedule import NoamSchedule, make_optimizer
from .seq2seq import (
    AttentionDecoder,
    BahdanauAttention,
    LuongAttention,
    Seq2Seq,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from .trainer import Trainer
from .transformer import Transformer, marian_from_huggingface
from .vit import PatchEmbedding, ViT, vit_from_huggingface

__all__ = [
    # Masks (float, 1.0 = blocked) and converters to each library's boolean convention.
    "create_padding_mask", "create_look_ahead_mask", "create_combined_mask",
    "to_attend_mask", "to_blocked_mask", "from_attend_mask", "from_blocked_mask",
    # The Transformer, one class per component of the paper.
    "scaled_dot_product_attention", "MultiHeadAttention",
    # The fused kernel behind MultiHeadAttention(need_weights=False), and its switch.
    "fused_attention", "set_fused_attention",
    "positional_encoding", "PositionalEmbedding", "LearnedPositionalEncoding", "FeedForward",
    "EncoderLayer", "DecoderLayer", "Encoder", "Decoder", "Transformer",
    # The Transformer as a real translation model: the loader of Hugging Face's Marian (opus-mt).
    "marian_from_huggingface",
    # The model families (chapter 8): encoder-only BERT, decoder-only GPT, a classification head,
    # sampling filters, and the loaders of Hugging Face checkpoints.
    "ClassificationHead", "BERT", "GPT", "top_k_filter", "top_p_filter",
    "bert_from_huggingface", "gpt_from_huggingface",
    # Llama's components: RMSNorm and rotary position embeddings (RoPE); grouped-query attention and
    # the gated (SwiGLU) feed-forward are options of MultiHeadAttention and FeedForward.
    "RMSNorm", "RotaryEmbedding", "rotary_cos_sin", "apply_rotary",
    # Llama: RMSNorm, rotary positions, SwiGLU and grouped-query attention in a decoder-only model,
    # and the loader of Hugging Face's Llama checkpoints.
    "Llama", "LlamaBlock", "llama_from_huggingface",
    # Vision (chapter 9): images as sequences of patches, the ViT, the loader of Hugging Face's ViT.
    "PatchEmbedding", "ViT", "vit_from_huggingface",
    # Decoding (greedy, beam search) for any model with start_decoding/decode_step.
    "greedy_decode", "beam_search", "translate",
    # RNN seq2seq (GRU encoder-decoder, Bahdanau / Luong attention).
    "BahdanauAttention", "LuongAttention", "Seq2SeqEncoder", "Seq2SeqDecoder",
    "AttentionDecoder", "Seq2Seq",
    # Training batches (src, tgt_in, tgt_out) of text pairs, see course_pkg.data.
    "make_batches",
    # Training: masked loss / accuracy, the Noam schedule, Adam of the paper, Trainer.
    "masked_loss", "masked_accuracy", "NoamSchedule", "make_optimizer", "Trainer",
    # Several devices or processes (the appendix "Scaling up"): the Trainer runs under them as is.
    "init_distributed",
]
