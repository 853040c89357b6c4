"""Starting distributed training: the ``tf.distribute`` strategy that :class:`~course_pkg.tensorflow.Trainer`
runs under.

Same names as :mod:`course_pkg.torch.distributed`. Build the model and the
Trainer inside ``with strategy.scope():`` (the variables are then mirrored on
every device); the Trainer does the rest (each replica's rows of every batch,
gradients and metrics summed over the replicas, checkpoints written by the chief).
"""

import os

import tensorflow as tf


def init_distributed(devices=None, backend=None):
    """The ``tf.distribute`` strategy of this machine, or of the cluster that ``TF_CONFIG`` describes.

    With ``TF_CONFIG`` in the environment (one JSON per machine: the cluster's
    addresses and this task's index), a ``MultiWorkerMirroredStrategy`` over
    every worker; otherwise a ``MirroredStrategy`` over ``devices``.

    Args:
        devices: for ``MirroredStrategy``, the device names (e.g.
            ``["/cpu:0", "/cpu:1"]`` for two logical CPU devices); ``None``:
            every local GPU, else the CPU.
        backend: must be ``None``: TensorFlow chooses how replicas exchange
            gradients; the argument exists for the PyTorch signature's sake.

    Returns:
        the strategy; ``strategy.num_replicas_in_sync`` model copies share each batch.
    """
    if backend is not None:
        raise ValueError(
            "backend is for torch.distributed (gloo or nccl); tf.distribute chooses its own "
            "collective implementation: leave backend=None"
        )
    if os.environ.get("TF_CONFIG"):
        if devices is not None:
            raise ValueError("devices is for one machine; with TF_CONFIG every worker uses its own devices")
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.MirroredStrategy(devices)
