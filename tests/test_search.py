"""greedy_decode and beam_search: cache equals recomputation, beams beat greedy, the length penalty
divides, frameworks agree."""

import numpy as np
import pytest
from helpers import class_args, random_params

PAD, BOS, EOS, A, B = 0, 1, 2, 3, 4
# A Markov "language model": row = previous token, column = next-token probability.
# Greedy takes A (0.6) and then cannot finish well; beam search finds B <eos> (0.4 * 0.9).
TRANSITIONS = np.array([
    [0.96, 0.01, 0.01, 0.01, 0.01],  # after <pad>
    [0.00, 0.00, 0.00, 0.60, 0.40],  # after <bos>
    [0.96, 0.01, 0.01, 0.01, 0.01],  # after <eos>
    [0.00, 0.00, 0.34, 0.33, 0.33],  # after A
    [0.00, 0.00, 0.90, 0.05, 0.05],  # after B
])
LOG_T = np.log(np.maximum(TRANSITIONS, 1e-9)).astype(np.float32)


def markov_model(fw, log_t=LOG_T):
    """A model with the decoding protocol whose logits (``log_t``'s row of the last token) depend
    on the last token only."""
    if fw.name == "torch":
        import torch

        class Markov(torch.nn.Module):
            max_len = 8

            def forward(self, src, tgt):
                return torch.as_tensor(log_t)[tgt]  # (batch, steps, vocab)

            def start_decoding(self, src):
                return {"src": torch.as_tensor(src)}

            def decode_step(self, tokens, state):
                return self(state["src"], tokens), state

        return Markov()

    tf = fw.tf

    class Markov:
        max_len = 8

        def __call__(self, src, tgt, training=False):
            return tf.gather(tf.constant(log_t), tgt)

        def start_decoding(self, src):
            return {"src": tf.convert_to_tensor(src)}

        def decode_step(self, tokens, state):
            return self(state["src"], tokens), state

    return Markov()


SRC = np.array([[5, 6], [7, 0]])


def test_greedy_takes_the_locally_best_token(fw):
    tokens = fw.to_numpy(fw.cp.greedy_decode(markov_model(fw), SRC, max_len=5))
    # A, then <eos> (0.34), then only <pad>
    np.testing.assert_array_equal(tokens, [[A, EOS], [A, EOS]])


def test_beam_search_finds_the_more_likely_sequence(fw):
    model = markov_model(fw)
    tokens, scores = fw.cp.beam_search(model, SRC, beam_size=2, max_len=5, length_penalty=0.0,
                                       return_scores=True)
    np.testing.assert_array_equal(fw.to_numpy(tokens), [[B, EOS], [B, EOS]])
    np.testing.assert_allclose(fw.to_numpy(scores), np.log(0.4 * 0.9), atol=1e-5)


# Two hypotheses end in the beam: A <eos> (0.6 * 0.6 = 0.36, 2 tokens) and B C D <eos> (0.4 * 0.92 *
# 0.9 * 0.9 = 0.298, 4 tokens). By log-probability the short one wins; divided by GNMT's length
# penalty ((5 + length) / 6) ** alpha, the long one wins from alpha = 1 (-1.21 / 1.5 > -1.02 / 1.17).
C, D = 5, 6
PENALTY_TRANSITIONS = np.array([
    [0.94, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],  # after <pad>
    [0.00, 0.00, 0.00, 0.60, 0.40, 0.00, 0.00],  # after <bos>
    [0.94, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01],  # after <eos>
    [0.00, 0.00, 0.60, 0.20, 0.20, 0.00, 0.00],  # after A
    [0.00, 0.00, 0.02, 0.02, 0.02, 0.92, 0.02],  # after B
    [0.00, 0.00, 0.02, 0.02, 0.02, 0.04, 0.90],  # after C
    [0.00, 0.00, 0.90, 0.02, 0.02, 0.02, 0.04],  # after D
])
FINAL_BEAMS = {(A, EOS, PAD, PAD): 0.6 * 0.6, (B, C, D, EOS): 0.4 * 0.92 * 0.9 * 0.9}


def gnmt_best(alpha):
    """The NumPy oracle: the final beam with the best log-probability / ((5 + length) / 6) ** alpha
    (length: the tokens up to <eos>), and that score."""
    scores = {tokens: np.log(p) / ((5.0 + tokens.index(EOS) + 1) / 6.0) ** alpha
              for tokens, p in FINAL_BEAMS.items()}
    best = max(scores, key=scores.get)
    return list(best), scores[best]


def test_the_oracle_prefers_the_long_hypothesis_only_with_a_penalty():
    assert gnmt_best(0.0)[0] == [A, EOS, PAD, PAD] == gnmt_best(0.6)[0]
    assert gnmt_best(1.0)[0] == [B, C, D, EOS] == gnmt_best(2.0)[0]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0, 2.0])
def test_beam_search_divides_by_the_length_penalty(fw, alpha):
    """The winner and its returned score are the oracle's: log-probability divided by the GNMT
    factor; from alpha = 1 that makes the longer hypothesis win (multiplying would not)."""
    model = markov_model(fw, np.log(np.maximum(PENALTY_TRANSITIONS, 1e-9)).astype(np.float32))
    tokens, scores = fw.cp.beam_search(model, SRC, beam_size=2, max_len=6, length_penalty=alpha,
                                       return_scores=True)
    best, score = gnmt_best(alpha)
    np.testing.assert_array_equal(fw.to_numpy(tokens), [best, best])
    np.testing.assert_allclose(fw.to_numpy(scores), [score, score], rtol=1e-5)


