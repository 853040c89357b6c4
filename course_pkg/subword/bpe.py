"""Byte-pair encoding on the characters of words (Sennrich et al., 2016): :func:`train_bpe` and :class:`BPE`.

Training starts from single characters and repeatedly merges the most frequent pair of
adjacent symbols into a new symbol, until the vocabulary has ``vocab_size`` tokens::

    tok = train_bpe(["the cat sat on the mat", "the cats sat on the mats"], vocab_size=30)
    tok.tokenize("the cats")   # ['the</w>', 'c', 'ats</w>']
    tok.tokenize("the rat")    # ['the</w>', '<unk>', 'at</w>']: no "r" in the corpus
    tok.decode(tok.encode("the rat"))   # 'the <unk>at'

The word counts are kept with the pairs, and a merge updates only the words that hold the
merged pair, so 25,000 words train to 4,000 tokens in about a second (the textbook version
recounts every word after every merge: thousands of times slower).

The rules are those of Hugging Face's ``tokenizers.trainers.BpeTrainer`` (tested equal):

* words are ``\\w+`` and runs of other non-space characters (``pre_tokenizers.Whitespace``);
* ids: the special tokens first, then the characters in code-point order, then (with
  ``end_of_word_suffix``) the word-final characters ``c</w>`` in code-point order, then each
  merge's new token in the order learnt;
* the most frequent pair wins; among equally frequent pairs the one whose ids
  ``(left, right)`` are smallest (compared left first) wins;
* pairs are counted overlapping (``aaa`` holds ``a a`` twice) and merged left to right;
* training stops at ``vocab_size`` tokens, or when the best pair occurs fewer than
  ``min_frequency`` times.

Where they differ: ``BpeTrainer`` numbers the word-final characters ``c</w>`` in the order it
meets them in a hash map, which changes from run to run, so its tie-breaks between pairs of
equal count that involve them are not reproducible (the course's are: code-point order);
``BpeTrainer``'s ``min_frequency`` defaults to 0 (the course's to 2: a pair seen once teaches
nothing); the course has no ``limit_alphabet``, ``initial_alphabet`` or ``max_token_length``.

Encoding (:func:`apply_merges`) runs ``tokenizers``' loop, so a merges file listed out of
learning order (hand-edited) gives ``tokenizers``' ids too; with ``unk_token=None`` an unknown
character is left out before merging (its neighbours may merge), as ``models.BPE`` does.

Refused, each error naming the argument: ``texts`` that are one str, ``None`` or not iterable,
a text that is not a str, texts that hold no word (an empty or blank corpus: ``ValueError``),
``special_tokens`` given as one str (``"<pad>"``, not read as its characters) or holding a
non-str (``None``, an int, bytes), an ``unk_token`` or ``end_of_word_suffix`` that is not a
str or ``None``; :class:`BPE` refuses ``merges=None`` (``[]`` is no merges), a vocabulary
with a token that is not a non-empty str (``None``), and ``decode`` what is not one sequence
of int ids (bytes, bytearray, ``None``, one int, a 2-D array).
"""

from __future__ import annotations

import heapq
from collections import Counter

import regex

from .checks import (
    check_corpus,
    check_special_tokens,
    check_text,
    check_texts,
    check_token_option,
    ids_to_tokens,
)
from .vocab_files import (
    check_merges,
    check_vocab,
    read_merges,
    read_vocab_json,
    write_merges,
    write_vocab_json,
)

__all__ = ["BPE", "WORD_PATTERN", "apply_merges", "learn_merges", "pre_tokenize", "subword_stats",
           "train_bpe"]

WORD_PATTERN = regex.compile(r"\w+|[^\w\s]+")
"""Words: runs of letters, digits, marks and ``_``, or runs of other non-space characters."""


def pre_tokenize(text) -> list:
    """Split ``text`` into the words that BPE segments (``\\w+`` and runs of other non-space characters)."""
    return WORD_PATTERN.findall(check_text(text))


