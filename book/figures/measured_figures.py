"""The book's plots of measurements (drawn by ``make_figures.py``; nothing is trained here):
chapter 6's accuracy and step time against length, from ``data/length_experiments.json``, and
chapter 7's scores against the number of training pairs, from ``data/everyday_data_size.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
from figure_style import HERE, save
from matplotlib.ticker import FuncFormatter

LENGTH_DATA = HERE / "data" / "length_experiments.json"
# the three models of the length experiments: (key in the JSON file, matplotlib style, colour, marker
# size); open circles around small squares, so that two curves on top of each other both show
LENGTH_MODELS = [("GRU, no attention", "^:", "#777777", 5),
                 ("GRU + Bahdanau attention", "o-", "#2f7d32", 8),
                 ("Transformer", "s--", "#b03030", 4)]
DATA_SIZE_DATA = HERE / "data" / "everyday_data_size.json"
# the two models of the data-size sweep: (key in the JSON file, legend, marker, colour)
DATA_SIZE_MODELS = [("bpe", "byte-level BPE (the recipe)", "s", "#b03030"),
                    ("word", "word vocabularies (a larger model)", "o", "#2060a0")]


# ------------------------------------------------------------------- chapter 6: length experiments
def _length_data():
    """The record of ``benchmarks/length_experiments.py`` that chapter 6's plots draw."""
    return json.loads(LENGTH_DATA.read_text(encoding="utf-8"))


def length_accuracy(path):
    """Held-out exact match against source length, the three models of chapter 6."""
    record = _length_data()
    models = record["accuracy"]["models"]
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    lengths = []
    for name, style, colour, size in LENGTH_MODELS:
        rows = models[name]["by_source_length"]
        lengths = [r["length"] for r in rows]
        ax.plot(lengths, [r["exact_match"] for r in rows], style, color=colour, markersize=size,
                markerfacecolor="none" if size > 6 else colour,
                label=f"{name} ({models[name]['steps']} steps)")
    ax.set_xticks(lengths)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("source length (tokens)")
    ax.set_ylabel("exact match (held out)")
    top = ax.secondary_xaxis("top", functions=(lambda t: (t + 1) / 2, lambda n: 2 * n - 1))
    top.set_xticks(range(2, 13))
    top.set_xlabel("numbers in the list", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("Chapter 2's lists: exact match by source length", fontsize=10)
    fig.tight_layout()
    save(fig, path)


def length_step_time(path):
    """Training-step time against sequence length, GRU with attention and Transformer."""
    record = _length_data()
    timing, where = record["timing"], record["machine"]
    rows = timing["by_length"]
    lengths = [r["length"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    for key, (name, style, colour, _) in zip(("gru_attention", "transformer"), LENGTH_MODELS[1:]):
        ax.plot(lengths, [r[f"{key}_ms"] for r in rows], style, color=colour, markersize=5,
                label=f"{name} (median of {timing['rounds']} steps)")
        for r in rows:  # every timed step, faint: the spread of one run
            ax.plot([r["length"]] * len(r[f"{key}_all_ms"]), r[f"{key}_all_ms"], ".", color=colour,
                    alpha=0.5, markersize=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(lengths, [str(n) for n in lengths])
    ax.minorticks_off()
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("sequence length L (source = target)")
    clock = "CPU" if timing["device"] == "cpu" else "wall-clock"
    ax.set_ylabel(f"ms per training step ({clock} time)")
    ax.grid(alpha=0.3, which="major")
    ax.legend(fontsize=8, loc="upper left")
    threads = f", {where['torch_threads']} PyTorch thread{'s' if where['torch_threads'] > 1 else ''}" \
        if timing["device"] == "cpu" else ""
    ax.set_title(f"One Adam step, batch {timing['batch']}, on {where['gpu'] or where['cpu']}{threads}",
                 fontsize=10)
    fig.tight_layout()
    save(fig, path)


# ------------------------------------------------------------------- chapter 7: data size
def everyday_data_size(path, data=DATA_SIZE_DATA):
    """Test BLEU and chrF against the number of training pairs, BPE and word-level models."""
    record = json.loads(Path(data).read_text(encoding="utf-8"))
    sizes = {s["train_pairs"]: s for s in record["sizes"]}
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.5))
    for ax, metric, name in zip(axes, ("bleu", "chrf"), ("BLEU", "chrF")):
        ax.axhline(record["copy"][metric], color="#777777", linestyle=":", linewidth=1.2,
                   label="copy the source")
        for model, legend, marker, colour in DATA_SIZE_MODELS:
            runs = [r for r in record["runs"] if r["model"] == model]
            xs = sorted({r["train_pairs"] for r in runs})
            means = [sum(r[metric] for r in runs if r["train_pairs"] == n)
                     / sum(r["train_pairs"] == n for r in runs) for n in xs]
            ax.plot(xs, means, "-", color=colour, linewidth=1.3, label=legend)
            ax.plot([r["train_pairs"] for r in runs], [r[metric] for r in runs], marker,
                    color=colour, markersize=4.5, markerfacecolor="none", linestyle="none")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(sizes), [f"{n}\n{100 * sizes[n]['unknown_source_share']:.0f}%"
                                      for n in sorted(sizes)], fontsize=8)
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_title(f"test {name} ({record['test_pairs']} pairs, greedy)", fontsize=9.5)
        ax.grid(alpha=0.3)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_xlabel("training pairs (first N)\nunknown test source tokens, word model", fontsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8,
               frameon=False)
    seeds = {}  # seed -> the sizes it was run at
    for r in record["runs"]:
        seeds.setdefault(r["seed"], set()).add(r["train_pairs"])
    runs_of = ", ".join(f"seed {seed} " + ("at every size" if found == set(sizes) else
                                           "at " + ", ".join(f"{n:,}" for n in sorted(found)) + " only")
                        for seed, found in sorted(seeds.items()))
    fig.suptitle(f"Everyday fr→en, {record['recipe']['steps']} steps at every size\n"
                 f"points: one run each ({runs_of}); line: the mean at each size", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save(fig, path)
