"""Greedy decoding with the key/value cache against recomputing the prefix at every step.

Trains a course Transformer on French -> English numbers for ``--train-seconds``
(so that it stops at ``<eos>`` where a real model would), then greedily decodes
``--sentences`` held-out sentences twice, in batches of ``--batch-size``:

- cached: ``greedy_decode(model, src)``, one new token through the decoder per step;
- recomputed: ``greedy_decode(model, src, use_cache=False)``, the whole model
  on the whole prefix at every step.

Both must give the same tokens; the speed-up (target >= 3x) is printed per framework.
In TensorFlow both ways run as ``tf.function`` graphs; the first (warm-up) pass,
which traces them, is timed and printed separately.

    python benchmarks/decoding_speed.py [--frameworks torch tensorflow]
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402

from course_pkg import data  # noqa: E402

TRANSFORMER = dict(num_layers=2, d_model=128, num_heads=4, dff=256, dropout=0.1)
REPEATS = 3


def to_numpy(tokens):
    return tokens.detach().cpu().numpy() if hasattr(tokens, "detach") else tokens.numpy()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", nargs="+", default=["torch", "tensorflow"],
                        choices=["torch", "tensorflow"])
    parser.add_argument("--train-seconds", type=float, default=60.0)
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=500,
                        help="sentences decoded together (default: translate()'s default, 500)")
    return parser.parse_args()


def trained_model(name, corpus, src_vocab, tgt_vocab, max_len, seconds):
    """The framework's package and a Transformer trained on ``corpus`` for ``seconds``."""
    if name == "torch":
        import torch

        from course_pkg import torch as cp
        torch.manual_seed(0)
    else:
        import keras

        from course_pkg import tensorflow as cp
        keras.utils.set_random_seed(0)
    model = cp.Transformer(input_vocab_size=len(src_vocab), target_vocab_size=len(tgt_vocab),
                           max_len=max_len, **TRANSFORMER)
    trainer = cp.Trainer(model, warmup_steps=1000, seed=0)
    trainer.fit(cp.make_batches(corpus.train, src_vocab, tgt_vocab, 128, shuffle=True, max_len=max_len),
                epochs=1000, time_budget=seconds, progress=False)
    return cp, model


def time_decoding(cp, model, batches, max_len):
    """``(timings, outputs, first)`` per ``use_cache``: the median of REPEATS runs, the tokens,
    and the first (warm-up) run's time."""
    def decode(use_cache):
        return [to_numpy(cp.greedy_decode(model, src, max_len=max_len - 1, use_cache=use_cache))
                for src in batches]

    timings, outputs, first = {}, {}, {}
    for use_cache in (True, False):
        start = time.perf_counter()
        decode(use_cache)  # warm-up (traces the tf.function graphs in TensorFlow)
        first[use_cache] = time.perf_counter() - start
        runs = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            outputs[use_cache] = decode(use_cache)
            runs.append(time.perf_counter() - start)
        timings[use_cache] = statistics.median(runs)
    return timings, outputs, first


def main():
    args = parse_args()
    corpus = data.make_number_corpus("fr", "en", seed=0)
    tokenizer = data.Tokenizer()
    src_vocab = data.Vocab.build([s for s, _ in corpus.train], tokenizer)
    tgt_vocab = data.Vocab.build([t for _, t in corpus.train], tokenizer)
    max_len = 16
    sources = [s for s, _ in corpus.test[:args.sentences]]
    batches = [data.pad_batch([src_vocab.encode(s, add_eos=True) for s in sources[i:i + args.batch_size]])
               for i in range(0, len(sources), args.batch_size)]
    print(f"{len(sources)} test sentences in batches of {args.batch_size}; models trained "
          f"{args.train_seconds:.0f} s; median of {REPEATS} runs; {os.cpu_count()} CPUs")

    failures = 0
    for name in args.frameworks:
        cp, model = trained_model(name, corpus, src_vocab, tgt_vocab, max_len, args.train_seconds)
        timings, outputs, first = time_decoding(cp, model, batches, max_len)
        same = all(np.array_equal(a, b) for a, b in zip(outputs[True], outputs[False]))
        steps = statistics.mean(o.shape[1] for o in outputs[True])
        speedup = timings[False] / timings[True]
        ok = speedup >= 3.0 and same
        failures += not ok
        predictions = [tgt_vocab.decode(ids) for out in outputs[True] for ids in out]
        exact = np.mean([p == t for p, (_, t) in zip(predictions, corpus.test)])
        print(f"{name:10s} cached {timings[True]:6.2f} s | recomputed {timings[False]:6.2f} s | "
              f"speed-up {speedup:4.1f}x (target >= 3x: {'ok' if ok else 'MISSED'}) | same tokens: "
              f"{same} | {steps:.1f} steps per batch on average | exact match {100 * exact:.1f}% | "
              f"first (warm-up) pass {first[True]:.2f} s / {first[False]:.2f} s")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
