"""Greedy and beam-search decoding, batched, with or without the key/value cache.

Any model with two methods can be decoded:

- ``state = model.start_decoding(src_tokens)``: encode the source once;
- ``logits, state = model.decode_step(tgt_tokens, state)``: logits for the new
  target tokens, ``(batch, new, vocab)``.

:class:`~course_pkg.tensorflow.Transformer` implements them with a key/value cache,
so each step costs O(1) in the prefix length; ``use_cache=False`` instead calls
``model(src_tokens, prefix)`` on the whole prefix at every step, the slow way
the cache is measured against. Every tensor in ``state`` is batch-first, so
beam search can reorder it.

In TensorFlow both ways run as ``tf.function`` graphs (made once per model, with
dynamic shapes, so the growing cache does not retrace): eager TensorFlow spends
longer dispatching each of these small ops than computing it.

Hugging Face's beam search (``generate(num_beams=...)``) follows two other rules: its
length penalty is ``length ** length_penalty`` (GNMT's ``((5 + length) / 6) ** alpha``
here), and it moves each finished hypothesis to a pool of ``num_beams`` beside
``num_beams`` running ones, where :func:`beam_search` keeps a finished hypothesis in the
beam until ``beam_size`` better prefixes push it out. With ``length_penalty=0`` in both,
or hypotheses that all run to ``max_len``, the two return the same tokens in the course's
tests (``tests/test_marian.py``, on Marian models).

Shapes: ``batch`` sources of ``src_len`` tokens, ``steps`` generated tokens,
``new`` tokens fed per decoding step, logits over ``vocab`` target tokens; beam
search keeps ``beam`` (``beam_size``) hypotheses per source,
``rows = batch * beam`` in all.
"""

import tensorflow as tf

from .. import data as _data
from ..common.arguments import check_positive
from ..common.decoding import default_max_len, length_penalty_factor, map_state
from ..common.tokens import check_length, check_token_range
from ..data import BOS_ID, EOS_ID, PAD_ID
from .tokens import token_ids


class _Graphs:
    """``model``'s decoding methods compiled with ``tf.function``; other attributes pass through.

    The source is checked eagerly first (ids in range, length), because inside a
    graph only the static checks run.
    """

    def __init__(self, model):
        self.model = model
        self.start_decoding_graph = tf.function(model.start_decoding, reduce_retracing=True)
        self.decode_step = tf.function(model.decode_step, reduce_retracing=True)
        self.full = tf.function(lambda src, tgt: model(src, tgt, training=False), reduce_retracing=True)

    def __getattr__(self, name):
        return getattr(self.model, name)

    def check_source(self, src):
        vocab_size = getattr(self.model, "input_vocab_size", None)
        if vocab_size is not None and tf.size(src) > 0:
            check_token_range(int(tf.reduce_min(src)), int(tf.reduce_max(src)), vocab_size)
        if getattr(self.model, "max_len", None) is not None and src.shape.rank == 2:
            check_length(int(src.shape[1]), self.model.max_len)

    def start_decoding(self, src):
        self.check_source(src)
        return self.start_decoding_graph(src)

    def __call__(self, src, tgt, training=False):
        self.check_source(src)
        return self.full(src, tgt)


def decoding_graphs(model):
    """``model`` with its decoding compiled: the ``tf.function`` graphs ``start_decoding_graph``,
    ``decode_step`` and ``full`` (the whole model, for ``use_cache=False``) that greedy and beam
    search run, made on first use and kept on the model (their tracing counts show retracing).
    TensorFlow only: PyTorch decodes eagerly."""
    graphs = getattr(model, "_course_decoding_graphs", None)
    if graphs is None:
        graphs = _Graphs(model)
        object.__setattr__(model, "_course_decoding_graphs", graphs)  # not tracked by Keras
    return graphs


def reorder_state(state, index):
    """Select batch rows ``index`` of every tensor in a decoding state (for beam search)."""
    return map_state(lambda tensor: tf.gather(tensor, index, axis=0), state)


