"""Trainer(precision=...): bf16 and fp16 training on the CPU stays near float32, with no NaN.

One run per precision and framework (``precision_runs``: 8 steps, a checkpoint after the second)
serves both the comparison of the precisions and, through its checkpoint, the resumes in another
precision: a TensorFlow Trainer's first step traces its graph, seconds on a CPU.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from training_helpers import (
    copy_batches,
    fp16_trainer,
    fw_batches,
    model_weights,
    once_per_framework,
    one_torch_thread,
    set_loss_scale,
    tiny_model,
)

LOSS_TOLERANCE = 0.02  # absolute, on losses near 2.5 (< 1%); measured: at most about 7e-3 (TF bf16)
POLICIES = {"fp32": None, "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}  # Keras dtype policies


def run(fw, precision, folder):
    """A fresh :func:`precision_trainer` through 8 training steps on copy_batches(8), saved to a checkpoint
    after the second (saving changes nothing of the run): its losses, then its evaluation loss on the
    first 2 batches; and at the save, the checkpoint's path, the step, the learning rate, the weights and
    Adam's moments."""
    batches = fw_batches(fw, copy_batches(8))
    trainer = precision_trainer(fw, precision)
    losses = []
    for batch in batches:
        losses.append(trainer.train_step(*batch)["loss"])
        if trainer.step == 2:
            path = str(folder / f"{fw.name}-{precision}")
            trainer.save(path)
            saved = SimpleNamespace(path=path, step=trainer.step, learning_rate=trainer.learning_rate,
                                    weights=model_weights(trainer.model),
                                    moments=[m.copy() for m in adam_moments(trainer)])  # torch's share memory
    losses.append(trainer.evaluate(batches[:2])["loss"])
    return SimpleNamespace(losses=np.array(losses), saved=saved)


@pytest.fixture(scope="module")
def precision_runs(tmp_path_factory):
    """``precision_runs[precision](fw)``: :func:`run`, once per precision and framework."""
    folder = tmp_path_factory.mktemp("precision_runs")
    return {precision: once_per_framework(lambda fw, precision=precision: run(fw, precision, folder))
            for precision in POLICIES}


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_losses_stay_near_float32(fw, precision, precision_runs):
    want = precision_runs["fp32"](fw).losses
    got = precision_runs[precision](fw).losses
    assert np.all(np.isfinite(got))
    assert want[-2] < want[0] - 0.2, "the float32 run must learn for the comparison to mean anything"
    assert np.abs(got - want).max() <= LOSS_TOLERANCE, (got, want)


def test_precision_is_checked(fw):
    with pytest.raises(ValueError, match="precision must be one of"):
        fw.cp.Trainer(tiny_model(fw), precision="fp64")


def test_tf_precision_needs_the_matching_dtype_policy(tf_fw):
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        tf_fw.cp.Trainer(tiny_model(tf_fw), precision="bf16")


def test_a_skipped_fp16_step_does_not_advance_the_schedule(fw):
    """A step whose scaled gradients overflow changes no weight, halves the loss scale and leaves the
    learning rate where it was: the schedule follows the updates made, not the batches seen."""
    batches = fw_batches(fw, copy_batches(3))
    noam = fw.cp.NoamSchedule(16, 4)
    trainer = fp16_trainer(fw)
    with one_torch_thread():
        trainer.train_step(*batches[0])
        assert trainer.learning_rate == pytest.approx(float(noam(1)), rel=1e-6)
        before = model_weights(trainer.model)
        set_loss_scale(trainer, 2.0 ** 60)  # no float16 gradient survives that
        logs = trainer.train_step(*batches[1])
        assert np.isfinite(logs["loss"]) and trainer.step == 2
        assert trainer.loss_scale == 2.0 ** 59
        assert trainer.learning_rate == pytest.approx(float(noam(1)), rel=1e-6)
        after = model_weights(trainer.model)
        assert all(np.array_equal(before[k], after[k]) for k in before)
        set_loss_scale(trainer, 2.0 ** 10)
        trainer.train_step(*batches[2])
    assert trainer.step == 3 and trainer.loss_scale == 2.0 ** 10
    assert trainer.learning_rate == pytest.approx(float(noam(2)), rel=1e-6)  # two updates made
    assert any(not np.array_equal(after[k], v) for k, v in model_weights(trainer.model).items())


