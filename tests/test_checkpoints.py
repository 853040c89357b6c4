"""Trainer.save / Trainer.restore: resuming equals a straight run, a checkpoint of another
configuration is refused, saving is all-or-nothing, torch checkpoints load weights-only."""

import json
import os

import numpy as np
import pytest
from training_helpers import copy_batches, model_weights, one_torch_thread, tiny_model, tiny_trainer


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield


def test_resume_equals_straight_run(fw, tmp_path):
    """N steps, save, restore into a fresh trainer, M more == N + M steps straight (dropout on)."""
    batches = copy_batches(11, batch=8)
    straight = fw.cp.Trainer(tiny_model(fw, dropout=0.2), warmup_steps=4, seed=0)
    for b in batches[:6]:
        straight.train_step(*b)
    path = tmp_path / "ckpt"
    straight.save(path)  # saving changes nothing: the run goes on as if never saved
    lr_at_save = straight.learning_rate
    for b in batches[6:]:
        straight.train_step(*b)
    # a fresh model and trainer (other seeds: everything must come from the checkpoint)
    resumed = fw.cp.Trainer(tiny_model(fw, dropout=0.2, seed=1), warmup_steps=4, seed=1)
    resumed.restore(path)
    assert resumed.step == 6
    assert resumed.learning_rate == pytest.approx(lr_at_save, rel=1e-7)
    for b in batches[6:]:
        resumed.train_step(*b)
    assert resumed.step == straight.step == 11
    a, b = model_weights(straight.model), model_weights(resumed.model)
    assert sorted(a) == sorted(b)
    for name in a:
        if fw.name == "torch":
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        else:
            np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-6, err_msg=name)


def test_restore_of_another_config_raises_and_changes_nothing(fw, tmp_path):
    batch = copy_batches(1, batch=4)[0]
    saved = tiny_trainer(fw)
    saved.train_step(*batch)
    saved.save(tmp_path / "ckpt")

    other = fw.cp.Trainer(tiny_model(fw, seed=3, dff=24, num_layers=2), warmup_steps=4, seed=0)
    before, lr = model_weights(other.model), other.learning_rate
    with pytest.raises(ValueError, match=r"dff: expected 24, found 32") as info:
        other.restore(tmp_path / "ckpt")
    assert "num_layers: expected 2, found 1" in str(info.value)
    after = model_weights(other.model)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)
    assert other.step == 0 and other.learning_rate == lr


def test_save_overwrites_atomically_and_a_failed_save_keeps_the_last_checkpoint(fw, tmp_path, monkeypatch):
    batch = copy_batches(1, batch=4)[0]
    trainer = tiny_trainer(fw)
    trainer.train_step(*batch)
    path = tmp_path / "ckpt"
    trainer.save(path)
    trainer.train_step(*batch)
    trainer.save(path)  # overwrite
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    if fw.name == "tensorflow":  # a directory: config.json naming the tf.train.Checkpoint files it stands for
        files = sorted(os.listdir(path))
        info = json.loads((path / "config.json").read_text())
        assert "config.json" in files and f"{info['checkpoint']}.index" in files
        assert info["step"] == 2 and info["config"]["d_model"] == 16

    def broken(*args, **kwargs):
        raise OSError("disk full")

    trainer.train_step(*batch)
    # fail in the middle of writing: torch.save itself / the JSON beside the TF checkpoint
    if fw.name == "torch":
        monkeypatch.setattr(fw.torch, "save", broken)
    else:
        monkeypatch.setattr(json, "dump", broken)
    with pytest.raises(OSError, match="disk full"):
        trainer.save(path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    fresh = tiny_trainer(fw)
    fresh.restore(path)
    assert fresh.step == 2  # the last complete checkpoint


def test_torch_checkpoint_loads_with_weights_only(torch_fw, tmp_path):
    import torch

    trainer = tiny_trainer(torch_fw)
    trainer.train_step(*copy_batches(1, batch=4)[0])
    trainer.save(tmp_path / "model.pt")
    checkpoint = torch.load(tmp_path / "model.pt", weights_only=True)
    assert checkpoint["step"] == 1
    assert checkpoint["config"] == trainer.model.get_config()
    assert set(checkpoint) >= {"model", "optimizer", "schedule", "config", "step"}
