"""French -> English numbers: held-out exact match and training CPU time of chapter 6's recipe.

Trains the course Transformer with chapter 6's recipe (or the one given by the options) in
every framework asked for, once per seed, then decodes the 3 000 held-out test numbers
greedily and prints a table of seeds x frameworks: exact match, CPU seconds of training
(``time.process_time`` around ``Trainer.fit`` only: the process's CPU time over all its
threads, which a busy machine disturbs less than wall-clock time) and the load average
(``os.getloadavg``, 1 minute) when the training ended. Target: >= 99% exact match on every
seed in <= 30 CPU seconds of training per framework.

    python benchmarks/translation_accuracy.py                     # the chapter's recipe, seeds 0-2
    python benchmarks/translation_accuracy.py --seeds 0 1 2 3 4 5 --steps 250 --eval-at 150 200
    python benchmarks/translation_accuracy.py --frameworks torch --d-model 128 --dff 256 --batch 64
    python benchmarks/translation_accuracy.py --baselines         # + the GRU seq2seq of chapters 1-2

Like the chapter, both frameworks train in one process and PyTorch uses one thread
(``--torch-threads``): on a small CPU, PyTorch's OpenMP threads suffer from TensorFlow's.
The training is seeded and its number of steps fixed, so a run on the same machine repeats
its accuracy; the CPU seconds vary with the processor and its load.
"""

import argparse
import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from course_pkg import data  # noqa: E402
from course_pkg.evaluation import accuracy_by_length, corpus_bleu, exact_match  # noqa: E402

# Chapter 6's recipe (book/06_training.ipynb, section 6.6): the defaults of the options below.
RECIPE = dict(steps=200, log_every=25, batch=128, warmup=150, peak_learning_rate=0.0036,
              label_smoothing=0.1, num_layers=2, d_model=64, num_heads=4, dff=128, dropout=0.0)
MAX_LEN = 10  # the chapter's: the longest source has 9 tokens + <eos>
GRU = dict(embedding_dim=64, units=256)
FRAMEWORK_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow"}


def framework(name, seed, torch_threads):
    """The course subpackage, its generator seeded."""
    if name == "torch":
        import torch

        from course_pkg import torch as cp
        torch.set_num_threads(torch_threads)
        torch.manual_seed(seed)
    else:
        import keras

        from course_pkg import tensorflow as cp
        keras.utils.set_random_seed(seed)
    return cp


def number_data():
    """The chapter's French -> English number corpus (seed 0) and its two vocabularies."""
    corpus = data.make_number_corpus("fr", "en")
    src_vocab = data.Vocab.build([s for s, _ in corpus.train], data.Tokenizer("fr"))
    tgt_vocab = data.Vocab.build([t for _, t in corpus.train], data.Tokenizer("en"))
    return corpus, src_vocab, tgt_vocab


