"""The course's Transformer in PyTorch.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow`. Imports
PyTorch only.
"""

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .decoder import Decoder, DecoderLayer
from .decoding import beam_search, greedy_decode
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
from .transformer import Transformer

__all__ = [
    "create_padding_mask", "create_look_ahead_mask", "create_combined_mask",
    "to_attend_mask", "to_blocked_mask", "from_attend_mask", "from_blocked_mask",
    "scaled_dot_product_attention", "MultiHeadAttention",
    "positional_encoding", "PositionalEmbedding", "FeedForward",
    "EncoderLayer", "DecoderLayer", "Encoder", "Decoder", "Transformer",
]

# Decoding (greedy, beam search) for any model with start_decoding/decode_step.
__all__ += ["greedy_decode", "beam_search"]
