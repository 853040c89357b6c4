"""Fused attention vs the explicit path: training-step time of the course's Transformer.

The same ``course_pkg`` Transformer (the configuration of ``training_speed.py``: batch 64,
length 32, d_model 128, 4 heads, dff 512, 2 + 2 layers, vocabularies of 1000, dropout 0.1,
masked loss, Adam) trained with the fused path (the default when no attention weights are
requested: PyTorch's fused kernel ``F.scaled_dot_product_attention``; in TensorFlow, which has no
fused kernel, the computation of ``keras.ops.dot_product_attention`` without the weights) and
with the explicit path forced by ``set_fused_attention(False)``. The two steps are timed in
alternation, ROUNDS times, and the median step time of each is reported;
speed-up = explicit / fused (higher is faster). TensorFlow steps run in a ``tf.function``,
each traced under its own setting of the switch. Times are CPU time of the process
(``time.process_time``), less inflated than wall time on a shared machine.

``--guard-cost`` times instead what the course's guards cost per training step (a fully
blocked row gives zeros, never NaN; a NaN stored at a blocked key reaches no other query):
each path as shipped against the same path with its guards removed (the bare kernel, or the
bare masked softmax); cost = guarded / bare - 1. In torch the fused path is also timed with
the guards always run (as on accelerators and under ``torch.compile``).

Run:  python benchmarks/fused_attention.py [--framework torch|tensorflow|both] [--torch-threads N]
      [--attention-only | --guard-cost]
(on a busy 2-core machine, ``--torch-threads 1`` keeps torch's two threads from spinning
against each other and against the other processes).
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
from training_speed import (  # noqa: E402  (this folder is on sys.path when run as a script)
    BATCH,
    D_MODEL,
    DFF,
    DROPOUT,
    HEADS,
    LAYERS,
    LENGTH,
    ROUNDS,
    STEPS_PER_ROUND,
    VOCAB,
    keras_train_step,
    make_tokens,
    time_pair,
)


def torch_steps():
    import torch

    from course_pkg import torch as cp
    from course_pkg.torch.attention import set_fused_attention

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    src, tgt_in, tgt_out = (torch.as_tensor(t, device=device) for t in make_tokens())
    model = cp.Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, DROPOUT).to(device).train()

    def make_step(fused):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def step():
            previous = set_fused_attention(fused)
            try:
                optimizer.zero_grad(set_to_none=True)
                loss = cp.masked_loss(tgt_out, model(src, tgt_in))
                loss.backward()
                optimizer.step()
            finally:
                set_fused_attention(previous)
        return step

    return make_step(True), make_step(False)


def tensorflow_steps():
    import keras
    import tensorflow as tf

    from course_pkg import tensorflow as cp

    keras.utils.set_random_seed(0)
    src, tgt_in, tgt_out = (tf.constant(t) for t in make_tokens())
    model = cp.Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, DROPOUT)

    def make_step(fused):
        traced = keras_train_step(model, src, tgt_in, tgt_out)
        previous = cp.set_fused_attention(fused)
        try:
            traced()  # trace under this setting; later calls reuse the traced graph
        finally:
            cp.set_fused_attention(previous)
        return traced

    return make_step(True), make_step(False)


def attention_steps(name):
    """Forward + backward of one course MultiHeadAttention (self-attention under the combined
    mask of the decoder), without weights (fused) and with them (explicit)."""
    src, tgt_in, _ = make_tokens()
    x = np.random.default_rng(1).normal(size=(BATCH, LENGTH, D_MODEL)).astype(np.float32)
    if name == "torch":
        import torch

        from course_pkg import torch as cp

        torch.manual_seed(0)
        mha = cp.MultiHeadAttention(D_MODEL, HEADS)
        x_t, mask = torch.tensor(x, requires_grad=True), cp.create_combined_mask(torch.as_tensor(tgt_in))

        def make_step(need_weights):
            def step():
                out, _ = mha(x_t, x_t, x_t, mask, need_weights=need_weights)
                out.sum().backward()
            return step
        return make_step(False), make_step(True)
    import tensorflow as tf

    from course_pkg import tensorflow as cp

    mha = cp.MultiHeadAttention(D_MODEL, HEADS)
    x_t, mask = tf.Variable(x), cp.create_combined_mask(tf.constant(tgt_in))

    def make_step(need_weights):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                out, _ = mha(x_t, x_t, x_t, mask, need_weights=need_weights)
                loss = tf.reduce_sum(out)
            return tape.gradient(loss, [x_t] + mha.trainable_variables)
        return step
    return make_step(False), make_step(True)


def bare_kernels(name):
    """The fused and explicit attention without the course's guards (same masks, same math
    on rows that see at least one key): what the guards are measured against."""
    if name == "torch":
        import torch
        import torch.nn.functional as F

        def fused_bare(q, k, v, mask=None):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else mask == 0)

        def explicit_bare(q, k, v, mask=None):
            logits = torch.matmul(q / q.shape[-1] ** 0.5, k.transpose(-2, -1))  # (..., Tq, Tk)
            if mask is not None:
                logits = logits.masked_fill(mask != 0, torch.finfo(logits.dtype).min)
            weights = torch.softmax(logits, dim=-1)
            return torch.matmul(weights, v), weights
        return fused_bare, explicit_bare
    import tensorflow as tf

    def fused_bare_tf(q, k, v, mask=None):  # the fused path's masked softmax, without its guards
        return explicit_bare_tf(q, k, v, mask)[0]

    def explicit_bare_tf(q, k, v, mask=None):
        logits = tf.matmul(q / q.shape[-1] ** 0.5, k, transpose_b=True)  # (..., Tq, Tk)
        if mask is not None:
            logits = tf.where(tf.not_equal(mask, 0), tf.float32.min, logits)
        weights = tf.nn.softmax(logits, axis=-1)
        return tf.matmul(weights, v), weights
    return fused_bare_tf, explicit_bare_tf


def guard_cost(name, time_pair_args):
    """Training-step time with the guards as shipped vs without them, for each path."""
    import importlib

    module = importlib.import_module(f"course_pkg.{name}.attention")
    fused_bare, explicit_bare = bare_kernels(name)
    shipped = {"fused_attention": module.fused_attention,
               "scaled_dot_product_attention": module.scaled_dot_product_attention}

    def steps_with(fused_on, **replace):
        """A training step (fused or explicit) whose MultiHeadAttention calls ``replace``d kernels."""
        for attr, fn in {**shipped, **replace}.items():
            setattr(module, attr, fn)
        try:
            fused_step, explicit_step = (torch_steps if name == "torch" else tensorflow_steps)()
            step = fused_step if fused_on else explicit_step
            if name == "torch":  # eager: swap the kernels at each call
                def swapped(step=step, replace=dict(shipped, **replace)):
                    old = {attr: getattr(module, attr) for attr in replace}
                    for attr, fn in replace.items():
                        setattr(module, attr, fn)
                    try:
                        step()
                    finally:
                        for attr, fn in old.items():
                            setattr(module, attr, fn)
                return swapped
            return step  # TensorFlow: traced with the kernels in place at trace time
        finally:
            for attr, fn in shipped.items():
                setattr(module, attr, fn)

    pairs = [("fused", steps_with(True), steps_with(True, fused_attention=fused_bare)),
             ("explicit", steps_with(False),
              steps_with(False, scaled_dot_product_attention=explicit_bare))]
    if name == "torch":
        def always(step=steps_with(True)):
            previous = module.set_fused_guards(True)
            try:
                step()
            finally:
                module.set_fused_guards(previous)
        pairs.append(("fused, guards always", always, steps_with(True, fused_attention=fused_bare)))
    for label, guarded, bare in pairs:
        guarded_s, bare_s = time_pair(guarded, bare, *time_pair_args)
        print(f"{name:10s} {label:21s} guarded {guarded_s * 1e3:7.1f} ms | bare {bare_s * 1e3:7.1f} ms | "
              f"guard cost {100 * (guarded_s / bare_s - 1):+.1f}% of a training step")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", choices=["torch", "tensorflow", "both"], default="both")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--attention-only", action="store_true",
                        help="time one MultiHeadAttention forward + backward instead of a training step")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds per variant")
    parser.add_argument("--guard-cost", action="store_true",
                        help="time the guards (fully blocked rows, NaN at blocked keys) per training step")
    args = parser.parse_args()
    if args.torch_threads is not None and args.framework != "tensorflow":
        import torch

        torch.set_num_threads(args.torch_threads)
    print(f"config: batch {BATCH}, length {LENGTH}, d_model {D_MODEL}, heads {HEADS}, dff {DFF}, "
          f"layers {LAYERS}+{LAYERS}, vocab {VOCAB}; median of {args.rounds} rounds x "
          f"{STEPS_PER_ROUND} steps, interleaved, cpu time, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    for name in (["torch", "tensorflow"] if args.framework == "both" else [args.framework]):
        if args.guard_cost:
            guard_cost(name, ("cpu", args.rounds))
            continue
        if args.attention_only:
            fused_step, explicit_step = attention_steps(name)
        else:
            fused_step, explicit_step = (torch_steps if name == "torch" else tensorflow_steps)()
        fused_s, explicit_s = time_pair(fused_step, explicit_step, "cpu", args.rounds)
        what = "attention fwd+bwd" if args.attention_only else "training step"
        print(f"{name:10s} {what}: fused {fused_s * 1e3:7.1f} ms | explicit {explicit_s * 1e3:7.1f} ms | "
              f"speed-up {explicit_s / fused_s:.2f}x")


if __name__ == "__main__":
    main()
