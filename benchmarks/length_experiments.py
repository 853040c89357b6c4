"""Back to chapters 1-2: the Transformer on the long-list corpus, and step time against length.

Two experiments (PyTorch only, CPU unless a GPU is at hand):

1. accuracy by length: chapter 2's corpus (lists of 2 to 12 French numbers below 20, translated
   into English) learnt by the GRU seq2seq without attention, the GRU with Bahdanau attention
   (chapter 2's recipes) and the course Transformer (chapter 5's ``SMALL``, d_model 128, twice
   chapter 6's width: 1200 steps of 64 pairs, 150 warm-up steps, label smoothing 0.1); held-out
   exact match by source length, greedy decoding;
2. training-step time against sequence length: one Adam step of the GRU with attention and of
   the course Transformer on random token batches of length L (CPU seconds, median of
   interleaved steps; on a GPU, wall-clock seconds with synchronisation).

    python benchmarks/length_experiments.py               # both, ~10 minutes on 2 CPU cores
    python benchmarks/length_experiments.py --quick       # fewer steps and lengths, ~2 minutes
    python benchmarks/length_experiments.py --only timing
    python benchmarks/length_experiments.py --save book/figures/data/length_experiments.json

``--save PATH`` also writes the results, with the machine, the configuration, the load and the
date of the measurement, as JSON (``book/figures/make_figures.py`` draws the book's figures
from the file shipped at that path; it trains nothing itself).
"""

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

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
    results, record = {}, {}
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
        overall = exact_match(predictions, references)
        record[name] = {"steps": steps, "train_cpu_seconds": round(cpu, 1), "exact_match": overall,
                        "by_source_length": [{"length": n, "count": count, "exact_match": acc}
                                             for n, (count, acc) in groups.items()]}
        print(f"{name:26s} {steps:5d} steps, {cpu:6.1f} CPU s, held-out exact match "
              f"{100 * overall:6.2f}%", flush=True)
    lengths = sorted(next(iter(results.values())))
    print("\nexact match (%) by source length (tokens):")
    print(f"{'model':26s} " + " ".join(f"{n:>5d}" for n in lengths))
    for name, groups in results.items():
        print(f"{name:26s} " + " ".join(f"{100 * groups[n]:5.0f}" for n in lengths))
    return {"corpus": "make_number_list_corpus('fr', 'en', max_number=19, min_items=2, max_items=12, "
                      "size=20_000, seed=0)",
            "test_examples": len(sources), "length": "source length in tokens (Tokenizer('fr'))",
            "decoding": "greedy", "models": record}


def timing_experiment(quick):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    vocab, batch = 40, 32
    lengths = [8, 32, 128] if quick else [8, 16, 32, 64, 128, 256]
    rounds = 3 if quick else 5
    rows = []
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
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                start = clock()
                trainer.train_step(tokens[0], tokens[1], tokens[2])  # returns floats: synchronised
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if r:  # the first round warms up
                    times[k].append(clock() - start)
        gru, tr = (1000 * float(np.median(times[k])) for k in ("gru", "transformer"))
        rows.append({"length": length, "gru_attention_ms": round(gru, 2), "transformer_ms": round(tr, 2),
                     "gru_attention_all_ms": [round(1000 * t, 2) for t in times["gru"]],
                     "transformer_all_ms": [round(1000 * t, 2) for t in times["transformer"]],
                     "load_average_1min": round(os.getloadavg()[0], 2)})
        print(f"{length:5d} {gru:16.1f} {tr:12.1f} {gru / tr:14.2f}", flush=True)
    clock_name = "wall (synchronised)" if device.type == "cuda" else "CPU (process)"
    return {"device": device.type, "clock": clock_name,
            "batch": batch, "vocab": vocab, "rounds": rounds, "warm-up rounds": 1,
            "step": "one Trainer.train_step (Adam), source length = target length = L",
            "gru_attention": "Seq2Seq(vocab, vocab, 64, 128, attention='bahdanau')",
            "transformer": "Transformer(2, 128, 4, 256, vocab, vocab, L + 1, dropout=0.0)",
            "by_length": rows}


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(args):
    """Where and how the measurement ran (the date is a plain field of the file, nothing more)."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "command": "python benchmarks/length_experiments.py " + " ".join(sys.argv[1:]),
            "cpu": cpu_model(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "gpu": gpu, "torch": torch.__version__, "python": platform.python_version(),
            "quick": args.quick}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=["accuracy", "timing"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--save", type=Path, metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    record = {"machine": machine(args), "load_average_1_5_15": {}}
    if args.only != "timing":
        record["load_average_1_5_15"]["accuracy_start"] = [round(x, 2) for x in os.getloadavg()]
        record["accuracy"] = accuracy_experiment(args.quick)
    if args.only != "accuracy":
        record["load_average_1_5_15"]["timing_start"] = [round(x, 2) for x in os.getloadavg()]
        record["timing"] = timing_experiment(args.quick)
    record["load_average_1_5_15"]["end"] = [round(x, 2) for x in os.getloadavg()]
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"\nwritten: {args.save}")


if __name__ == "__main__":
    main()
