"""The Trainer's checkpoints: writing them all at once, and restoring them all or nothing.

Same names, signatures and docstrings as :mod:`course_pkg.tensorflow.checkpoint`.
:meth:`course_pkg.torch.Trainer.save` and :meth:`~course_pkg.torch.Trainer.restore`
delegate here (their docstrings describe the checkpoint). A torch checkpoint is
one file, a dict of tensors and plain Python values written by ``torch.save``.

One failure strategy in both frameworks: a restore reads the whole checkpoint
and checks everything against the trainer (format, configuration, names, shapes
and dtypes of the weights and of the optimizer's state, the step count) before
it loads anything; loading then cannot fail on the checkpoint's content, so a
restore that fails leaves the trainer as it was.
"""

import os
import warnings

import torch

from ..common.checkpoint import (
    CHECKPOINT_FORMAT,
    check_checkpoint_config,
    check_checkpoint_info,
    damaged_checkpoint,
    plain,
    unreadable_checkpoint,
)
from ..common.files import atomic_open


def save_checkpoint(trainer, path, step, scaler):
    """Write ``trainer``'s checkpoint to ``path``, all at once: :meth:`Trainer.save` delegates here.

    Args:
        trainer: the Trainer whose model, optimizer, schedule and random state are saved.
        path: the checkpoint (a file in PyTorch, a directory in TensorFlow).
        step: the trainer's step count as the trainer keeps it (an int in
            PyTorch, an int64 variable in TensorFlow).
        scaler: the fp16 loss scaler where it is not part of the optimizer
            (PyTorch's ``GradScaler``), else ``None``.

    Raises:
        ValueError, OSError: as :meth:`Trainer.save`.
    """
    path = os.fspath(path)
    _check_kind(path)
    checkpoint = {
        "format": CHECKPOINT_FORMAT,
        "model_class": type(trainer.model).__name__,
        "config": plain(trainer.model.get_config()),
        "step": step,
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "schedule": None if trainer.schedule is None else trainer.schedule.state_dict(),
        "rng": {"cpu": torch.get_rng_state()},
        "scaler": scaler.state_dict(),  # {} unless fp16: the loss scale and its growth count
    }
    if trainer.device.type == "cuda":
        checkpoint["rng"]["cuda"] = torch.cuda.get_rng_state(trainer.device)
    failure = None
    if trainer.is_chief:
        try:
            with atomic_open(path, "wb") as file:
                torch.save(checkpoint, file)
        except BaseException as err:
            failure = err
    # Under distribution the others wait for process 0's file (and learn whether it was written).
    if trainer.any_process(failure is not None):
        if failure is not None:
            raise failure
        raise OSError(f"process 0 could not write the checkpoint {path}")


def restore_checkpoint(trainer, path, scaler):
    """Restore ``trainer`` from the checkpoint ``path``: :meth:`Trainer.restore` delegates here.

    Everything is read and checked (:func:`read_checkpoint`) before anything
    is loaded (:func:`load_checkpoint`), so a restore that fails leaves the
    trainer as it was.

    Args:
        trainer: the Trainer to restore.
        path: the checkpoint (a file in PyTorch, a directory in TensorFlow).
        scaler: the fp16 loss scaler where it is not part of the optimizer
            (PyTorch's ``GradScaler``), else ``None``.

    Returns:
        the checkpoint's step count, an int, for the trainer to take as its own.

    Raises:
        FileNotFoundError, ValueError: as :meth:`Trainer.restore`.
    """
    return load_checkpoint(trainer, read_checkpoint(trainer, path), scaler)


