"""Exercises 4.4, 4.5 and 5.4, on the Transformer's blocks: multi-head attention from its four
matrices (section 4.5), one post-LN sub-layer, Add & Norm (section 4.7), and the self-attention of
one decoding step with a key/value cache (section 5.7). How their parameters are drawn, the
reference answers (:mod:`course_pkg.reference`), and what a wrong answer is told.

The feedback speaks the learner's terms (:func:`difference`): which result (the output, the
weights, a cache), its shape against the expected one with the axes named, or the first value
that differs, indexed by head, query, key or position; and where the result is that of a usual
mistake (:data:`MISTAKES`: no ``1/sqrt(d_k)``, the norm before the residual, a cache that did not
grow...), which one. Every edition's parameters tell each of those mistakes from the answer.

:data:`ENCODER_SPECS` (4.4, 4.5) and :data:`DECODER_SPECS` (5.4) hold the exercises'
:class:`~course_pkg.exercises.catalog.Exercise` arguments as keyword dicts; the catalog builds the
entries from them (so this module does not import it).
"""

from __future__ import annotations

import numpy as np

from .. import reference as ref
from .comparison import to_numpy
from .param_sources import evaluate, floats

HEAD_SIZES = [(2, 2), (2, 3), (3, 2)]  # (num_heads, d_k): d_model 4 or 6
EPSILONS = [1e-6, 1e-5, 1e-3]  # section 4.7: the course's, PyTorch's and Keras' defaults
DETECTED = dict(rtol=1e-3, atol=1e-4)  # a mistake must miss the answer by more than this
MATCHES = dict(rtol=1e-4, atol=1e-6)  # a result this close to a mistake's is that mistake


def _close(a, b, tolerance) -> bool:
    """Equal shapes and values within ``tolerance`` (a dict of rtol, atol)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.allclose(a, b, **tolerance))


def _all_detected(mistakes, params, expected) -> bool:
    """Every mistake's result misses ``expected`` (each part compared) by more than :data:`DETECTED`."""
    def same(a, b):
        if isinstance(b, tuple):
            return all(_close(x, y, DETECTED) for x, y in zip(a, b))
        return _close(a, b, DETECTED)
    return not any(same(mistake(**params), expected) for _, mistake in mistakes.values())


def _evaluated(sources) -> dict:
    """The values of a draw's sources, read as the catalog reads them."""
    return {name: evaluate(src) for name, src in sources.items()}


# --------------------------------------------------------------------------- 4.4: multi-head attention

def draw_multi_head(rng) -> dict:
    """One sentence's queries (3 positions) against keys and values (4 positions), ``d_model`` 4 or
    6 in 2 or 3 heads, four matrices ``(d_model, d_model)`` and a mask ``(3, 4)`` (1 = blocked) that
    leaves every query a key; one decimal. Drawn again until every mistake of
    :data:`MULTI_HEAD_MISTAKES` is told from the answer.

    Shape:
        -> sources of query (3, d_model), key and value (4, d_model), wq, wk, wv, wo, num_heads, mask.
    """
    while True:
        heads, depth = HEAD_SIZES[int(rng.integers(len(HEAD_SIZES)))]
        d_model = heads * depth
        sources = {name: floats(rng.uniform(-1, 1, (rows, d_model)))
                   for name, rows in (("query", 3), ("key", 4), ("value", 4))}
        sources.update({name: floats(rng.uniform(-1, 1, (d_model, d_model)))
                        for name in ("wq", "wk", "wv", "wo")})
        mask = (rng.uniform(size=(3, 4)) < 0.35).astype(int)
        if (mask == 1).all(axis=1).any() or mask.sum() < 2:
            continue
        sources.update(num_heads=repr(heads), mask=repr(mask.tolist()))
        params = _evaluated(sources)
        if _all_detected(MULTI_HEAD_MISTAKES, params, expected_multi_head(**params)):
            return sources


