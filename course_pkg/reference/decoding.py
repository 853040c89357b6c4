"""Greedy decoding's step.

Mirrors ``course_pkg.torch.decoding`` and ``course_pkg.tensorflow.decoding`` (``greedy_decode``).
:func:`greedy_step` is the reference answer of exercise 5.3.
"""

import numpy as np


def greedy_step(logits, done, pad_id=0):
    """One step of greedy decoding: each row's most likely id, ``pad_id`` for rows already done.

    Shape: logits (batch, vocab), done (batch,) bool -> (batch,) int.
    """
    return np.where(np.asarray(done), pad_id, np.argmax(np.asarray(logits), axis=-1))
