"""Each exercise's answers and parameters: the reference's answers are what the course's own code
computes (parameter counts, the learning rate and losses, the families' masks and sampling), the
drawn parameters tell a right answer from the usual wrong ones (no tie for a maximum, every action
of the 80/10/10 rule, Viterbi against greedy longest match and the fewest pieces), and a wrong
answer's message says what is wrong in the exercise's terms (7.4: the word, both splits, their
scores), in ``check`` and in the grader alike. Exercise 8.9's are in test_exercises_checkpoints.py;
the catalog, ``check``, build, grading and the student site in test_exercises.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import book_answer, probe_reason, quiet_check

from course_pkg import exercises
from course_pkg import reference as ref
from course_pkg.exercises import catalog
from course_pkg.exercises.subword_splits import MARGIN, fewest_pieces, greedy_split, splits

SEED = 7


def test_parameter_counts_match_the_course_layers(fw):
    """The reference's formulas (the exercises' answers) count the parameters of the course's own
    layers (and GRU's)."""
    def count(layer):
        if fw.name == "torch":
            return sum(p.numel() for p in layer.parameters())
        return sum(int(np.prod(w.shape)) for w in layer.trainable_weights)

    for d_model, dff in ((16, 24), (32, 128)):
        assert count(fw.make("EncoderLayer", d_model, 4, dff)) == ref.encoder_layer_parameters(d_model, dff)
        assert count(fw.make("DecoderLayer", d_model, 4, dff)) == ref.decoder_layer_parameters(d_model, dff)
    if fw.name == "torch":
        gru = fw.torch.nn.GRU(12, 20)
    else:
        gru = fw.keras.layers.GRU(20)
        gru.build((None, None, 12))
    assert count(gru) == ref.gru_parameters(12, 20)


def test_training_answers_match_the_course(fw):
    """The answers of exercises 6.1 to 6.3 (course_pkg.reference) are what the course computes."""
    schedule = fw.cp.NoamSchedule(128, warmup_steps=400)
    for step in (1, 200, 400, 1000):
        assert float(schedule(step)) == pytest.approx(ref.noam_learning_rate(step, 128, 400), rel=1e-6)
    params = exercises.get("6.2").params(SEED)
    labels, logits = np.asarray(params["labels"]), np.asarray(params["logits"])
    loss = fw.to_numpy(fw.cp.masked_loss(fw.tensor(labels), fw.tensor(logits)))
    assert float(loss) == pytest.approx(exercises.get("6.2").expected(labels, logits), rel=1e-5)
    smoothed = fw.to_numpy(fw.cp.masked_loss(fw.tensor(labels), fw.tensor(logits), label_smoothing=0.2))
    targets = exercises.get("6.3").expected(labels, logits.shape[-1], 0.2)  # (batch, seq, vocab)
    keep = labels != 0
    expected = -((targets * ref.log_softmax(logits)).sum(-1) * keep).sum() / keep.sum()
    assert float(smoothed) == pytest.approx(expected, rel=1e-5)
    assert float(smoothed) == pytest.approx(ref.masked_loss(labels, logits, 0, 0.2), rel=1e-5)


def test_family_answers_match_the_course(fw):
    """The answers of exercises 8.1 to 8.3 (course_pkg.reference) are what the course computes:
    the prefix-LM mask without a prompt is chapter 3's combined mask (and GPT's), top-k
    probabilities are the softmax of GPT's ``top_k_filter``, and the masked-LM corruption is
    ``data.mask_for_mlm`` for the same draws."""
    from course_pkg import data

    params = exercises.get("8.1").params(SEED)
    tokens = np.asarray(params["tokens"])
    combined = fw.to_numpy(fw.cp.create_combined_mask(fw.tensor(tokens)))
    np.testing.assert_array_equal(ref.prefix_lm_mask(tokens, [0] * len(tokens)), combined)
    prefix = ref.prefix_lm_mask(tokens, params["prompt_lengths"])
    assert (prefix <= combined).all() and (prefix < combined).any()  # the prompt sees its future too

    params = exercises.get("8.2").params(SEED)
    logits = np.asarray(params["logits"], dtype=np.float32) / params["temperature"]
    filtered = fw.to_numpy(fw.cp.top_k_filter(fw.tensor(logits), params["k"]))
    np.testing.assert_allclose(ref.softmax(filtered.astype(np.float64)),
                               exercises.get("8.2").expected(**params), rtol=1e-5, atol=1e-7)
    for p in (0.5, 0.9):
        kept = fw.to_numpy(fw.cp.top_p_filter(fw.tensor(logits), p))
        np.testing.assert_allclose(ref.softmax(kept.astype(np.float64)), ref.top_p_probabilities(logits, p),
                                   rtol=1e-5, atol=1e-7)

    rows = data.pad_batch([[1, 7, 8, 9, 10, 11, 2], [1, 12, 13, 2], [1, 5, 6, 7, 2]])
    rng = np.random.default_rng(SEED)
    inputs, labels, positions = data.mask_for_mlm(rows, rng, 4, 30, rate=0.5)
    again = np.random.default_rng(SEED)  # the same draws, in mask_for_mlm's order
    select, action = again.random(rows.shape), again.random(rows.shape)
    ordinary = np.array([i for i in range(30) if i not in (0, 1, 2, 3, 4)])
    random_tokens = ordinary[again.integers(0, ordinary.size, rows.shape)]
    expected = ref.mlm_inputs(rows, select, action, random_tokens, 4, 0.5)
    np.testing.assert_array_equal(inputs, expected[0])
    np.testing.assert_array_equal(labels, expected[1])
    np.testing.assert_array_equal(positions, expected[1] > 0)


def test_mlm_draws_cover_every_action():
    """Exercise 8.3's parameters always choose a <mask>, a random and a kept token, and a draw
    under the rate falls on a special token (which must be skipped)."""
    for seed in range(50):
        p = exercises.get("8.3").params(seed)
        tokens, select, action = (np.asarray(p[k]) for k in ("tokens", "select_draws", "action_draws"))
        chosen = (tokens > 4) & (select < p["rate"])
        assert {0 if a < 0.8 else 1 if a < 0.9 else 2 for a in action[chosen]} == {0, 1, 2}
        assert ((tokens <= 4) & (select < p["rate"])).any()




def test_greedy_step_logits_have_a_single_largest_value_for_every_seed():
    """tf.argmax promises no tie rule: the drawn logits never tie for a row's maximum."""
    for seed in range(200):
        logits = np.asarray(catalog.get("5.3").params(seed)["logits"])
        top = logits.max(axis=-1, keepdims=True)
        assert ((logits == top).sum(axis=-1) == 1).all(), f"seed {seed}: a tie for the largest logit"


def test_masked_attention_solution_gives_no_nan_on_a_fully_blocked_row():
    """The book's solution of 5.1 uses chapter 3's recipe: a fully blocked row is zeros, not NaN."""
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 2))
    mask = [[0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]]  # the second query may attend to nothing
    output, weights = book_answer("5.1")(q=q, k=k, v=v, mask=mask)
    assert not np.isnan(output).any() and not np.isnan(weights).any()
    assert not weights[1].any() and not output[1].any()
    np.testing.assert_allclose(weights.sum(axis=-1), [1.0, 0.0, 1.0])


