"""masked_loss and masked_accuracy (course_pkg.{torch,tensorflow}.losses): the frameworks' own
losses, the NumPy oracle and each other, pad ids anywhere, low-precision logits, bad inputs."""

import numpy as np
import pytest
from training_helpers import as_float

from course_pkg import reference as ref

# Labels with pads at the end, in the middle and a fully padded row.
LABELS = np.array([[4, 6, 2, 0, 0], [0, 0, 0, 0, 0], [3, 0, 5, 6, 2], [1, 1, 6, 4, 2]])
LOGITS = (np.random.default_rng(0).normal(size=(4, 5, 7)) * 3).astype(np.float32)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_masked_loss_matches_torch_cross_entropy(fw, eps):
    import torch

    expected = torch.nn.functional.cross_entropy(
        torch.from_numpy(LOGITS).reshape(-1, 7), torch.from_numpy(LABELS).reshape(-1),
        ignore_index=0, label_smoothing=eps)
    got = fw.cp.masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=eps)
    assert abs(as_float(fw.to_numpy(got)) - float(expected)) <= 1e-6


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_masked_loss_matches_keras_categorical_crossentropy(fw, eps):
    import keras

    keep = LABELS != 0
    expected = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=eps)(
        np.eye(7, dtype=np.float32)[LABELS[keep]], LOGITS[keep])
    got = fw.cp.masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=eps)
    assert abs(as_float(fw.to_numpy(got)) - as_float(expected)) <= 1e-6


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("pad_id", [0, -100])
def test_masked_loss_matches_the_numpy_reference(fw, eps, pad_id):
    labels = np.where(LABELS == 0, pad_id, LABELS)
    expected = ref.masked_loss(labels, LOGITS, pad_id, eps)
    got = fw.cp.masked_loss(fw.tensor(labels), fw.tensor(LOGITS), pad_id, eps)
    assert as_float(fw.to_numpy(got)) == pytest.approx(expected, rel=1e-6)


def test_masked_accuracy_is_the_share_of_non_pad_labels_that_are_the_argmax(fw):
    keep = LABELS != 0
    expected = (LOGITS.argmax(-1) == LABELS)[keep].mean()
    got = fw.cp.masked_accuracy(fw.tensor(LABELS), fw.tensor(LOGITS))
    assert abs(as_float(fw.to_numpy(got)) - expected) <= 1e-7


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("pad_id", [0, 6, -100])
def test_loss_and_accuracy_tf_torch_parity(tf_fw, torch_fw, eps, pad_id):
    labels = np.where(LABELS == 0, pad_id, LABELS) if pad_id < 0 else LABELS
    values = {}
    for fw in (tf_fw, torch_fw):
        cp = fw.cp
        values[fw.name] = (
            as_float(fw.to_numpy(cp.masked_loss(fw.tensor(labels), fw.tensor(LOGITS), pad_id, eps))),
            as_float(fw.to_numpy(cp.masked_accuracy(fw.tensor(labels), fw.tensor(LOGITS), pad_id))))
    (tf_loss, tf_acc), (pt_loss, pt_acc) = values["tensorflow"], values["torch"]
    assert abs(tf_loss - pt_loss) <= 1e-6 and abs(tf_acc - pt_acc) <= 1e-7
    if pad_id == -100:  # pad ids outside the vocabulary, as torch's ignore_index=-100
        import torch

        expected = torch.nn.functional.cross_entropy(
            torch.from_numpy(LOGITS).reshape(-1, 7), torch.from_numpy(labels).reshape(-1),
            ignore_index=-100, label_smoothing=eps)
        assert abs(pt_loss - float(expected)) <= 1e-6


def test_all_pad_labels_give_zero_loss_and_accuracy_not_nan(fw):
    labels = fw.tensor(np.zeros((2, 3), np.int64))
    logits = fw.tensor(LOGITS[:2, :3])
    assert as_float(fw.to_numpy(fw.cp.masked_loss(labels, logits, label_smoothing=0.1))) == 0.0
    assert as_float(fw.to_numpy(fw.cp.masked_accuracy(labels, logits))) == 0.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_loss_of_low_precision_logits_is_computed_in_float32(fw, dtype):
    low = fw.tensor(LOGITS, dtype)
    loss = fw.cp.masked_loss(fw.tensor(LABELS), low, label_smoothing=0.1)
    assert "float32" in str(loss.dtype)
    same_values = fw.tensor(fw.to_numpy(low).astype(np.float32))
    expected = fw.cp.masked_loss(fw.tensor(LABELS), same_values, label_smoothing=0.1)
    assert abs(as_float(fw.to_numpy(loss)) - as_float(fw.to_numpy(expected))) <= 1e-6


def test_loss_and_accuracy_reject_bad_dtypes_shapes_and_smoothing(fw):
    cp = fw.cp
    with pytest.raises(TypeError, match="integer"):
        cp.masked_loss(fw.tensor(LABELS.astype(np.float32)), fw.tensor(LOGITS))
    with pytest.raises(ValueError, match=r"\(batch, tgt_len\)"):
        cp.masked_loss(fw.tensor(LABELS[:, :4]), fw.tensor(LOGITS))
    with pytest.raises(ValueError, match=r"\(batch, tgt_len, vocab\)"):
        cp.masked_accuracy(fw.tensor(LABELS), fw.tensor(LOGITS[..., 0]))
    with pytest.raises(ValueError, match="label_smoothing"):
        cp.masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=1.0)


def test_reference_log_softmax_is_stable_for_large_logits_row_by_row():
    """The shift by each row's own maximum is what keeps log-softmax finite: logits of 1000 overflow
    exp() without it, and a row far below another's maximum underflows to -inf with one shift for
    all (mutation testing found both slips uncaught)."""
    logits = np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -1002.0]])
    expected = ref.log_softmax(np.array([2.0, 1.0, 0.0]))
    np.testing.assert_allclose(ref.log_softmax(logits), [expected, expected], rtol=0, atol=1e-12)
    columns = ref.log_softmax(logits.T, axis=0)
    np.testing.assert_allclose(columns, np.stack([expected, expected], 1), rtol=0, atol=1e-12)


def test_masked_loss_defaults_are_pad_id_0_and_no_smoothing_and_one_real_token_is_its_own_mean(fw):
    """The defaults the chapters rely on (pad id 0, no label smoothing) and the mean over the real
    tokens only, down to a single one (a mutant dividing by at least 2 survived the other tests)."""
    labels = np.array([[3, 0, 0]])
    logits = LOGITS[:1, :3]
    one = -ref.log_softmax(logits[0, 0])[3]
    for loss in (ref.masked_loss(labels, logits), fw.cp.masked_loss(fw.tensor(labels), fw.tensor(logits))):
        assert as_float(loss) == pytest.approx(one, rel=1e-6)
    explicit = ref.masked_loss(LABELS, LOGITS, pad_id=0, label_smoothing=0.0)
    assert ref.masked_loss(LABELS, LOGITS) == explicit
    got = fw.cp.masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS))
    assert as_float(got) == pytest.approx(explicit, rel=1e-6)
