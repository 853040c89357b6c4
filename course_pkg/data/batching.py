"""Padding and batching: :func:`pad_batch`, :func:`encode_pairs` and the NumPy :class:`Batches`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..common.arguments import check_count
from .vocab import BOS_ID, EOS_ID, PAD_ID, Vocab


def pad_batch(sequences, pad_id=PAD_ID, max_len=None) -> np.ndarray:
    """Right-pad sequences of ids to the longest one.

    Args:
        sequences: non-empty list of sequences of integer ids (may differ in length).
        pad_id: the id written after each sequence.
        max_len: the longest length allowed (e.g. the model's ``max_len``);
            a longer sequence raises ``ValueError``.

    Shape:
        batch sequences of lengths L_i -> (batch, max L_i) int64.
    """
    if isinstance(sequences, np.ndarray) and sequences.ndim == 2:
        sequences = list(sequences)
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_batch got no sequences: the batch is empty")
    rows = []
    for i, seq in enumerate(sequences):
        row = np.asarray(seq)
        if row.ndim != 1:
            raise ValueError(f"sequence {i} must be 1-D (a list of ids), got shape {row.shape}")
        if row.size and row.dtype.kind not in "iu":
            raise TypeError(f"sequence {i} must hold integer ids, got dtype {row.dtype}")
        if max_len is not None and row.size > max_len:
            raise ValueError(f"sequence {i} has length {row.size}, more than max_len={max_len}")
        rows.append(row)
    out = np.full((len(rows), max(r.size for r in rows)), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :row.size] = row
    return out


def pairs_max_len(pairs, src_vocab, tgt_vocab) -> int:
    """The smallest ``max_len`` that :func:`encode_pairs` accepts for ``pairs``: the longest
    ``x <eos>`` or ``<bos> y`` among them (a model's positional table must cover it).

    A model's ``max_len`` is measured on every split it will read, their lengths only: chapter 7's
    translator on its training, validation and test pairs.
    """
    return 1 + max(max(len(src_vocab.encode(source)), len(tgt_vocab.encode(target)))
                   for source, target in pairs)


def encode_pairs(pairs, src_vocab, tgt_vocab, max_len=None):
    """Encode text pairs for teacher forcing.

    For a pair ``(x, y)``: ``src = x <eos>``, ``tgt_in = <bos> y`` (what the
    decoder reads), ``tgt_out = y <eos>`` (what it must predict, ``tgt_in``
    shifted left by one).

    Args:
        pairs: non-empty list of ``(source_text, target_text)``.
        src_vocab, tgt_vocab: :class:`Vocab` of each side.
        max_len: the longest sequence allowed (the model's ``max_len``);
            ``ValueError`` names the first pair that is longer.

    Returns:
        ``(src, tgt_in, tgt_out)`` int64 arrays, right-padded with ``<pad>`` = 0.

    Shape:
        N pairs -> src (N, S), tgt_in (N, T), tgt_out (N, T); S, T the longest
        encoded source / target (with its ``<eos>`` / ``<bos>``).
    """
    if isinstance(pairs, str) or not isinstance(pairs, Iterable):
        raise TypeError(f"pairs must be a list of (source_text, target_text), got {type(pairs).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("encode_pairs got no pairs: the corpus is empty")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"{name} must be a course_pkg.data.Vocab, got {type(vocab).__name__}")
    srcs, tgts = [], []
    for i, pair in enumerate(pairs):
        if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                or not all(isinstance(t, str) for t in pair)):
            raise TypeError(f"pair {i} must be (source_text, target_text), got {pair!r:.80}")
        src = src_vocab.encode(pair[0], add_eos=True)
        tgt = tgt_vocab.encode(pair[1])
        if max_len is not None:
            for side, length in (("source", len(src)), ("target", len(tgt) + 1)):
                if length > max_len:
                    raise ValueError(
                        f"pair {i} has a {side} of length {length} with its <eos>/<bos>, more "
                        f"than max_len={max_len}: {pair!r:.120}; raise max_len or drop long pairs"
                    )
        srcs.append(src)
        tgts.append(tgt)
    return (pad_batch(srcs), pad_batch([[BOS_ID] + t for t in tgts]),
            pad_batch([t + [EOS_ID] for t in tgts]))


def _lengths(arr, pad_id=PAD_ID):
    """Length of each right-padded row: index of its last non-pad id + 1."""
    used = arr != pad_id
    return np.where(used.any(axis=1), arr.shape[1] - np.argmax(used[:, ::-1], axis=1), 0)


class Batches:
    """Re-iterable NumPy batches ``(src, tgt_in, tgt_out)``, padded per batch.

    Made by :func:`make_batches`. Every pass (``for batch in batches``) is one
    epoch; with ``shuffle=True`` epoch ``e`` visits the examples in the order
    ``numpy.random.default_rng([seed, e]).permutation(N)``, so the framework
    loaders built on it give the very same batches.
    """

    def __init__(self, arrays, batch_size, shuffle, seed):
        self.arrays = arrays
        self.lengths = (_lengths(arrays[0]), _lengths(arrays[1]))
        self.batch_size, self.shuffle, self.seed = batch_size, bool(shuffle), seed
        self.epoch = 0

    @property
    def num_examples(self) -> int:
        return self.arrays[0].shape[0]

    def __len__(self):
        return -(-self.num_examples // self.batch_size)

    def __repr__(self):
        return (f"Batches(examples={self.num_examples}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, seed={self.seed}, epoch={self.epoch})")

    def epoch_indices(self, epoch) -> list:
        """The example indices of each batch of ``epoch``."""
        n = self.num_examples
        order = (np.random.default_rng([self.seed, epoch]).permutation(n)
                 if self.shuffle else np.arange(n))
        return [order[i:i + self.batch_size] for i in range(0, n, self.batch_size)]

    def next_epoch(self) -> list:
        """:meth:`epoch_indices` of the next epoch, and count it."""
        indices = self.epoch_indices(self.epoch)
        self.epoch += 1
        return indices

    def take(self, indices):
        """The batch of these examples, cut to its longest source and target.

        Shape:
            (batch,) indices -> src (batch, S_b), tgt_in (batch, T_b), tgt_out (batch, T_b) int64.
        """
        indices = np.asarray(indices)
        src_len = int(self.lengths[0][indices].max(initial=0))
        tgt_len = int(self.lengths[1][indices].max(initial=0))
        src, tgt_in, tgt_out = self.arrays
        return (src[indices, :src_len], tgt_in[indices, :tgt_len], tgt_out[indices, :tgt_len])

    def __iter__(self):
        for indices in self.next_epoch():
            yield self.take(indices)


def _as_arrays(data, src_vocab, tgt_vocab, max_len):
    """``(src, tgt_in, tgt_out)`` int64 arrays from pairs (encoded) or arrays (checked)."""
    if isinstance(data, tuple) and len(data) == 3 and all(isinstance(a, np.ndarray) for a in data):
        src, tgt_in, tgt_out = data
        for name, a in zip(("src", "tgt_in", "tgt_out"), data):
            if a.ndim != 2 or a.dtype.kind not in "iu":
                raise ValueError(f"{name} must be a 2-D integer array (N, length), got "
                                 f"shape {a.shape} dtype {a.dtype}")
        if tgt_in.shape != tgt_out.shape or src.shape[0] != tgt_in.shape[0]:
            raise ValueError(
                f"arrays must be src (N, S), tgt_in (N, T), tgt_out (N, T), got shapes "
                f"{src.shape}, {tgt_in.shape}, {tgt_out.shape}"
            )
        if src.shape[0] == 0:
            raise ValueError("make_batches got no examples: the corpus is empty")
        if max_len is not None:
            for name, a in zip(("src", "tgt_in"), (src, tgt_in)):
                longest = int(_lengths(a).max())
                if longest > max_len:
                    raise ValueError(f"{name} holds a sequence of length {longest}, more than "
                                     f"max_len={max_len}")
        return tuple(a.astype(np.int64, copy=False) for a in data)
    if src_vocab is None or tgt_vocab is None:
        raise ValueError("make_batches needs src_vocab and tgt_vocab to encode text pairs "
                         "(or pass the (src, tgt_in, tgt_out) arrays of encode_pairs)")
    return encode_pairs(data, src_vocab, tgt_vocab, max_len)


def make_batches(pairs_or_arrays, src_vocab=None, tgt_vocab=None, batch_size=64,
                 shuffle=False, seed=0, max_len=None) -> Batches:
    """NumPy batches ``(src, tgt_in, tgt_out)``; the framework versions wrap this.

    ``course_pkg.torch.data.make_batches`` and
    ``course_pkg.tensorflow.data.make_batches`` take the same arguments and
    yield the same batches as tensors.

    Args:
        pairs_or_arrays: ``(source_text, target_text)`` pairs, or the
            ``(src, tgt_in, tgt_out)`` arrays of :func:`encode_pairs`.
        src_vocab, tgt_vocab: :class:`Vocab` to encode pairs (unused for arrays).
        batch_size: examples per batch (the last batch may be smaller).
        shuffle: visit the examples in a new seeded order every epoch.
        seed: seed of the shuffling.
        max_len: the longest sequence allowed (``ValueError`` beyond it).

    Returns:
        a re-iterable :class:`Batches`.

    Shape:
        each batch: src (batch, S_b), tgt_in (batch, T_b), tgt_out (batch, T_b)
        int64, padded to the longest sequence of the batch.
    """
    batch_size = check_count("batch_size", batch_size, 1)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    return Batches(_as_arrays(pairs_or_arrays, src_vocab, tgt_vocab, max_len),
                   batch_size, shuffle, int(seed))