def train_transformer(name, seed, recipe, corpus, src_vocab, tgt_vocab, torch_threads, eval_at=()):
    """One run of the recipe: CPU seconds of training, held-out exact match and more.

    ``eval_at``: earlier steps (multiples of ``log_every``) at which to decode the test split too
    (the Noam schedule does not depend on the number of steps, so the first N steps of a longer
    run are a run of N steps); returns their ``(step, exact, cpu_s, wall_s)`` under ``"curve"``
    (the seconds of training up to that step)."""
    cp = framework(name, seed, torch_threads)
    model = cp.Transformer(num_layers=recipe["num_layers"], d_model=recipe["d_model"],
                           num_heads=recipe["num_heads"], dff=recipe["dff"],
                           dropout=recipe["dropout"], input_vocab_size=len(src_vocab),
                           target_vocab_size=len(tgt_vocab), max_len=MAX_LEN)
    trainer = cp.Trainer(model, warmup_steps=recipe["warmup"],
                         peak_learning_rate=recipe["peak_learning_rate"],
                         label_smoothing=recipe["label_smoothing"], seed=seed)
    train = cp.make_batches(corpus.train, src_vocab, tgt_vocab, recipe["batch"], shuffle=True,
                            seed=seed, max_len=MAX_LEN)
    # as the chapter does: fit log_every steps at a time (each call starts a freshly shuffled
    # pass), here without the validation between the calls, which is no training
    sources = [src for src, _ in corpus.test]
    references = [tgt for _, tgt in corpus.test]
    cpu, wall, losses, curve = 0.0, 0.0, [], []
    left = recipe["steps"]
    while left > 0:
        chunk = min(recipe["log_every"], left)
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        history = trainer.fit(train, epochs=math.ceil(chunk / len(train)), max_steps=chunk,
                              progress=False)
        cpu += time.process_time() - start_cpu
        wall += time.perf_counter() - start_wall
        losses += history["loss"]
        left -= chunk
        if left > 0 and trainer.step in eval_at:  # decoding is not training: not timed
            predictions = cp.translate(model, sources, src_vocab, tgt_vocab)
            curve.append((trainer.step, exact_match(predictions, references), cpu, wall))
    load = os.getloadavg()[0]
    predictions = cp.translate(model, sources, src_vocab, tgt_vocab)
    return {"framework": name, "seed": seed, "steps": trainer.step, "cpu_s": cpu, "wall_s": wall,
            "load": load, "loss": losses[-1], "exact": exact_match(predictions, references),
            "wrong": sum(p != r for p, r in zip(predictions, references)),
            "curve": curve}


def train_gru(name, attention, corpus, src_vocab, tgt_vocab, budget, seed, torch_threads):
    """A GRU seq2seq of chapters 1-2 for ``budget`` wall-clock seconds (Adam, constant 1e-3)."""
    cp = framework(name, seed, torch_threads)
    model = cp.Seq2Seq(len(src_vocab), len(tgt_vocab), attention=attention, **GRU)
    if name == "torch":
        import torch
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        import keras
        optimizer = keras.optimizers.Adam(1e-3)
    trainer = cp.Trainer(model, optimizer=optimizer, label_smoothing=0.0, seed=seed)
    train = cp.make_batches(corpus.train, src_vocab, tgt_vocab, RECIPE["batch"], shuffle=True,
                            seed=seed, max_len=MAX_LEN)
    start_cpu = time.process_time()
    history = trainer.fit(train, epochs=10_000, time_budget=budget, progress=False)
    cpu = time.process_time() - start_cpu
    sources = [src for src, _ in corpus.test]
    references = [tgt for _, tgt in corpus.test]
    predictions = cp.translate(model, sources, src_vocab, tgt_vocab, max_len=MAX_LEN - 1)
    return {"label": f"{name} GRU seq2seq, attention={attention}", "steps": trainer.step,
            "train_s": history["elapsed"][-1], "cpu_s": cpu,
            "exact": exact_match(predictions, references),
            "bleu": corpus_bleu(predictions, references),
            "by_length": accuracy_by_length(predictions, references, sources)}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", nargs="+", default=["tensorflow", "torch"],
                        choices=["torch", "tensorflow"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=RECIPE["steps"], help="training steps")
    parser.add_argument("--log-every", type=int, default=RECIPE["log_every"],
                        help="steps per Trainer.fit call, as in the chapter")
    parser.add_argument("--batch", type=int, default=RECIPE["batch"], help="pairs per batch")
    parser.add_argument("--warmup", type=int, default=RECIPE["warmup"], help="Noam warm-up steps")
    parser.add_argument("--peak-learning-rate", type=float, default=RECIPE["peak_learning_rate"],
                        help="the Noam schedule's rate at the end of the warm-up")
    parser.add_argument("--label-smoothing", type=float, default=RECIPE["label_smoothing"])
    parser.add_argument("--layers", dest="num_layers", type=int, default=RECIPE["num_layers"])
    parser.add_argument("--d-model", type=int, default=RECIPE["d_model"])
    parser.add_argument("--heads", dest="num_heads", type=int, default=RECIPE["num_heads"])
    parser.add_argument("--dff", type=int, default=RECIPE["dff"])
    parser.add_argument("--dropout", type=float, default=RECIPE["dropout"])
    parser.add_argument("--eval-at", nargs="*", type=int, default=[],
                        help="earlier steps at which to decode the test split too (not timed)")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--target-exact", type=float, default=0.99)
    parser.add_argument("--target-cpu", type=float, default=30.0, help="CPU seconds of training")
    parser.add_argument("--baselines", action="store_true",
                        help="also the GRU seq2seq without and with attention, --budget s each")
    parser.add_argument("--baseline-framework", default="torch", choices=["torch", "tensorflow"])
    parser.add_argument("--budget", type=float, default=180.0, help="wall seconds per GRU baseline")
    return parser.parse_args()