def expected_multi_head(query, key, value, wq, wk, wv, wo, num_heads, mask):
    """The reference answer of exercise 4.4: :func:`course_pkg.reference.multi_head_attention`
    (the paper's, without biases) on a batch of one sentence.

    Shape:
        query (Tq, d_model), key and value (Tk, d_model), w* (d_model, d_model), mask (Tq, Tk)
        -> ((Tq, d_model), (num_heads, Tq, Tk)).
    """
    params = {f"{name}.kernel": np.asarray(w, dtype=np.float64)
              for name, w in (("wq", wq), ("wk", wk), ("wv", wv), ("wo", wo))}
    out, weights = ref.multi_head_attention(
        params, np.asarray(query)[np.newaxis], np.asarray(key)[np.newaxis], np.asarray(value)[np.newaxis],
        num_heads, np.asarray(mask, dtype=np.float64)[np.newaxis, np.newaxis])
    return out[0], weights[0]


def _multi_head(query, key, value, wq, wk, wv, wo, num_heads, mask, scale=None, blocked=None,
                interleaved=False, unmoved=False, project=True):
    """Multi-head attention with one thing done otherwise (the wrong answers of exercise 4.4):
    ``scale`` instead of ``sqrt(d_k)``, ``blocked`` instead of ``mask == 1``, heads taken as every
    ``num_heads``-th feature (``interleaved``), merged without moving the head axis back
    (``unmoved``), no ``wo`` (``project=False``)."""
    seq, d_model = np.shape(query)
    depth = d_model // num_heads

    def split(x):  # (T, d_model) -> (heads, T, depth)
        if interleaved:
            return x.reshape(len(x), depth, num_heads).transpose(2, 0, 1)
        return x.reshape(len(x), num_heads, depth).transpose(1, 0, 2)

    q, k, v = split(np.asarray(query) @ wq), split(np.asarray(key) @ wk), split(np.asarray(value) @ wv)
    blocked = np.asarray(mask) == 1 if blocked is None else blocked
    q = q * np.sqrt(depth) / (scale or np.sqrt(depth))  # the reference divides by sqrt(depth): q k / scale
    out, weights = ref.scaled_dot_product_attention(q, k, v, blocked[np.newaxis].astype(float))
    merged = out.reshape(seq, d_model) if unmoved else out.transpose(1, 0, 2).reshape(seq, d_model)
    return (merged @ wo if project else merged), weights


MULTI_HEAD_MISTAKES = {
    "no_scaling": ("without dividing the logits by √d_k (section 4.4)",
                   lambda **p: _multi_head(**p, scale=1.0)),
    "d_model": ("by dividing the logits by √d_model instead of √d_k, d_k = d_model / num_heads",
                lambda **p: _multi_head(**p, scale=np.sqrt(np.shape(p["query"])[1]))),
    "no_mask": ("without the mask",
                lambda **p: _multi_head(**p, blocked=np.zeros(np.shape(p["mask"]), bool))),
    "mask_inverted": ("with the mask read the other way round (1 means blocked)",
                      lambda **p: _multi_head(**p, blocked=np.asarray(p["mask"]) == 0)),
    "interleaved": ("with every num_heads-th feature in one head (head i takes the block of features "
                    "i·d_k to (i + 1)·d_k - 1)", lambda **p: _multi_head(**p, interleaved=True)),
    "unmoved": ("by merging the heads without moving the head axis back after the positions",
                lambda **p: _multi_head(**p, unmoved=True)),
    "no_wo": ("without the output projection wo", lambda **p: _multi_head(**p, project=False)),
    "kv_swapped": ("with key and value swapped",
                   lambda **p: _multi_head(**{**p, "key": p["value"], "value": p["key"]})),
}


def explain_multi_head(params, result):
    """What a wrong answer of exercise 4.4 gets wrong: the weights first (head, query, key), then
    the output (query, feature); ``None`` where ``result`` is no pair of arrays.

    Shape:
        params as drawn, result (output, weights) -> str or None.
    """
    return _explain("multi_head_attention(...): ", params, result, expected_multi_head(**params),
                    [("output", ("query", "feature")), ("weights", ("head", "query", "key"))],
                    MULTI_HEAD_MISTAKES, order=(1, 0))


# --------------------------------------------------------------------------- 4.5: Add & Norm

