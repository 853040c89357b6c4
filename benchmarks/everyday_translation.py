"""Everyday French -> English: can chapter 6's Transformer translate real sentences on a CPU?

Trains the course Transformer (``Transformer``, ``Trainer``, ``make_batches``, ``translate`` of
the framework asked for) on ``course_pkg.data.make_everyday_corpus("fr", "en")`` (2 973 train /
372 valid / 372 test pairs of 3 to 16 words) with a fixed number of seeded steps, then decodes the
test split and prints sacrebleu's BLEU and chrF (``course_pkg.evaluation``) against two
baselines:

* **copy**: the French source itself as the "translation" (names, numbers and cognates copy);
* **word-level**: the same model and recipe with the chapters' word vocabularies
  (``data.Vocab.build(train, data.Tokenizer(lang))``); the test split's unknown words are
  counted, and both models are also scored apart on the test sentences with and without a
  source word that this vocabulary lacks (where subwords should help).

The recipe's tokens are the course's byte-level BPE (``course_pkg.subword``) trained on the
training split only: one joint vocabulary for French + English (``--tokens joint``, the default;
names and numbers get the same ids on both sides) or one per language (``--tokens separate``).
Also printed: the training and validation losses every ``--log-every`` steps (overfitting), the
BLEU of the first 372 training pairs next to the test split's, a few sample translations, and
the CPU seconds (``time.process_time``, all threads) and wall seconds of training.

    python benchmarks/everyday_translation.py                          # PyTorch, the recipe
    python benchmarks/everyday_translation.py --framework tensorflow
    python benchmarks/everyday_translation.py --tokens separate --vocab-size 2000
    python benchmarks/everyday_translation.py --no-word-baseline --beam 4
    python benchmarks/everyday_translation.py --train-pairs 1000      # the first 1 000 pairs only
    python benchmarks/everyday_translation.py --data-sizes 500 1000 2000 2973 --seeds 0 1 --save

``--train-pairs N`` trains on the first N pairs of the shipped training split only (its order is
the file's, not sorted by topic, so the subsets are nested: 500 within 1 000 within 2 000 within
all 2 973); every vocabulary, the BPE included, is built from those pairs; valid and test stay
whole. ``--data-sizes N ...`` is the data-size sweep: for each N and each of ``--seeds``, the BPE
recipe and the word-level model on the first N pairs, with the recipe's number of steps (800) at
every size (the same compute: a smaller set is seen for more epochs), greedy decoding of the 372
test pairs, and the share of test words unknown to that size's word vocabulary. ``--save [PATH]``
writes it as JSON (default ``book/figures/data/everyday_data_size.json``, from which
``book/figures/make_figures.py`` draws chapter 7's figure) after each run, keeping the runs the
file already holds for the same recipe, so two sweeps side by side (say ``--seeds 0`` and
``--seeds 1``) fill one record; ``--note`` adds a line on the machine and its load.

Float rounding differs between CPUs; to see how much the numbers move, rerun PyTorch under
``ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE`` and TensorFlow under ``TF_ENABLE_ONEDNN_OPTS=1``.
The exit status is 1 unless the recipe beats both baselines by ``--margin-bleu`` BLEU and
``--margin-chrf`` chrF.
"""

import argparse
import dataclasses
import datetime
import fcntl
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from course_pkg import data  # noqa: E402
from course_pkg.evaluation import corpus_bleu, corpus_chrf  # noqa: E402
from course_pkg.pretrained import bpe_vocab  # noqa: E402

# The recipe: the defaults of the options below.
RECIPE = dict(tokens="joint", vocab_size=2000, num_layers=2, d_model=128, num_heads=4, dff=256,
              dropout=0.1, label_smoothing=0.1, peak_learning_rate=0.002, warmup=200, batch=64,
              steps=800)
FRAMEWORK_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow"}
DATA_SIZE_JSON = Path(__file__).resolve().parents[1] / "book" / "figures" / "data" / "everyday_data_size.json"
SUBSETS = ("the first N pairs of the shipped training split, in the file's order (a fixed prefix: "
           "500 within 1000 within 2000 within all 2973; the file is not sorted by topic)")


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


