"""Data for the course: a number-translation corpus, a tokenizer, a vocabulary, batching.

Framework-free (Python and NumPy only): ``course_pkg.torch.data`` and
``course_pkg.tensorflow.data`` wrap :func:`make_batches` for their framework.

The course's task translates numbers written in words from one language to
another, generated locally with ``num2words`` (no download)::

    from course_pkg.data import Tokenizer, Vocab, encode_pairs, make_number_corpus

    corpus = make_number_corpus("fr", "en")   # Corpus(fr->en, train=24000, valid=3000, test=3000)
    corpus.train[0]   # ('six mille huit cent quarante-six', 'six thousand, eight hundred and forty-six')
    src_vocab = Vocab.build([s for s, _ in corpus.train], Tokenizer("fr"))
    tgt_vocab = Vocab.build([t for _, t in corpus.train], Tokenizer("en"))
    src, tgt_in, tgt_out = encode_pairs(corpus.train, src_vocab, tgt_vocab)

Conventions, shared by every function here and in the framework modules:

* token ids ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3;
* sequences are right-padded with ``<pad>``;
* the source is ``x <eos>``; teacher forcing feeds the decoder ``<bos> y`` and
  trains it to output ``y <eos>`` (the same sequence shifted by one).

Real sentence pairs (tab-separated files such as the Tatoeba / ManyThings
exports) load with :func:`load_tsv_pairs`; :data:`SAMPLE_TSV` is a tiny
English-French sample written for the course, and :data:`EVERYDAY_TSV` (read whole by
:func:`make_everyday_corpus`) the course's corpus of everyday sentences, CC0, split by sentence.

Every name is importable from ``course_pkg.data``; the modules hold one concern each:
``num2words_cache`` (numbers in words, cached), ``corpora`` (:class:`Corpus` and
the corpus makers), ``tsv`` (TSV files), ``tokenizer`` (:class:`Tokenizer`),
``vocab`` (special tokens and :class:`Vocab`), ``batching`` (padding, encoding,
:class:`Batches`) and ``mlm`` (chapter 8's model families: masked-LM inputs, a classification
task, prompts for a decoder-only model). One module is for readers online only, and is imported
by name: ``from course_pkg.data import tatoeba`` downloads Tatoeba's French-English pairs (a fixed
copy, checked against a pinned SHA-1) for chapter 7's optional cells; nothing else downloads.
"""

from . import mlm as _mlm
from . import tokenizer as _tokenizer
from . import tsv as _tsv
from .batching import Batches, encode_pairs, make_batches, pad_batch, pairs_max_len
from .corpora import Corpus, make_everyday_corpus, make_number_corpus, make_number_list_corpus, split_pairs
from .mlm import (
    encode_prompts,
    make_number_classification,
    mask_for_mlm,
    prompt_ids,
    prompt_texts,
    with_mask_token,
)
from .num2words_cache import number_words, supported_languages
from .tokenizer import Tokenizer
from .tsv import load_tsv_pairs
from .vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPECIAL_TOKENS, UNK, UNK_ID, Vocab

# Bound here with their docstrings: the API reference (Sphinx autodoc) reads an
# attribute's docstring in the module it documents, course_pkg.data.
SPACE_TOKEN = _tokenizer.SPACE_TOKEN
"""Emitted where the text has a space that the spacing rules would not put back."""
GLUE_TOKEN = _tokenizer.GLUE_TOKEN
"""Emitted where the text has no space although the spacing rules would put one."""
SAMPLE_TSV = _tsv.SAMPLE_TSV
"""English<TAB>French<TAB>attribution sample (20 pairs) written for the course."""
EVERYDAY_TSV = _tsv.EVERYDAY_TSV
"""The paths of the course's everyday English-French sentences (CC0), ``{"train": path, ...}``."""
MASK = _mlm.MASK
"""The token that replaces most of the positions a masked language model must predict."""
CLASSIFICATION_TASKS = _mlm.CLASSIFICATION_TASKS
"""The properties :func:`make_number_classification` can label, with their class names."""

__all__ = [
    "PAD", "BOS", "EOS", "UNK", "SPECIAL_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID",
    "SPACE_TOKEN", "GLUE_TOKEN", "SAMPLE_TSV", "EVERYDAY_TSV",
    "supported_languages", "number_words", "make_number_corpus", "make_number_list_corpus",
    "make_everyday_corpus",
    "split_pairs", "Corpus",
    "load_tsv_pairs", "Tokenizer", "Vocab",
    "pad_batch", "encode_pairs", "pairs_max_len", "make_batches", "Batches",
    "MASK", "CLASSIFICATION_TASKS", "with_mask_token", "mask_for_mlm", "make_number_classification",
    "prompt_texts", "encode_prompts", "prompt_ids",
]
