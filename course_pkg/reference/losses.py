"""Teacher forcing and the masked cross-entropy with label smoothing.

Mirrors ``course_pkg.torch.losses`` and ``course_pkg.tensorflow.losses`` (the loss of teacher-forced
training). :func:`teacher_forcing` is the reference answer of exercise 1.2; the twins build those
pairs in ``course_pkg.data.encode_pairs``. :func:`perplexity`, the reference answer of exercise 8.7,
is the exponential of the plain loss.
"""

import numpy as np


def teacher_forcing(target, bos_id=1, eos_id=2):
    """What the decoder reads and what it must predict: ``(<bos> y, y <eos>)``.

    Shape: a list of ``T`` ids -> two lists of ``T + 1`` ids.
    """
    return [bos_id] + list(target), list(target) + [eos_id]


def log_softmax(x, axis=-1):
    """Numerically stable log-softmax, in float64."""
    x = np.asarray(x, dtype=np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def smoothed_targets(labels, vocab_size, epsilon):
    """``(1 - ε) · one_hot(label) + ε / vocab_size``, as Keras and torch smooth labels.

    Shape: (...) int -> (..., vocab).
    """
    return (1 - epsilon) * np.eye(vocab_size)[np.asarray(labels)] + epsilon / vocab_size


def masked_loss(labels, logits, pad_id=0, label_smoothing=0.0):
    """Cross-entropy against :func:`smoothed_targets`, averaged over the labels that are not ``pad_id``.

    ``label_smoothing = 0`` gives the plain cross-entropy ``-log p[label]``; a
    batch whose labels are all ``pad_id`` gives 0.

    Shape: labels (batch, T) int, logits (batch, T, vocab) -> ().
    """
    labels = np.asarray(labels)
    log_probs = log_softmax(logits)  # (batch, T, vocab)
    keep = labels != pad_id  # (batch, T)
    safe = np.where(keep, labels, 0)  # (batch, T): pad ids may lie outside the vocabulary
    targets = smoothed_targets(safe, log_probs.shape[-1], label_smoothing)  # (batch, T, vocab)
    per_token = -(targets * log_probs).sum(axis=-1)  # (batch, T)
    return (per_token * keep).sum() / max(keep.sum(), 1)


def perplexity(labels, logits, pad_id=0):
    """``exp`` of the mean negative log-probability of the labels that are not ``pad_id``: the
    exponential of :func:`masked_loss` without smoothing (1 for a perfect model, ``vocab`` for a
    uniform one).

    Shape: labels (batch, T) int, logits (batch, T, vocab) -> ().
    """
    return float(np.exp(masked_loss(labels, logits, pad_id)))
