"""Batches for training in TensorFlow: a ``tf.data.Dataset`` of ``(src, tgt_in, tgt_out)``.

Same names, signatures and batches as :mod:`course_pkg.torch.data`; the
text side (corpus, :class:`~course_pkg.data.Tokenizer`,
:class:`~course_pkg.data.Vocab`) is framework-free in :mod:`course_pkg.data`.

Shapes: ``batch`` sentence pairs per batch, padded to ``S_b`` source and
``T_b`` target positions, the longest of that batch.

Example::

    from course_pkg.data import Tokenizer, Vocab, make_number_corpus
    from course_pkg.tensorflow.data import make_batches

    corpus = make_number_corpus("fr", "en")
    src_vocab = Vocab.build([s for s, _ in corpus.train], Tokenizer("fr"))
    tgt_vocab = Vocab.build([t for _, t in corpus.train], Tokenizer("en"))
    train = make_batches(corpus.train, src_vocab, tgt_vocab, batch_size=64, shuffle=True, seed=0)
    for src, tgt_in, tgt_out in train:   # one epoch
        logits = model(src, tgt_in)      # loss against tgt_out, ignoring pad id 0
    # Keras' fit wants (inputs, targets): train.map(lambda s, ti, to: ((s, ti), to))
"""

import tensorflow as tf

from .. import data as _data


def make_batches(pairs_or_arrays, src_vocab=None, tgt_vocab=None, batch_size=64,
                 shuffle=False, seed=0, max_len=None):
    """Training batches ``(src, tgt_in, tgt_out)`` as a ``tf.data.Dataset``.

    Teacher forcing: for a pair ``(x, y)``, ``src = x <eos>``,
    ``tgt_in = <bos> y`` and ``tgt_out = y <eos>``; every batch is right-padded
    with ``<pad>`` = 0 to its own longest sequence. Each pass over the result
    is one epoch; with ``shuffle=True`` epoch ``e`` takes the order
    ``numpy.random.default_rng([seed, e]).permutation(N)``, the same as
    :func:`course_pkg.data.make_batches` and the PyTorch version.

    Args:
        pairs_or_arrays: ``(source_text, target_text)`` pairs, or the
            ``(src, tgt_in, tgt_out)`` arrays of :func:`course_pkg.data.encode_pairs`.
        src_vocab, tgt_vocab: :class:`~course_pkg.data.Vocab` to encode pairs
            (unused for arrays).
        batch_size: examples per batch (the last batch may be smaller).
        shuffle: visit the examples in a new seeded order every epoch.
        seed: seed of the shuffling.
        max_len: the longest sequence allowed, the model's ``max_len``
            (``ValueError`` beyond it).

    Returns:
        a ``tf.data.Dataset``; ``len()`` is the number of batches per epoch.

    Shape:
        each batch: src (batch, S_b), tgt_in (batch, T_b), tgt_out (batch, T_b)
        int64, padded to the longest sequence of the batch.
    """
    batches = _data.make_batches(pairs_or_arrays, src_vocab, tgt_vocab, batch_size,
                                 shuffle, seed, max_len)
    # The generator is called once per pass, so every pass is a new epoch.
    spec = tf.TensorSpec(shape=(None, None), dtype=tf.int64)
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=(spec, spec, spec))
    return dataset.apply(tf.data.experimental.assert_cardinality(len(batches)))
