"""The course's one trained translator: French -> English on the everyday sentences.

``benchmarks/everyday_translator_weights.py`` trained it (seeded, PyTorch, on one thread) with the
recipe of ``benchmarks/everyday_translation.py`` extended from the recipe's 800 steps to 2,000
(``record.json``: ``recipe["steps"]`` is the benchmark's, ``steps`` the shipped run's): chapter
6's ``Transformer`` and ``Trainer`` on
the 2,973 training pairs of :func:`course_pkg.data.make_everyday_corpus` ``("fr", "en")``, read
with one byte-level BPE for both languages learnt on the training split only. It wrote, under
``course_pkg/sample_data/everyday_translator/``:

* ``weights.npz``: every weight under its canonical name (:func:`course_pkg.interop.get_weights`),
  stored as float16 to keep the file small; loaded back as float32;
* ``record.json``: the recipe, the model's configuration, the training and validation losses
  logged during training, and the test scores the script measured;
* ``bpe-vocab.json`` and ``bpe-merges.txt``: the BPE, in GPT-2's file format.

Chapter 7 loads it into either framework's ``Transformer``::

    from course_pkg import pretrained, torch as cp      # or: tensorflow as cp
    vocab = pretrained.everyday_vocab()
    model = pretrained.everyday_translator(cp)
    cp.translate(model, ["Où est la gare ?"], vocab, vocab)

This module imports no framework itself: the framework's subpackage is handed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import data, interop

FOLDER = Path(__file__).resolve().parent / "sample_data" / "everyday_translator"
WEIGHTS = FOLDER / "weights.npz"
RECORD = FOLDER / "record.json"
BPE_VOCAB = FOLDER / "bpe-vocab.json"
BPE_MERGES = FOLDER / "bpe-merges.txt"


def bpe_vocab(texts, vocab_size=2000) -> data.Vocab:
    """A :class:`~course_pkg.data.Vocab` of a byte-level BPE learnt on ``texts``.

    The BPE has ``vocab_size`` tokens, the four special tokens of the course first (ids 0-3), so
    that ``Vocab``'s ids are the BPE's.
    """
    from .subword import train_byte_level_bpe

    bpe = train_byte_level_bpe(list(texts), vocab_size, special_tokens=data.SPECIAL_TOKENS)
    return data.Vocab(bpe.convert_ids_to_tokens(range(bpe.vocab_size)), bpe)


def everyday_bpe_vocab(pairs, vocab_size=2000) -> data.Vocab:
    """:func:`bpe_vocab` of both sides of ``pairs`` (sources, then targets): one BPE for the two
    languages. The translator's is this on the training split."""
    return bpe_vocab([source for source, _ in pairs] + [target for _, target in pairs], vocab_size)


def everyday_vocab(folder=FOLDER) -> data.Vocab:
    """The translator's BPE vocabulary, read from its files (for both languages)."""
    from .subword import ByteLevelBPE

    folder = Path(folder)
    bpe = ByteLevelBPE.from_files(folder / BPE_VOCAB.name, folder / BPE_MERGES.name,
                                  special_tokens=list(data.SPECIAL_TOKENS))
    return data.Vocab(bpe.convert_ids_to_tokens(range(bpe.vocab_size)), bpe)


def everyday_record(folder=FOLDER) -> dict:
    """The training record: ``recipe``, ``model`` (the Transformer's arguments), ``history``
    (``step``, ``loss``, ``val_loss`` lists), ``test`` scores, ``seed``, ``steps`` and more."""
    return json.loads((Path(folder) / RECORD.name).read_text(encoding="utf-8"))


def everyday_weights(folder=FOLDER) -> dict:
    """The translator's canonical weights, float32 NumPy arrays (stored as float16)."""
    with np.load(Path(folder) / WEIGHTS.name) as stored:
        return {name: stored[name].astype(np.float32) for name in stored.files}


def everyday_translator(cp, dropout=0.0, folder=FOLDER):
    """Chapter 6's ``Transformer`` of framework subpackage ``cp`` with the trained weights.

    Args:
        cp: ``course_pkg.torch`` or ``course_pkg.tensorflow``.
        dropout: the model's dropout (0.0: for decoding; the weights do not depend on it).
        folder: where the files are (the package's own by default).

    Returns:
        the model, built (TensorFlow: called once on a batch of one) and loaded.
    """
    config = dict(everyday_record(folder)["model"], dropout=dropout)
    model = cp.Transformer(**config)
    if not getattr(model, "built", True):
        ones = np.ones((1, 2), dtype=np.int32)
        model(ones, ones)  # Keras creates the weights on the first call
    interop.set_weights(model, everyday_weights(folder))
    return model