def draw_add_and_norm(rng) -> dict:
    """Four positions of ``d_model`` 4, 6 or 8 features, two decimals, one position small (its sum
    has a variance of at most 0.005, where ``epsilon`` counts); ``gamma`` around 1, ``beta`` around
    0, one decimal; ``epsilon`` one of :data:`EPSILONS`. Drawn again until every mistake of
    :data:`ADD_NORM_MISTAKES` is told from the answer.

    Shape:
        -> sources of x and sublayer_output (4, d_model), gamma and beta (d_model,), epsilon.
    """
    while True:
        d_model = int(rng.choice([4, 6, 8]))
        x, out = rng.uniform(-2, 2, (2, 4, d_model))
        small = int(rng.integers(4))
        x[small], out[small] = rng.uniform(-0.05, 0.05, (2, d_model))
        sources = {"x": floats(x, 2), "sublayer_output": floats(out, 2),
                   "gamma": floats(rng.uniform(0.5, 1.5, d_model)),
                   "beta": floats(rng.uniform(-0.5, 0.5, d_model)),
                   "epsilon": repr(float(rng.choice(EPSILONS)))}
        params = _evaluated(sources)
        variance = (params["x"] + params["sublayer_output"])[small].var()
        expected = expected_add_and_norm(**params)
        if 1e-4 < variance < 5e-3 and _all_detected(ADD_NORM_MISTAKES, params, expected):
            return sources


def expected_add_and_norm(x, sublayer_output, gamma, beta, epsilon):
    """The reference answer of exercise 4.5: ``layer_norm(x + sublayer_output)``
    (:func:`course_pkg.reference.layer_norm`, ``epsilon`` given).

    Shape:
        x, sublayer_output (seq, d_model), gamma, beta (d_model,) -> (seq, d_model).
    """
    z = np.asarray(x, dtype=np.float64) + np.asarray(sublayer_output, dtype=np.float64)
    return ref.layer_norm({"gamma": np.asarray(gamma), "beta": np.asarray(beta)}, z, epsilon)


def _norm(z, gamma, beta, epsilon, axis=-1, ddof=0, outside=False):
    """Layer norm with one thing done otherwise (the wrong answers of exercise 4.5): over another
    ``axis``, the variance divided by ``d - ddof``, ``epsilon`` added to the standard deviation."""
    z = np.asarray(z, dtype=np.float64)
    centred = z - z.mean(axis=axis, keepdims=True)
    spread = z.std(axis=axis, keepdims=True, ddof=ddof)
    return gamma * centred / (spread + epsilon if outside else np.sqrt(spread ** 2 + epsilon)) + beta


def _sum_normed(p, **wrong):
    """``x + sublayer_output`` normalised by :func:`_norm` with ``wrong`` options."""
    return _norm(np.add(p["x"], p["sublayer_output"]), p["gamma"], p["beta"], p["epsilon"], **wrong)


ADD_NORM_MISTAKES = {
    "norm_first": ("by normalising x before adding the sub-layer's output (normalise the sum: post-LN)",
                   lambda **p: _norm(p["x"], p["gamma"], p["beta"], p["epsilon"]) + p["sublayer_output"]),
    "residual_after": ("by adding x after normalising the sub-layer's output (normalise the sum: post-LN)",
                       lambda **p: p["x"] + _norm(p["sublayer_output"], p["gamma"], p["beta"], p["epsilon"])),
    "no_residual": ("without the residual connection (the sum x + sublayer_output is normalised)",
                    lambda **p: _norm(p["sublayer_output"], p["gamma"], p["beta"], p["epsilon"])),
    "no_epsilon": ("without epsilon", lambda **p: _sum_normed({**p, "epsilon": 0.0})),
    "epsilon_outside": ("with epsilon added to the standard deviation instead of to the variance",
                        lambda **p: _sum_normed(p, outside=True)),
    "unbiased": ("with the variance divided by d - 1 (PyTorch's default for var and std) instead of d",
                 lambda **p: _sum_normed(p, ddof=1)),
    "positions": ("by normalising each feature over the positions instead of each position over its "
                  "features", lambda **p: _sum_normed(p, axis=0)),
    "swapped": ("with gamma and beta swapped",
                lambda **p: _sum_normed({**p, "gamma": p["beta"], "beta": p["gamma"]})),
}


