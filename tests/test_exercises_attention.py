"""Exercises 4.4, 4.5 and 5.4 (course_pkg.exercises.attention_blocks): multi-head attention from its
four matrices, Add & Norm, and one decoding step with a key/value cache.

The answers are held against the course's own layers (MultiHeadAttention with the drawn matrices,
the reference's layer norm at the course's epsilon) and, for the cached step, against the full
masked pass whatever the earlier queries; every edition's parameters tell each usual mistake from
the answer, and a wrong answer is told, in ``check`` and in the grader alike, which result, which
head, query, key or position, the expected and the given value, the shapes when they differ, and
which mistake gives it. The book's solutions passing for every seed, the cells and the build are
checked with the other exercises (test_exercises.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import book_answer, probe_reason, quiet_check

from course_pkg import reference as ref
from course_pkg.exercises import attention_blocks as ab
from course_pkg.exercises import catalog

SEED = 7
SEEDS = range(25)
MISTAKES = {"4.4": ab.MULTI_HEAD_MISTAKES, "4.5": ab.ADD_NORM_MISTAKES, "5.4": ab.CACHE_MISTAKES}
CASES = [(ex_id, key) for ex_id, table in MISTAKES.items() for key in table]


def _params(ex_id, seed=SEED):
    return catalog.get(ex_id).params(seed)


def _message(ex_id, answer, params):
    with pytest.raises(AssertionError) as error:
        quiet_check(ex_id, answer, params)
    return str(error.value)


# --------------------------------------------------------------------------- the answers

def test_multi_head_answer_is_the_course_layer(fw):
    """Exercise 4.4's answer is what the course's ``MultiHeadAttention`` computes with the drawn
    matrices as its kernels and zero biases: the same head split, merge and mask convention."""
    from course_pkg import interop

    for seed in (0, SEED):
        p = _params("4.4", seed)
        d_model = np.shape(p["wq"])[0]
        layer = fw.make("MultiHeadAttention", d_model, p["num_heads"])
        weights = {name: np.zeros_like(np.asarray(w)) for name, w in interop.get_weights(layer).items()}
        weights.update({f"{name}.kernel": np.asarray(p[name], np.float32)
                        for name in ("wq", "wk", "wv", "wo")})
        interop.set_weights(layer, weights)
        batch = [np.asarray(p[name], np.float32)[np.newaxis] for name in ("query", "key", "value")]
        mask = np.asarray(p["mask"], np.float32)[np.newaxis, np.newaxis]
        out, attention = fw.call(layer, *batch, mask=mask)  # the output and the weights
        expected = catalog.get("4.4").expected(**p)
        np.testing.assert_allclose(out[0], expected[0], atol=1e-5)
        np.testing.assert_allclose(attention[0], expected[1], atol=1e-6)


def test_add_and_norm_answer_is_the_encoders_sub_layer_wrapping():
    """Exercise 4.5's answer is the reference's post-LN wrapping, and ``epsilon`` is the one given:
    at the course's epsilon it is ``layer_norm`` at its default; the small position makes each of
    section 4.7's three epsilons give another result."""
    p = {**_params("4.5"), "epsilon": ref.LAYER_NORM_EPSILON}
    z = np.add(p["x"], p["sublayer_output"])
    norm = {"gamma": np.asarray(p["gamma"]), "beta": np.asarray(p["beta"])}
    np.testing.assert_allclose(catalog.get("4.5").expected(**p), ref.layer_norm(norm, z), rtol=1e-12)
    for seed in SEEDS:
        p = _params("4.5", seed)
        results = [catalog.get("4.5").expected(**{**p, "epsilon": eps}) for eps in ab.EPSILONS]
        for i in range(len(results)):
            for j in range(i):
                assert not np.allclose(results[i], results[j], **ab.DETECTED), (seed, i, j)


def test_cached_step_is_the_full_passs_last_row_whatever_the_earlier_queries():
    """The look-ahead mask makes the full pass's last row independent of the earlier positions'
    queries, which the cache does not keep: random ones give the reference's answer."""
    rng = np.random.default_rng(0)
    for seed in SEEDS:
        p = _params("5.4", seed)
        output, k_cache, v_cache = catalog.get("5.4").expected(**p)
        earlier = rng.normal(size=np.shape(p["k_cache"]))
        queries = np.concatenate([earlier, p["q_new"]], axis=1)
        np.testing.assert_allclose(ab.full_pass(queries, k_cache, v_cache)[:, -1:], output, rtol=1e-12)
        np.testing.assert_array_equal(k_cache[:, :-1], p["k_cache"])
        np.testing.assert_array_equal(v_cache[:, -1:], p["v_new"])


def test_draws_keep_their_promises():
    """Every query of 4.4 has an allowed key and some key is blocked; 4.5 has one small position;
    5.4's caches hold at least two positions."""
    for seed in SEEDS:
        mask = np.asarray(_params("4.4", seed)["mask"])
        assert (mask == 0).any(axis=1).all() and mask.sum() >= 2
        p = _params("4.5", seed)
        variances = np.add(p["x"], p["sublayer_output"]).var(axis=-1)
        assert variances.min() < 5e-3 and p["epsilon"] in ab.EPSILONS
        assert np.shape(_params("5.4", seed)["k_cache"])[1] >= 2


