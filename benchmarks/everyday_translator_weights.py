"""Train and ship chapter 7's French -> English translator (course_pkg/sample_data/everyday_translator/).

The recipe of ``benchmarks/everyday_translation.py`` (``RECIPE``: joint byte-level BPE of 2,000
tokens learnt on the training split, 2 layers, d_model 128, 4 heads, dff 256, dropout 0.1, label
smoothing 0.1, Noam schedule peaking at 0.002 after 200 steps, batches of 64, 800 steps), trained
with PyTorch on one thread, seeded, for ``--steps`` steps instead of the recipe's 800 (default
2,000: the record's validation BLEU and chrF, logged every ``--bleu-every`` steps, still rise well
after step 800 and level off from about step 1,400; the test split is scored once, at the end,
and chose nothing). Every ``--log-every`` steps it logs the training loss (dropout on) and the
validation loss (dropout off). Each chunk of ``--log-every`` steps is one ``trainer.fit`` call,
and ``fit`` logs after every epoch and where it stops, so the logged training loss is the mean of
the chunk's last, partial epoch only (with 47 batches an epoch and 100-step chunks: its last 6
steps), not of the whole chunk. Each ``fit`` call also starts a new shuffled epoch, so
``--log-every`` changes which pairs are seen (and the run's numbers), not only how often it logs.
It then writes

* ``weights.npz``: :func:`course_pkg.interop.get_weights` as float16, compressed;
* ``bpe-vocab.json``, ``bpe-merges.txt``: the BPE;
* ``record.json``: recipe, model configuration, loss history, CPU seconds, and test BLEU / chrF
  (greedy, all 372 test pairs) of the float32 model and of the float16 weights that are shipped,
  next to copying the source;

and reloads the files with :mod:`course_pkg.pretrained` to check they give the same translations.

    python benchmarks/everyday_translator_weights.py   # record.json: train_cpu_s 600, a loaded 2-core machine
    python benchmarks/everyday_translator_weights.py --out /tmp/translator --steps 800
"""

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from everyday_translation import RECIPE  # noqa: E402

from course_pkg import data, interop, pretrained  # noqa: E402
from course_pkg.evaluation import corpus_bleu, corpus_chrf  # noqa: E402


def scores(hyps, refs):
    """Corpus BLEU and chrF of ``hyps`` against ``refs``, rounded to 2 decimals."""
    return {"bleu": round(corpus_bleu(hyps, refs), 2), "chrf": round(corpus_chrf(hyps, refs), 2)}


