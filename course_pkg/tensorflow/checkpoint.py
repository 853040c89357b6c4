"""The Trainer's checkpoints: writing them all at once, and restoring them all or nothing.

Same names, signatures and docstrings as :mod:`course_pkg.torch.checkpoint`.
:meth:`course_pkg.tensorflow.Trainer.save` and :meth:`~course_pkg.tensorflow.Trainer.restore`
delegate here (their docstrings describe the checkpoint). A TensorFlow checkpoint
is a directory: ``config.json``, the manifest, names the ``tf.train.Checkpoint``
files of the current version.

One failure strategy in both frameworks: a restore reads the whole checkpoint
and checks everything against the trainer (format, configuration, names, shapes
and dtypes of the weights and of the optimizer's state, the step count) before
it loads anything; loading then cannot fail on the checkpoint's content, so a
restore that fails leaves the trainer as it was. Here the check follows the
checkpoint's object graph (the names by which ``tf.train.Checkpoint`` finds each
variable) from the trainer's objects, reads every tensor, and only then assigns.
"""

import contextlib
import json
import os
import re
import secrets

import keras
import tensorflow as tf

from ..common.checkpoint import (
    CHECKPOINT_FORMAT,
    check_checkpoint_config,
    check_checkpoint_info,
    damaged_checkpoint,
    plain,
    unreadable_checkpoint,
)
from ..common.files import atomic_open, make_folder, sync_folder, write_error

CHECKPOINT_PREFIX, CONFIG_FILE = "checkpoint", "config.json"  # inside a checkpoint directory
POLICIES = {"fp32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}  # precision: policy
_VARIABLE = "VARIABLE_VALUE"  # the attribute under which tf.train.Checkpoint saves a variable
_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"  # the object graph's own entry
_STEP_KEY = f"step/.ATTRIBUTES/{_VARIABLE}"
_STEP = object()  # stands for the trainer's step variable, which read_checkpoint reads apart


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
    checkpoint = tf.train.Checkpoint(step=step, **_objects(trainer))
    if not trainer.is_chief:
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            checkpoint.write(os.path.join(scratch, CHECKPOINT_PREFIX))
        return
    path = os.path.abspath(os.fspath(path))
    _check_kind(path)
    make_folder(path)
    previous = _current_version(path)
    version = f"{CHECKPOINT_PREFIX}-{int(step.numpy())}-{secrets.token_hex(4)}"
    info = {
        "format": CHECKPOINT_FORMAT,
        "model_class": type(trainer.model).__name__,
        "config": plain(trainer.model.get_config()),
        "step": int(step.numpy()),
        "checkpoint": version,
    }
    try:
        try:
            checkpoint.write(os.path.join(path, version))
        except tf.errors.OpError as err:  # a read-only folder, a full disk: the OSError naming path
            raise write_error(path, type(err).__name__, err.message) from err
        for name in _version_files(path, version):
            _sync_file(os.path.join(path, name))
        sync_folder(path)
        with atomic_open(os.path.join(path, CONFIG_FILE), "w") as file:  # the switch
            json.dump(info, file, indent=2)
    except BaseException:
        for name in _version_files(path, version):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(path, name))
        raise
    for old in _versions(path) - {version, previous}:
        for name in _version_files(path, old):
            os.remove(os.path.join(path, name))


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
    config_file = os.path.join(path, CONFIG_FILE)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no checkpoint directory {path}")
    if not os.path.isfile(config_file):
        raise ValueError(f"{path} is not a checkpoint written by Trainer.save: no {CONFIG_FILE}")
    checkpoint = _read_manifest(config_file)
    check_checkpoint_info(checkpoint, config_file, CHECKPOINT_FORMAT)
    version = checkpoint.get("checkpoint", CHECKPOINT_PREFIX)  # checkpoints of before: "checkpoint"
    if (not isinstance(version, str) or version in ("", ".", "..")
            or os.path.basename(version) != version or (os.altsep and os.altsep in version)):
        raise ValueError(f"{config_file} is a damaged checkpoint: checkpoint must be a file name in "
                         f"the directory, got {version!r:.60}")
    expected = {"model_class": type(trainer.model).__name__, **plain(trainer.model.get_config())}
    found = {"model_class": checkpoint["model_class"], **checkpoint["config"]}
    saved_precision = _precision(found.get("dtype"))
    if saved_precision is not None and _precision(expected.get("dtype")) is not None:
        del expected["dtype"], found["dtype"]  # float32 weights in each: any precision reads them
    check_checkpoint_config(expected, found, path)
    prefix = os.path.join(path, version)
    if not os.path.isfile(prefix + ".index"):
        raise ValueError(f"checkpoint {path} is incomplete: {config_file} names {version}, but "
                         f"{prefix}.index is missing")
    where = f"{prefix}.*"
    try:  # the index, the object graph and every tensor: damaged files fail here
        reader = tf.train.load_checkpoint(prefix)
        shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
        graph = _object_graph(reader) if _GRAPH_KEY in shapes else None
        variables, problem = _match(graph, tf.train.Checkpoint(**_objects(trainer, saved_precision)))
        if not problem:
            problem = _shape_problem(variables, shapes, dtypes)
        values = {} if problem else {key: reader.get_tensor(key) for key in variables}
    except Exception as err:  # OpError (DataLossError...), DecodeError, IndexError...
        reason = " ".join(str(err).split())[:200]
        raise unreadable_checkpoint(where, f"{type(err).__name__}: {reason}") from None
    if problem:
        raise damaged_checkpoint(where, problem)
    step = values.pop(_STEP_KEY)
    if step.shape != () or int(step) < 0:
        raise damaged_checkpoint(where, f"step must be an int >= 0, got {step!r:.60}")
    return {"step": int(step), "values": [(variables[key], value) for key, value in values.items()]}


