"""Profile one training step: the course's Transformer against ``torch.nn.Transformer``, op by op.

Where does the course's PyTorch step spend more than PyTorch's own layer? This script runs chapter
6's training step (the chapter's model size, a batch of 128 number pairs, ``Trainer.train_step``)
for the course's Transformer and for a model of the same size built on ``torch.nn.Transformer``
(``training_speed.torch_nn_transformer``), in fp32 and bf16, under PyTorch's profiler, and prints
per step and per model:

* the device time of all kernels (CUDA) or the CPU time of all ops, per step;
* the kernel launches, host-device copies and synchronisations (``cudaLaunchKernel``,
  ``cudaMemcpyAsync``, ``cudaStreamSynchronize``, ``aten::item``) per step;
* the ops that cost the most (self time per step, calls per step), the two models side by side.

    python benchmarks/step_profile.py                    # CUDA when PyTorch sees it, else the CPU
    python benchmarks/step_profile.py --steps 5 --json profile.json --precisions fp32

On a CPU (one thread, as the other benchmarks) it shows the same op counts without kernel times;
``tests`` do not run it (a benchmark: figures, not assertions). Issue 40 asks for it on a GPU.
"""

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

COUNTED = {"launches": ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"),
           "copies": ("cudaMemcpyAsync", "cudaMemcpy"),
           "syncs": ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"),
           "item calls": ("aten::item",)}


def models_and_batch(precision, fused_adam=False):
    """Chapter 6's batch and one Trainer per model (course, reference), seeded alike; with
    ``fused_adam`` their Adam is ``torch.optim.Adam(fused=True)`` (one kernel for all tensors)."""
    import gpu_check
    import torch

    from course_pkg import torch as cp

    recipe, batch, size = gpu_check.chapter6_step_inputs()
    models = gpu_check.chapter6_models(size)
    models["nn.Transformer"] = models.pop("reference")
    trainers = {}
    for name, model in models.items():
        model.to("cuda" if torch.cuda.is_available() else "cpu")
        optimizer, schedule = cp.make_optimizer(model, peak_learning_rate=recipe["peak_learning_rate"],
                                                warmup_steps=recipe["warmup"])
        if fused_adam:
            optimizer = torch.optim.Adam(model.parameters(), **{**optimizer.defaults, "fused": True})
            schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule.lr_lambdas[0])
        trainers[name] = cp.Trainer(model, optimizer, schedule, label_smoothing=recipe["label_smoothing"],
                                    seed=0, precision=precision)
    return trainers, batch


def profile_steps(trainer, batch, steps, warmup):
    """``key_averages()`` of ``steps`` training steps after ``warmup`` untimed ones."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        trainer.train_step(*batch)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            trainer.train_step(*batch)  # returns floats: waits for the device
    return prof.key_averages()


def summary(events, steps, top):
    """Per-step totals, counts and the ``top`` ops by self time (device time on a GPU)."""
    device = any(getattr(e, "self_device_time_total", 0) for e in events)
    key = "self_device_time_total" if device else "self_cpu_time_total"
    calls = Counter({e.key: e.count for e in events})
    counts = {name: sum(calls[k] for k in keys) / steps for name, keys in COUNTED.items()}
    ops = sorted(events, key=lambda e: getattr(e, key), reverse=True)[:top]
    kernels = [e for e in events if str(getattr(e, "device_type", "")).endswith("CUDA")]
    timed = kernels if device and kernels else events  # on a GPU the kernels: an op's self time repeats them
    return {"clock": "device" if device else "cpu",
            "ms_per_step": sum(getattr(e, key) for e in timed) / steps / 1e3,
            **{f"{name} per step": round(n, 2) for name, n in counts.items()},
            "top": [{"op": e.key, "us per step": round(getattr(e, key) / steps, 1),
                     "calls per step": round(e.count / steps, 2)} for e in ops]}


def show(precision, results):
    """Print one precision's comparison: the totals, then each model's top ops."""
    print(f"\n## {precision}")
    names = list(results)
    rows = [k for k in results[names[0]] if k not in ("top", "clock")]
    print("| per step | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for row in rows:
        print(f"| {row} | " + " | ".join(f"{results[n][row]:.2f}" for n in names) + " |")
    for name in names:
        print(f"\n{name}: top ops by self {results[name]['clock']} time")
        for op in results[name]["top"]:
            print(f"  {op['us per step']:>10.1f} us  {op['calls per step']:>7.2f} calls  {op['op']}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--fused-adam", action="store_true", help="both models with Adam(fused=True)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        torch.set_num_threads(1)
    report = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU",
              "torch": torch.__version__, "precisions": {}}
    for precision in args.precisions:
        trainers, batch = models_and_batch(precision, args.fused_adam)
        results = {name: summary(profile_steps(trainer, batch, args.steps, args.warmup), args.steps, args.top)
                   for name, trainer in trainers.items()}
        report["precisions"][precision] = results
        show(precision, results)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