def greedy_decode(model, src_tokens, max_len=None, bos_id=BOS_ID, eos_id=EOS_ID,
                  pad_id=PAD_ID, use_cache=True, return_logits=False):
    """Pick the most likely token at each step until every sequence has ``<eos>``.

    Args:
        model: a model with ``start_decoding``/``decode_step`` (e.g. Transformer).
        src_tokens: source token ids.
        max_len: most tokens to generate (default: the model's ``max_len - 1``);
            at most the model's ``max_len``, else ``ValueError``.
        bos_id, eos_id, pad_id: special token ids.
        use_cache: decode incrementally with the model's cache (fast) or recompute
            ``model(src_tokens, prefix)`` at every step (slow; same result).
        return_logits: also return each step's logits.

    Returns:
        ``tokens``: the generated ids after ``<bos>``, up to and including
        ``<eos>``, then ``pad_id``; with ``return_logits``, ``(tokens, logits)``.
        An empty batch (0 sources) gives 0 steps.

    Shape:
        src_tokens (batch, src_len) -> tokens (batch, steps) int64,
        logits (batch, steps, vocab), steps <= max_len.
    """
    max_len = default_max_len(model, max_len)
    model = decoding_graphs(model)
    src = token_ids(src_tokens)
    if src.shape[0] == 0:  # nothing to decode
        tokens = tf.zeros((0, 0), dtype=tf.int64)
        logits = tf.zeros((0, 0, model.target_vocab_size))
        return (tokens, logits) if return_logits else tokens
    batch = tf.shape(src)[0]
    tokens = tf.fill((batch, 1), tf.constant(bos_id, tf.int64))  # (batch, 1)
    done = tf.zeros((batch,), dtype=tf.bool)  # (batch,)
    all_logits = []
    state = model.start_decoding(src) if use_cache else None
    for _ in range(max_len):
        if use_cache:
            logits, state = model.decode_step(tokens[:, -1:], state)  # (batch, 1, vocab)
        else:
            logits = model(src, tokens, training=False)  # (batch, steps so far, vocab)
        logits = logits[:, -1]  # (batch, vocab)
        next_id = tf.where(done, tf.constant(pad_id, tf.int64), tf.argmax(logits, axis=-1))  # (batch,)
        tokens = tf.concat([tokens, next_id[:, tf.newaxis]], axis=1)
        all_logits.append(logits)
        done = done | (next_id == eos_id)
        if bool(tf.reduce_all(done)):
            break
    tokens = tokens[:, 1:]  # drop <bos>
    return (tokens, tf.stack(all_logits, axis=1)) if return_logits else tokens


