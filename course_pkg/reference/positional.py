"""The sinusoidal positional encoding, the token embedding it is added to, the learned table.

Mirrors ``course_pkg.torch.positional`` and ``course_pkg.tensorflow.positional``.
"""

import numpy as np


def positional_encoding(length, d_model):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...). Shape: (length, d_model)."""
    pos = np.arange(length, dtype=np.float64)[:, np.newaxis]  # (length, 1)
    two_i = (np.arange(d_model) // 2 * 2).astype(np.float64)  # 0, 0, 2, 2, 4, 4, ...
    angles = pos / np.power(10000.0, two_i / d_model)  # (length, d_model)
    pe = np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))
    return pe.astype(np.float32)


def positional_embedding(params, tokens):
    """Embedding × √d_model + positional encoding. Shape: (batch, seq) -> (batch, seq, d_model)."""
    table = params["token_embedding.embeddings"]
    d_model = table.shape[1]
    x = table[np.asarray(tokens)].astype(np.float64) * np.sqrt(d_model)
    return x + positional_encoding(x.shape[1], d_model)


def learned_positional_encoding(params, x, start=0):
    """``x + table[start:start + seq]`` with the learned table ``table.embeddings`` (max_len, d_model).

    Shape: (batch, seq, d_model) -> (batch, seq, d_model).
    """
    x = np.asarray(x, np.float64)
    table = params["table.embeddings"]
    if start + x.shape[1] > table.shape[0]:
        raise ValueError(f"positions {start}..{start + x.shape[1] - 1} exceed the table's "
                         f"{table.shape[0]} rows")
    return x + table[start:start + x.shape[1]]
