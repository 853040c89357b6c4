"""Fused attention vs the explicit path: training-step time of the course's Transformer.

The same ``course_pkg`` Transformer (the configuration of ``training_speed.py``: batch 64,
length 32, d_model 128, 4 heads, dff 512, 2 + 2 layers, vocabularies of 1000, dropout 0.1,
masked loss, Adam) trained with the fused kernel (the default when no attention weights are
requested: ``F.scaled_dot_product_attention`` / ``keras.ops.dot_product_attention``) and
with the explicit path forced by ``set_fused_attention(False)``. The two steps are timed in
alternation, ROUNDS times, and the median step time of each is reported;
speed-up = explicit / fused (higher is faster). TensorFlow steps run in a ``tf.function``,
each traced under its own setting of the switch.

Run:  python benchmarks/fused_attention.py [--framework torch|tensorflow|both] [--torch-threads N]
(on a busy 2-core machine, ``--torch-threads 1`` keeps torch's two threads from spinning
against each other and against the other processes).
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

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
    from course_pkg.tensorflow.attention import set_fused_attention

    keras.utils.set_random_seed(0)
    src, tgt_in, tgt_out = (tf.constant(t) for t in make_tokens())
    model = cp.Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, DROPOUT)
    model(src, tgt_in)  # build

    def make_step(fused):
        optimizer = keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

        @tf.function
        def traced():
            with tf.GradientTape() as tape:
                loss = cp.masked_loss(tgt_out, model(src, tgt_in, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        previous = set_fused_attention(fused)
        try:
            traced()  # trace under this setting; later calls reuse the traced graph
        finally:
            set_fused_attention(previous)
        return traced

    return make_step(True), make_step(False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", choices=["torch", "tensorflow", "both"], default="both")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    args = parser.parse_args()
    if args.torch_threads is not None and args.framework != "tensorflow":
        import torch

        torch.set_num_threads(args.torch_threads)
    print(f"config: batch {BATCH}, length {LENGTH}, d_model {D_MODEL}, heads {HEADS}, dff {DFF}, "
          f"layers {LAYERS}+{LAYERS}, vocab {VOCAB}; median of {ROUNDS} rounds x "
          f"{STEPS_PER_ROUND} steps, interleaved, {os.cpu_count()} CPUs")
    for name in (["torch", "tensorflow"] if args.framework == "both" else [args.framework]):
        fused_step, explicit_step = (torch_steps if name == "torch" else tensorflow_steps)()
        fused_s, explicit_s = time_pair(fused_step, explicit_step)
        print(f"{name:10s} fused {fused_s * 1e3:7.1f} ms/step | explicit {explicit_s * 1e3:7.1f} ms/step | "
              f"speed-up {explicit_s / fused_s:.2f}x")


if __name__ == "__main__":
    main()
