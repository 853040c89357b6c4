"""The course's Transformer in PyTorch.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow`. Imports
PyTorch only.
"""

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .data import make_batches
from .decoder import Decoder, DecoderLayer
from .decoding import beam_search, greedy_decode, translate
from .encoder import Encoder, EncoderLayer
from .feed_forward import FeedForward
from .masks import (
    create_combined_mask,
    create_look_ahead_mask,
    create_padding_mask,
    from_attend_mask,
    from_blocked_mask,
    to_attend_mask,
    to_blocked_mask,
)
from .positional import PositionalEmbedding, positional_encoding
from .seq2seq import (
    AttentionDecoder,
    BahdanauAttention,
    LuongAttention,
    Seq2Seq,
    Seq2SeqDecoder,
    Seq2SeqEncoder,
)
from .transformer import Transformer

__all__ = [
    "create_padding_mask", "create_look_ahead_mask", "create_combined_mask",
    "to_attend_mask", "to_blocked_mask", "from_attend_mask", "from_blocked_mask",
    "scaled_dot_product_attention", "MultiHeadAttention",
    "positional_encoding", "PositionalEmbedding", "FeedForward",
    "EncoderLayer", "DecoderLayer", "Encoder", "Decoder", "Transformer",
]

# Decoding (greedy, beam search) for any model with start_decoding/decode_step.
__all__ += ["greedy_decode", "beam_search", "translate"]

# RNN seq2seq (GRU encoder-decoder, Bahdanau / Luong attention).
__all__ += ["BahdanauAttention", "LuongAttention", "Seq2SeqEncoder", "Seq2SeqDecoder",
            "AttentionDecoder", "Seq2Seq"]

# Training batches (src, tgt_in, tgt_out) of text pairs, see course_pkg.data.
__all__ += ["make_batches"]

# Training: masked loss / accuracy, the Noam schedule, Adam of the paper, Trainer.
from .training import (  # noqa: E402
    NoamSchedule, Trainer, make_optimizer, masked_accuracy, masked_loss,
)

__all__ += ["masked_loss", "masked_accuracy", "NoamSchedule", "make_optimizer", "Trainer"]