def read_checkpoint(trainer, path):
    """Read the checkpoint ``path`` whole and check it against ``trainer``, loading nothing.

    Returns:
        the checked checkpoint, for :func:`load_checkpoint`.

    Raises:
        FileNotFoundError, ValueError: as :meth:`Trainer.restore`.
    """
    path = os.fspath(path)
    _check_kind(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint file {path}")
    try:
        with warnings.catch_warnings():  # torch warns of pickle protocols it then refuses
            warnings.filterwarnings("ignore", "Detected pickle protocol", UserWarning)
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # EOFError, RuntimeError, UnpicklingError, KeyError...: all say "damaged"
        raise unreadable_checkpoint(path, type(err).__name__) from None  # (not torch's weights_only advice)
    check_checkpoint_info(checkpoint, path, CHECKPOINT_FORMAT)
    expected = {"model_class": type(trainer.model).__name__, **plain(trainer.model.get_config())}
    found = {"model_class": checkpoint["model_class"], **checkpoint["config"]}
    check_checkpoint_config(expected, found, path)
    problem = _checkpoint_problem(trainer, checkpoint)
    if problem:
        raise damaged_checkpoint(path, problem)
    return checkpoint


def load_checkpoint(trainer, checkpoint, scaler):
    """Load a checkpoint that :func:`read_checkpoint` returned into ``trainer``.

    Returns:
        the checkpoint's step count, an int.
    """
    trainer.model.load_state_dict(checkpoint["model"])
    trainer.optimizer.load_state_dict(checkpoint["optimizer"])
    if trainer.schedule is not None and checkpoint["schedule"] is not None:
        trainer.schedule.load_state_dict(checkpoint["schedule"])
    if checkpoint.get("scaler") and scaler.is_enabled():  # {}: saved without fp16
        scaler.load_state_dict(checkpoint["scaler"])
    torch.set_rng_state(checkpoint["rng"]["cpu"])
    if "cuda" in checkpoint["rng"] and trainer.device.type == "cuda":
        torch.cuda.set_rng_state(checkpoint["rng"]["cuda"], trainer.device)
    return int(checkpoint["step"])


def _check_kind(path):
    """``ValueError`` if ``path`` is the other framework's kind of checkpoint path."""
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory; a torch checkpoint is one file "
                         "(TensorFlow checkpoints are directories)")


def _checkpoint_problem(trainer, checkpoint):
    """What stops ``checkpoint`` (the dict of :func:`save_checkpoint`) from loading into ``trainer``,
    or ``""``."""
    weights, own = checkpoint.get("model"), trainer.model.state_dict()
    if not isinstance(weights, dict):
        return f"model must be a dict of tensors, got {type(weights).__name__}"
    missing, unexpected = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
    if missing or unexpected:
        return f"the model's weights differ: missing {missing[:5]}, unexpected {unexpected[:5]}"
    for name, tensor in own.items():
        saved = weights[name]
        if not isinstance(saved, torch.Tensor) or saved.shape != tensor.shape:
            shape = tuple(saved.shape) if isinstance(saved, torch.Tensor) else type(saved).__name__
            return f"weight {name} has shape {shape}, expected {tuple(tensor.shape)}"
    optimizer, groups = checkpoint.get("optimizer"), trainer.optimizer.param_groups
    if (not isinstance(optimizer, dict) or not isinstance(optimizer.get("state"), dict)
            or not isinstance(optimizer.get("param_groups"), list)):
        return "optimizer must be an optimizer's state_dict"
    saved_groups = optimizer["param_groups"]
    if len(saved_groups) != len(groups) or any(
            not isinstance(saved, dict) or len(saved.get("params", ())) != len(group["params"])
            for saved, group in zip(saved_groups, groups)):
        return "the optimizer's parameter groups differ from this optimizer's"
    shapes = {index: param.shape for saved, group in zip(saved_groups, groups)
              for index, param in zip(saved["params"], group["params"])}
    for index, state in optimizer["state"].items():
        if index not in shapes or not isinstance(state, dict):
            return f"the optimizer's state holds an unknown parameter {index!r}"
        for key, value in state.items():  # moments are shaped as their parameter; counts are scalars
            if isinstance(value, torch.Tensor) and value.dim() and value.shape != shapes[index]:
                return (f"the optimizer's {key} of parameter {index} has shape {tuple(value.shape)}, "
                        f"expected {tuple(shapes[index])}")
    if trainer.schedule is not None and not isinstance(checkpoint.get("schedule"), (dict, type(None))):
        return "schedule must be a scheduler's state_dict"
    scaler = checkpoint.get("scaler", {})
    if not isinstance(scaler, dict) or (scaler and (not isinstance(scaler.get("scale"), (int, float))
                                                    or not set(_SCALER_KEYS) <= set(scaler))):
        return "scaler must be a GradScaler's state_dict"
    rng, own_rng = checkpoint.get("rng"), torch.get_rng_state()
    if not isinstance(rng, dict) or not isinstance(rng.get("cpu"), torch.Tensor) \
            or rng["cpu"].dtype != own_rng.dtype or rng["cpu"].shape != own_rng.shape:
        return "rng must hold the random generator's state"
    if "cuda" in rng and not (isinstance(rng["cuda"], torch.Tensor) and rng["cuda"].dtype == torch.uint8):
        return "rng must hold the random generator's state"
    return ""


_SCALER_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
