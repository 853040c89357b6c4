"""Training-step speed: the course's Transformers against the frameworks' own building blocks.

Same configuration on both sides (batch 64, length 32, d_model 128, 4 heads,
dff 512, 2 + 2 layers, vocabularies of 1000, dropout 0.1), same embeddings,
positional encoding, output layer, masked loss and Adam; only the attention
stack differs:

- PyTorch: ``course_pkg.torch.Transformer`` vs a model built on ``torch.nn.Transformer``
  (post-LN, ``layer_norm_eps=1e-6``, the same masks as boolean masks);
- TensorFlow: ``course_pkg.tensorflow.Transformer`` vs a Keras model of the same
  size built from ``keras.layers.MultiHeadAttention``, both trained in a ``tf.function``.

The two models of a pair are timed in alternation, ROUNDS times, and the
median step time of each is reported; ratio = course / framework (lower is
faster), against the targets of issue 15 (<= 0.80 for both frameworks). Step
times are CPU time of the process (``time.process_time``, all its threads) by
default, which a machine shared with other work inflates less than wall time;
``--clock wall`` measures wall time. The load average is printed with the result.

Run:  python benchmarks/training_speed.py [--framework torch|tensorflow|both]
      [--torch-threads N] [--clock cpu|wall] [--rounds R]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

from course_pkg.timing import median_times  # noqa: E402

BATCH, LENGTH, D_MODEL, HEADS, DFF, LAYERS, VOCAB = 64, 32, 128, 4, 512, 2, 1000
DROPOUT, ROUNDS, STEPS_PER_ROUND, WARMUP_STEPS = 0.1, 5, 10, 5
TARGET = 0.80  # course step time / the framework's model (issue 15)


def make_tokens(seed=0):
    """Random token ids with ragged padding (0) at the end of each row."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(3, VOCAB, size=(3, BATCH, LENGTH))
    lengths = rng.integers(LENGTH // 2, LENGTH + 1, size=(3, BATCH))
    tokens[np.arange(LENGTH)[None, None, :] >= lengths[..., None]] = 0
    return tokens[0], tokens[1], tokens[2]  # src, tgt_in, tgt_out


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_pair(step_a, step_b, clock="cpu", rounds=ROUNDS, warmup=WARMUP_STEPS, calls=STEPS_PER_ROUND):
    """Alternate the two step functions; return the median seconds per step of each
    (``clock``: "cpu", the process's CPU time, or "wall"; ``warmup`` untimed steps each first,
    then ``rounds`` rounds of ``calls`` steps)."""
    times = median_times({"a": step_a, "b": step_b}, CLOCKS[clock], rounds, warmup=warmup, calls=calls)
    return times["a"], times["b"]


def load_average():
    """The 1-minute load average, or None where the platform has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# --------------------------------------------------------------------------- PyTorch
def torch_nn_transformer(input_vocab_size=VOCAB, target_vocab_size=VOCAB, max_len=LENGTH, d_model=D_MODEL,
                         num_heads=HEADS, num_layers=LAYERS, dff=DFF, dropout=DROPOUT):
    """The course's embeddings, positional encoding and output layer around ``torch.nn.Transformer``
    (post-LN, ``layer_norm_eps=1e-6``, the course's masks as boolean masks): the PyTorch reference
    model of these benchmarks (``benchmarks/gpu_check.py`` builds it at chapter 6's size)."""
    import torch
    from torch import nn

    from course_pkg import torch as cp

    class TorchNNTransformer(nn.Module):
        """Embeddings + positional encoding + torch.nn.Transformer + output layer."""

        def __init__(self):
            super().__init__()
            self.src_embedding = cp.PositionalEmbedding(input_vocab_size, d_model, max_len)
            self.tgt_embedding = cp.PositionalEmbedding(target_vocab_size, d_model, max_len)
            self.dropout = nn.Dropout(dropout)
            self.transformer = nn.Transformer(
                d_model, num_heads, num_layers, num_layers, dff, dropout, batch_first=True,
                layer_norm_eps=1e-6, norm_first=False)
            self.final_layer = nn.Linear(d_model, target_vocab_size)

        def forward(self, src, tgt):
            causal = torch.triu(torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool,
                                           device=tgt.device), diagonal=1)
            out = self.transformer(
                self.dropout(self.src_embedding(src)), self.dropout(self.tgt_embedding(tgt)),
                tgt_mask=causal, src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0,
                memory_key_padding_mask=src == 0)
            return self.final_layer(out)

    return TorchNNTransformer()


def torch_pair():
    import torch

    from course_pkg import torch as cp

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    src, tgt_in, tgt_out = (torch.as_tensor(t, device=device) for t in make_tokens())

    def make_step(model):
        model.to(device).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss = cp.masked_loss(tgt_out, model(src, tgt_in))
            loss.backward()
            optimizer.step()
        return step

    course = cp.Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, DROPOUT)
    reference = torch_nn_transformer()
    params = [sum(p.numel() for p in m.parameters()) for m in (course, reference)]
    return "torch.nn.Transformer", make_step(course), make_step(reference), params, TARGET


# ------------------------------------------------------------------------ TensorFlow
def keras_train_step(model, src, tgt_in, tgt_out):
    """One Adam step of a Keras ``model`` on the fixed batch, as a ``tf.function`` traced on its first
    call: the same step for every TensorFlow model these benchmarks time."""
    import keras
    import tensorflow as tf

    from course_pkg import tensorflow as cp

    model(src, tgt_in)  # build
    optimizer = keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = cp.masked_loss(tgt_out, model(src, tgt_in, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def keras_mha_transformer():
    """The TensorFlow pair's reference: a post-LN Transformer of the course's size whose attention
    stack is built from ``keras.layers.MultiHeadAttention`` (the course's embeddings and head)."""
    import keras
    import tensorflow as tf
    from keras import layers

    from course_pkg import tensorflow as cp

    class KerasBlock(layers.Layer):
        """Post-LN encoder (cross=False) or decoder (cross=True) layer from keras.layers."""

        def __init__(self, cross):
            super().__init__()
            self.self_attn = layers.MultiHeadAttention(HEADS, D_MODEL // HEADS, dropout=0.0)
            self.cross_attn = layers.MultiHeadAttention(HEADS, D_MODEL // HEADS) if cross else None
            self.ffn = keras.Sequential([layers.Dense(DFF, activation="relu"),
                                         layers.Dropout(DROPOUT), layers.Dense(D_MODEL)])
            self.norms = [layers.LayerNormalization(epsilon=1e-6) for _ in range(3 if cross else 2)]
            self.drops = [layers.Dropout(DROPOUT) for _ in range(3 if cross else 2)]

        def call(self, x, self_mask, memory=None, cross_mask=None, training=None):
            x = self.norms[0](x + self.drops[0](
                self.self_attn(x, x, attention_mask=self_mask, training=training), training=training))
            if self.cross_attn is not None:
                x = self.norms[1](x + self.drops[1](self.cross_attn(
                    x, memory, attention_mask=cross_mask, training=training), training=training))
            return self.norms[-1](x + self.drops[-1](self.ffn(x, training=training),
                                                     training=training))

    class KerasMHATransformer(keras.Model):
        """Encoder and decoder stacks of ``KerasBlock`` between the course's embeddings and a Dense."""

        def __init__(self):
            super().__init__()
            self.src_embedding = cp.PositionalEmbedding(VOCAB, D_MODEL, LENGTH)
            self.tgt_embedding = cp.PositionalEmbedding(VOCAB, D_MODEL, LENGTH)
            self.dropout = layers.Dropout(DROPOUT)
            self.encoder = [KerasBlock(cross=False) for _ in range(LAYERS)]
            self.decoder = [KerasBlock(cross=True) for _ in range(LAYERS)]
            self.final_layer = layers.Dense(VOCAB)

        def call(self, src, tgt, training=None):
            src_keep = tf.not_equal(src, 0)[:, tf.newaxis, :]  # (batch, 1, src_len): True = attend
            tgt_len = tf.shape(tgt)[1]
            causal = tf.linalg.band_part(tf.ones((tgt_len, tgt_len), tf.bool), -1, 0)
            tgt_keep = tf.logical_and(causal[tf.newaxis], tf.not_equal(tgt, 0)[:, tf.newaxis, :])
            x = self.dropout(self.src_embedding(src), training=training)
            for block in self.encoder:
                x = block(x, src_keep, training=training)
            y = self.dropout(self.tgt_embedding(tgt), training=training)
            for block in self.decoder:
                y = block(y, tgt_keep, x, src_keep, training=training)
            return self.final_layer(y)

    return KerasMHATransformer()


def tensorflow_pair():
    """``course_pkg.tensorflow.Transformer`` against :func:`keras_mha_transformer`, seeded."""
    import keras
    import tensorflow as tf

    from course_pkg import tensorflow as cp

    keras.utils.set_random_seed(0)
    src, tgt_in, tgt_out = (tf.constant(t) for t in make_tokens())

    def make_step(model):
        return keras_train_step(model, src, tgt_in, tgt_out)

    course = cp.Transformer(LAYERS, D_MODEL, HEADS, DFF, VOCAB, VOCAB, LENGTH, DROPOUT)
    reference = keras_mha_transformer()
    steps = make_step(course), make_step(reference)
    params = [m.count_params() for m in (course, reference)]
    return "keras.layers.MultiHeadAttention model", steps[0], steps[1], params, TARGET


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", choices=["torch", "tensorflow", "both"], default="both")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: CPU time of the process (default); wall: wall time")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds per model")
    args = parser.parse_args()
    if args.torch_threads is not None and args.framework != "tensorflow":
        import torch

        torch.set_num_threads(args.torch_threads)
    print(f"config: batch {BATCH}, length {LENGTH}, d_model {D_MODEL}, heads {HEADS}, dff {DFF}, "
          f"layers {LAYERS}+{LAYERS}, vocab {VOCAB}; median of {args.rounds} rounds x "
          f"{STEPS_PER_ROUND} steps, interleaved, {args.clock} time, {os.cpu_count()} CPUs, "
          f"load {load_average()}")
    failures = 0
    for name in (["torch", "tensorflow"] if args.framework == "both" else [args.framework]):
        other, course_step, ref_step, params, limit = (torch_pair if name == "torch"
                                                       else tensorflow_pair)()
        course_s, ref_s = time_pair(course_step, ref_step, args.clock, args.rounds)
        ratio = course_s / ref_s
        ok = ratio <= limit
        failures += not ok
        print(f"{name:10s} course {course_s * 1e3:7.1f} ms/step ({params[0]:,} params) | "
              f"{other} {ref_s * 1e3:7.1f} ms/step ({params[1]:,} params) | "
              f"ratio {ratio:.2f} (target <= {limit:.2f}: {'ok' if ok else 'MISSED'}) | "
              f"load {load_average()}")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
