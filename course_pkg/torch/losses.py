"""The masked loss and accuracy of teacher-forced training.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow.losses`.
The labels are the targets ``tgt_out = y <eos>`` that the decoder's logits are
scored against; positions where they hold ``pad_id`` count neither in the loss
nor in the accuracy.

Shapes: ``batch`` sentences of ``T`` (``tgt_len``) target positions, logits
over ``vocab`` target tokens.
"""

import torch

from ..common.losses import check_label_range, check_label_smoothing, check_loss_shapes
from .tokens import is_integer


def _check_labels(labels, logits, pad_id=None):
    """Labels as int64 on the logits' device; with ``pad_id``, also check that every label that
    counts lies in the vocabulary (one min and one max, read back together)."""
    labels, logits = torch.as_tensor(labels), torch.as_tensor(logits)
    if not is_integer(labels):
        raise TypeError(f"labels must be integer token ids, got dtype {labels.dtype}")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    check_loss_shapes(labels.shape, logits.shape)
    labels = labels.to(device=logits.device, dtype=torch.int64)
    if pad_id is not None and labels.numel():
        keep = labels != pad_id  # (batch, T)
        lowest = torch.where(keep, labels, torch.iinfo(torch.int64).max).min()
        highest = torch.where(keep, labels, torch.iinfo(torch.int64).min).max()
        lowest, highest = torch.stack([lowest, highest]).tolist()
        check_label_range(lowest, highest, logits.shape[-1], pad_id)
    return labels, logits


def _loss_sums(labels, logits, pad_id, label_smoothing):
    """The loss summed over the counted (non-pad) labels, and their number."""
    check_label_smoothing(label_smoothing)
    labels, logits = _check_labels(labels, logits, pad_id)
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (batch, T, vocab) float32
    keep = labels != pad_id  # (batch, T)
    # pad ids may lie outside the vocabulary (e.g. -100): gather at id 0 there instead
    safe = torch.where(keep, labels, 0)  # (batch, T)
    # Cross-entropy against the target q = (1 - eps) one_hot + eps / vocab:
    # -sum(q log p) = (1 - eps) * (-log p[label]) + eps * mean(-log p).
    nll = -log_probs.gather(-1, safe[..., None])[..., 0]  # (batch, T)
    uniform = -log_probs.mean(dim=-1)  # (batch, T)
    per_token = (1.0 - label_smoothing) * nll + label_smoothing * uniform  # (batch, T)
    weights = keep.float()  # (batch, T)
    return (per_token * weights).sum(), weights.sum()


def _hits(labels, logits, keep):
    """1.0 where the most likely token is the label and the label counts, else 0.0."""
    return ((logits.argmax(dim=-1) == labels) & keep).float()  # (batch, T)


def masked_sums(labels, logits, pad_id, label_smoothing):
    """The sums behind :func:`masked_loss` and :func:`masked_accuracy`, to add up over batches or devices.

    The Trainer sums these over the batches of an evaluation and over the
    processes of a distributed step, then divides once: every counted label
    weighs the same, whatever its batch or process.

    Args:
        labels: target token ids (``tgt_out``).
        logits: the model's logits.
        pad_id: the label id to ignore.
        label_smoothing: eps in [0, 1), as in :func:`masked_loss`.

    Returns:
        ``(loss_sum, hits, count)``: the label-smoothed loss summed over the
        counted (non-pad) labels, the number of them that are the logits'
        argmax, and the number of counted labels; float32 scalar tensors.

    Shape:
        labels (batch, tgt_len) int, logits (batch, tgt_len, vocab) -> (), (), ().
    """
    loss_sum, count = _loss_sums(labels, logits, pad_id, label_smoothing)
    labels, logits = _check_labels(labels, logits)
    return loss_sum, _hits(labels, logits, labels != pad_id).sum(), count


def masked_loss(labels, logits, pad_id=0, label_smoothing=0.0):
    """Cross-entropy averaged over the labels that are not ``pad_id``.

    With ``label_smoothing = eps`` the target distribution is
    ``(1 - eps) * one_hot(label) + eps / vocab`` (Szegedy et al., 2016; the
    paper uses eps = 0.1), as in ``torch.nn.functional.cross_entropy(...,
    label_smoothing=eps)`` and Keras' ``CategoricalCrossentropy(label_smoothing=eps)``.
    Computed in float32 whatever the logits' dtype; a batch with no label to
    count (all pad) gives 0, not NaN. A label outside ``[0, vocab)`` that is not
    ``pad_id`` raises ``ValueError`` (in TensorFlow when executing eagerly).

    Args:
        labels: target token ids (``tgt_out``).
        logits: the model's logits.
        pad_id: the label id to ignore.
        label_smoothing: eps in [0, 1).

    Returns:
        the mean loss, a float32 scalar tensor.

    Shape:
        labels (batch, tgt_len) int, logits (batch, tgt_len, vocab) -> ().
    """
    loss_sum, count = _loss_sums(labels, logits, pad_id, label_smoothing)
    return loss_sum / count.clamp(min=1.0)


def masked_accuracy(labels, logits, pad_id=0):
    """Fraction of the non-pad labels that are the logits' argmax (0 if all are pad).

    A label outside ``[0, vocab)`` that is not ``pad_id`` raises ``ValueError``
    (in TensorFlow when executing eagerly), as in :func:`masked_loss`.

    Args:
        labels: target token ids (``tgt_out``).
        logits: the model's logits.
        pad_id: the label id to ignore.

    Returns:
        the accuracy, a float32 scalar tensor.

    Shape:
        labels (batch, tgt_len) int, logits (batch, tgt_len, vocab) -> ().
    """
    labels, logits = _check_labels(labels, logits, pad_id)
    keep = labels != pad_id  # (batch, T)
    return _hits(labels, logits, keep).sum() / keep.sum().clamp(min=1).float()