def main():
    args = parse_args()
    recipe = {key: getattr(args, key) for key in RECIPE}
    corpus, src_vocab, tgt_vocab = number_data()
    print(f"corpus fr->en: {len(corpus.train)} train / {len(corpus.test)} test pairs (disjoint "
          f"numbers); {os.cpu_count()} CPUs; load average at start "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("recipe: " + ", ".join(f"{key}={value}" for key, value in recipe.items()))
    print(f"{'framework':11s} {'seed':>4s} {'steps':>5s} {'exact %':>8s} {'wrong':>5s} "
          f"{'CPU s':>6s} {'wall s':>6s} {'load':>5s} {'loss':>6s}")
    results = []
    for seed in args.seeds:
        for name in args.frameworks:
            r = train_transformer(name, seed, recipe, corpus, src_vocab, tgt_vocab,
                                  args.torch_threads, set(args.eval_at))
            results.append(r)
            print(f"{FRAMEWORK_NAMES[name]:11s} {seed:4d} {r['steps']:5d} {100 * r['exact']:8.2f} "
                  f"{r['wrong']:5d} {r['cpu_s']:6.1f} {r['wall_s']:6.1f} {r['load']:5.2f} "
                  f"{r['loss']:6.3f}", flush=True)
            for step, exact, cpu, _ in r["curve"]:
                print(f"{'':11s} {'':4s} {step:5d} {100 * exact:8.2f} {'':5s} {cpu:6.1f}", flush=True)

    print(f"\n{'framework':11s} {'min exact %':>11s} {'mean exact %':>12s} {'mean CPU s':>10s} "
          f"{'max CPU s':>9s}  target (>= {100 * args.target_exact:g}% on every seed, "
          f"<= {args.target_cpu:g} CPU s)")
    missed = []
    for name in args.frameworks:
        rows = [r for r in results if r["framework"] == name]
        exact, cpu = [r["exact"] for r in rows], [r["cpu_s"] for r in rows]
        met = min(exact) >= args.target_exact and max(cpu) <= args.target_cpu
        missed += [] if met else [FRAMEWORK_NAMES[name]]
        print(f"{FRAMEWORK_NAMES[name]:11s} {100 * min(exact):11.2f} {100 * sum(exact) / len(exact):12.2f} "
              f"{sum(cpu) / len(cpu):10.1f} {max(cpu):9.1f}  {'met' if met else 'MISSED'}")

    if args.baselines:
        print(f"\nGRU baselines ({args.baseline_framework}, {args.budget:g} s of wall-clock "
              f"training each, seed {args.seeds[0]}):")
        for attention in (None, "bahdanau"):
            r = train_gru(args.baseline_framework, attention, corpus, src_vocab, tgt_vocab,
                          args.budget, args.seeds[0], args.torch_threads)
            by_length = ", ".join(f"{n}: {100 * acc:.0f}%" for n, (_, acc) in sorted(r["by_length"].items()))
            print(f"{r['label']:40s} {r['steps']:5d} steps, {r['cpu_s']:5.1f} CPU s | exact match "
                  f"{100 * r['exact']:6.2f}% | BLEU {r['bleu']:6.2f}\n    by source length: {by_length}")
    raise SystemExit(1 if missed else 0)


if __name__ == "__main__":
    main()
