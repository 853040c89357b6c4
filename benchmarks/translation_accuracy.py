"""French -> English numbers: held-out exact match after a fixed training budget.

Trains, each for ``--budget`` seconds of wall-clock time (default 180) on this
machine's CPUs:

- the course Transformer in every framework asked for (target: >= 99% exact
  match on the held-out test split, whose numbers never occur in training);
- the GRU seq2seq without attention (fixed context vector) and with Bahdanau
  attention, in ``--baseline-framework``;

then decodes the test split greedily and prints exact match, corpus BLEU and
exact match by source length (in words) for every model.

    python benchmarks/translation_accuracy.py                 # all of it, ~15 minutes
    python benchmarks/translation_accuracy.py --budget 30 --frameworks torch --no-baselines
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from course_pkg import data  # noqa: E402
from course_pkg.evaluation import accuracy_by_length, corpus_bleu, exact_match  # noqa: E402

TRANSFORMER = dict(num_layers=2, d_model=128, num_heads=4, dff=256, dropout=0.1)
GRU = dict(embedding_dim=64, units=256)
BATCH_SIZE, WARMUP_STEPS, LABEL_SMOOTHING, SEED = 128, 1000, 0.1, 0


def framework(name):
    """The course subpackage, seeded."""
    if name == "torch":
        import torch

        from course_pkg import torch as cp
        torch.manual_seed(SEED)
    else:
        import keras

        from course_pkg import tensorflow as cp
        keras.utils.set_random_seed(SEED)
    return cp


def make_optimizer(name, model, lr=1e-3):
    """A constant-rate Adam for the GRU baselines (they have no d_model to schedule by)."""
    if name == "torch":
        import torch
        return torch.optim.Adam(model.parameters(), lr=lr)
    import keras
    return keras.optimizers.Adam(lr)


def run(name, kind, corpus, src_vocab, tgt_vocab, max_len, budget):
    cp = framework(name)
    if kind == "transformer":
        model = cp.Transformer(input_vocab_size=len(src_vocab), target_vocab_size=len(tgt_vocab),
                               max_len=max_len, **TRANSFORMER)
        trainer = cp.Trainer(model, warmup_steps=WARMUP_STEPS, label_smoothing=LABEL_SMOOTHING,
                             seed=SEED)
    else:
        model = cp.Seq2Seq(len(src_vocab), len(tgt_vocab), attention=kind, **GRU)
        trainer = cp.Trainer(model, optimizer=make_optimizer(name, model), label_smoothing=0.0,
                             seed=SEED)
    train = cp.make_batches(corpus.train, src_vocab, tgt_vocab, BATCH_SIZE, shuffle=True,
                            seed=SEED, max_len=max_len)
    history = trainer.fit(train, epochs=10_000, time_budget=budget, progress=False)
    sources = [src for src, _ in corpus.test]
    references = [tgt for _, tgt in corpus.test]
    start = time.perf_counter()
    predictions = cp.translate(model, sources, src_vocab, tgt_vocab, max_len=max_len - 1)
    decode_s = time.perf_counter() - start
    return {
        "label": f"{name} {'Transformer' if kind == 'transformer' else f'GRU seq2seq, attention={kind}'}",
        "steps": trainer.step, "train_s": history["elapsed"][-1], "decode_s": decode_s,
        "loss": history["loss"][-1], "exact": exact_match(predictions, references),
        "bleu": corpus_bleu(predictions, references),
        "by_length": accuracy_by_length(predictions, references, sources),
        "example": (sources[0], predictions[0], references[0]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=180.0, help="training seconds per model")
    parser.add_argument("--frameworks", nargs="+", default=["torch", "tensorflow"],
                        choices=["torch", "tensorflow"])
    parser.add_argument("--baseline-framework", default="torch", choices=["torch", "tensorflow"])
    parser.add_argument("--no-baselines", action="store_true")
    args = parser.parse_args()

    start = time.perf_counter()
    corpus = data.make_number_corpus("fr", "en", seed=SEED)
    tokenizer = data.Tokenizer()
    src_vocab = data.Vocab.build([s for s, _ in corpus.train], tokenizer)
    tgt_vocab = data.Vocab.build([t for _, t in corpus.train], tokenizer)
    arrays = data.encode_pairs(corpus.train + corpus.valid + corpus.test, src_vocab, tgt_vocab)
    max_len = max(a.shape[1] for a in arrays) + 1
    print(f"corpus fr->en: {len(corpus.train)} train / {len(corpus.valid)} valid / "
          f"{len(corpus.test)} test pairs (disjoint numbers), made in "
          f"{time.perf_counter() - start:.1f} s; vocab {len(src_vocab)} / {len(tgt_vocab)}; "
          f"max_len {max_len}; {os.cpu_count()} CPUs; budget {args.budget:.0f} s per model")

    runs = [(name, "transformer") for name in args.frameworks]
    if not args.no_baselines:
        runs += [(args.baseline_framework, None), (args.baseline_framework, "bahdanau")]
    results = []
    for name, kind in runs:
        r = run(name, kind, corpus, src_vocab, tgt_vocab, max_len, args.budget)
        results.append(r)
        print(f"{r['label']:42s} {r['steps']:6d} steps in {r['train_s']:5.0f} s, loss "
              f"{r['loss']:.3f} | test exact match {100 * r['exact']:6.2f}% | BLEU "
              f"{r['bleu']:6.2f} | decoding {len(corpus.test)} sentences {r['decode_s']:.1f} s")
        src, pred, ref = r["example"]
        print(f"    e.g. {src!r} -> {pred!r} (reference {ref!r})")

    lengths = sorted({n for r in results for n in r["by_length"]})
    print("\nexact match (%) by source length in words (count):")
    print(f"{'model':42s} " + " ".join(f"{n:>9d}" for n in lengths))
    counts = results[0]["by_length"]
    print(f"{'(test sentences)':42s} " + " ".join(f"{counts[n][0]:>9d}" for n in lengths))
    for r in results:
        cells = [f"{100 * r['by_length'][n][1]:9.1f}" if n in r["by_length"] else f"{'-':>9s}"
                 for n in lengths]
        print(f"{r['label']:42s} " + " ".join(cells))

    missed = [r["label"] for r in results if "Transformer" in r["label"] and r["exact"] < 0.99]
    print("\nTransformer target (>= 99% exact match within the budget): "
          + ("met" if not missed else f"MISSED by {', '.join(missed)}"))
    raise SystemExit(1 if missed else 0)


if __name__ == "__main__":
    main()