def vocabularies(kind, train, vocab_size):
    """(src_vocab, tgt_vocab) of ``kind``: "joint" or "separate" BPE, or "word"."""
    sources, targets = [s for s, _ in train], [t for _, t in train]
    if kind == "word":
        return (data.Vocab.build(sources, data.Tokenizer("fr")),
                data.Vocab.build(targets, data.Tokenizer("en")))
    if kind == "joint":
        vocab = bpe_vocab(sources + targets, vocab_size)
        return vocab, vocab
    return bpe_vocab(sources, vocab_size), bpe_vocab(targets, vocab_size)


def unknown_rate(vocab, texts):
    """Fraction of the tokens of ``texts`` that ``vocab`` maps to <unk>, and their number."""
    unk = data.SPECIAL_TOKENS.index("<unk>")
    ids = [i for text in texts for i in vocab.encode(text)]
    return sum(i == unk for i in ids) / max(len(ids), 1), sum(i == unk for i in ids)


def first_pairs(corpus, n):
    """``corpus`` with only its first ``n`` training pairs (all of them for ``None``)."""
    if n is None or n >= len(corpus.train):
        return corpus
    if n < 1:
        raise ValueError(f"--train-pairs / --data-sizes must be at least 1, got {n}")
    return dataclasses.replace(corpus, train=corpus.train[:n])


def run(name, recipe, corpus, kind, seed, torch_threads, log_every, beam, samples=0):
    """Train one model with ``recipe`` on ``kind`` tokens; losses, times, BLEU and chrF."""
    cp = framework(name, seed, torch_threads)
    src_vocab, tgt_vocab = vocabularies(kind, corpus.train, recipe["vocab_size"])
    max_len = data.pairs_max_len(corpus.train + corpus.valid + corpus.test, src_vocab, tgt_vocab)
    model = cp.Transformer(num_layers=recipe["num_layers"], d_model=recipe["d_model"],
                           num_heads=recipe["num_heads"], dff=recipe["dff"],
                           dropout=recipe["dropout"], input_vocab_size=len(src_vocab),
                           target_vocab_size=len(tgt_vocab), max_len=max_len)
    trainer = cp.Trainer(model, warmup_steps=recipe["warmup"],
                         peak_learning_rate=recipe["peak_learning_rate"],
                         label_smoothing=recipe["label_smoothing"], seed=seed)
    train = cp.make_batches(corpus.train, src_vocab, tgt_vocab, recipe["batch"], shuffle=True,
                            seed=seed, max_len=max_len)
    valid = cp.make_batches(corpus.valid, src_vocab, tgt_vocab, 128, max_len=max_len)
    cpu, wall, curve, left = 0.0, 0.0, [], recipe["steps"]
    while left > 0:  # log_every steps per fit call; the validation loss is not timed
        chunk = min(log_every, left)
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        history = trainer.fit(train, epochs=math.ceil(chunk / len(train)), max_steps=chunk,
                              progress=False)
        cpu += time.process_time() - start_cpu
        wall += time.perf_counter() - start_wall
        left -= chunk
        curve.append((trainer.step, history["loss"][-1], trainer.evaluate(valid)["loss"], cpu))
    result = {"kind": kind, "framework": name, "cpu_s": cpu, "wall_s": wall, "curve": curve,
              "max_len": max_len, "vocab": (len(src_vocab), len(tgt_vocab)),
              "params": sum(int(math.prod(w.shape)) for w in _weights(model, name))}
    sources, references = [s for s, _ in corpus.test], [t for _, t in corpus.test]
    start_cpu, start_wall = time.process_time(), time.perf_counter()
    for size in sorted({1, beam}):
        hyps = cp.translate(model, sources, src_vocab, tgt_vocab, beam_size=size)
        result[f"test{size}"] = (corpus_bleu(hyps, references), corpus_chrf(hyps, references))
        if size == 1:
            result["hyps"] = hyps
    result["decode_cpu_s"] = time.process_time() - start_cpu
    result["decode_wall_s"] = time.perf_counter() - start_wall
    seen = corpus.train[:len(corpus.test)]  # as many training pairs as test pairs
    result["n_seen"] = len(seen)
    hyps = cp.translate(model, [s for s, _ in seen], src_vocab, tgt_vocab)
    result["train1"] = (corpus_bleu(hyps, [t for _, t in seen]), corpus_chrf(hyps, [t for _, t in seen]))
    result["unknown"] = (unknown_rate(src_vocab, sources), unknown_rate(tgt_vocab, references))
    result["by_unknown"] = scores_by_unknown(corpus, result["hyps"])
    return result