# --------------------------------------------------------------------------- 7.4: Viterbi

def _ids_of(split_rule):
    """An answer of exercise 7.4 that splits by ``split_rule(table, word)``."""
    def answer(pieces, word):
        return [[piece for piece, _ in pieces].index(p) for p in split_rule(dict(pieces), word)]
    return answer


def test_viterbi_split_rejects_greedy_and_fewest_pieces_for_every_seed():
    """Exercise 7.4's parameters tell the best split from the usual wrong ones, for any edition:
    greedy longest match and the split with the fewest pieces each fail on some word; the best
    split never ties (every other scores at least MARGIN less), so float sums cannot flip it."""
    told = r"^Exercise 7\.4: viterbi_split\(pieces, '[a-z]+'\) gave "  # the word and the split given
    for seed in range(25):
        params = catalog.get("7.4").params(seed)
        for rule in (greedy_split, fewest_pieces):
            with pytest.raises(AssertionError, match=told):
                quiet_check("7.4", _ids_of(rule), params)
        for word in params["words"]:
            scores = sorted((score for score, _ in splits(dict(params["pieces"]), word)), reverse=True)
            assert scores[0] - scores[1] >= MARGIN - 1e-9, (seed, word)


def _first_wrong(params, rule):
    """The first word that ``rule`` splits otherwise than the best split, with both id lists."""
    for word in params["words"]:
        given, best = _ids_of(rule)(params["pieces"], word), exercises.get("7.4").expected(
            params["pieces"], [word])[0]
        if given != best:
            return word, given, best
    raise AssertionError("the rule is right on every word")