def load_checkpoint(trainer, checkpoint, scaler):
    """Load a checkpoint that :func:`read_checkpoint` returned into ``trainer``.

    Returns:
        the checkpoint's step count, an int.
    """
    for variable, value in checkpoint["values"]:
        variable.assign(value)
    return checkpoint["step"]


def _check_kind(path):
    """``ValueError`` if ``path`` is the other framework's kind of checkpoint path."""
    if os.path.isfile(path):
        raise ValueError(f"{path} is a file; a TensorFlow checkpoint is a directory "
                         "(torch checkpoints are files)")


def _objects(trainer, saved_precision=None):
    """The objects of a checkpoint (but the step), by name; ``saved_precision``: read a checkpoint
    saved in that precision (default: the trainer's)."""
    # Keras keeps dropout's random state in seed-generator variables that the
    # model's own checkpoint leaves out; saving them resumes dropout exactly.
    seeds = [v for v in trainer.model.non_trainable_variables if "seed_generator" in v.path]
    optimizer = trainer.optimizer
    fp16, saved_fp16 = trainer.precision == "fp16", (saved_precision or trainer.precision) == "fp16"
    if fp16 and not saved_fp16:  # read the Adam state into the inner optimizer; the scale starts anew
        optimizer = trainer.optimizer.inner_optimizer
    elif saved_fp16 and not fp16:  # read through a loss-scale wrapper, whose scale is then dropped
        optimizer = keras.optimizers.LossScaleOptimizer(trainer.optimizer)
        optimizer.build(trainer.model.trainable_variables)
    return {"model": trainer.model, "optimizer": optimizer, "seeds": seeds}


def _object_graph(reader):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
    return graph


def _is_variable(trackable):
    return all(hasattr(trackable, name) for name in ("assign", "shape", "dtype"))


