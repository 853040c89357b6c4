"""Bad input to the classification head and to BERT's segment ids gives a clear error, the same in
both frameworks: hidden states of another shape or of integers, a per-row ``token_index`` outside the
sequence, of another length than the batch or not integers, and segment ids that are not integers,
of another shape than the tokens or outside ``[0, type_vocab_size)``.

A position ``p`` of a sequence of ``seq`` follows one rule, for an int and per row alike:
``-seq <= p < seq``, a negative one counting from the end.
"""

import re

import numpy as np
import pytest
from helpers import get_adapter

D, CLASSES, BATCH, SEQ = 8, 3, 2, 5
X = np.random.default_rng(0).normal(size=(BATCH, SEQ, D)).astype(np.float32)  # (batch, seq, d_model)


def _head(fw):
    fw.seed(0)
    return fw.make("ClassificationHead", D, CLASSES, 0.0)


def _error(fw, error, call):
    with pytest.raises(error) as info:
        call(fw)
    return str(info.value)


def _same_in_both(error, call):
    """The message of ``call`` in each framework; torch's (bare) is part of TensorFlow's (Keras wraps
    it in the layer's name and arguments)."""
    messages = [_error(get_adapter(name), error, call) for name in ("torch", "tensorflow")]
    assert messages[0] in messages[1], messages
    return messages[0]


# ------------------------------------------------------------------- the hidden states
STATES = {
    "2-D": (X[:, 0], "(2, 8)"),
    "4-D": (X[None], "(1, 2, 5, 8)"),  # gave logits of shape (1, 5, 4) before
    "another width": (X[..., :6], "(2, 5, 6)"),
}


@pytest.mark.parametrize("case", list(STATES))
def test_head_refuses_hidden_states_of_another_shape(fw, case):
    x, shown = STATES[case]
    expected = f"x (the hidden states) must have shape (batch, seq, {D}), got {shown}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        fw.call(_head(fw), x)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_head_refuses_hidden_states_that_are_not_floats(fw, dtype):
    with pytest.raises(TypeError, match=re.escape(f"x (the hidden states) must be a floating-point tensor, "
                                                  f"got dtype {dtype}")):
        fw.call(_head(fw), X.astype(dtype))


def test_head_messages_about_hidden_states_are_the_same_in_both_frameworks():
    message = _same_in_both(ValueError, lambda fw: fw.call(_head(fw), X[None]))
    assert message == f"x (the hidden states) must have shape (batch, seq, {D}), got (1, 2, 5, 8)"
    message = _same_in_both(TypeError, lambda fw: fw.call(_head(fw), X.astype(np.int64)))
    assert message.startswith("x (the hidden states) must be a floating-point tensor, got dtype int64")


# ------------------------------------------------------------------- token_index per row
@pytest.mark.parametrize("rows,bad,row", [([1, 5], 5, 1), ([1, -6], -6, 1), ([9, 0], 9, 0)],
                         ids=["seq", "below -seq", "first row"])
def test_head_refuses_a_per_row_token_index_outside_the_sequence(fw, rows, bad, row):
    expected = (f"token_index {bad} (row {row}) is outside a sequence of {SEQ} positions "
                f"(expected -{SEQ} <= token_index < {SEQ})")
    with pytest.raises(ValueError, match=re.escape(expected)):
        fw.call(_head(fw), X, token_index=fw.tensor(np.array(rows)))


def test_head_refuses_an_int_token_index_outside_the_sequence_in_the_same_words(fw):
    with pytest.raises(ValueError, match=re.escape(f"token_index -6 is outside a sequence of {SEQ} positions "
                                                   f"(expected -{SEQ} <= token_index < {SEQ})")):
        fw.call(_head(fw), X, token_index=-6)


@pytest.mark.parametrize("rows", [[1, 2, 3], [1], [[1, 2]]], ids=["3 rows", "1 row", "2-D"])
def test_head_refuses_a_per_row_token_index_that_is_not_one_per_row(fw, rows):
    shape = np.shape(rows)
    with pytest.raises(ValueError, match=re.escape(f"token_index must be an int or one index per row, "
                                                   f"shape ({BATCH},), got shape {shape}")):
        fw.call(_head(fw), X, token_index=fw.tensor(np.array(rows)))


@pytest.mark.parametrize("token_index,shown", [(np.array([1.0, 2.0], np.float32), "dtype float32"),
                                               (True, "True")], ids=["float rows", "bool"])