def _said(pieces, ids):
    """A split as the feedback writes it: its pieces and its score (one decimal)."""
    return [pieces[i][0] for i in ids], f"score {sum(pieces[i][1] for i in ids):.1f}"


@pytest.mark.parametrize("rule", [greedy_split, fewest_pieces])
def test_viterbi_feedback_names_the_word_both_splits_and_their_scores(rule):
    """A wrong split is told in the learner's terms: the word, the split given (its pieces, ids and
    score) and the best split with its score, not the shapes of two id arrays."""
    params = catalog.get("7.4").params(SEED)
    word, given, best = _first_wrong(params, rule)
    (given_pieces, given_score), (best_pieces, best_score) = (_said(params["pieces"], given),
                                                              _said(params["pieces"], best))
    expected = (f"Exercise 7.4: viterbi_split(pieces, {word!r}) gave {given_pieces} (ids {given}), "
                f"{given_score}; the best split is {best_pieces}, {best_score}")
    with pytest.raises(AssertionError) as error:
        quiet_check("7.4", _ids_of(rule), params)
    assert str(error.value) == expected
    assert given_score != best_score


def test_viterbi_feedback_says_what_is_not_a_split():
    """Ids that spell another word, an id of no piece; a result that is no list of ids keeps the
    general message (its shape)."""
    params = catalog.get("7.4").params(SEED)
    word, pieces = params["words"][0], params["pieces"]
    with pytest.raises(AssertionError, match=rf"^Exercise 7\.4: viterbi_split\(pieces, '{word}'\) gave "
                                             rf"\['{pieces[0][0]}'\] \(ids \[0\]\), score .*, which spells "
                                             rf"'{pieces[0][0]}', not '{word}'; the best split is \["):
        quiet_check("7.4", lambda pieces, word: [0], params)
    with pytest.raises(AssertionError, match=rf"gave the ids \[{len(pieces)}\]: {len(pieces)} is not an id "
                                             rf"of pieces \(0 to {len(pieces) - 1}\); the best split is"):
        quiet_check("7.4", lambda pieces, word: [len(pieces)], params)
    with pytest.raises(AssertionError, match=r"^Exercise 7\.4: viterbi_split\(\.\.\.\)\[0\] has shape \(\)"):
        quiet_check("7.4", lambda pieces, word: word, params)


def test_the_grader_tells_a_wrong_split_as_check_does(tmp_path):
    """The grader reads the kernel's results back and gives ``check``'s message (a longer line
    than other errors: the course's own words), and full marks to the book's answer."""
    params = catalog.get("7.4").params(SEED)
    with pytest.raises(AssertionError) as error:
        quiet_check("7.4", _ids_of(greedy_split), params)
    assert probe_reason("7.4", _ids_of(greedy_split), SEED, tmp_path) == f"AssertionError: {error.value}"
    assert probe_reason("7.4", book_answer("7.4"), SEED, tmp_path) == ""