def _match(graph, root):
    """``({checkpoint key: variable}, problem)``: the variables of ``root`` (and the step) that the
    checkpoint's object graph names, found by the same child names as ``tf.train.Checkpoint`` does;
    ``problem`` says what does not match ("" when everything does)."""
    if graph is None or not graph.nodes:
        return {}, "it holds no object graph (not written by tf.train.Checkpoint)"
    view = tf.train.TrackableView(root)
    live, paths, queue, variables = {0: root}, {0: ""}, [0], {}
    while queue:
        node_id = queue.pop(0)
        node, trackable = graph.nodes[node_id], live[node_id]
        children = {} if trackable is _STEP else view.children(trackable)
        if node_id == 0:
            children["step"] = _STEP
        for child in node.children:
            name = paths[node_id] + child.local_name
            if child.local_name not in children or child.node_id >= len(graph.nodes):
                return {}, f"it holds {name}, which this trainer lacks"
            if child.node_id in live:
                if live[child.node_id] is not children[child.local_name]:
                    return {}, f"{name} is another object of this trainer's"
                continue
            live[child.node_id], paths[child.node_id] = children[child.local_name], name + "/"
            queue.append(child.node_id)
        for attribute in node.attributes:
            if attribute.name != _VARIABLE or not (trackable is _STEP or _is_variable(trackable)):
                return {}, f"{paths[node_id]}{attribute.name} is not a variable of this trainer's"
            variables[attribute.checkpoint_key] = trackable
        if node.slot_variables:
            return {}, f"{paths[node_id] or 'the root'} holds slot variables, which no Keras optimizer has"
    found = {id(v) for v in variables.values()}
    missing = [v.path if hasattr(v, "path") else v.name for v in view.descendants()
               if _is_variable(v) and id(v) not in found]
    if missing or _STEP_KEY not in variables:
        return {}, f"it lacks variables of this trainer: {(missing or ['step'])[:5]}"
    return variables, ""


def _shape_problem(variables, shapes, dtypes):
    """What differs between the saved tensors' shapes and dtypes and the variables', or ``""``."""
    for key, variable in variables.items():
        name = key.split("/.ATTRIBUTES/")[0]
        shape, dtype = ((), tf.int64) if variable is _STEP else (tuple(variable.shape), variable.dtype)
        if key not in shapes:
            return f"the index lacks {name}"
        if tuple(shapes[key]) != shape or dtypes[key] != tf.as_dtype(dtype):
            return (f"variable {name} is {dtypes[key].name} of shape {tuple(shapes[key])}, expected "
                    f"{tf.as_dtype(dtype).name} of shape {shape}")
    return ""


def _precision(dtype_config):
    """The Trainer precision of a model config's ``dtype`` entry (a serialized Keras policy), or
    ``None`` for a policy that no precision uses (its weights are not float32)."""
    if not isinstance(dtype_config, dict):
        return None
    return {policy: precision for precision, policy in POLICIES.items()}.get(
        (dtype_config.get("config") or {}).get("name"))


_VERSION_FILE = re.compile(rf"({re.escape(CHECKPOINT_PREFIX)}(?:-\d+-[0-9a-f]+)?)\.(?:index|data-)")


def _versions(path) -> set:
    """The names of the checkpoint versions whose files lie in the directory ``path``."""
    return {m.group(1) for m in map(_VERSION_FILE.match, os.listdir(path)) if m}


def _version_files(path, version) -> list:
    """The files of checkpoint ``version`` in the directory ``path`` (temporary ones of TensorFlow too)."""
    return [name for name in os.listdir(path)
            if (m := _VERSION_FILE.match(name)) and m.group(1) == version]


def _current_version(path):
    """The version that ``path/config.json`` names, or ``None`` if it is missing or unreadable."""
    try:
        with open(os.path.join(path, CONFIG_FILE), "rb") as file:
            info = json.loads(file.read())
        return info.get("checkpoint", CHECKPOINT_PREFIX) if isinstance(info, dict) else None
    except (OSError, ValueError, RecursionError):
        return None


def _read_manifest(config_file):
    """The JSON of a checkpoint's ``config.json``; ``ValueError`` naming it if it is not JSON."""
    try:
        with open(config_file, "rb") as file:
            return json.loads(file.read().decode("utf-8-sig"))
    except (ValueError, RecursionError) as err:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:200]
        raise ValueError(f"{config_file} is not a checkpoint written by Trainer.save: the file is empty, "
                         f"truncated or damaged ({reason})") from None


def _sync_file(file_path):
    """Flush ``file_path`` to disk (where the system lets a read-only handle do it)."""
    with open(file_path, "rb") as file:
        with contextlib.suppress(OSError):
            os.fsync(file.fileno())
