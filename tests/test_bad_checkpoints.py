"""Checkpoints under stress: a save interrupted at any point leaves the old checkpoint or the new one,
a concurrent reader always finds one, a damaged checkpoint raises one ValueError naming it, a failed
restore changes nothing, and saving where no file can be written names the path."""

import json
import os
import re
import shutil

import numpy as np
import pytest
from helpers import get_adapter
from training_helpers import copy_batches, model_weights, one_torch_thread, tiny_model, tiny_trainer


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield


def _trained(fw, steps, **kwargs):
    trainer = tiny_trainer(fw, **kwargs)
    for batch in copy_batches(steps, batch=4):
        trainer.train_step(*batch)
    return trainer


def _optimizer_state(fw, trainer):
    """The optimizer's state as NumPy arrays (torch: moments and step counts; Keras: its variables)."""
    if fw.name == "torch":
        state = trainer.optimizer.state_dict()
        return [v.detach().cpu().numpy().copy() for i in sorted(state["state"])
                for _, v in sorted(state["state"][i].items())]
    return [v.numpy() for v in trainer.optimizer.variables]


def _snapshot(fw, trainer):
    return model_weights(trainer.model), _optimizer_state(fw, trainer), trainer.step, trainer.learning_rate


def _assert_unchanged(fw, trainer, before):
    weights, optimizer, step, lr = _snapshot(fw, trainer)
    for name in before[0]:
        np.testing.assert_array_equal(before[0][name], weights[name], err_msg=name)
    assert len(before[1]) == len(optimizer)
    for a, b in zip(before[1], optimizer):
        np.testing.assert_array_equal(a, b)
    assert (step, lr) == before[2:]


_SHARED = {}  # per framework: what the restore tests share, made once (see _good_checkpoint, _restorer)


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shared")


def _good_checkpoint(fw, shared_dir, path):
    """At ``path``, a copy of one checkpoint saved after 1 step (saved once per framework)."""
    if (fw.name, "good") not in _SHARED:
        _trained(fw, 1).save(shared_dir / f"good-{fw.name}")
        _SHARED[fw.name, "good"] = shared_dir / f"good-{fw.name}"
    good = _SHARED[fw.name, "good"]
    if good.is_dir():
        shutil.copytree(good, path)
    else:
        shutil.copy(good, path)
    return path


def _restorer(fw):
    """One trainer after 2 steps per framework (other weights, moments and step than the good
    checkpoint's), into which the tests below restore damaged checkpoints. Each test snapshots it
    first and checks that its failed restore changed nothing, so they can share it: building a
    TensorFlow trainer and tracing its training step takes seconds."""
    if (fw.name, "restorer") not in _SHARED:
        _SHARED[fw.name, "restorer"] = _trained(fw, 2)
    return _SHARED[fw.name, "restorer"]


def _files_of(path):
    """The checkpoint's files: the file itself (torch) or those in the directory (TensorFlow)."""
    return [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())


