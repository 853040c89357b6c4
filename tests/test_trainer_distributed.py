"""The Trainer on 2 processes (torch: DistributedDataParallel over gloo), 2 replicas (TensorFlow:
MirroredStrategy over 2 logical CPU devices) or 2 workers (TensorFlow: MultiWorkerMirroredStrategy,
2 processes on localhost ports), against the same Trainer in one process.

Each setting's distributed half runs once, in a subprocess (tests/distributed_worker.py), so
that neither the process group nor the logical devices reach the other tests. The one-process half
runs once per framework (``one_process``), for every setting of that framework: one trainer's first
step, its checkpoint after three steps (where the distributed runs resume), the rest of its nine
steps, and an fp16 trainer's three steps.
"""

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from distributed_worker import fp16_steps
from helpers import get_adapter
from training_helpers import (
    copy_batches,
    fw_batches,
    model_weights,
    once_per_framework,
    one_torch_thread,
    tiny_trainer,
)

WORLD = 2
ONE_STEP_ATOL = 1e-6  # weights after one step: 2 x B/2 against B
RESUMED_ATOL = 1e-5  # weights after 9 steps: one process, 2, then one again, against one throughout
FP16_LOSS_ATOL = 0.02  # fp16 training losses, 2 x B/2 against B (float16 activations round apart)
# The key projections' biases are left out of the weight comparisons: they add one constant to every
# score of a softmax row, so their gradient is zero in exact arithmetic and rounding noise in floats,
# which Adam's first steps divide by itself (g / (|g| + eps)): a step of up to the learning rate in
# either direction, whatever the summation order. The logits compared too show that they do not matter.
NOISE_ONLY = ".wk.bias"
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed_worker.py")


# Where the distributed half runs: torch on 2 processes (DDP); TensorFlow on 2 replicas in one process
# (MirroredStrategy) and on 2 worker processes (MultiWorkerMirroredStrategy, as on 2 machines).
SETTINGS = ["torch", "tensorflow", "tensorflow-workers"]


@pytest.fixture(params=SETTINGS)
def setting(request, distributed_runs):
    """``(adapter, outdir)`` of one distributed setting's worker run."""
    return get_adapter(request.param.split("-")[0]), distributed_runs(request.param)


def _one_process(fw, folder):
    """The one-process half: a fresh trainer's weights before and after one step on batch 0, its
    checkpoints ``initial`` (before that step) and ``start`` (after 3 steps, batches 0..2), the last
    training loss and the learning rate after ``fit`` on batches 3..5, ``evaluate`` on batches 6 and 7,
    then its step, learning rate and weights after batches 6..8; and ``fp16_steps``."""
    batches = fw_batches(fw, copy_batches(9))
    trainer = tiny_trainer(fw)
    checkpoints = {"initial": os.path.join(folder, "initial"), "start": os.path.join(folder, "start")}
    trainer.save(checkpoints["initial"])
    initial = model_weights(trainer.model)
    trainer.train_step(*batches[0])
    one_step = model_weights(trainer.model)
    trainer.fit(batches[1:3], progress=False, checkpoint_path=checkpoints["start"])
    history = trainer.fit(batches[3:6], progress=False)
    seen = SimpleNamespace(checkpoints=checkpoints, initial=initial, one_step=one_step,
                           loss=history["loss"][-1], lr=trainer.learning_rate,
                           valid=trainer.evaluate(batches[6:8]))
    trainer.fit(batches[6:], progress=False)
    seen.step, seen.final_lr, seen.weights = trainer.step, trainer.learning_rate, model_weights(trainer.model)
    seen.fp16 = fp16_steps(fw, batches)
    return seen


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """``one_process(fw)``: :func:`_one_process`, run once per framework."""
    return once_per_framework(lambda fw: _one_process(fw, tmp_path_factory.mktemp(f"one-process-{fw.name}")))


@pytest.fixture(scope="module")
def distributed_runs(tmp_path_factory, one_process):
    """``{setting: outdir}`` of the worker runs, made on first use, from the checkpoints of
    ``one_process``."""
    cache = {}

    def get(name):
        if name not in cache:
            fw = get_adapter(name.split("-")[0])
            outdir = tmp_path_factory.mktemp(f"distributed-{name}")
            for checkpoint, path in one_process(fw).checkpoints.items():  # a file or a directory
                copy = shutil.copytree if os.path.isdir(path) else shutil.copy2
                copy(path, os.path.join(outdir, checkpoint))
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [os.path.dirname(os.path.dirname(WORKER)), os.environ.get("PYTHONPATH", "")])}
            env.pop("TF_CONFIG", None)
            done = subprocess.run([sys.executable, WORKER, name, str(WORLD), str(outdir)], env=env,
                                  capture_output=True, text=True, timeout=400)
            assert done.returncode == 0, done.stderr[-3000:]
            cache[name] = outdir
        return cache[name]

    return get