# --------------------------------------------------------------------------- the mistakes

@pytest.mark.parametrize("ex_id, key", CASES, ids=[f"{ex_id}-{key}" for ex_id, key in CASES])
def test_every_seed_rejects_each_mistake_and_names_it(ex_id, key):
    """For any edition each usual mistake fails ``check``, whose message names that mistake."""
    description, mistake = MISTAKES[ex_id][key]
    for seed in SEEDS:
        message = _message(ex_id, mistake, _params(ex_id, seed))
        assert message.startswith(f"Exercise {ex_id}: "), message
        assert message.endswith(f"; that is what you get {description}"), (seed, message)


def test_book_solutions_are_not_the_mistakes():
    for ex_id in MISTAKES:
        assert quiet_check(ex_id, book_answer(ex_id), _params(ex_id)).endswith("points\n")


# --------------------------------------------------------------------------- the feedback

def test_feedback_names_the_part_its_axes_and_both_values():
    """The first wrong value is told with its index and axes, the given and the expected value
    (four decimals) and how many differ; the mistake is said after it."""
    p = _params("4.4")
    got_out, got_weights = ab.MULTI_HEAD_MISTAKES["no_scaling"][1](**p)
    _, weights = catalog.get("4.4").expected(**p)
    wrong = ~np.isclose(got_weights, weights, rtol=1e-5, atol=1e-6)
    h, i, j = (int(n) for n in np.argwhere(wrong)[0])
    assert _message("4.4", ab.MULTI_HEAD_MISTAKES["no_scaling"][1], p) == (
        f"Exercise 4.4: multi_head_attention(...): weights[{h}, {i}, {j}] (head {h}, query {i}, key {j}) "
        f"is {got_weights[h, i, j]:.4f}, expected {weights[h, i, j]:.4f} ({int(wrong.sum())} of "
        f"{wrong.size} values differ); that is what you get without dividing the logits by √d_k "
        "(section 4.4)")
    message = _message("4.4", ab.MULTI_HEAD_MISTAKES["no_wo"][1], p)  # the weights are right
    assert message.startswith("Exercise 4.4: multi_head_attention(...): output[0, 0] (query 0, feature 0) "
                              "is ")


def test_feedback_says_the_shapes_with_their_axes():
    """A result of the wrong shape is told both shapes and the expected axes, whether or not it is
    a known mistake; a result that is no array, or not a pair, keeps the general message."""
    p = _params("5.4")
    heads, past, depth = np.shape(p["k_cache"])
    message = _message("5.4", ab.CACHE_MISTAKES["not_grown"][1], p)
    assert message == (f"Exercise 5.4: cached_attention(...): k_cache has shape {(heads, past, depth)}, "
                       f"expected {(heads, past + 1, depth)} (head, position, feature); that is what you get "
                       "with the caches returned as they came, without the new position")
    answer = book_answer("5.4")
    message = _message("5.4", lambda **kw: (answer(**kw)[0][:, 0],) + answer(**kw)[1:], p)
    assert message == (f"Exercise 5.4: cached_attention(...): output has shape {(heads, depth)}, expected "
                       f"{(heads, 1, depth)} (head, new position, feature)")
    q = _params("4.5")
    message = _message("4.5", lambda **kw: book_answer("4.5")(**kw).T, q)
    assert message == (f"Exercise 4.5: add_and_norm(...) has shape {np.shape(q['x'])[::-1]}, expected "
                       f"{np.shape(q['x'])} (position, feature)")
    assert "should return 2 values, got 1" in _message("4.4", lambda **kw: book_answer("4.4")(**kw)[:1],
                                                        _params("4.4"))
    assert "returned None" in _message("4.5", lambda **kw: None, q)


def test_feedback_accepts_framework_tensors(fw):
    for ex_id in MISTAKES:
        answer = book_answer(ex_id)

        def as_tensors(**kw):
            result = answer(**kw)
            return tuple(map(fw.tensor, result)) if isinstance(result, tuple) else fw.tensor(result)
        assert "correct" in quiet_check(ex_id, as_tensors, _params(ex_id))


def test_the_grader_tells_a_wrong_answer_as_check_does(tmp_path):
    """The grader reads the kernel's results back and gives ``check``'s message; the book's
    answers score."""
    for ex_id, key in (("4.4", "mask_inverted"), ("4.5", "norm_first"), ("5.4", "prepended")):
        mistake = MISTAKES[ex_id][key][1]
        expected = _message(ex_id, mistake, _params(ex_id))
        assert probe_reason(ex_id, mistake, SEED, tmp_path) == f"AssertionError: {expected}"
        assert probe_reason(ex_id, book_answer(ex_id), SEED, tmp_path) == ""
