"""Greedy and beam-search decoding, batched, with or without the key/value cache.

Any model with two methods can be decoded:

- ``state = model.start_decoding(src_tokens)``: encode the source once;
- ``logits, state = model.decode_step(tgt_tokens, state)``: logits for the new
  target tokens, ``(batch, new, vocab)``.

:class:`~course_pkg.torch.Transformer` implements them with a key/value cache,
so each step costs O(1) in the prefix length; ``use_cache=False`` instead calls
``model(src_tokens, prefix)`` on the whole prefix at every step, the slow way
the cache is measured against. Every tensor in ``state`` is batch-first, so
beam search can reorder it.

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

import torch

from .. import data as _data
from ..common.arguments import check_positive
from ..common.decoding import default_max_len, length_penalty_factor, map_state
from ..data import BOS_ID, EOS_ID, PAD_ID
from .tokens import token_ids


def reorder_state(state, index):
    """Select batch rows ``index`` of every tensor in a decoding state (for beam search)."""
    return map_state(lambda tensor: tensor.index_select(0, index), state)


class eval_mode:
    """Eval mode and no autograd for the duration of decoding; mode restored after."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.model.eval()
        self.no_grad = torch.no_grad()
        self.no_grad.__enter__()

    def __exit__(self, *exc):
        self.no_grad.__exit__(*exc)
        self.model.train(self.was_training)


def _device_of(model):
    """The device of the model's first parameter (the CPU for a model without any)."""
    first = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
    return torch.device("cpu") if first is None else first.device


def greedy_decode(model, src_tokens, max_len=None, bos_id=BOS_ID, eos_id=EOS_ID,
                  pad_id=PAD_ID, use_cache=True, return_logits=False):
    """Pick the most likely token at each step until every sequence has ``<eos>``.

    Args:
        model: a model with ``start_decoding``/``decode_step`` (e.g. Transformer).
        src_tokens: source token ids (a tensor on any device, an array or lists: they go to
            the device of the model's weights, where the tokens come back).
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
    src = token_ids(src_tokens).to(_device_of(model))  # where the model's weights live
    batch = src.shape[0]
    if batch == 0:  # nothing to decode
        tokens = torch.zeros((0, 0), dtype=torch.int64, device=src.device)
        logits = torch.zeros((0, 0, model.target_vocab_size), device=src.device)
        return (tokens, logits) if return_logits else tokens
    tokens = torch.full((batch, 1), bos_id, dtype=torch.int64, device=src.device)  # (batch, 1)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)  # (batch,)
    all_logits = []
    with eval_mode(model):
        state = model.start_decoding(src) if use_cache else None
        for _ in range(max_len):
            if use_cache:
                logits, state = model.decode_step(tokens[:, -1:], state)  # (batch, 1, vocab)
            else:
                logits = model(src, tokens)  # (batch, steps so far, vocab)
            logits = logits[:, -1]  # (batch, vocab)
            next_id = torch.where(done, pad_id, logits.argmax(dim=-1))  # (batch,)
            tokens = torch.cat([tokens, next_id[:, None]], dim=1)
            all_logits.append(logits)
            done = done | (next_id == eos_id)
            if bool(done.all()):
                break
    tokens = tokens[:, 1:]  # drop <bos>
    return (tokens, torch.stack(all_logits, dim=1)) if return_logits else tokens


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
    src = token_ids(src_tokens).to(_device_of(model))  # where the model's weights live
    batch, device = src.shape[0], src.device
    if batch == 0:  # nothing to search
        tokens = torch.zeros((0, 0), dtype=torch.int64, device=device)
        return (tokens, torch.zeros((0,), device=device)) if return_scores else tokens
    rows = batch * beam_size
    offsets = (torch.arange(batch, device=device) * beam_size)[:, None]  # (batch, 1)
    tokens = torch.full((rows, 1), bos_id, dtype=torch.int64, device=device)  # (rows, 1)
    scores = torch.full((batch, beam_size), float("-inf"), device=device)
    scores[:, 0] = 0.0  # start from one live beam per source
    done = torch.zeros(rows, dtype=torch.bool, device=device)  # (rows,)
    lengths = torch.zeros(rows, device=device)  # (rows,): tokens up to and including <eos>
    with eval_mode(model):
        state = model.start_decoding(src.repeat_interleave(beam_size, dim=0))
        for _ in range(max_len):
            logits, state = model.decode_step(tokens[:, -1:], state)  # (rows, 1, vocab)
            log_probs = torch.log_softmax(logits[:, -1].float(), dim=-1)  # (rows, vocab)
            vocab = log_probs.shape[-1]
            finished = torch.full_like(log_probs, float("-inf"))
            finished[:, pad_id] = 0.0  # a finished beam can only add <pad>, at no cost
            log_probs = torch.where(done[:, None], finished, log_probs)
            candidates = scores[:, :, None] + log_probs.view(batch, beam_size, vocab)
            scores, flat = candidates.view(batch, -1).topk(beam_size, dim=-1)  # (batch, beam)
            rows_from = (offsets + flat // vocab).view(-1)  # (rows,)
            next_id = (flat % vocab).view(-1)  # (rows,)
            tokens = torch.cat([tokens.index_select(0, rows_from), next_id[:, None]], dim=1)
            state = reorder_state(state, rows_from)
            lengths = lengths.index_select(0, rows_from) + (~done.index_select(0, rows_from)).float()
            done = done.index_select(0, rows_from) | (next_id == eos_id)
            if bool(done.all()):
                break
    tokens = tokens[:, 1:]  # (rows, steps)
    normalised = scores.view(-1) / length_penalty_factor(lengths, length_penalty)
    best = offsets.view(-1) + normalised.view(batch, beam_size).argmax(dim=-1)  # (batch,)
    tokens = tokens.index_select(0, best)
    return (tokens, normalised.index_select(0, best)) if return_scores else tokens


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
        translations += [tgt_vocab.decode(ids) for ids in tokens.cpu().numpy()]
    return translations
