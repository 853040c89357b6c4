"""Framework-free parts of the two decoders (:mod:`course_pkg.torch.decoding` and
:mod:`course_pkg.tensorflow.decoding`), so that they default, rank and reorder alike."""

from .arguments import check_positive


def default_max_len(model, max_len):
    """``max_len`` checked, or the model's ``max_len - 1`` (room for ``<bos>``) when ``None``.

    A model with a ``max_len`` (the Transformer's positional table) reads ``<bos>`` and the
    tokens generated before the last one: it can generate at most ``model.max_len`` tokens.
    """
    limit = getattr(model, "max_len", None)
    if max_len is None:
        max_len = model.max_len - 1  # room for <bos>
    check_positive(max_len=max_len)
    if limit is not None and max_len > limit:
        raise ValueError(
            f"max_len={max_len} exceeds the model's max_len={limit}: the decoder reads <bos> and "
            f"all but the last generated token, so it can generate at most {limit} tokens "
            f"(the default, max_len=None, generates up to {limit - 1})"
        )
    return max_len


def length_penalty_factor(length, alpha):
    """GNMT length penalty ((5 + length) / 6) ** alpha (Wu et al., 2016)."""
    return ((5.0 + length) / 6.0) ** alpha


def map_state(fn, state):
    """Apply ``fn`` to every tensor of a decoding state (nested dicts, lists and tuples)."""
    if isinstance(state, dict):
        return {key: map_state(fn, value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(map_state(fn, value) for value in state)
    return fn(state)
