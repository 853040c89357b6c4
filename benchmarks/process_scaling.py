"""Throughput of the course's PyTorch Trainer on 1 process against 2 (DistributedDataParallel, gloo).

The same global batches (64 sentence pairs of length 32, d_model 128, 4 heads,
dff 512, 2 + 2 layers, vocabularies of 1000) are trained on by 1 process with
``--threads`` threads per process, then by 2 processes (each one half of every
batch, ``--threads`` threads each), in alternation, ROUNDS times; each run times
STEPS steps after WARMUP steps. Printed: the median wall time per step, the
examples per second, the CPU seconds per step of all the processes together,
and the ratio of the 2-process throughput to the 1-process one.

On a 2-core machine expect little (DDP's gradient all-reduce and a second
Python process compete with the arithmetic for the same cores); on a machine
with cores to spare, or with one GPU per process, it shows the method of
scaling a step. Launch the same Trainer with ``torchrun`` to go beyond:
``torchrun --nproc_per_node=2 train.py``.

    python benchmarks/process_scaling.py [--rounds 3] [--steps 10] [--threads 1]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

BATCH, LENGTH, D_MODEL, HEADS, DFF, LAYERS, VOCAB = 64, 32, 128, 4, 512, 2, 1000


def make_batches(n, seed=0):
    """``n`` batches ``(src, tgt_in, tgt_out)`` of random ids with ragged padding."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        tokens = rng.integers(3, VOCAB, size=(3, BATCH, LENGTH))
        lengths = rng.integers(LENGTH // 2, LENGTH + 1, size=(3, BATCH))
        tokens[np.arange(LENGTH)[None, None, :] >= lengths[..., None]] = 0
        out.append(tuple(tokens))
    return out


def worker(rank, world, threads, warmup, steps, folder):
    """Train ``warmup + steps`` steps; rank 0 writes ``wall cpu`` of the timed steps to ``folder/times``."""
    import torch

    from course_pkg.torch import Trainer, Transformer

    torch.set_num_threads(threads)
    if world > 1:
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "rendezvous"),
                                rank=rank, world_size=world)
    torch.manual_seed(0)
    model = Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, dropout=0.1)
    trainer = Trainer(model, warmup_steps=100, seed=0)
    batches = [tuple(torch.as_tensor(a) for a in b) for b in make_batches(warmup + steps)]
    for batch in batches[:warmup]:
        trainer.train_step(*batch)
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    for batch in batches[warmup:]:
        trainer.train_step(*batch)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    if world > 1:
        cpu_all = torch.tensor([cpu])
        dist.all_reduce(cpu_all)
        cpu = float(cpu_all)
        dist.destroy_process_group()
    if rank == 0:
        with open(os.path.join(folder, "times"), "w") as file:
            file.write(f"{wall / steps} {cpu / steps}")


def run(world, threads, warmup, steps):
    """``(wall seconds, CPU seconds)`` per step with ``world`` processes."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        if world == 1:
            worker(0, 1, threads, warmup, steps, folder)
        else:
            mp.spawn(worker, args=(world, threads, warmup, steps, folder), nprocs=world)
        with open(os.path.join(folder, "times")) as file:
            return tuple(float(x) for x in file.read().split())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    args = parser.parse_args(argv)
    times = {1: [], 2: []}
    for _ in range(args.rounds):
        for world in (1, 2):  # interleaved: a change of load hits both
            times[world].append(run(world, args.threads, args.warmup, args.steps))
    print(f"batch {BATCH} x length {LENGTH}, d_model {D_MODEL}, {LAYERS}+{LAYERS} layers; "
          f"{args.threads} thread(s) per process; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}")
    rate = {}
    for world, rows in times.items():
        wall = statistics.median(w for w, _ in rows)
        cpu = statistics.median(c for _, c in rows)
        rate[world] = BATCH / wall
        print(f"{world} process(es): {wall * 1e3:7.1f} ms/step  {rate[world]:7.1f} examples/s  "
              f"{cpu * 1e3:7.1f} CPU ms/step (all processes)")
    print(f"throughput 2 processes / 1 process: {rate[2] / rate[1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
