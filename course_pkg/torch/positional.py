"""Positional encoding and the token embedding it is added to (Vaswani et al., 2017, §3.4-3.5).

Shapes: ``batch`` sequences of ``seq`` tokens, embedded in ``d_model``
features; the position table has ``length`` rows (``max_len`` in the layer).
"""

import math

import torch

from ..common.arguments import check_features, check_positive
from ..common.positional import check_start, check_table_size
from ..common.tokens import check_length, check_token_rank
from .base import Layer, embedding
from .tokens import check_tokens, token_ids


def positional_encoding(length, d_model):
    """The sinusoidal position table.

    PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model)).
    Angles are computed in float64 so that long tables stay exact in float32.

    Raises:
        TypeError: ``length`` or ``d_model`` not an int; ValueError: a negative one.

    Shape:
        () -> (length, d_model) float32.
    """
    check_table_size(length=length, d_model=d_model)
    pos = torch.arange(length, dtype=torch.float64)[:, None]  # (length, 1)
    two_i = torch.div(torch.arange(d_model), 2, rounding_mode="floor") * 2  # 0, 0, 2, 2, ...
    angles = pos / torch.pow(10000.0, two_i.to(torch.float64) / d_model)  # (length, d_model)
    even = torch.arange(d_model) % 2 == 0  # (d_model,)
    return torch.where(even, torch.sin(angles), torch.cos(angles)).to(torch.float32)



class PositionalEmbedding(Layer):
    """Token embedding × √d_model plus the positional encoding.

    Args:
        vocab_size: number of token ids.
        d_model: embedding width.
        max_len: longest sequence the position table covers.

    Call:
        ``embedding(tokens, start=0)``: the tokens sit at positions
        ``start, start + 1, ...`` (``start > 0`` when decoding step by step).

    Shape:
        tokens (batch, seq) int -> (batch, seq, d_model).
    """

    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        check_positive(vocab_size=vocab_size, d_model=d_model, max_len=max_len)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_len = max_len
        self.token_embedding = embedding(vocab_size, d_model)
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def forward(self, tokens, start=0):
        tokens = token_ids(tokens).to(self.token_embedding.weight.device)  # uint8, int16, ... as int64
        check_tokens(tokens, self.vocab_size, self.max_len, start)
        seq = tokens.shape[1]
        x = self.token_embedding(tokens) * math.sqrt(self.d_model)  # (batch, seq, d_model)
        return x + self.pe[start:start + seq].to(x.dtype)  # (batch, seq, d_model)


class LearnedPositionalEncoding(Layer):
    """A learned position table added to its input: the alternative to the sinusoidal one.

    BERT, GPT-2 and ViT learn one vector per position instead of computing
    :func:`positional_encoding`; the table (``table``, an embedding of
    ``max_len`` rows, canonical weight ``table.embeddings``) starts
    U(-0.05, 0.05) and trains with the model. Unlike the sinusoidal table, it
    cannot extend past ``max_len``.

    Args:
        max_len: number of positions (rows of the table).
        d_model: width of each position vector.

    Call:
        ``layer(x, start=0)`` returns ``x + table[start:start + seq]``: the inputs sit
        at positions ``start, start + 1, ...`` (``start > 0`` when decoding step by step).
        ``start + seq > max_len``: ``ValueError``. ``layer(x, positions=ids)`` adds the rows
        ``table[ids]`` instead, one position per token (left-padded batches: each row
        counts from its first real token).

    Shape:
        x (batch, seq, d_model) -> (batch, seq, d_model).
    """

    def __init__(self, max_len, d_model):
        super().__init__()
        check_positive(max_len=max_len, d_model=d_model)
        self.max_len, self.d_model = max_len, d_model
        self.table = embedding(max_len, d_model)  # (max_len, d_model)

    def forward(self, x, start=0, positions=None):
        check_features(x.shape, self.d_model, "x")
        if positions is not None:  # (batch, seq) int
            positions = torch.as_tensor(positions, device=x.device)
            check_token_rank(positions.shape)
            if positions.numel():
                check_length(int(positions.max()) + 1, self.max_len)
            return x + self.table(positions).to(x.dtype)  # (batch, seq, d_model)
        check_start(start)
        seq = x.shape[1]
        check_length(start + seq, self.max_len)
        return x + self.table.weight[start:start + seq].to(x.dtype)  # (batch, seq, d_model)