def _check_vocab_size(vocab_size, min_frequency) -> None:
    for name, value, low in (("vocab_size", vocab_size, 1), ("min_frequency", min_frequency, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def apply_merges(symbols, ranks) -> list:
    """Encode one word: merge, again and again, its adjacent pair that was learnt earliest.

    The loop of every BPE tokenizer here (:class:`BPE`, and ``ByteLevelBPE`` on byte symbols),
    as ``tokenizers``' ``models.BPE`` runs it: a queue of the word's pairs, the lowest rank
    first (the leftmost among equal ones); each merge queues the pairs that its new symbol
    makes with its neighbours. With merges in learning order this is GPT-2's own loop (merge
    every occurrence of the best pair, then look again); with a hand-edited file whose merges
    are out of that order it still gives ``tokenizers``' (and ``GPT2Tokenizer``'s) tokens.

    Args:
        symbols: the word's symbols (str; ``None`` for an unknown one, which never merges).
        ranks: dict mapping each merge ``(left, right)`` to its rank (0 = learnt first).

    Returns:
        the word's tokens, a list of str (and ``None``).
    """
    symbols = list(symbols)
    n = len(symbols)
    following = list(range(1, n)) + [-1]
    previous = list(range(-1, n - 1))
    queue = [(ranks[pair], i, pair[0] + pair[1])
             for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in ranks]
    heapq.heapify(queue)
    while queue:
        _, i, new = heapq.heappop(queue)
        j = following[i]
        if symbols[i] is None or j < 0:
            continue
        pair = (symbols[i], symbols[j])
        if pair not in ranks or pair[0] + pair[1] != new:  # an outdated entry
            continue
        symbols[i], symbols[j] = new, None
        following[i] = following[j]
        if following[j] >= 0:
            previous[following[j]] = i
        for left in (previous[i], i):
            right = following[left] if left >= 0 else -1
            if right >= 0 and (symbols[left], symbols[right]) in ranks:
                pair = (symbols[left], symbols[right])
                heapq.heappush(queue, (ranks[pair], left, pair[0] + pair[1]))
    out, i = [], 0
    while 0 <= i < n:
        out.append(symbols[i])
        i = following[i]
    return out


def _merge_word(word, a, b, new) -> tuple:
    """``word`` (a tuple of ids) with every ``a b``, left to right, replaced by ``new``."""
    out, i, n = [], 0, len(word)
    while i < n:
        if i + 1 < n and word[i] == a and word[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _initial_words(word_counts, special_tokens, initial_alphabet, end_of_word_suffix) -> tuple:
    """``(tokens, ids, words, counts)`` before any merge: the special tokens, the alphabet (and
    its word-final symbols) in code-point order, each word as a tuple of symbol ids."""
    tokens, ids = [], {}
    for token in [*special_tokens, *sorted(set(initial_alphabet).union(*word_counts))]:
        if token not in ids:
            ids[token] = len(tokens)
            tokens.append(token)
    if end_of_word_suffix:
        for char in sorted({word[-1] for word in word_counts if word}):
            if char + end_of_word_suffix not in ids:
                ids[char + end_of_word_suffix] = len(tokens)
                tokens.append(char + end_of_word_suffix)
    words, counts = [], []
    for word, count in word_counts.items():
        if not word:
            continue
        symbols = list(word)
        if end_of_word_suffix:
            symbols[-1] += end_of_word_suffix
        words.append(tuple(ids[s] for s in symbols))
        counts.append(count)
    return tokens, ids, words, counts


def _merge_everywhere(pair, new, words, counts, pair_counts, where) -> set:
    """Replace ``pair`` by ``new`` in every word that holds it, updating the pair counts and
    ``where`` in place; return the pairs whose count grew."""
    a, b = pair
    grown = set()
    for w in where.pop(pair):
        old = words[w]
        merged = _merge_word(old, a, b, new)
        if merged == old:
            continue
        n = counts[w]
        for p in zip(old, old[1:]):
            pair_counts[p] -= n
        for p in zip(merged, merged[1:]):
            pair_counts[p] += n
            where.setdefault(p, set()).add(w)
            grown.add(p)
        words[w] = merged
    pair_counts.pop(pair, None)
    return grown


def learn_merges(word_counts, vocab_size, *, min_frequency=2, special_tokens=(), initial_alphabet=(),
                 end_of_word_suffix=None) -> tuple:
    """Learn BPE merges from word counts: the core of :func:`train_bpe` (and of byte-level training).

    Args:
        word_counts: dict mapping each word (a str of symbols, one per character) to its count.
        vocab_size: the number of tokens to reach (the vocabulary is never smaller than the
            special tokens plus the alphabet).
        min_frequency: stop when the most frequent pair occurs fewer times than this.
        special_tokens: tokens placed first in the vocabulary (ids 0, 1, ...).
        initial_alphabet: characters added to the alphabet even if no word holds them.
        end_of_word_suffix: appended to the last character of each word (``"</w>"``), or ``None``.

    Returns:
        ``(tokens, merges)``: the vocabulary as a list (index = id) and the merges as
        ``(left, right)`` string pairs, earliest (highest priority) first.
    """
    _check_vocab_size(vocab_size, min_frequency)
    special_tokens = check_special_tokens(special_tokens)
    check_token_option(end_of_word_suffix, "end_of_word_suffix")
    tokens, ids, words, counts = _initial_words(word_counts, special_tokens, initial_alphabet,
                                                end_of_word_suffix)

    def add(token):
        if token not in ids:
            ids[token] = len(tokens)
            tokens.append(token)
        return ids[token]

    pair_counts, where = Counter(), {}
    for w, word in enumerate(words):
        for pair in zip(word, word[1:]):
            pair_counts[pair] += counts[w]
            where.setdefault(pair, set()).add(w)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(tokens) < vocab_size and heap:
        negative, pair = heapq.heappop(heap)
        count = pair_counts.get(pair, 0)
        if count != -negative:  # an outdated entry: put it back with its count
            if count > 0:
                heapq.heappush(heap, (-count, pair))
            continue
        if count < max(1, min_frequency):
            break
        a, b = pair
        new = add(tokens[a] + tokens[b])
        merges.append((tokens[a], tokens[b]))
        grown = _merge_everywhere(pair, new, words, counts, pair_counts, where)
        for p in grown:
            if pair_counts[p] > 0:
                heapq.heappush(heap, (-pair_counts[p], p))
    return tokens, merges


def _word_counts(texts, pre_tokenizer) -> Counter:
    """The words of ``texts`` and their counts; errors name ``texts`` (or ``texts[i]``)."""
    check_texts(texts)
    counts, seen = Counter(), 0
    for seen, text in enumerate(texts, start=1):
        counts.update(pre_tokenizer(check_text(text, f"texts[{seen - 1}]")))
    check_corpus(counts, seen)
    return counts


def train_bpe(texts, vocab_size, *, min_frequency=2, unk_token="<unk>", special_tokens=(),
              end_of_word_suffix="</w>") -> "BPE":
    """Learn a character-level :class:`BPE` tokenizer from sentences.

    Args:
        texts: iterable of sentences (str).
        vocab_size: the number of tokens wanted, special tokens and characters included.
        min_frequency: the fewest occurrences of a pair worth a merge (``BpeTrainer``: 0).
        unk_token: the token of characters never seen in training (id 0), or ``None``.
        special_tokens: more tokens placed after ``unk_token``, never split (``"<pad>"``...).
        end_of_word_suffix: marks the last symbol of each word, so that :meth:`BPE.decode`
            knows where words end; ``None`` for none (like ``BpeTrainer``'s default).

    Returns:
        the trained :class:`BPE`.

    Raises:
        TypeError: ``texts`` is not an iterable of str (one str, ``None``), ``special_tokens``
            is one str or holds a non-str, ``unk_token`` or ``end_of_word_suffix`` is not a str
            (or ``None``).
        ValueError: ``vocab_size`` is not a positive int or ``min_frequency`` a negative one;
            the texts hold no word (an empty or blank corpus).
    """
    _check_vocab_size(vocab_size, min_frequency)
    check_token_option(unk_token, "unk_token", empty=False)
    check_token_option(end_of_word_suffix, "end_of_word_suffix")
    specials = ([unk_token] if unk_token is not None else []) + check_special_tokens(special_tokens)
    tokens, merges = learn_merges(_word_counts(texts, pre_tokenize), vocab_size, min_frequency=min_frequency,
                                  special_tokens=specials, end_of_word_suffix=end_of_word_suffix)
    return BPE({t: i for i, t in enumerate(tokens)}, merges, unk_token=unk_token,
               end_of_word_suffix=end_of_word_suffix)


class BPE:
    """A character-level BPE tokenizer: words split into characters, merged by the learnt merges.

    Encoding a word starts from its characters (the last one with ``end_of_word_suffix``) and
    applies the merge of highest priority among adjacent pairs until none applies, as
    ``tokenizers.models.BPE`` does. A character (or word-final character) missing from the
    vocabulary becomes ``unk_token``.

    Args:
        vocab: dict mapping each token to its id, the ids ``0 .. n-1``.
        merges: list of ``(left, right)`` pairs, highest priority first; both parts and
            their concatenation are in ``vocab``.
        unk_token: the token of unknown characters (in ``vocab``), or ``None`` to drop them.
        end_of_word_suffix: the suffix of word-final symbols, or ``None``.

    Raises:
        ValueError: ids that are not ``0 .. n-1``, a merge with a part or result outside the
            vocabulary, an ``unk_token`` missing from it.
    """

    def __init__(self, vocab, merges, *, unk_token="<unk>", end_of_word_suffix="</w>"):
        check_token_option(unk_token, "unk_token", empty=False)
        check_token_option(end_of_word_suffix, "end_of_word_suffix")
        vocab = check_vocab(vocab, "vocab")
        merges = check_merges(merges, vocab, "merges")
        if unk_token is not None and unk_token not in vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self._vocab = vocab
        self._tokens = sorted(vocab, key=vocab.get)
        self._ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.merges = merges
        self.unk_token = unk_token
        self.end_of_word_suffix = end_of_word_suffix
        self._cache = {}

    @classmethod
    def from_files(cls, vocab_file, merges_file, *, unk_token="<unk>", end_of_word_suffix="</w>") -> "BPE":
        """Load from ``vocab.json`` and ``merges.txt`` (the formats of ``vocab_files``)."""
        vocab = read_vocab_json(vocab_file)
        return cls(vocab, read_merges(merges_file, vocab), unk_token=unk_token,
                   end_of_word_suffix=end_of_word_suffix)

    def save(self, vocab_file, merges_file) -> None:
        """Write ``vocab.json`` and ``merges.txt`` (each atomically)."""
        write_vocab_json(vocab_file, self._vocab)
        write_merges(merges_file, self.merges)

    @property
    def vocab_size(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self._tokens)

    def get_vocab(self) -> dict:
        """A copy of the vocabulary: dict token -> id."""
        return dict(self._vocab)

    def _segment(self, word) -> list:
        """The tokens of one word (``None`` for an unknown character)."""
        if word in self._cache:
            return self._cache[word]
        symbols = list(word)
        if self.end_of_word_suffix:
            symbols[-1] += self.end_of_word_suffix
        symbols = [s if s in self._vocab else None for s in symbols]
        if self.unk_token is None:  # tokenizers drops an unknown character before merging
            symbols = [s for s in symbols if s is not None]
        symbols = apply_merges(symbols, self._ranks)
        if len(self._cache) < 100_000:
            self._cache[word] = symbols
        return symbols

    def tokenize(self, text) -> list:
        """The tokens (str) of ``text``; unknown characters give ``unk_token``."""
        out = []
        for word in pre_tokenize(text):
            for symbol in self._segment(word):
                if symbol is not None:
                    out.append(symbol)
                elif self.unk_token is not None:
                    out.append(self.unk_token)
        return out

    def encode(self, text) -> list:
        """The token ids of ``text`` (a str)."""
        return [self._vocab[token] for token in self.tokenize(text)]

    def decode(self, ids) -> str:
        """The text of token ids: tokens joined, each ``end_of_word_suffix`` read as a space.

        Without a suffix, word boundaries are unknown and the tokens are joined with spaces
        (as ``tokenizers`` does without a decoder).

        Raises:
            TypeError: ``ids`` is a str or holds a non-int.
            ValueError: an id outside ``0 .. vocab_size - 1``.
        """
        return self.detokenize(self.convert_ids_to_tokens(ids))

    def detokenize(self, tokens) -> str:
        """The text of tokens (what :meth:`tokenize` returns), as :meth:`decode` writes it."""
        tokens = list(tokens)
        suffix = self.end_of_word_suffix
        if not suffix:
            return " ".join(tokens)
        last = len(tokens) - 1
        return "".join(t.replace(suffix, "" if i == last else " ") for i, t in enumerate(tokens))

    def convert_ids_to_tokens(self, ids) -> list:
        """The tokens of ids, checked as :meth:`decode` checks them."""
        return ids_to_tokens(ids, self._tokens)


def subword_stats(tokenizer, texts) -> dict:
    """How finely a tokenizer cuts ``texts``: the vocabulary-size trade-off in numbers.

    Args:
        tokenizer: any tokenizer here (its ``tokenize`` and ``unk_token`` are used).
        texts: iterable of str.

    Returns:
        dict with ``words`` (count, split as :func:`pre_tokenize` splits), ``tokens`` (count),
        ``tokens_per_word`` and ``unk_rate`` (the fraction of tokens that are the unknown token).
    """
    words = tokens = unknown = 0
    unk = getattr(tokenizer, "unk_token", None)
    for i, text in enumerate(texts):
        check_text(text, f"texts[{i}]")
        words += len(pre_tokenize(text))
        pieces = tokenizer.tokenize(text)
        tokens += len(pieces)
        unknown += sum(piece == unk for piece in pieces) if unk is not None else 0
    return {"words": words, "tokens": tokens, "tokens_per_word": tokens / max(words, 1),
            "unk_rate": unknown / max(tokens, 1)}