def explain_add_and_norm(params, result):
    """What a wrong answer of exercise 4.5 gets wrong (position, feature); ``None`` where
    ``result`` is not an array.

    Shape:
        params as drawn, result (seq, d_model) -> str or None.
    """
    return _explain("", params, (result,), (expected_add_and_norm(**params),),
                    [("add_and_norm(...)", ("position", "feature"))],
                    {key: (said, lambda m=m, **p: (m(**p),)) for key, (said, m) in ADD_NORM_MISTAKES.items()})


# --------------------------------------------------------------------------- 5.4: a step with a cache

def draw_cached_step(rng) -> dict:
    """2 or 3 heads of depth 2 to 4, a cache of 2 to 4 positions and the new position's query,
    key and value, one decimal. Drawn again until every mistake of :data:`CACHE_MISTAKES` is told
    from the answer.

    Shape:
        -> sources of k_cache, v_cache (heads, past, d_k), q_new, k_new, v_new (heads, 1, d_k).
    """
    while True:
        heads, depth, past = int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(2, 5))
        sources = {name: floats(rng.uniform(-1, 1, (heads, past, depth)))
                   for name in ("k_cache", "v_cache")}
        sources.update({name: floats(rng.uniform(-1, 1, (heads, 1, depth)))
                        for name in ("q_new", "k_new", "v_new")})
        params = _evaluated(sources)
        if _all_detected(CACHE_MISTAKES, params, expected_cached_step(**params)):
            return sources


def full_pass(queries, keys, values):
    """Chapter 5's masked self-attention over all positions at once (the look-ahead mask of
    section 5.2): the reference of a cached step, whose output is this pass's last row.

    Shape:
        queries, keys, values (heads, T, d_k) -> (heads, T, d_k).
    """
    mask = ref.create_look_ahead_mask(np.shape(keys)[1])  # (T, T): 1 above the diagonal
    return ref.scaled_dot_product_attention(queries, keys, values, mask)[0]


def expected_cached_step(k_cache, v_cache, q_new, k_new, v_new):
    """The reference answer of exercise 5.4: the last row of :func:`full_pass` over the cached
    positions and the new one, and the caches grown by the new key and value.

    The cache holds no queries of the earlier positions (a step never needs them); the full pass
    is given the keys in their place: under the look-ahead mask its last row does not read them.

    Shape:
        caches (heads, past, d_k), new (heads, 1, d_k) -> (output (heads, 1, d_k),
        k_cache, v_cache (heads, past + 1, d_k)).
    """
    k_cache, v_cache, q_new, k_new, v_new = (np.asarray(a, dtype=np.float64)
                                              for a in (k_cache, v_cache, q_new, k_new, v_new))
    keys, values = np.concatenate([k_cache, k_new], axis=1), np.concatenate([v_cache, v_new], axis=1)
    queries = np.concatenate([k_cache, q_new], axis=1)  # (heads, past + 1, d_k)
    return full_pass(queries, keys, values)[:, -1:], keys, values


def _cached(k_cache, v_cache, q_new, k_new, v_new, scale=None, keys=None, values=None, grow=True):
    """A cached step with one thing done otherwise (the wrong answers of exercise 5.4): ``scale``
    instead of ``sqrt(d_k)``, attending over ``keys``/``values`` instead of the grown caches, the
    caches returned as they came (``grow=False``)."""
    grown_k, grown_v = np.concatenate([k_cache, k_new], axis=1), np.concatenate([v_cache, v_new], axis=1)
    keys, values = (grown_k if keys is None else keys), (grown_v if values is None else values)
    scale = np.sqrt(np.shape(q_new)[-1]) if scale is None else scale
    weights = ref.softmax(np.asarray(q_new) @ np.swapaxes(keys, 1, 2) / scale)
    if not grow:
        grown_k, grown_v = np.asarray(k_cache), np.asarray(v_cache)
    return weights @ values, grown_k, grown_v


