"""The distributed half of tests/test_trainer_distributed.py, run in a subprocess.

``python tests/distributed_worker.py SETTING WORLD OUTDIR``: with WORLD
processes (``torch``: gloo, spawned here), WORLD logical CPU devices under a
``MirroredStrategy`` (``tensorflow``) or WORLD worker processes under a
``MultiWorkerMirroredStrategy`` (``tensorflow-workers``), it writes to OUTDIR

* ``resumed.npz`` and checkpoint ``mid``: a fresh trainer restored from checkpoint ``start``
  (written by the test in one process after 3 steps), three steps of ``fit`` on batches 3..5
  (validated on batches 6 and 7), then the step count, the learning rate, the
  last logs and the weights;
* ``one_step.npz``: the weights after one training step on batch 0 of the same trainer, restored
  first from checkpoint ``initial`` (a fresh trainer's, written by the test): a fresh trainer's
  weights, optimizer state, step 0 and random state, without tracing a third distributed graph;
* ``fp16.npz``: an fp16 trainer's losses, loss scales and whether its weights moved, over a step
  whose scaled gradients overflow (to be skipped on every replica alike) between two normal steps.

A separate process: the process group (torch) or the logical devices (TensorFlow)
must not leak into the other tests.
"""

import os
import sys

import numpy as np

TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)

from training_helpers import (  # noqa: E402
    copy_batches,
    fp16_trainer,
    fw_batches,
    model_weights,
    set_loss_scale,
    tiny_model,
    tiny_trainer,
)

BATCHES = copy_batches(9)  # the test's batches: same seed


def run(fw, outdir):
    """The three scenarios, on the trainers of the distributed setting this process is in."""
    batches = fw_batches(fw, BATCHES)
    trainer = tiny_trainer(fw)
    trainer.restore(os.path.join(outdir, "start"))
    history = trainer.fit(batches[3:6], valid_batches=batches[6:8], progress=False, time_budget=3600,
                          checkpoint_path=os.path.join(outdir, "mid"))  # the budget: all processes agree
    if trainer.is_chief:
        np.savez(os.path.join(outdir, "resumed.npz"), step=trainer.step, lr=trainer.learning_rate,
                 loss=history["loss"][-1], val_loss=history["val_loss"][-1],
                 val_accuracy=history["val_accuracy"][-1], replicas=trainer.num_replicas,
                 **model_weights(trainer.model))
    trainer.restore(os.path.join(outdir, "initial"))
    assert trainer.step == 0
    trainer.train_step(*batches[0])
    if trainer.is_chief:
        np.savez(os.path.join(outdir, "one_step.npz"), **model_weights(trainer.model))
    fp16 = fp16_steps(fw, batches)
    if trainer.is_chief:
        np.savez(os.path.join(outdir, "fp16.npz"), **fp16)


def fp16_steps(fw, batches):
    """An fp16 trainer of the tiny model through three steps on batches 1 to 3, under a loss scale of
    2 ** 10 but for the middle one, which no float16 gradient survives (2 ** 60): that step must be
    skipped (on every replica alike) and the scale halved. (The initial scale is not used: whether it
    overflows depends on how many rows each replica sums.) Returns ``{"loss", "loss_scale", "moved"}``,
    a list each, one entry per step, plus the final ``step`` and ``lr``."""
    trainer = fp16_trainer(fw)
    record = {"loss": [], "loss_scale": [], "moved": []}
    for batch, scale in zip(batches[1:4], (2.0 ** 10, 2.0 ** 60, 2.0 ** 10)):
        set_loss_scale(trainer, scale)
        before = model_weights(trainer.model)
        record["loss"].append(trainer.train_step(*batch)["loss"])
        after = model_weights(trainer.model)
        record["loss_scale"].append(trainer.loss_scale)
        record["moved"].append(any(not np.array_equal(before[k], after[k]) for k in before))
    return {**record, "step": trainer.step, "lr": trainer.learning_rate}


def torch_process(rank, world, outdir):
    import torch
    import torch.distributed as dist
    from helpers import get_adapter

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(outdir, "rendezvous"),
                            rank=rank, world_size=world)
    try:
        run(get_adapter("torch"), outdir)
    finally:
        dist.destroy_process_group()


def tensorflow_workers(world, outdir):
    """WORLD worker processes on this machine under ``MultiWorkerMirroredStrategy`` (one CPU replica
    each; ``TF_CONFIG`` names the cluster on localhost ports), as on several machines."""
    import json
    import socket
    import subprocess

    ports = []
    for _ in range(world):
        with socket.socket() as probe:
            probe.bind(("localhost", 0))
            ports.append(probe.getsockname()[1])
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    configs = [json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}}) for i in range(world)]
    workers = [subprocess.Popen([sys.executable, __file__, "tensorflow-worker", str(world), outdir],
                                env={**os.environ, "TF_CONFIG": config}) for config in configs]
    codes = [worker.wait(timeout=300) for worker in workers]
    if any(codes):
        raise SystemExit(f"worker exit codes {codes}")


def main(framework, world, outdir):
    world = int(world)
    if framework == "torch":
        import torch.multiprocessing as mp

        mp.spawn(torch_process, args=(world, outdir), nprocs=world)
        return
    if framework == "tensorflow-workers":
        tensorflow_workers(world, outdir)
        return
    import tensorflow as tf
    from helpers import get_adapter

    fw = get_adapter("tensorflow")
    if framework == "tensorflow-worker":  # one of tensorflow_workers' processes
        strategy = fw.cp.init_distributed()  # MultiWorkerMirroredStrategy, from TF_CONFIG
        assert strategy.num_replicas_in_sync == world
        with strategy.scope():
            run(fw, outdir)
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * world)
    strategy = fw.cp.init_distributed([f"/cpu:{i}" for i in range(world)])
    outside = tiny_model(fw)  # built outside the scope: the Trainer made inside it refuses it
    with strategy.scope():
        try:
            fw.cp.Trainer(outside)
        except ValueError as err:
            with open(os.path.join(outdir, "refused.txt"), "w") as file:
                file.write(str(err))
        run(fw, outdir)


if __name__ == "__main__":
    main(*sys.argv[1:])