def parse_args():
    """The command line's options (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--bleu-every", type=int, default=200,
                        help="steps between validation BLEU / chrF (greedy, all 372 pairs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=pretrained.FOLDER)
    return parser.parse_args()


def train(cp, model, trainer, corpus, vocab, max_len, args):
    """Train for ``args.steps`` steps, logging; returns ``(history, CPU seconds of training)``."""
    train_batches = cp.make_batches(corpus.train, vocab, vocab, RECIPE["batch"], shuffle=True,
                                    seed=args.seed, max_len=max_len)
    valid = cp.make_batches(corpus.valid, vocab, vocab, 128, max_len=max_len)
    history = {"step": [0], "loss": [None], "val_loss": [round(trainer.evaluate(valid)["loss"], 4)],
               "bleu_step": [], "val_bleu": [], "val_chrf": []}
    valid_sources, valid_refs = [s for s, _ in corpus.valid], [t for _, t in corpus.valid]
    cpu, left = 0.0, args.steps
    while left > 0:
        chunk = min(args.log_every, left)
        start = time.process_time()
        logged = trainer.fit(train_batches, epochs=math.ceil(chunk / len(train_batches)), max_steps=chunk,
                             progress=False)
        cpu += time.process_time() - start
        left -= chunk
        history["step"].append(trainer.step)
        history["loss"].append(round(logged["loss"][-1], 4))
        history["val_loss"].append(round(trainer.evaluate(valid)["loss"], 4))
        line = (f"step {trainer.step:5d}  train {history['loss'][-1]:.3f}  "
                f"valid {history['val_loss'][-1]:.3f}  {cpu:.0f} CPU s")
        if trainer.step % args.bleu_every == 0:
            model.eval()
            got = scores(cp.translate(model, valid_sources, vocab, vocab), valid_refs)
            model.train()
            history["bleu_step"].append(trainer.step)
            history["val_bleu"].append(got["bleu"])
            history["val_chrf"].append(got["chrf"])
            line += f"  valid BLEU {got['bleu']:.2f} chrF {got['chrf']:.2f}"
        print(line, flush=True)
    return history, cpu


def check_shipped(cp, config, half, vocab, sources, refs, hyps32, record, out):
    """Read the shipped files back as chapter 7 reads them: the float16 weights' test scores go
    into ``record``, which is written; the loaded translator must translate as they do."""
    shipped_vocab = pretrained.everyday_vocab(out)
    assert shipped_vocab.itos == vocab.itos
    model16 = cp.Transformer(**config, dropout=0.0)
    interop.set_weights(model16, {n: w.astype(np.float32) for n, w in half.items()})
    hyps16 = cp.translate(model16.eval(), sources, shipped_vocab, shipped_vocab)
    record["test"]["greedy_float16_weights"] = scores(hyps16, refs)
    record["test"]["same_translations_float16"] = sum(a == b for a, b in zip(hyps16, hyps32))
    (out / "record.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    loaded = pretrained.everyday_translator(cp, folder=out)
    assert cp.translate(loaded, sources, shipped_vocab, shipped_vocab) == hyps16


def main():
    """Train, write the files, read them back and print the test scores."""
    args = parse_args()

    import torch

    from course_pkg import torch as cp
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    assert RECIPE["tokens"] == "joint"
    corpus = data.make_everyday_corpus("fr", "en")
    vocab = pretrained.everyday_bpe_vocab(corpus.train, RECIPE["vocab_size"])
    max_len = data.pairs_max_len(corpus.train + corpus.valid + corpus.test, vocab, vocab)
    config = dict(num_layers=RECIPE["num_layers"], d_model=RECIPE["d_model"],
                  num_heads=RECIPE["num_heads"], dff=RECIPE["dff"], input_vocab_size=len(vocab),
                  target_vocab_size=len(vocab), max_len=max_len)
    model = cp.Transformer(**config, dropout=RECIPE["dropout"])
    trainer = cp.Trainer(model, warmup_steps=RECIPE["warmup"],
                         peak_learning_rate=RECIPE["peak_learning_rate"],
                         label_smoothing=RECIPE["label_smoothing"], seed=args.seed)
    history, cpu = train(cp, model, trainer, corpus, vocab, max_len, args)

    model.eval()
    sources, refs = [s for s, _ in corpus.test], [t for _, t in corpus.test]
    start = time.process_time()
    hyps32 = cp.translate(model, sources, vocab, vocab)
    decode_cpu = time.process_time() - start
    weights = interop.get_weights(model)
    half = {name: w.astype(np.float16) for name, w in weights.items()}

    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / "weights.npz", **half)
    vocab.tokenizer.save(args.out / "bpe-vocab.json", args.out / "bpe-merges.txt")
    record = {
        "what": "chapter 7's French -> English translator; benchmarks/everyday_translator_weights.py",
        "date": datetime.date.today().isoformat(), "seed": args.seed, "steps": args.steps,
        "framework": f"PyTorch {torch.__version__}, 1 thread", "machine": f"{platform.machine()}, "
        f"{os.cpu_count()} CPUs", "train_cpu_s": round(cpu, 1), "decode_test_cpu_s": round(decode_cpu, 1),
        "recipe": RECIPE, "model": config, "weights_dtype": "float16",
        "parameters": int(sum(w.size for w in weights.values())),
        "history": history,
        "test": {"pairs": len(refs), "copy": scores(sources, refs), "greedy_float32": scores(hyps32, refs)},
    }
    check_shipped(cp, config, half, vocab, sources, refs, hyps32, record, args.out)
    print(json.dumps(record["test"], indent=1))
    sizes = [f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in sorted(args.out.iterdir())]
    print(f"{args.out}: " + ", ".join(sizes))


if __name__ == "__main__":
    main()
