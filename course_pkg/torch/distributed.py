"""Starting distributed training: the process group that :class:`~course_pkg.torch.Trainer` runs under.

Same names as :mod:`course_pkg.tensorflow.distributed`. Launch a script with
``torchrun --nproc_per_node=N script.py`` (one process per GPU, or per share of
the CPU cores); the script calls :func:`init_distributed` before it builds the
Trainer, and the Trainer does the rest (``DistributedDataParallel``, each
process's rows of every batch, summed metrics, checkpoints written by process 0).
"""

import os

import torch


def init_distributed(devices=None, backend=None):
    """Join the process group that ``torchrun`` describes; nothing happens without ``torchrun``.

    Reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` from the
    environment (``torchrun`` sets them) and initialises ``torch.distributed``
    with ``backend``: by default NCCL when there is a GPU, gloo on the CPU.
    Calling it again, or in a process group already initialised, changes nothing.

    Args:
        devices: must be ``None``: PyTorch runs one process per device, and
            ``torchrun`` (its ``--nproc_per_node``) chooses them; the argument
            exists for the TensorFlow signature's sake.
        backend: ``None`` (NCCL on GPUs, gloo on CPUs), ``"gloo"`` or ``"nccl"``.

    Returns:
        ``(rank, world_size)``: ``(0, 1)`` when the script was not started by
        ``torchrun`` (a plain single process).
    """
    import torch.distributed as dist

    if devices is not None:
        raise ValueError(
            "devices is for TensorFlow's MirroredStrategy; PyTorch runs one process per device: "
            "choose them with torchrun --nproc_per_node (and CUDA_VISIBLE_DEVICES)"
        )
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        return 0, 1
    if not dist.is_available():
        raise RuntimeError("this torch was built without torch.distributed: run one process")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl' (or None), got {backend!r}")
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    dist.init_process_group(backend)
    return dist.get_rank(), dist.get_world_size()