CACHE_MISTAKES = {
    "not_grown": ("with the caches returned as they came, without the new position",
                  lambda **p: _cached(**p, grow=False)),
    "prepended": ("with the new key and value put first instead of last (position past)",
                  lambda **p: (_cached(**p)[0], np.concatenate([p["k_new"], p["k_cache"]], axis=1),
                               np.concatenate([p["v_new"], p["v_cache"]], axis=1))),
    "past_only": ("by attending over the cached positions alone, without the new one",
                  lambda **p: _cached(**p, keys=p["k_cache"], values=p["v_cache"])),
    "new_only": ("by attending to the new position alone",
                 lambda **p: _cached(**p, keys=p["k_new"], values=p["v_new"])),
    "no_scaling": ("without dividing the logits by √d_k", lambda **p: _cached(**p, scale=1.0)),
    "d_model": ("by dividing the logits by √(num_heads · d_k) instead of √d_k",
                lambda **p: _cached(**p, scale=np.sqrt(np.shape(p["q_new"])[0] * np.shape(p["q_new"])[2]))),
}


def explain_cached_step(params, result):
    """What a wrong answer of exercise 5.4 gets wrong: the output (head, feature), then each cache
    (head, position, feature); ``None`` where ``result`` is no triple of arrays.

    Shape:
        params as drawn, result (output, k_cache, v_cache) -> str or None.
    """
    return _explain("cached_attention(...): ", params, result, expected_cached_step(**params),
                    [("output", ("head", "new position", "feature")),
                     ("k_cache", ("head", "position", "feature")),
                     ("v_cache", ("head", "position", "feature"))], CACHE_MISTAKES)


# --------------------------------------------------------------------------- the feedback

def difference(name, got, expected, axes, tolerance):
    """How one result differs from the reference, in the learner's terms, or ``None`` (equal, or
    ``got`` holds no numbers: the general message says so): its shape against the expected one,
    the axes named, or the first value outside ``tolerance`` with its index, axes named.

    Shape:
        got, expected arrays; axes one name per axis of expected -> str or None.
    """
    got = to_numpy(got)
    if got.dtype.kind not in "biuf":
        return None
    named = ", ".join(axes)
    if got.shape != expected.shape:
        return f"{name} has shape {got.shape}, expected {expected.shape} ({named})"
    wrong = ~np.isclose(got.astype(np.float64), expected, **tolerance)
    if not wrong.any():
        return None
    where = tuple(int(i) for i in np.argwhere(wrong)[0])
    place = ", ".join(f"{axis} {i}" for axis, i in zip(axes, where))
    return (f"{name}[{', '.join(map(str, where))}] ({place}) is {float(got[where]):.4f}, expected "
            f"{float(expected[where]):.4f} ({int(wrong.sum())} of {wrong.size} values differ)")


def _explain(call, params, result, expected, parts, mistakes, order=None):
    """The first part of ``result`` (in ``order``, by default the parts') that differs from
    ``expected``, said by :func:`difference` after ``call`` (``"multi_head_attention(...): "``, or
    empty where the part's name says it), and the mistake whose result it is, if one is."""
    if not isinstance(result, (tuple, list)) or len(result) != len(expected):
        return None
    tolerance = dict(rtol=1e-5, atol=1e-6)
    for i in order or range(len(parts)):
        name, axes = parts[i]
        said = difference(name, result[i], np.asarray(expected[i]), axes, tolerance)
        if said is None:
            continue
        got = to_numpy(result[i])
        for description, mistake in mistakes.values():
            wrong = mistake(**params)[i]
            if np.shape(wrong) == got.shape and _close(got, wrong, MATCHES):
                return f"{call}{said}; that is what you get {description}"
        return f"{call}{said}"
    return None


ENCODER_SPECS = [
    dict(id="4.4", chapter="04_encoder", title="Multi-head attention from its four matrices", points=4,
         answer="multi_head_attention", draw=draw_multi_head, expected=expected_multi_head,
         explain=explain_multi_head),
    dict(id="4.5", chapter="04_encoder", title="Add & Norm: one post-LN sub-layer", points=2,
         answer="add_and_norm", draw=draw_add_and_norm, expected=expected_add_and_norm,
         explain=explain_add_and_norm),
]

DECODER_SPECS = [
    dict(id="5.4", chapter="05_decoder", title="One decoding step with a key/value cache", points=3,
         answer="cached_attention", draw=draw_cached_step, expected=expected_cached_step,
         explain=explain_cached_step),
]
