"""Back to chapters 1-2: the Transformer on the long-list corpus, and step time against length.

Two experiments (PyTorch only, CPU unless a GPU is at hand):

1. accuracy by length: chapter 2's corpus (lists of 2 to 12 French numbers below 20, translated
   into English) learnt by the GRU seq2seq without attention, the GRU with Bahdanau attention
   (chapter 2's recipes) and the course Transformer (chapter 6's recipe, smaller); held-out
   exact match by source length, greedy decoding;
2. training-step time against sequence length: one Adam step of the GRU with attention and of
   the course Transformer on random token batches of length L (CPU seconds, median of
   interleaved steps; on a GPU, wall-clock seconds with synchronisation).

    python benchmarks/length_experiments.py               # both, ~10 minutes on 2 CPU cores
    python benchmarks/length_experiments.py --quick       # fewer steps and lengths, ~2 minutes
    python benchmarks/length_experiments.py --only timing
"""

import argparse
import time

import numpy as np
import torch

from course_pkg import data
from course_pkg import torch as cpt
from course_pkg.evaluation import accuracy_by_length, exact_match


def corpus_and_vocabs():
    corpus = data.make_number_list_corpus("fr", "en", max_number=19, min_items=2, max_items=12,
                                          size=20_000, seed=0)
    src_tok, tgt_tok = data.Tokenizer("fr"), data.Tokenizer("en")
    src_vocab = data.Vocab.build([s for s, _ in corpus.train], src_tok)
    tgt_vocab = data.Vocab.build([t for _, t in corpus.train], tgt_tok)
    return corpus, src_tok, src_vocab, tgt_vocab


def train(trainer, batches, steps):
    start = time.process_time()
    trainer.fit(batches, epochs=10_000, max_steps=steps, progress=False)
    return time.process_time() - start


def accuracy_experiment(quick):
    corpus, src_tok, src_vocab, tgt_vocab = corpus_and_vocabs()
    sources = [s for s, _ in corpus.test]
    references = [t for _, t in corpus.test]
    longest = max(len(src_tok.tokenize(s)) for s, _ in corpus.train + corpus.test) + 2
    scale = 0.25 if quick else 1.0
    results = {}
    for name in ("GRU, no attention", "GRU + Bahdanau attention", "Transformer"):
        torch.manual_seed(0)
        if name == "Transformer":
            steps = int(1200 * scale)
            model = cpt.Transformer(num_layers=2, d_model=128, num_heads=4, dff=256,
                                    input_vocab_size=len(src_vocab), target_vocab_size=len(tgt_vocab),
                                    max_len=64, dropout=0.0)
            trainer = cpt.Trainer(model, warmup_steps=150, d_model=256, label_smoothing=0.1, seed=0)
        else:
            steps = int((800 if "no attention" in name else 400) * scale)
            model = cpt.Seq2Seq(len(src_vocab), len(tgt_vocab), 64, 128,
                                attention="bahdanau" if "Bahdanau" in name else None)
            optimizer = torch.optim.Adam(model.parameters(), 1e-2)
            schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s, n=steps: max(0.0, 1 - s / n))
            trainer = cpt.Trainer(model, optimizer, schedule, label_smoothing=0.0, seed=0)
        batches = cpt.make_batches(corpus.train, src_vocab, tgt_vocab, 64, shuffle=True, seed=0)
        cpu = train(trainer, batches, steps)
        model.eval()
        predictions = cpt.translate(model, sources, src_vocab, tgt_vocab, max_len=min(60, longest * 3))
        groups = accuracy_by_length(predictions, references, sources, tokenizer=src_tok.tokenize)
        results[name] = {n: acc for n, (_, acc) in groups.items()}
        print(f"{name:26s} {steps:5d} steps, {cpu:6.1f} CPU s, held-out exact match "
              f"{100 * exact_match(predictions, references):6.2f}%", flush=True)
    lengths = sorted(next(iter(results.values())))
    print("\nexact match (%) by source length (tokens):")
    print(f"{'model':26s} " + " ".join(f"{n:>5d}" for n in lengths))
    for name, groups in results.items():
        print(f"{name:26s} " + " ".join(f"{100 * groups[n]:5.0f}" for n in lengths))


def timing_experiment(quick):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    vocab, batch = 40, 32
    lengths = [8, 32, 128] if quick else [8, 16, 32, 64, 128, 256]
    rounds = 3 if quick else 5
    print(f"\ntraining-step time (ms, median of {rounds} interleaved steps), batch {batch}, "
          f"source = target length L, {'wall' if device.type == 'cuda' else 'CPU'} time on {device.type}:")
    print(f"{'L':>5s} {'GRU + attention':>16s} {'Transformer':>12s} {'ratio GRU/Tr.':>14s}")
    for length in lengths:
        torch.manual_seed(0)
        tokens = torch.randint(4, vocab, (3, batch, length), device=device)
        models = {
            "gru": cpt.Seq2Seq(vocab, vocab, 64, 128, attention="bahdanau"),
            "transformer": cpt.Transformer(2, 128, 4, 256, vocab, vocab, length + 1, dropout=0.0),
        }
        trainers = {k: cpt.Trainer(m, warmup_steps=100, d_model=128, seed=0) for k, m in models.items()}
        times = {k: [] for k in trainers}
        for r in range(rounds + 1):
            for k, trainer in trainers.items():
                start = clock()
                trainer.train_step(tokens[0], tokens[1], tokens[2])  # returns floats: synchronised
                if r:  # the first round warms up
                    times[k].append(clock() - start)
        gru, tr = (1000 * float(np.median(times[k])) for k in ("gru", "transformer"))
        print(f"{length:5d} {gru:16.1f} {tr:12.1f} {gru / tr:14.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=["accuracy", "timing"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.only != "timing":
        accuracy_experiment(args.quick)
    if args.only != "accuracy":
        timing_experiment(args.quick)


if __name__ == "__main__":
    main()