def test_fp16_loss_scale_is_saved_and_restored(fw, tmp_path):
    batches = fw_batches(fw, copy_batches(3))
    path = str(tmp_path / "ckpt")
    trainer = fp16_trainer(fw)
    with one_torch_thread():
        trainer.train_step(*batches[0])
        set_loss_scale(trainer, 2.0 ** 9)  # not the initial scale of either framework
        trainer.save(path)
        resumed = fp16_trainer(fw)
        assert resumed.loss_scale != 2.0 ** 9
        resumed.restore(path)
        assert resumed.loss_scale == 2.0 ** 9 and resumed.step == 1
        for batch in batches[1:]:
            want, got = trainer.train_step(*batch), resumed.train_step(*batch)
            assert got["loss"] == pytest.approx(want["loss"], abs=1e-6)
    assert resumed.loss_scale == trainer.loss_scale
    assert resumed.learning_rate == pytest.approx(trainer.learning_rate, rel=1e-6)
    want, got = model_weights(trainer.model), model_weights(resumed.model)
    assert max(np.abs(got[k] - want[k]).max() for k in want) <= 1e-6


def test_loss_scale_is_none_outside_fp16(fw):
    assert fw.cp.Trainer(tiny_model(fw), warmup_steps=4).loss_scale is None


def precision_trainer(fw, precision):
    """A fresh Trainer of the tiny model in ``precision`` (10 warm-up steps, seed 0)."""
    dtype = POLICIES[precision] if fw.name == "tensorflow" else None
    model = tiny_model(fw, **({} if dtype is None else {"dtype": dtype}))
    return fw.cp.Trainer(model, warmup_steps=10, seed=0, precision=precision)


def adam_moments(trainer):
    """Adam's first and second moments of every weight, in the optimizer's order, as NumPy arrays."""
    optimizer = getattr(trainer.optimizer, "inner_optimizer", trainer.optimizer)  # Keras fp16 wraps it
    if hasattr(optimizer, "state_dict"):  # torch
        state = optimizer.state_dict()["state"]
        return [state[i][key].numpy() for i in sorted(state) for key in ("exp_avg", "exp_avg_sq")]
    return [v.numpy() for v in optimizer.variables if "momentum" in v.path or "velocity" in v.path]


@pytest.mark.parametrize("saved, resumed_in", [("fp16", "fp32"), ("fp32", "fp16"), ("bf16", "fp16")])
def test_a_checkpoint_resumes_in_another_precision(fw, saved, resumed_in, precision_runs):
    """Train in mixed precision on a GPU, go on in float32 on a laptop (and back): the weights are
    float32 in every precision, so the weights, the optimizer's moments and the step count carry
    over; a loss scale starts anew where there was none, and is dropped where none is used.
    (The checkpoint: that of the run in ``saved`` after 2 steps.)"""
    at_save = precision_runs[saved](fw).saved
    batches = fw_batches(fw, copy_batches(3))  # the run's first 3 batches
    with one_torch_thread():
        resumed = precision_trainer(fw, resumed_in)
        resumed.restore(at_save.path)
        assert resumed.step == at_save.step == 2
        assert resumed.learning_rate == pytest.approx(at_save.learning_rate, rel=1e-6)
        want, got = at_save.weights, model_weights(resumed.model)
        assert all(np.array_equal(got[k], want[k]) for k in want)
        moments, saved_moments = adam_moments(resumed), at_save.moments
        assert len(moments) == 2 * len(want) and any(np.abs(m).max() > 0 for m in saved_moments)
        assert all(np.array_equal(a, b) for a, b in zip(moments, saved_moments))
        fresh = precision_trainer(fw, resumed_in).loss_scale
        assert resumed.loss_scale == fresh  # None, or the initial scale of a fresh fp16 trainer
        logs = resumed.train_step(*batches[2])
    assert np.isfinite(logs["loss"]) and resumed.step == 3