def test_one_step_on_two_halves_is_one_step_on_the_batch(setting, one_process):
    fw, outdir = setting
    want = one_process(fw).one_step
    got = np.load(os.path.join(outdir, "one_step.npz"))
    assert sorted(got) == sorted(want)
    assert max_difference(got, want) <= ONE_STEP_ATOL
    assert logits_difference(fw, got, want) <= ONE_STEP_ATOL
    initial = one_process(fw).initial  # a fresh trainer's weights
    assert max(np.abs(want[k] - initial[k]).max() for k in want) > 1e-3, \
        "the step must move the weights for the comparison to mean anything"


def test_fp16_skips_an_overflowing_step_on_every_replica(setting, one_process):
    """fp16 under DDP / MirroredStrategy: a step whose scaled gradients overflow is skipped on every
    replica alike (no weight moves, the loss scale halves, the schedule waits), as in one process.
    (Weights are not compared: Adam's first steps move each weight by about the learning rate in
    the direction of its gradient's sign, which float16 rounding flips for the near-zero ones.)"""
    fw, outdir = setting
    got = np.load(os.path.join(outdir, "fp16.npz"))
    want = one_process(fw).fp16
    assert list(got["moved"]) == want["moved"] == [True, False, True]
    assert list(got["loss_scale"]) == want["loss_scale"] == [2.0 ** 10, 2.0 ** 59, 2.0 ** 10]
    assert int(got["step"]) == want["step"] == 3
    assert float(got["lr"]) == pytest.approx(want["lr"], rel=1e-6)  # two updates made in each
    assert np.abs(got["loss"] - np.array(want["loss"])).max() <= FP16_LOSS_ATOL


def test_resumed_with_another_world_size_continues_the_schedule(setting, one_process):
    fw, outdir = setting
    batches = fw_batches(fw, copy_batches(9))
    resumed = np.load(os.path.join(outdir, "resumed.npz"))
    assert int(resumed["replicas"]) == WORLD and int(resumed["step"]) == 6
    straight = one_process(fw)  # 9 steps in one process
    assert resumed["lr"] == pytest.approx(straight.lr, rel=1e-6)
    # the logs of the 2-process run (the mean training loss of steps 4..6, the validation),
    # summed over the processes, are those of one process
    assert float(resumed["loss"]) == pytest.approx(straight.loss, abs=RESUMED_ATOL)
    assert float(resumed["val_loss"]) == pytest.approx(straight.valid["loss"], abs=RESUMED_ATOL)
    assert float(resumed["val_accuracy"]) == pytest.approx(straight.valid["accuracy"], abs=RESUMED_ATOL)
    with one_torch_thread():
        again = tiny_trainer(fw)  # back to one process, from the 2-process checkpoint
        again.restore(os.path.join(outdir, "mid"))
        assert again.step == 6
        again.fit(batches[6:], progress=False)
    assert again.step == straight.step == 9
    assert again.learning_rate == pytest.approx(straight.final_lr, rel=1e-6)
    want, got = straight.weights, model_weights(again.model)
    assert max_difference(got, want) <= RESUMED_ATOL
    assert logits_difference(fw, got, want) <= RESUMED_ATOL


def max_difference(got, want):
    """The largest difference between two models' weights, key biases left out (see NOISE_ONLY)."""
    return max(np.abs(got[k] - want[k]).max() for k in want if not k.endswith(NOISE_ONLY))


def logits_difference(fw, got, want):
    """The largest difference between the logits of tiny models with the weights ``got`` and ``want``."""
    from course_pkg import interop

    src, tgt_in, _ = copy_batches(1, seed=1)[0]
    logits = []
    for weights in (got, want):
        model = tiny_trainer(fw).model
        interop.set_weights(model, {k: weights[k] for k in want})
        logits.append(fw.call(model, src, tgt_in))
    return np.abs(logits[0] - logits[1]).max()


def test_tf_refuses_a_model_built_outside_the_strategy_scope(tf_fw, distributed_runs):
    with open(os.path.join(distributed_runs("tensorflow"), "refused.txt")) as file:
        assert "build the model inside the same" in file.read()


def test_init_distributed_refuses_the_other_frameworks_argument(fw):
    """One signature in both frameworks, ``init_distributed(devices=None, backend=None)``; each refuses,
    with a message, the argument that only the other framework uses."""
    other = {"torch": {"devices": ["/cpu:0", "/cpu:1"]}, "tensorflow": {"backend": "gloo"}}[fw.name]
    with pytest.raises(ValueError, match="torchrun" if fw.name == "torch" else "tf.distribute"):
        fw.cp.init_distributed(**other)
