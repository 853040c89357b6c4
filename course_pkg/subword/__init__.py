"""Subword tokenizers in plain Python, tested to give the very ids that Hugging Face's give.

Framework-free (the standard library and the ``regex`` module): no tensor library is imported.
Four families of subword tokenizer, one module each, and the files they read and write:

* ``bpe``: byte-pair encoding on the characters of words, and its trainer
  (:func:`train_bpe`, :class:`BPE`, :func:`subword_stats` for the vocabulary-size trade-off);
  the same merges as ``tokenizers.trainers.BpeTrainer``;
* ``byte_level``: GPT-2's byte-level BPE (:class:`ByteLevelBPE`, :func:`bytes_to_unicode`,
  ``GPT2_PATTERN``, :func:`train_byte_level_bpe`); the same ids as ``GPT2Tokenizer``;
* ``wordpiece``: BERT's WordPiece (:class:`WordPiece`, :func:`bert_pre_tokenize`); the same
  ids as ``BertTokenizer``;
* ``unigram``: SentencePiece's Unigram (:class:`Unigram`: the best split under the pieces'
  log-probabilities, found by dynamic programming); the same ids as ``sentencepiece`` and
  ``MarianTokenizer``, from a SentencePiece ``.model`` file (training: use ``sentencepiece``);
* ``sentencepiece_model``: SentencePiece's ``.model`` file (a protocol buffer) read and written
  without ``sentencepiece`` (:func:`read_sentencepiece_model`, :func:`write_sentencepiece_model`),
  and its normaliser (the precompiled character map of ``nmt_nfkc``, the whitespace rules);
* ``pretrained``: the tokenizers of a Hugging Face model directory (``snapshot_download``'s):
  :func:`gpt2_tokenizer` (``vocab.json``, ``merges.txt``) and :func:`bert_tokenizer`
  (``vocab.txt``, ``tokenizer_config.json``'s ``do_lower_case``...); the ids of ``AutoTokenizer``;
* ``vocab_files``: ``vocab.json``, ``merges.txt`` and ``vocab.txt``, read with checks that name
  the file and line, written atomically;
* ``bert_unicode``: the character classes of ``wordpiece`` as ``tokenizers`` has them;
* ``specials``: special tokens found whole in a text, longest first (byte-level BPE and WordPiece);
* ``checks``: the argument checks they share (text must be a ``str``, ids in range, special
  tokens; flags are ``course_pkg.common.arguments.check_flag``'s).

Example::

    from course_pkg.subword import train_bpe

    tok = train_bpe(sentences, vocab_size=4000)
    tok.tokenize("unbelievable")    # e.g. ['un', 'believ', 'able</w>']: it depends on the corpus
"""

from .bpe import BPE, WORD_PATTERN, apply_merges, learn_merges, pre_tokenize, subword_stats, train_bpe
from .byte_level import GPT2_PATTERN, ByteLevelBPE, bytes_to_unicode, train_byte_level_bpe
from .checks import check_text, check_texts, ids_to_tokens
from .pretrained import bert_tokenizer, gpt2_tokenizer, read_tokenizer_config
from .sentencepiece_model import read_sentencepiece_model, write_sentencepiece_model
from .unigram import Unigram
from .vocab_files import (
    MERGES_HEADER,
    check_merges,
    check_vocab,
    read_merges,
    read_vocab_json,
    read_vocab_txt,
    write_merges,
    write_vocab_json,
    write_vocab_txt,
)
from .wordpiece import WordPiece, bert_pre_tokenize

__all__ = [
    "BPE", "WORD_PATTERN", "apply_merges", "learn_merges", "pre_tokenize", "subword_stats", "train_bpe",
    "GPT2_PATTERN", "ByteLevelBPE", "bytes_to_unicode", "train_byte_level_bpe",
    "check_text", "check_texts", "ids_to_tokens",
    "bert_tokenizer", "gpt2_tokenizer", "read_tokenizer_config",
    "MERGES_HEADER", "check_merges", "check_vocab", "read_merges", "read_vocab_json", "read_vocab_txt",
    "write_merges", "write_vocab_json", "write_vocab_txt",
    "WordPiece", "bert_pre_tokenize",
    "Unigram", "read_sentencepiece_model", "write_sentencepiece_model",
]