# ---------------------------------------------------------------- damaged checkpoints
DAMAGES = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[:len(data) // 2],
    "garbage": lambda data: b"not a checkpoint at all " * 10,
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_restore_of_a_damaged_file_raises_one_value_error_naming_it(fw, shared_dir, tmp_path, damage):
    good = _good_checkpoint(fw, shared_dir, tmp_path / "good")
    trainer = _restorer(fw)
    for file in _files_of(good):
        bad = tmp_path / f"bad-{file.name}"
        if good.is_dir():
            shutil.copytree(good, bad)
            target = bad / file.name
        else:
            shutil.copy(good, bad)
            target = bad
        target.write_bytes(DAMAGES[damage](target.read_bytes()))
        before = _snapshot(fw, trainer)
        with pytest.raises(ValueError, match=re.escape(str(bad))) as info:
            trainer.restore(bad)
        assert "weights_only" not in str(info.value), file.name
        _assert_unchanged(fw, trainer, before)


def test_restore_of_a_missing_checkpoint_raises_file_not_found(fw, tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nowhere"))):
        tiny_trainer(fw).restore(tmp_path / "nowhere")


def _manifest(fw, path):
    """The JSON beside the TensorFlow checkpoint, or the torch checkpoint's dict."""
    if fw.name == "torch":
        return fw.torch.load(path, weights_only=True)
    return json.loads((path / "config.json").read_text())


def _rewrite(fw, path, checkpoint):
    if fw.name == "torch":
        fw.torch.save(checkpoint, path)
    else:
        (path / "config.json").write_text(json.dumps(checkpoint))


@pytest.mark.parametrize("field, value, match", [
    ("step", "6", r"step must be an int >= 0, got '6'"),
    ("step", -1, r"step must be an int >= 0, got -1"),
    ("config", [1, 2], r"config must be a dict, got \[1, 2\]"),
    ("model_class", None, r"model_class must be a string, got None"),
])
def test_restore_of_a_checkpoint_with_a_bad_field_names_the_field_and_file(fw, shared_dir, tmp_path, field,
                                                                           value, match):
    path = _good_checkpoint(fw, shared_dir, tmp_path / "ckpt")
    checkpoint = _manifest(fw, path)
    checkpoint[field] = value
    _rewrite(fw, path, checkpoint)
    trainer = _restorer(fw)
    before = _snapshot(fw, trainer)
    with pytest.raises(ValueError, match=match) as info:
        trainer.restore(path)
    assert str(path) in str(info.value)
    _assert_unchanged(fw, trainer, before)


def _checkpoint_with_a_wrong_shape(fw, path):
    """A checkpoint whose config matches a dff=32 model but one of its tensors has another shape."""
    if fw.name == "torch":
        _trained(fw, 1).save(path)
        checkpoint = fw.torch.load(path, weights_only=True)
        name = next(k for k, v in checkpoint["model"].items() if v.ndim == 2)
        checkpoint["model"][name] = fw.torch.zeros(tuple(checkpoint["model"][name].shape) + (2,))
        fw.torch.save(checkpoint, path)
        return name
    # TensorFlow: the saved tensors come from a dff=24 model, the config claims dff=32
    other = fw.cp.Trainer(tiny_model(fw, dff=24), warmup_steps=4, seed=0)
    other.train_step(*copy_batches(1, batch=4)[0])
    other.save(path)
    manifest = json.loads((path / "config.json").read_text())
    manifest["config"]["dff"] = 32
    (path / "config.json").write_text(json.dumps(manifest))
    return None


def test_a_failed_restore_changes_nothing(fw, tmp_path):
    path = tmp_path / "ckpt"
    name = _checkpoint_with_a_wrong_shape(fw, path)
    trainer = _trained(fw, 3)
    before = _snapshot(fw, trainer)
    assert len(before[1]) > 0  # the optimizer has a state to lose
    rng = fw.torch.get_rng_state() if fw.name == "torch" else None
    with pytest.raises(ValueError, match=re.escape(str(path))) as info:
        trainer.restore(path)
    if name is not None:
        assert name in str(info.value)
    _assert_unchanged(fw, trainer, before)
    if fw.name == "torch":
        assert fw.torch.equal(rng, fw.torch.get_rng_state())
    trainer.train_step(*copy_batches(1, batch=4)[0])  # and it trains on
    assert trainer.step == 4


LATE_DAMAGES = ("the last weight", "the last optimizer moment")


def _damage_late(fw, path, damage):
    """Give the checkpoint at ``path`` a wrong shape where a restore meets it last: in the model's last
    weight, or in the optimizer's moment of the last parameter (after every weight)."""
    if fw.name == "torch":
        checkpoint = fw.torch.load(path, weights_only=True)
        if damage == "the last weight":
            tensors, key = checkpoint["model"], list(checkpoint["model"])[-1]
        else:
            state = checkpoint["optimizer"]["state"]
            tensors, key = state[max(state)], "exp_avg_sq"
        tensors[key] = fw.torch.zeros(tuple(tensors[key].shape) + (2,))
        fw.torch.save(checkpoint, path)
        return
    # TensorFlow: the same tensors under the same keys, written again as a new version (SaveV2)
    tf = fw.tf
    manifest = json.loads((path / "config.json").read_text())
    reader = tf.train.load_checkpoint(str(path / manifest["checkpoint"]))
    keys = sorted(reader.get_variable_to_shape_map())
    values = {key: reader.get_tensor(key) for key in keys}
    if damage == "the last weight":
        key = [k for k in keys if k.startswith("model/")][-1]
    else:  # optimizer/_variables/<i>: 0 is the iteration count, then Adam's moments in order
        moments = [k for k in keys if k.startswith("optimizer/_variables/")]
        key = max(moments, key=lambda k: int(k.split("/")[2]))
    values[key] = np.zeros(values[key].shape + (2,), values[key].dtype)
    manifest["checkpoint"] = "checkpoint-9-0badc0de"
    tf.raw_ops.SaveV2(prefix=str(path / manifest["checkpoint"]), tensor_names=keys,
                      shape_and_slices=[""] * len(keys), tensors=[tf.constant(values[k]) for k in keys])
    (path / "config.json").write_text(json.dumps(manifest))


def _state_bytes(fw, trainer):
    """The model's weights, the optimizer's state and the step count, as bytes."""
    weights, optimizer, step, _ = _snapshot(fw, trainer)
    return [weights[name].tobytes() for name in sorted(weights)] + [a.tobytes() for a in optimizer] + [step]


@pytest.mark.parametrize("damage", LATE_DAMAGES)
def test_a_restore_checks_everything_before_it_loads_anything(fw, shared_dir, tmp_path, damage):
    """A checkpoint of the right configuration and layout, wrong where a restore meets it last: the
    restore refuses it and the trainer keeps its weights, optimizer state and step to the byte.
    (Loading first and checking on the way would have changed the weights, or the weights and the
    optimizer's moments, before meeting the damage.)"""
    path = _good_checkpoint(fw, shared_dir, tmp_path / "ckpt")  # unlike the trainer: weights, step
    _damage_late(fw, path, damage)
    trainer = _restorer(fw)
    before = _state_bytes(fw, trainer)
    with pytest.raises(ValueError, match=r"is a damaged checkpoint: .*has shape|is a damaged checkpoint: "
                                         r"variable .* of shape") as info:
        trainer.restore(path)
    assert str(path) in str(info.value) and "nothing was loaded" in str(info.value)
    assert _state_bytes(fw, trainer) == before
    assert trainer.step == 2


def test_restore_of_a_torch_pickle_of_other_objects_does_not_advise_weights_only(torch_fw, tmp_path):
    import pickle

    path = tmp_path / "pickled.pt"
    path.write_bytes(pickle.dumps(ValueError("a class, not a tensor")))
    with pytest.raises(ValueError, match=re.escape(str(path))) as info:
        tiny_trainer(torch_fw).restore(path)
    assert "weights_only" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


# ------------------------------------------------------------------- where it saves
def test_save_where_no_folder_can_be_made_names_the_path(fw, tmp_path):
    (tmp_path / "file.txt").write_text("a file, not a folder")
    path = tmp_path / "file.txt" / "ckpt"
    with pytest.raises(OSError, match=re.escape(str(path))):
        tiny_trainer(fw).save(path)
    assert sorted(os.listdir(tmp_path)) == ["file.txt"]


def test_save_over_the_other_kind_of_path_refuses(fw, tmp_path):
    path = tmp_path / "taken"
    if fw.name == "torch":
        path.mkdir()
        (path / "keep.txt").write_text("mine")
        match = r"is a directory; a torch checkpoint is one file"
    else:
        path.write_text("mine")
        match = r"is a file; a TensorFlow checkpoint is a directory"
    with pytest.raises(ValueError, match=match):
        tiny_trainer(fw).save(path)
    kept = path / "keep.txt" if fw.name == "torch" else path
    assert kept.read_text() == "mine"


def _refuse_writes(fw, monkeypatch, folder):
    """Writes into ``folder`` fail as in a read-only folder, where each framework meets it: torch's
    temporary file cannot be opened, TensorFlow's checkpoint writer raises ``PermissionDeniedError``
    (simulated: the tests run as root, who writes in any folder)."""
    if fw.name == "torch":
        real_open = os.open

        def refuse(file, *args, **kwargs):
            if os.path.dirname(os.path.abspath(file)) == str(folder):
                raise PermissionError(13, "Permission denied", file)
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    else:
        def refuse(checkpoint, prefix, *args, **kwargs):
            detail = f"{prefix}_temp/part-00000-of-00001.data-00000-of-00001.tempstate1; Permission denied"
            raise fw.tf.errors.PermissionDeniedError(None, None, detail)

        monkeypatch.setattr(fw.tf.train.Checkpoint, "write", refuse)


def _read_only_message(fw, path):
    """``Trainer.save``'s message for a folder it may not write: the torch file's folder, the TF directory."""
    folder = path.parent if fw.name == "torch" else path
    return (rf"^\[Errno 13\] cannot write {re.escape(str(path))}: Permission denied "
            rf"\({re.escape(str(folder))}\)$")


def test_save_into_a_read_only_folder_raises_a_permission_error_naming_the_path(fw, tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    trainer = _trained(fw, 1)
    trainer.save(path)
    trainer.save(path)  # a previous version exists too
    before = sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()
    trainer.train_step(*copy_batches(1, batch=4)[0])
    _refuse_writes(fw, monkeypatch, path if fw.name == "tensorflow" else tmp_path)
    with pytest.raises(PermissionError, match=_read_only_message(fw, path)) as info:
        trainer.save(path)
    monkeypatch.undo()
    if fw.name == "tensorflow":  # TensorFlow's own error stays attached as the cause
        assert isinstance(info.value.__cause__, fw.tf.errors.PermissionDeniedError)
    assert (sorted(os.listdir(path)) if path.is_dir() else path.read_bytes()) == before  # nothing half-done
    fresh = tiny_trainer(fw)
    fresh.restore(path)
    assert fresh.step == 1 and trainer.step == 2  # the previous checkpoint survives


def test_other_tensorflow_write_errors_become_os_errors_naming_the_path(tf_fw, tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    trainer = _trained(tf_fw, 1)

    def fail(checkpoint, prefix, *args, **kwargs):
        raise tf_fw.tf.errors.UnknownError(None, None, "the file system went away\nmore detail")

    monkeypatch.setattr(tf_fw.tf.train.Checkpoint, "write", fail)
    with pytest.raises(OSError, match=rf"^cannot write {re.escape(str(path))}: the file system went away "
                                      rf"\({re.escape(str(path))}\)$"):
        trainer.save(path)
    monkeypatch.undo()
    assert os.listdir(path) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes in any folder")
def test_save_into_a_truly_read_only_folder_raises_a_permission_error(fw, tmp_path):
    path = tmp_path / "ckpt"
    trainer = _trained(fw, 1)
    trainer.save(path)
    folder = path if fw.name == "tensorflow" else tmp_path
    folder.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match=_read_only_message(fw, path)):
            trainer.save(path)
    finally:
        folder.chmod(0o755)
    fresh = tiny_trainer(fw)
    fresh.restore(path)
    assert fresh.step == 1


# ------------------------------------------------------------- interrupted saves
def _interruption_points(fw):
    """Functions a save calls, by name: each is made to raise KeyboardInterrupt in turn."""
    points = {"fsync": (os, "fsync"), "replace": (os, "replace")}
    if fw.name == "torch":
        points["torch.save"] = (fw.torch, "save")
    else:
        points["checkpoint write"] = (fw.tf.train.Checkpoint, "write")
        points["json.dump"] = (json, "dump")
        points["cleanup"] = (os, "remove")
    return points


INTERRUPTIONS = [("torch", point) for point in ("fsync", "replace", "torch.save")] + [
    ("tensorflow", point) for point in ("fsync", "replace", "checkpoint write", "json.dump", "cleanup")]


@pytest.mark.parametrize("framework, point", INTERRUPTIONS)
def test_a_save_interrupted_anywhere_leaves_the_old_or_the_new_checkpoint(framework, tmp_path, monkeypatch,
                                                                           point):
    fw = get_adapter(framework)
    points = _interruption_points(fw)
    path = tmp_path / "ckpt"
    trainer = _trained(fw, 1)
    trainer.save(path)
    trainer.save(path)  # a previous version exists too
    trainer.train_step(*copy_batches(1, batch=4)[0])
    owner, name = points[point]

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt(point)

    monkeypatch.setattr(owner, name, interrupt)
    with pytest.raises(KeyboardInterrupt, match=re.escape(point)):
        trainer.save(path)
    monkeypatch.undo()
    fresh = tiny_trainer(fw)
    fresh.restore(path)
    assert fresh.step == (2 if point == "cleanup" else 1)
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    assert not [f for f in _files_of(path) if f.name.endswith(".tmp")]
    if fw.name == "tensorflow" and point != "cleanup":
        _assert_two_versions(path)  # what the interrupted save wrote is gone
    trainer.save(path)  # the next save clears whatever the interrupted one left
    trainer.save(path)
    if fw.name == "tensorflow":
        _assert_two_versions(path)


def _assert_two_versions(path):
    """config.json and the files of two checkpoint versions: the current one and the previous."""
    names = sorted(os.listdir(path))
    versions = {name.split(".")[0] for name in names if name != "config.json"}
    assert "config.json" in names and len(versions) == 2, names
    current = json.loads((path / "config.json").read_text())["checkpoint"]
    assert current in versions and f"{current}.index" in names


def test_a_concurrent_reader_always_finds_a_complete_checkpoint(fw, tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    writer = _trained(fw, 1)
    writer.save(path)
    writer.train_step(*copy_batches(1, batch=4)[0])
    reader, seen = tiny_trainer(fw), []
    real_replace, real_remove = os.replace, os.remove

    def read():
        reader.restore(path)
        seen.append(reader.step)

    def replace(*args, **kwargs):
        read()
        real_replace(*args, **kwargs)
        read()

    def remove(*args, **kwargs):
        read()
        real_remove(*args, **kwargs)
        read()

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "remove", remove)
    for _ in range(3):
        writer.save(path)
        writer.train_step(*copy_batches(1, batch=4)[0])
    monkeypatch.undo()
    assert seen and set(seen) <= {1, 2, 3, 4}
    assert seen == sorted(seen)  # never back to an older checkpoint once a newer one was read
    assert seen[-1] == 4


def test_tensorflow_keeps_two_versions_and_restores_the_layout_of_before(tf_fw, tmp_path):
    """The directory holds config.json (the manifest, replaced last) and the files of the current and
    the previous checkpoint; a checkpoint of the former layout (``checkpoint.*`` files) still restores."""
    path = tmp_path / "ckpt"
    trainer = _trained(tf_fw, 1)
    for _ in range(4):
        trainer.save(path)
        trainer.train_step(*copy_batches(1, batch=4)[0])
    _assert_two_versions(path)
    manifest = json.loads((path / "config.json").read_text())
    assert manifest["step"] == 4
    old = tmp_path / "old"
    old.mkdir()
    for file in path.iterdir():
        if file.name.startswith(manifest["checkpoint"] + "."):
            shutil.copy(file, old / file.name.replace(manifest["checkpoint"], "checkpoint"))
    del manifest["checkpoint"]
    (old / "config.json").write_text(json.dumps(manifest))
    fresh = tiny_trainer(tf_fw)
    fresh.restore(old)
    assert fresh.step == 4
    fresh.save(old)  # saves over the old layout; the old files stay one more save as the previous version
    fresh.save(old)
    assert not any(name.startswith("checkpoint.") for name in os.listdir(old))


def test_tensorflow_refuses_a_manifest_that_points_outside_its_directory(tf_fw, tmp_path):
    path = tmp_path / "ckpt"
    _trained(tf_fw, 1).save(path)
    manifest = json.loads((path / "config.json").read_text())
    manifest["checkpoint"] = "../elsewhere"
    (path / "config.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"checkpoint must be a file name in the directory, "
                                         r"got '\.\./elsewhere'"):
        tiny_trainer(tf_fw).restore(path)