def test_head_refuses_a_token_index_that_is_not_integers(fw, token_index, shown):
    if isinstance(token_index, np.ndarray):
        token_index = fw.tensor(token_index)
    with pytest.raises(TypeError, match=re.escape(f"token_index must be an int or one int index per row, "
                                                  f"got {shown}")):
        fw.call(_head(fw), X, token_index=token_index)


def test_head_messages_about_token_index_are_the_same_in_both_frameworks():
    message = _same_in_both(ValueError, lambda fw: fw.call(_head(fw), X, token_index=np.arange(6, 8)))
    assert message == f"token_index 6 (row 0) is outside a sequence of {SEQ} positions " \
                      f"(expected -{SEQ} <= token_index < {SEQ})"
    message = _same_in_both(ValueError, lambda fw: fw.call(_head(fw), X, token_index=fw.tensor(np.arange(3))))
    assert message == f"token_index must be an int or one index per row, shape ({BATCH},), got shape (3,)"


def test_negative_per_row_positions_count_from_the_end_as_the_int_does(fw):
    head = _head(fw)
    forward = fw.call(head, X, token_index=fw.tensor(np.array([4, 2])))
    np.testing.assert_array_equal(fw.call(head, X, token_index=fw.tensor(np.array([-1, -3]))), forward)
    np.testing.assert_array_equal(fw.call(head, X, token_index=[-1, 2]), forward)  # a list will do
    np.testing.assert_array_equal(fw.call(head, X, token_index=fw.tensor(np.array([-1, -1]))),
                                  fw.call(head, X, token_index=-1))


def test_valid_narrow_per_row_indices_give_the_int64_result(fw):
    head = _head(fw)
    expected = fw.call(head, X, token_index=fw.tensor(np.array([4, 0])))
    for dtype in ("int32", "uint8"):
        got = fw.call(head, X, token_index=fw.tensor(np.array([4, 0], dtype)))
        np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- BERT's segment ids
VOCAB, MAX_LEN, TYPES = 11, 10, 2
TOKENS = np.array([[1, 2, 3], [4, 5, 6]], np.int64)


def _bert(fw):
    fw.seed(0)
    return fw.make("BERT", 1, D, 2, 16, VOCAB, MAX_LEN, TYPES)


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_bert_refuses_segment_ids_that_are_not_integers(fw, dtype):
    with pytest.raises(TypeError, match=re.escape(f"segment_ids must be an integer tensor (int32 or int64), "
                                                  f"got dtype {dtype}")):
        fw.call(_bert(fw), TOKENS, fw.tensor(np.zeros(TOKENS.shape, dtype), dtype))


OUTSIDE = [([[0, 1, 2], [0, 0, 0]], 0, 2), ([[0, 1, -1], [1, 1, 1]], -1, 1)]


@pytest.mark.parametrize("segments,low,high", OUTSIDE, ids=["type_vocab_size", "negative"])
def test_bert_refuses_segment_ids_outside_the_segments(fw, segments, low, high):
    expected = (f"segment_ids must lie in [0, {TYPES}) for type_vocab_size={TYPES}, "
                f"got ids from {low} to {high}")
    with pytest.raises(ValueError, match=re.escape(expected)):
        fw.call(_bert(fw), TOKENS, np.array(segments, np.int64))


@pytest.mark.parametrize("shape", [(2, 2), (2, 3, 1), (3,)])
def test_bert_refuses_segment_ids_of_another_shape_than_the_tokens(fw, shape):
    with pytest.raises(ValueError, match=re.escape(f"segment_ids must have the tokens' shape (2, 3), "
                                                   f"got {shape}")):
        fw.call(_bert(fw), TOKENS, np.zeros(shape, np.int64))


def test_bert_messages_about_segment_ids_are_the_same_in_both_frameworks():
    message = _same_in_both(TypeError, lambda fw: fw.call(_bert(fw), TOKENS, TOKENS.astype(np.float32) % 2))
    assert message.startswith("segment_ids must be an integer tensor (int32 or int64), got dtype float32")
    message = _same_in_both(ValueError, lambda fw: fw.call(_bert(fw), TOKENS, TOKENS % 3))
    assert message == "segment_ids must lie in [0, 2) for type_vocab_size=2, got ids from 0 to 2"


def test_bert_still_takes_segment_ids_of_any_integer_dtype(fw):
    bert = _bert(fw)
    segments = np.array([[0, 0, 1], [0, 1, 1]])
    expected = fw.call(bert, TOKENS, segments.astype(np.int64))
    for dtype in ("int32", "uint8"):
        np.testing.assert_array_equal(fw.call(bert, TOKENS, segments.astype(dtype))[0], expected[0])