def beam_search(model, src_tokens, beam_size=4, max_len=None, length_penalty=0.6,
                bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID, return_scores=False):
    """Keep the ``beam_size`` most likely prefixes per source; return the best one.

    Hypotheses are ranked by their summed log-probability while searching; the
    winner among the final beams maximises ``log_prob / length_penalty_factor``
    (``length_penalty=0`` ranks by raw log-probability; a length counts the tokens
    up to ``<eos>``, and ``bos_id`` may be ``pad_id``). A finished beam keeps its
    score and is extended with ``pad_id`` only (Hugging Face's rules differ: see the module).

    Returns:
        ``tokens`` as :func:`greedy_decode`; with ``return_scores``,
        ``(tokens, scores)`` with each winner's normalised log-probability.
        An empty batch (0 sources) gives 0 steps. ``max_len`` as in
        :func:`greedy_decode` (at most the model's ``max_len``).

    Shape:
        src_tokens (batch, src_len) -> tokens (batch, steps) int64, scores (batch,).
    """
    check_positive(beam_size=beam_size)
    max_len = default_max_len(model, max_len)
    model = decoding_graphs(model)
    src = token_ids(src_tokens)
    batch = int(src.shape[0])
    if batch == 0:  # nothing to search
        tokens = tf.zeros((0, 0), dtype=tf.int64)
        return (tokens, tf.zeros((0,))) if return_scores else tokens
    rows = batch * beam_size
    offsets = (tf.range(batch, dtype=tf.int64) * beam_size)[:, tf.newaxis]  # (batch, 1)
    tokens = tf.fill((rows, 1), tf.constant(bos_id, tf.int64))  # (rows, 1)
    first = tf.one_hot(0, beam_size, on_value=0.0, off_value=float("-inf"))
    scores = tf.tile(first[tf.newaxis], (batch, 1))  # (batch, beam): one live beam per source
    done = tf.zeros((rows,), dtype=tf.bool)  # (rows,)
    lengths = tf.zeros((rows,))  # (rows,): tokens up to and including <eos>
    state = model.start_decoding(tf.repeat(src, beam_size, axis=0))
    for _ in range(max_len):
        logits, state = model.decode_step(tokens[:, -1:], state)  # (rows, 1, vocab)
        log_probs = tf.nn.log_softmax(tf.cast(logits[:, -1], tf.float32), axis=-1)  # (rows, vocab)
        vocab = int(log_probs.shape[-1])
        finished = tf.one_hot(pad_id, vocab, on_value=0.0, off_value=float("-inf"))
        # a finished beam can only add <pad>, at no cost
        log_probs = tf.where(done[:, tf.newaxis], finished[tf.newaxis], log_probs)
        candidates = scores[:, :, tf.newaxis] + tf.reshape(log_probs, (batch, beam_size, vocab))
        scores, flat = tf.math.top_k(tf.reshape(candidates, (batch, -1)), k=beam_size)
        flat = tf.cast(flat, tf.int64)  # (batch, beam)
        rows_from = tf.reshape(offsets + flat // vocab, (-1,))  # (rows,)
        next_id = tf.reshape(flat % vocab, (-1,))  # (rows,)
        tokens = tf.concat([tf.gather(tokens, rows_from), next_id[:, tf.newaxis]], axis=1)
        state = reorder_state(state, rows_from)
        lengths = tf.gather(lengths, rows_from) + tf.cast(~tf.gather(done, rows_from), tf.float32)
        done = tf.gather(done, rows_from) | (next_id == eos_id)
        if bool(tf.reduce_all(done)):
            break
    tokens = tokens[:, 1:]  # (rows, steps)
    normalised = tf.reshape(scores, (-1,)) / length_penalty_factor(lengths, length_penalty)
    best = tf.reshape(offsets, (-1,)) + tf.argmax(
        tf.reshape(normalised, (batch, beam_size)), axis=-1)  # (batch,)
    tokens = tf.gather(tokens, best)
    return (tokens, tf.gather(normalised, best)) if return_scores else tokens


def translate(model, sources, src_vocab, tgt_vocab, max_len=None, beam_size=1,
              length_penalty=0.6, batch_size=500):
    """Translate texts: encode, decode (greedy, or beam search if ``beam_size > 1``), detokenize.

    Args:
        model: a model with ``start_decoding``/``decode_step``.
        sources: source texts, or one text: a bare ``str`` is one sentence
            (not a sequence of letters) and gives one translation.
        src_vocab, tgt_vocab: the :class:`~course_pkg.data.Vocab` of each side.
        max_len: most target tokens (default: the model's ``max_len - 1``).
        beam_size: 1 for greedy decoding.
        length_penalty: of :func:`beam_search`.
        batch_size: sources decoded together.

    Returns:
        the list of translations, one string per source; a single string for a
        bare ``str``.

    Raises:
        ValueError: ``max_len`` beyond the model's (see :func:`greedy_decode`).
    """
    check_positive(beam_size=beam_size, batch_size=batch_size)
    if isinstance(sources, str):  # one sentence, not its letters
        return translate(model, [sources], src_vocab, tgt_vocab, max_len, beam_size, length_penalty,
                         batch_size)[0]
    sources = list(sources)
    translations = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start:start + batch_size]
        src = _data.pad_batch([src_vocab.encode(text, add_eos=True) for text in chunk])
        if beam_size == 1:
            tokens = greedy_decode(model, src, max_len)
        else:
            tokens = beam_search(model, src, beam_size, max_len, length_penalty)
        translations += [tgt_vocab.decode(ids) for ids in tokens.numpy()]
    return translations