def scores_by_unknown(corpus, hyps):
    """BLEU and chrF of ``hyps`` on the test sentences with a source word that the word-level
    vocabulary of the training split lacks, and on the others: {True/False: (n, bleu, chrf)}."""
    word_vocab = data.Vocab.build([s for s, _ in corpus.train], data.Tokenizer("fr"))
    unk = data.SPECIAL_TOKENS.index("<unk>")
    has = [unk in word_vocab.encode(s) for s, _ in corpus.test]
    out = {}
    for flag in (True, False):
        picked = [(h, t) for h, (_, t), m in zip(hyps, corpus.test, has) if m == flag]
        out[flag] = (len(picked), corpus_bleu([h for h, _ in picked], [t for _, t in picked]),
                     corpus_chrf([h for h, _ in picked], [t for _, t in picked]))
    return out


def _weights(model, name):
    return list(model.parameters()) if name == "torch" else model.trainable_weights


def report(label, r, beam):
    """Print one run: size, times, the loss curve, the scores."""
    print(f"\n{label}: vocabularies {r['vocab'][0]} / {r['vocab'][1]}, max_len {r['max_len']}, "
          f"{r['params']:,} parameters; training {r['cpu_s']:.1f} CPU s, {r['wall_s']:.1f} wall s; "
          f"decoding {r['decode_cpu_s']:.1f} CPU s")
    (src_rate, src_n), (tgt_rate, tgt_n) = r["unknown"]
    print(f"  test tokens mapped to <unk>: source {100 * src_rate:.1f}% ({src_n}), "
          f"reference {100 * tgt_rate:.1f}% ({tgt_n})")
    print("  step  train loss  valid loss  CPU s")
    for step, loss, val_loss, cpu in r["curve"]:
        print(f"  {step:4d}  {loss:10.3f}  {val_loss:10.3f}  {cpu:5.1f}")
    print(f"  test greedy: BLEU {r['test1'][0]:5.2f}  chrF {r['test1'][1]:5.2f}")
    if beam > 1:
        print(f"  test beam {beam}: BLEU {r[f'test{beam}'][0]:5.2f}  chrF {r[f'test{beam}'][1]:5.2f}")
    for flag, label in ((True, "with"), (False, "without")):
        n, b, c = r["by_unknown"][flag]
        print(f"  test sentences {label} a source word unknown to the word vocabulary ({n}): "
              f"BLEU {b:5.2f}  chrF {c:5.2f}")
    bleu, chrf = r["train1"]
    print(f"  first {r['n_seen']} training pairs, greedy: BLEU {bleu:5.2f}  chrF {chrf:5.2f}"
          "  (the gap to the test split: overfitting)")


# ------------------------------------------------------------------- data-size sweep
def word_unknown_shares(corpus):
    """The word vocabularies of ``corpus.train``: sizes and the test words they map to <unk>."""
    src_vocab, tgt_vocab = vocabularies("word", corpus.train, None)
    (src_rate, src_n), (tgt_rate, tgt_n) = (
        unknown_rate(src_vocab, [s for s, _ in corpus.test]),
        unknown_rate(tgt_vocab, [t for _, t in corpus.test]))
    return {"train_pairs": len(corpus.train), "word_vocab": [len(src_vocab), len(tgt_vocab)],
            "unknown_source_share": round(src_rate, 4), "unknown_source_tokens": src_n,
            "unknown_reference_share": round(tgt_rate, 4), "unknown_reference_tokens": tgt_n}


def run_record(r, n, seed):
    """The JSON record of one run of :func:`run`."""
    return {"train_pairs": n, "model": "word" if r["kind"] == "word" else "bpe", "tokens": r["kind"],
            "seed": seed, "bleu": round(r["test1"][0], 2), "chrf": round(r["test1"][1], 2),
            "train_bleu": round(r["train1"][0], 2), "train_chrf": round(r["train1"][1], 2),
            "vocab": list(r["vocab"]), "params": r["params"],
            "train_cpu_s": round(r["cpu_s"], 1), "train_wall_s": round(r["wall_s"], 1),
            "decode_cpu_s": round(r["decode_cpu_s"], 1),
            "curve": [{"step": step, "train_loss": round(loss, 4), "valid_loss": round(val, 4)}
                      for step, loss, val, _ in r["curve"]],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}