def test_the_length_penalty_factor_is_gnmts():
    from course_pkg.common.decoding import length_penalty_factor

    assert length_penalty_factor(1, 0.0) == 1.0
    np.testing.assert_allclose(length_penalty_factor(np.array([1, 4, 7]), 0.6),
                               [1.0, 1.5 ** 0.6, 2.0 ** 0.6])


def test_beam_of_one_is_greedy(fw):
    model = markov_model(fw)
    greedy = fw.to_numpy(fw.cp.greedy_decode(model, SRC, max_len=5))
    beam = fw.to_numpy(fw.cp.beam_search(model, SRC, beam_size=1, max_len=5, length_penalty=0.0))
    np.testing.assert_array_equal(beam, greedy)


def test_decoding_stops_at_max_len(fw):
    model = markov_model(fw)
    with pytest.raises(ValueError, match="max_len"):
        fw.cp.greedy_decode(model, SRC, max_len=0)
    tokens = fw.to_numpy(fw.cp.greedy_decode(model, SRC, max_len=1))
    assert tokens.shape == (2, 1)


def _transformer(fw, interop):
    model = fw.make("Transformer", *class_args("Transformer"))
    interop.set_weights(model, random_params(model, seed=3, scale=0.5))
    return model


def test_cached_greedy_equals_recomputation(fw, interop):
    model = _transformer(fw, interop)
    src = np.array([[5, 9, 3, 7, 0, 0], [4, 12, 1, 6, 8, 2]])
    fast, fast_logits = fw.cp.greedy_decode(model, src, max_len=8, return_logits=True)
    slow, slow_logits = fw.cp.greedy_decode(model, src, max_len=8, use_cache=False,
                                            return_logits=True)
    np.testing.assert_array_equal(fw.to_numpy(fast), fw.to_numpy(slow))
    np.testing.assert_allclose(fw.to_numpy(fast_logits), fw.to_numpy(slow_logits), atol=1e-5)


def test_frameworks_decode_identically(tf_fw, torch_fw, interop):
    tf_model, pt_model = _transformer(tf_fw, interop), _transformer(torch_fw, interop)
    interop.copy_weights(tf_model, pt_model)
    src = np.array([[5, 9, 3, 7, 0, 0], [4, 12, 1, 6, 8, 2]])
    for decode, kw in (("greedy_decode", {}), ("beam_search", {"beam_size": 3})):
        a = tf_fw.to_numpy(getattr(tf_fw.cp, decode)(tf_model, src, max_len=8, **kw))
        b = torch_fw.to_numpy(getattr(torch_fw.cp, decode)(pt_model, src, max_len=8, **kw))
        np.testing.assert_array_equal(a, b)


def test_torch_decoding_restores_training_mode(torch_fw, interop):
    model = _transformer(torch_fw, interop)
    model.train()
    torch_fw.cp.greedy_decode(model, np.array([[5, 9, 3]]), max_len=3)
    assert model.training


def test_translate_matches_greedy_decoding_of_the_encoded_sources(fw, interop):
    from course_pkg import data

    tokenizer = data.Tokenizer()
    src_vocab = data.Vocab.build(["un deux trois", "quatre cinq"], tokenizer)
    tgt_vocab = data.Vocab.build(["one two three", "four five"], tokenizer)
    model = fw.make("Transformer", 1, 8, 2, 16, len(src_vocab), len(tgt_vocab), 8)
    interop.set_weights(model, random_params(model, seed=4, scale=0.8))
    sources = ["un deux", "trois quatre cinq", "cinq", "deux un trois"]
    got = fw.cp.translate(model, sources, src_vocab, tgt_vocab, max_len=5, batch_size=3)
    assert len(got) == len(sources) and all(isinstance(t, str) for t in got)
    src = data.pad_batch([src_vocab.encode(s, add_eos=True) for s in sources])
    expected = [tgt_vocab.decode(ids) for ids in fw.to_numpy(fw.cp.greedy_decode(model, src, max_len=5))]
    assert got == expected  # chunking (3 + 1) and padding change nothing
    beams = fw.cp.translate(model, sources, src_vocab, tgt_vocab, max_len=5, beam_size=2)
    assert len(beams) == len(sources)
    with pytest.raises(ValueError, match="beam_size"):
        fw.cp.translate(model, sources, src_vocab, tgt_vocab, beam_size=0)


@pytest.mark.parametrize("decode", ["greedy_decode", "beam_search"])
def test_decoding_refuses_out_of_range_source_ids(fw, interop, decode):
    model = _transformer(fw, interop)
    vocab = class_args("Transformer")[4]
    src = np.array([[5, 9, vocab, 0]])  # one id past the source vocabulary
    with pytest.raises(ValueError, match=rf"token ids must lie in \[0, {vocab}\)"):
        getattr(fw.cp, decode)(model, src, max_len=4)


def test_tensorflow_decoding_graphs_do_not_retrace_per_step(tf_fw, interop):
    """The cache grows every step; with dynamic shapes the compiled step is traced a few times only."""
    from course_pkg.tensorflow.decoding import decoding_graphs

    model = _transformer(tf_fw, interop)
    rng = np.random.default_rng(0)
    for batch, src_len in ((2, 6), (3, 4), (5, 7), (1, 5)):
        src = rng.integers(3, 13, (batch, src_len))
        tf_fw.cp.greedy_decode(model, src, max_len=8)
        tf_fw.cp.greedy_decode(model, src, max_len=8, use_cache=False)
    graphs = decoding_graphs(model)
    assert graphs.decode_step.experimental_get_tracing_count() <= 3
    assert graphs.full.experimental_get_tracing_count() <= 3
    assert graphs.start_decoding_graph.experimental_get_tracing_count() <= 3