def machine(args):
    """Where and how one sweep process ran (the date is a plain field of the file)."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch
    return {"command": "python benchmarks/everyday_translation.py " + " ".join(sys.argv[1:]),
            "cpu": cpu, "cpu_count": os.cpu_count(), "torch_threads": args.torch_threads,
            "torch": torch.__version__, "python": platform.python_version(), "note": args.note}


def save_runs(path, header, runs):
    """Merge ``runs`` (and ``header``'s sizes and plan) into the JSON at ``path``, under a lock.

    Runs already in the file for another (size, seed, model) are kept when the file was written
    with the same recipe, so that two sweeps (say one per seed) can fill one record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if old.get("recipe") != header["recipe"] or old.get("framework") != header["framework"]:
            old = {}
        key = lambda r: (r["train_pairs"], r["seed"], r["model"])  # noqa: E731
        merged = {key(r): r for r in old.get("runs", []) + runs}
        sizes = {s["train_pairs"]: s for s in old.get("sizes", []) + header["sizes"]}
        planned = {tuple(k) for k in old.get("planned", [])} | {tuple(k) for k in header["planned"]}
        record = dict(header, sizes=[sizes[n] for n in sorted(sizes)],
                      planned=sorted(planned),
                      missing=[list(k) for k in sorted(planned - set(merged))],
                      runs=[merged[k] for k in sorted(merged)],
                      machines=old.get("machines", []) + [m for m in header["machines"]
                                                          if m not in old.get("machines", [])])
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    path.with_suffix(".lock").unlink(missing_ok=True)


def sweep(args, recipe, corpus, copy):
    """BLEU / chrF of the BPE recipe and the word-level model at each ``--data-sizes`` and seed."""
    sizes = [min(n, len(corpus.train)) for n in args.data_sizes]
    header = {"date": datetime.date.today().isoformat(),
              "framework": FRAMEWORK_NAMES[args.framework], "recipe": recipe,
              "subsets": SUBSETS, "steps": f"{recipe['steps']} at every size (the recipe's)",
              "decoding": "greedy", "test_pairs": len(corpus.test),
              "unknown": "share of the test split's word tokens (data.Tokenizer, punctuation "
                         "included) that the word vocabulary of the first N training pairs lacks",
              "copy": {"bleu": round(copy[0], 2), "chrf": round(copy[1], 2)},
              "machines": [machine(args)],
              "sizes": [word_unknown_shares(first_pairs(corpus, n)) for n in sizes],
              "planned": [[n, seed, model] for n in sizes for seed in args.seeds
                          for model in args.models]}
    for n in sizes:
        subset = first_pairs(corpus, n)
        for seed in args.seeds:
            for kind in [args.tokens if model == "bpe" else "word" for model in args.models]:
                print(f"\n=== {n} training pairs, seed {seed}, {kind}; load average "
                      f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
                r = run(args.framework, recipe, subset, kind, seed, args.torch_threads,
                        args.log_every, 1)
                report(f"{kind}, {n} pairs, seed {seed}", r, 1)
                if args.save:
                    save_runs(args.save, header, [run_record(r, n, seed)])
    if args.save:
        print(f"\nwritten: {args.save}")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", default="torch", choices=["torch", "tensorflow"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokens", default=RECIPE["tokens"], choices=["joint", "separate"],
                        help="one byte-level BPE for both languages, or one per language")
    parser.add_argument("--vocab-size", type=int, default=RECIPE["vocab_size"])
    parser.add_argument("--steps", type=int, default=RECIPE["steps"], help="training steps")
    parser.add_argument("--log-every", type=int, default=200,
                        help="steps between the logged train / valid losses")
    parser.add_argument("--batch", type=int, default=RECIPE["batch"], help="pairs per batch")
    parser.add_argument("--warmup", type=int, default=RECIPE["warmup"], help="Noam warm-up steps")
    parser.add_argument("--peak-learning-rate", type=float, default=RECIPE["peak_learning_rate"])
    parser.add_argument("--label-smoothing", type=float, default=RECIPE["label_smoothing"])
    parser.add_argument("--layers", dest="num_layers", type=int, default=RECIPE["num_layers"])
    parser.add_argument("--d-model", type=int, default=RECIPE["d_model"])
    parser.add_argument("--heads", dest="num_heads", type=int, default=RECIPE["num_heads"])
    parser.add_argument("--dff", type=int, default=RECIPE["dff"])
    parser.add_argument("--dropout", type=float, default=RECIPE["dropout"])
    parser.add_argument("--beam", type=int, default=4, help="also decode with this beam size")
    parser.add_argument("--samples", type=int, default=5, help="test translations to print")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--no-word-baseline", action="store_true",
                        help="skip the word-level run (it trains a second model)")
    parser.add_argument("--train-pairs", type=int, default=None,
                        help="train on the first N training pairs only (vocabularies, BPE included)")
    parser.add_argument("--data-sizes", type=int, nargs="+", metavar="N",
                        help="sweep: BPE recipe and word-level model on the first N training pairs, "
                             "for each N and --seeds (greedy only)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="the sweep's seeds")
    parser.add_argument("--models", nargs="+", default=["bpe", "word"], choices=["bpe", "word"],
                        help="the sweep's models (both by default)")
    parser.add_argument("--save", type=Path, nargs="?", const=DATA_SIZE_JSON, metavar="PATH",
                        help="write the sweep as JSON (default book/figures/data/everyday_data_size.json); "
                             "runs already there with the same recipe are kept")
    parser.add_argument("--note", default="", help="the sweep's machine note (load, other jobs)")
    parser.add_argument("--margin-bleu", type=float, default=5.0)
    parser.add_argument("--margin-chrf", type=float, default=10.0)
    return parser.parse_args()


def main():
    args = parse_args()
    recipe = {key: getattr(args, key) for key in RECIPE}
    corpus = data.make_everyday_corpus("fr", "en")
    print(f"everyday fr->en: {len(corpus.train)} train / {len(corpus.valid)} valid / "
          f"{len(corpus.test)} test pairs; {FRAMEWORK_NAMES[args.framework]}; {os.cpu_count()} CPUs; "
          f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("recipe: " + ", ".join(f"{key}={value}" for key, value in recipe.items()) + f", seed={args.seed}")
    sources, references = [s for s, _ in corpus.test], [t for _, t in corpus.test]
    copy = (corpus_bleu(sources, references), corpus_chrf(sources, references))
    print(f"baseline copy (the source as the translation): BLEU {copy[0]:5.2f}  chrF {copy[1]:5.2f}")
    if args.data_sizes:
        sweep(args, recipe, corpus, copy)
        return
    if args.train_pairs is not None:
        corpus = first_pairs(corpus, args.train_pairs)
        print(f"trained on the first {len(corpus.train)} training pairs only")

    best = run(args.framework, recipe, corpus, args.tokens, args.seed, args.torch_threads,
               args.log_every, args.beam)
    report(f"recipe ({args.tokens} byte-level BPE)", best, args.beam)
    baselines = {"copy": copy}
    if not args.no_word_baseline:
        word = run(args.framework, recipe, corpus, "word", args.seed, args.torch_threads,
                   args.log_every, 1)
        report("baseline word-level (same recipe, data.Vocab.build words)", word, 1)
        baselines["word-level"] = word["test1"]

    if args.samples:
        print("\nsample test translations (greedy):")
        step = max(len(sources) // args.samples, 1)
        for i in range(0, step * args.samples, step):
            print(f"  fr:  {sources[i]}\n  ref: {references[i]}\n  out: {best['hyps'][i]}\n")

    bleu, chrf = best["test1"]
    print("claims (greedy decoding):")
    met = True
    for name, (b, c) in baselines.items():
        for metric, ours, theirs, margin in (("BLEU", bleu, b, args.margin_bleu),
                                             ("chrF", chrf, c, args.margin_chrf)):
            ok = ours >= theirs + margin
            met &= ok
            print(f"  {metric} above {name} + {margin:g}: {ok} ({ours:.2f} vs {theirs:.2f})")
    raise SystemExit(0 if met else 1)


if __name__ == "__main__":
    main()
