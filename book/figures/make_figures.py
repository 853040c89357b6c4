"""Draw the book's figures into this folder, as SVG: ``python book/figures/make_figures.py``.

The output is deterministic (no date, fixed SVG ids; ``tests/test_figures.py`` regenerates
the figures and compares them byte for byte with the committed files). Every name on a
block is a name of the course: a class of ``course_pkg.torch`` / ``course_pkg.tensorflow``
or one of its attributes (``self_attn``, ``norm1``, ``final_layer`` ...). The masks are
computed by ``course_pkg.reference``, the NumPy oracle both frameworks are tested against.
The two plots of chapter 6 (``length_*.svg``) are drawn from ``data/length_experiments.json``,
measured once by ``python benchmarks/length_experiments.py --save
book/figures/data/length_experiments.json``, and chapter 7's ``everyday_data_size.svg`` from
``data/everyday_data_size.json``, measured by ``python benchmarks/everyday_translation.py
--data-sizes 500 1000 2000 2973 --seeds 0 1 --save``; nothing is trained here.

Which chapter shows which figure (with its alt text) is listed in ``FIGURES``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

HERE = Path(__file__).resolve().parent

# Colours of the block types, the same in every figure.
ATTN = "#f6d7a7"      # attention
FFN = "#c9e4f6"       # feed-forward
NORM = "#f3f0b5"      # add & norm
EMB = "#f8c9c9"       # embeddings
POS_EMB = "PositionalEmbedding\nembedding · √d_model + positional_encoding"
DENSE = "#d6ccef"     # dense / linear
RNN = "#cfe8cf"       # recurrent cells
GREY = "#eeeeee"
SCALE = [1.0]  # font scale of the figure being drawn (a wide figure shrinks at page width)
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
HEADS = ["#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a6761d", "#f781bf", "#999999"]

# file -> (chapter notebook, alt text); the alt text is also what the book uses.
FIGURES = {
    "transformer.svg": ("05_decoder", "The Transformer of Vaswani et al.'s Figure 1 redrawn with the "
                        "course's names: on the left the Encoder (PositionalEmbedding, then num_layers "
                        "EncoderLayers of MultiHeadAttention, add and LayerNorm, FeedForward, add and "
                        "LayerNorm), on the right the Decoder (PositionalEmbedding, then num_layers "
                        "DecoderLayers of masked MultiHeadAttention, MultiHeadAttention over the encoder "
                        "output, FeedForward, each followed by add and LayerNorm), then final_layer, a "
                        "Dense or Linear layer, and a softmax."),
    "seq2seq_bottleneck.svg": ("01_seq2seq", "The encoder-decoder of chapter 1 unrolled in time: the "
                               "encoder GRU reads the source tokens one by one; only its final state, "
                               "one vector c, reaches the decoder GRU, which receives c at every step "
                               "and writes the target one token at a time."),
    "seq2seq_attention.svg": ("02_attention", "The encoder-decoder with attention of chapter 2: at "
                              "each decoder step the previous decoder state is the query, every encoder "
                              "state is a key and a value, and the attention weights give a new context "
                              "vector c_t for that step."),
    "multi_head.svg": ("04_encoder", "Multi-head attention with shapes: x of shape (batch, seq, 512) "
                       "goes through the dense layers wq, wk and wv, split_heads cuts each result into "
                       "8 heads of depth 64, shape (batch, 8, seq, 64), each head runs scaled "
                       "dot-product attention, combine_heads concatenates the 8 outputs back to "
                       "(batch, seq, 512) and wo mixes them."),
    "three_attentions.svg": ("05_decoder", "The Transformer's three attentions: encoder "
                             "self-attention takes queries, keys and values from the encoder's input "
                             "with the source padding mask; the decoder's masked self-attention takes "
                             "all three from the decoder's input with the look-ahead and target "
                             "padding mask; encoder-decoder attention takes queries from the decoder "
                             "and keys and values from the encoder output, with the source padding "
                             "mask."),
    "masks.svg": ("03_masks", "The three masks of the tokens [1, 2, 0, 4, 5, 0], each printed as a "
                  "matrix of 0s and 1s next to its picture, black where the matrix holds 1 "
                  "(blocked): the padding mask blocks the columns of the two pads, the look-ahead "
                  "mask the strict upper triangle, the combined mask both."),
    "length_accuracy.svg": ("06_training", "Held-out exact match against source length, 3 to 23 tokens "
                            "(2 to 12 numbers), of three models trained on chapter 2's lists: the GRU "
                            "without attention falls from near 1 on the short lists to near 0 on the "
                            "longest, while the GRU with Bahdanau attention and the Transformer stay at "
                            "or next to 1 at every length, their two lines on top of each other."),
    "length_step_time.svg": ("06_training", "Time of one training step against sequence length L, 8 to "
                             "256, both axes logarithmic, for the GRU with Bahdanau attention and the "
                             "Transformer on one CPU thread: at the shortest length the GRU's step is "
                             "the cheaper, the two lines cross soon after, and from there the GRU's step "
                             "grows faster with L than the Transformer's, so the gap widens with every "
                             "doubling of the length."),
    "everyday_data_size.svg": ("07_tokenization",
                               "Two panels, test BLEU (left) and test chrF (right) on the 372 everyday "
                               "French-to-English test pairs against the number of training pairs, 500, "
                               "1,000, 2,000 and 2,973, with the share of test source tokens unknown to "
                               "the word vocabulary under each (28%, 21%, 16%, 12%), for the byte-level "
                               "BPE recipe (red squares) and the recipe on word vocabularies, a larger "
                               "model (blue circles), every run 800 steps; points are single runs, seed 0 "
                               "at every size and seed 1 at 2,973 pairs only, and a line joins the means "
                               "at each size; copying the source is a dotted grey line: both lines rise "
                               "at every size; at 500 and 1,000 pairs they lie close together, below "
                               "copying in chrF, and from there the word-level line climbs faster, so "
                               "the gap between them is widest at 2,973 pairs."),
}


# ------------------------------------------------------------------- drawing helpers
def canvas(width, height):
    """A figure of ``width`` x ``height`` inches whose data units are inches."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def box(ax, x, y, w, h, text, color=GREY, size=9, weight="normal", edge="#333333", style="round,pad=0.02",
        lw=1.0, family=None):
    """A box centred on (x, y)."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, facecolor=color,
                                edgecolor=edge, linewidth=lw))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=size * SCALE[0], fontweight=weight,
                family=family)


def arrow(ax, start, end, color="#333333", lw=1.1, style="-|>", rad=0.0, ls="-"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10, color=color,
                                 linewidth=lw, linestyle=ls, shrinkA=0, shrinkB=0,
                                 connectionstyle=f"arc3,rad={rad}"))


def line(ax, xs, ys, color="#333333", lw=1.1, ls="-"):
    ax.plot(xs, ys, color=color, linewidth=lw, linestyle=ls, solid_capstyle="butt")


def label(ax, x, y, text, size=8, color="#333333", ha="center", va="center", style="normal", **kw):
    ax.text(x, y, text, ha=ha, va=va, fontsize=size * SCALE[0], color=color, style=style, **kw)


# ------------------------------------------------------------------- (a) the Transformer
def transformer(path):
    fig, ax = canvas(8.6, 9.4)
    w = 2.6
    ex, dx = 2.3, 6.1  # centres of the encoder and decoder columns

    # --- encoder
    label(ax, ex, 0.35, "src_tokens (batch, src_len)", size=8)
    arrow(ax, (ex, 0.5), (ex, 0.85))
    box(ax, ex, 1.15, w, 0.55, POS_EMB, EMB, size=7.5)
    arrow(ax, (ex, 1.43), (ex, 1.95))
    label(ax, ex - w / 2 - 0.05, 1.72, "+ dropout", size=7, ha="right", style="italic")
    # the layer frame
    ax.add_patch(Rectangle((ex - w / 2 - 0.3, 1.95), w + 0.6, 3.75, facecolor="#fafafa", edgecolor="#777777",
                           linewidth=1.0, linestyle="--"))
    label(ax, ex - w / 2 - 0.22, 5.55, "EncoderLayer", size=9, ha="left", weight="bold")
    label(ax, ex - w / 2 - 0.55, 3.8, "× num_layers", size=9, ha="center", rotation=90)
    ys = [2.65, 3.35, 4.2, 4.9]
    box(ax, ex, ys[0], w, 0.5, "MultiHeadAttention (self_attn)\nQ = K = V = x, source padding mask", ATTN,
        size=7.5)
    box(ax, ex, ys[1], w, 0.38, "Add & LayerNorm (norm1)", NORM, size=8)
    box(ax, ex, ys[2], w, 0.5, "FeedForward (ffn)\nDense(dff, relu) → Dense(d_model)", FFN, size=7.5)
    box(ax, ex, ys[3], w, 0.38, "Add & LayerNorm (norm2)", NORM, size=8)
    arrow(ax, (ex, 2.05), (ex, ys[0] - 0.25))
    # Q, K, V branches into self-attention
    for off in (-0.6, 0.6):
        arrow(ax, (ex, 2.15), (ex + off, ys[0] - 0.25), lw=0.9)
    arrow(ax, (ex, ys[0] + 0.25), (ex, ys[1] - 0.19))
    arrow(ax, (ex, ys[1] + 0.19), (ex, ys[2] - 0.25))
    arrow(ax, (ex, ys[2] + 0.25), (ex, ys[3] - 0.19))
    # residuals
    rx = ex - w / 2 - 0.15
    line(ax, [ex, rx, rx], [2.1, 2.1, ys[1]], lw=0.9)
    arrow(ax, (rx, ys[1]), (ex - w / 2, ys[1]), lw=0.9)
    line(ax, [ex, rx, rx], [ys[1] + 0.3, ys[1] + 0.3, ys[3]], lw=0.9)
    arrow(ax, (rx, ys[3]), (ex - w / 2, ys[3]), lw=0.9)
    arrow(ax, (ex, ys[3] + 0.19), (ex, 6.1))
    label(ax, ex, 6.3, "enc_output (batch, src_len, d_model)", size=8)
    ax.add_patch(Rectangle((ex - w / 2 - 0.75, 0.7), w + 1.1, 5.15, facecolor="none", edgecolor="#b03030",
                           linewidth=1.4))
    label(ax, ex, 0.05 + 6.65, "Encoder  (Transformer.encoder)", size=10, weight="bold", color="#b03030")

    # --- decoder
    label(ax, dx, 0.35, "tgt_in (batch, tgt_len): the target shifted right", size=8)
    arrow(ax, (dx, 0.5), (dx, 0.85))
    box(ax, dx, 1.15, w, 0.55, POS_EMB, EMB, size=7.5)
    arrow(ax, (dx, 1.43), (dx, 1.95))
    label(ax, dx + w / 2 + 0.05, 1.72, "+ dropout", size=7, ha="left", style="italic")
    ax.add_patch(Rectangle((dx - w / 2 - 0.3, 1.95), w + 0.6, 5.25, facecolor="#fafafa", edgecolor="#777777",
                           linewidth=1.0, linestyle="--"))
    label(ax, dx - w / 2 - 0.22, 7.05, "DecoderLayer", size=9, ha="left", weight="bold")
    label(ax, dx + w / 2 + 0.55, 4.6, "× num_layers", size=9, ha="center", rotation=90)
    yd = [2.65, 3.35, 4.2, 4.9, 5.75, 6.45]
    box(ax, dx, yd[0], w, 0.5, "MultiHeadAttention (self_attn), masked\nQ = K = V = x, look-ahead + padding",
        ATTN, size=7.2)
    box(ax, dx, yd[1], w, 0.38, "Add & LayerNorm (norm1)", NORM, size=8)
    box(ax, dx, yd[2], w, 0.5, "MultiHeadAttention (cross_attn)\nQ = x, K = V = enc_output", ATTN, size=7.5)
    box(ax, dx, yd[3], w, 0.38, "Add & LayerNorm (norm2)", NORM, size=8)
    box(ax, dx, yd[4], w, 0.5, "FeedForward (ffn)\nDense(dff, relu) → Dense(d_model)", FFN, size=7.5)
    box(ax, dx, yd[5], w, 0.38, "Add & LayerNorm (norm3)", NORM, size=8)
    arrow(ax, (dx, 2.05), (dx, yd[0] - 0.25))
    for off in (-0.6, 0.6):
        arrow(ax, (dx, 2.15), (dx + off, yd[0] - 0.25), lw=0.9)
    arrow(ax, (dx, yd[0] + 0.25), (dx, yd[1] - 0.19))
    arrow(ax, (dx, yd[1] + 0.19), (dx, yd[2] - 0.25))
    arrow(ax, (dx, yd[2] + 0.25), (dx, yd[3] - 0.19))
    arrow(ax, (dx, yd[3] + 0.19), (dx, yd[4] - 0.25))
    arrow(ax, (dx, yd[4] + 0.25), (dx, yd[5] - 0.19))
    rx = dx + w / 2 + 0.15
    for lo, hi in ((2.1, yd[1]), (yd[1] + 0.3, yd[3]), (yd[3] + 0.3, yd[5])):
        line(ax, [dx, rx, rx], [lo, lo, hi], lw=0.9)
        arrow(ax, (rx, hi), (dx + w / 2, hi), lw=0.9)
    # encoder output -> cross attention keys and values
    line(ax, [ex + 1.5, 4.15, 4.15], [6.3, 6.3, yd[2]], color="#b03030", lw=1.2)
    arrow(ax, (4.15, yd[2]), (dx - w / 2, yd[2]), color="#b03030", lw=1.2)
    label(ax, 4.22, yd[2] + 0.65, "K, V", size=8, color="#b03030", ha="left")
    ax.add_patch(Rectangle((dx - w / 2 - 0.45, 0.7), w + 1.25, 6.7, facecolor="none", edgecolor="#2060a0",
                           linewidth=1.4))
    label(ax, dx, 7.58, "Decoder  (Transformer.decoder)", size=10, weight="bold", color="#2060a0")

    # --- head
    arrow(ax, (dx, yd[5] + 0.19), (dx, 7.95))
    box(ax, dx, 8.2, w, 0.42, "final_layer: Dense (TF) / nn.Linear (torch)\nd_model → target_vocab_size",
        DENSE, size=7.5)
    arrow(ax, (dx, 8.41), (dx, 8.7))
    label(ax, dx, 8.9, "logits (batch, tgt_len, vocab) → softmax: next-token probabilities", size=8)
    label(ax, ex, 8.6, "Transformer", size=13, weight="bold")
    label(ax, ex, 8.25, "course_pkg.torch.Transformer\ncourse_pkg.tensorflow.Transformer", size=8,
          family="monospace")
    label(ax, ex, 7.55, "post-LN, as in the paper (norm_first=False);\nresidual paths drawn at the side",
          size=7, style="italic")
    save(fig, path)


# ------------------------------------------------------------------- (b) seq2seq
def _unrolled_encoder(ax, xs, y, tokens, names, highlight_last):
    for i, (x, tok, name) in enumerate(zip(xs, tokens, names)):
        box(ax, x, y, 0.7, 0.45, "GRU", RNN, size=8)
        label(ax, x, y - 0.75, tok, size=8, family="monospace")
        arrow(ax, (x, y - 0.6), (x, y - 0.23))
        label(ax, x + 0.2, y + 0.42, name, size=9)
        if i:
            arrow(ax, (xs[i - 1] + 0.35, y), (x - 0.35, y))
    arrow(ax, (xs[0] - 0.8, y), (xs[0] - 0.35, y))
    label(ax, xs[0] - 0.95, y, "0", size=9)


def seq2seq_bottleneck(path):
    fig, ax = canvas(9.0, 3.4)
    xs = [1.2, 2.1, 3.0, 3.9]
    y = 1.5
    _unrolled_encoder(ax, xs, y, ["sept", ",", "dix", "<eos>"], ["h₁", "h₂", "h₃", "h₄"], True)
    label(ax, 2.4, 3.1, "Seq2SeqEncoder", size=10, weight="bold", color="#2f7a2f")
    # the context vector
    cx = 5.0
    arrow(ax, (xs[-1] + 0.35, y), (cx - 0.25, y))
    box(ax, cx, y, 0.42, 0.9, "", "#ffcc66", edge="#b06000", lw=1.8)
    for k in range(4):
        ax.add_patch(Rectangle((cx - 0.12, y - 0.38 + k * 0.19), 0.24, 0.15, facecolor="#b06000",
                               edgecolor="none", alpha=0.35 + 0.15 * k))
    label(ax, cx, y + 0.68, "c = h₄", size=9, weight="bold", color="#b06000")
    label(ax, cx, y - 0.8, "one vector of `units`\nnumbers, whatever\nthe source length", size=7.5,
          color="#b06000")
    # decoder
    ds = [6.2, 7.2, 8.2]
    yd = 1.5
    label(ax, 7.2, 3.1, "Seq2SeqDecoder", size=10, weight="bold", color="#2f7a2f")
    ins, outs = ["<bos>", "seven", ","], ["seven", ",", "..."]
    for i, x in enumerate(ds):
        box(ax, x, yd, 0.7, 0.45, "GRU", RNN, size=8)
        label(ax, x, yd - 0.75, ins[i], size=8, family="monospace")
        arrow(ax, (x, yd - 0.6), (x, yd - 0.23))
        arrow(ax, (x, yd + 0.23), (x, yd + 0.6))
        label(ax, x, yd + 0.75, outs[i], size=8, family="monospace")
        label(ax, x + 0.22, yd - 0.4, f"s{'₁₂₃'[i]}", size=8)
        if i:
            arrow(ax, (ds[i - 1] + 0.35, yd), (x - 0.35, yd))
        # c is glued to every input
        line(ax, [cx, cx, x - 0.3], [y + 0.85, 2.75, 2.75], color="#b06000", lw=0.9, ls="--")
        arrow(ax, (x - 0.3, 2.75), (x - 0.3, yd + 0.23), color="#b06000", lw=0.9, style="-|>", ls="--")
    line(ax, [cx + 0.21, ds[0] - 0.35], [y, yd], lw=1.1)
    label(ax, 5.6, y + 0.15, "s₀ = c", size=8)
    label(ax, 7.2, 0.25, "s_t = GRU([E_y[y_{t-1}]; c], s_{t-1})", size=8, family="monospace")
    label(ax, 2.4, 0.25, "h_i = GRU(E_x[x_i], h_{i-1})", size=8, family="monospace")
    save(fig, path)


def seq2seq_attention(path):
    fig, ax = canvas(9.0, 4.2)
    xs = [1.2, 2.1, 3.0, 3.9]
    y = 1.3
    _unrolled_encoder(ax, xs, y, ["sept", ",", "dix", "<eos>"], ["h₁", "h₂", "h₃", "h₄"], False)
    label(ax, 2.4, 0.1, "Seq2SeqEncoder: keys = values = h₁ … h₄", size=9, weight="bold", color="#2f7a2f")
    # attention box
    ax_, ay = 5.4, 3.2
    box(ax, ax_, ay, 1.9, 0.7, "BahdanauAttention\n(or LuongAttention)", ATTN, size=8.5)
    weights = [0.05, 0.75, 0.15, 0.05]
    for x, wgt in zip(xs, weights):
        line(ax, [x, x], [y + 0.23, 2.4], color="#999999", lw=0.8)
        arrow(ax, (x, 2.4), (ax_ - 0.9, ay - 0.1), color="#cc6600", lw=0.6 + 4 * wgt)
        label(ax, x + 0.06, 1.95, f"α = {wgt:.2f}", size=7, color="#cc6600", ha="left")
    label(ax, 0.3, 3.75, "attention weights α_t,i at one step t\n(an illustration, not a trained model)",
          size=7.5, style="italic", ha="left", color="#cc6600")
    # decoder
    ds = [6.2, 7.3, 8.4]
    yd = 1.3
    ins, outs = ["<bos>", "seven", ","], ["seven", ",", "..."]
    for i, x in enumerate(ds):
        box(ax, x, yd, 0.7, 0.45, "GRU", RNN, size=8)
        label(ax, x, yd - 0.75, ins[i], size=8, family="monospace")
        arrow(ax, (x, yd - 0.6), (x, yd - 0.23))
        arrow(ax, (x, yd + 0.23), (x, yd + 0.55))
        label(ax, x + 0.05, yd + 0.68, outs[i], size=8, family="monospace")
        if i:
            arrow(ax, (ds[i - 1] + 0.35, yd), (x - 0.35, yd))
    arrow(ax, (xs[-1] + 0.35, y), (ds[0] - 0.35, yd))
    label(ax, 5.1, y - 0.18, "s₀ = h₄", size=8)
    # step t = 2: query s1 -> attention -> c2 -> GRU 2
    q_from, c_to = ds[0] + 0.2, ds[1]
    arrow(ax, (ds[0] + 0.35, yd + 0.1), (ax_ + 0.5, ay - 0.36), color="#2060a0", lw=1.2, rad=0.25)
    label(ax, 6.75, 2.15, "query s₁", size=8, color="#2060a0")
    arrow(ax, (ax_ + 0.95, ay), (c_to - 0.15, yd + 0.23), color="#b06000", lw=1.6, rad=-0.3)
    label(ax, 7.9, 2.95, "c₂ = Σᵢ α₂,ᵢ hᵢ", size=9, color="#b06000", weight="bold")
    label(ax, 7.0, 0.1, "AttentionDecoder: a new context c_t at every step", size=9, weight="bold",
          color="#2f7a2f")
    del q_from
    save(fig, path)


# ------------------------------------------------------------------- (c) multi-head attention
def multi_head(path):
    fig, ax = canvas(10.6, 5.1)
    y = 2.3

    def slab(x, h, w, colors, text, sub):
        n = len(colors)
        for k, c in enumerate(colors):
            ax.add_patch(Rectangle((x, y - h / 2 + k * h / n), w, h / n, facecolor=c, edgecolor="white",
                                   linewidth=0.6, alpha=0.85))
        ax.add_patch(Rectangle((x, y - h / 2), w, h, facecolor="none", edgecolor="#333333", linewidth=0.9))
        label(ax, x + w / 2, y + h / 2 + 0.25, text, size=8.5, weight="bold")
        label(ax, x + w / 2, y - h / 2 - 0.3, sub, size=7.5, family="monospace")

    # input
    slab(0.3, 2.4, 0.5, ["#bbbbbb"], "x", "(batch, seq, 512)")
    box(ax, 1.75, y + 0.8, 0.9, 0.38, "wq", DENSE, size=8.5)
    box(ax, 1.75, y, 0.9, 0.38, "wk", DENSE, size=8.5)
    box(ax, 1.75, y - 0.8, 0.9, 0.38, "wv", DENSE, size=8.5)
    for dy in (0.8, 0, -0.8):
        arrow(ax, (0.8, y), (1.3, y + dy))
    label(ax, 1.75, y - 1.45, "Dense 512 → 512\nthe 8 heads side by side", size=7)
    for dy in (0.8, 0, -0.8):
        arrow(ax, (2.2, y + dy), (2.7, y))
    slab(2.7, 2.4, 0.5, [c for c in HEADS], "wq(x), wk(x), wv(x)", "(batch, seq, 512)")
    # split heads
    arrow(ax, (3.25, y), (3.95, y))
    label(ax, 3.6, y + 0.22, "split_heads", size=7.5)
    # eight separate heads, fanned
    hx = 4.1
    for k, c in enumerate(HEADS):
        yy = y - 1.4 + k * 0.4
        ax.add_patch(Rectangle((hx, yy - 0.14), 0.55, 0.28, facecolor=c, edgecolor="#333333", linewidth=0.6,
                               alpha=0.85))
        arrow(ax, (hx + 0.6, yy), (hx + 0.95, yy), lw=0.7)
        box(ax, hx + 1.6, yy, 1.25, 0.3, f"attention, head {k}", ATTN, size=6.5)
        arrow(ax, (hx + 2.25, yy), (hx + 2.6, yy), lw=0.7)
        ax.add_patch(Rectangle((hx + 2.6, yy - 0.14), 0.55, 0.28, facecolor=c, edgecolor="#333333",
                               linewidth=0.6, alpha=0.85))
    label(ax, hx + 0.28, y + 2.2, "q, k, v\n(batch, 8, seq, 64)", size=7.5, family="monospace")
    label(ax, hx + 1.6, y + 2.2, "scaled_dot_product_attention\nweights (batch, 8, Tq, Tk)", size=7.5)
    label(ax, hx + 2.9, y + 2.2, "outputs\n(batch, 8, Tq, 64)", size=7.5, family="monospace")
    label(ax, hx + 1.6, y - 1.95, "every head attends at once: the head axis is a batch axis", size=7,
          style="italic")
    # combine
    arrow(ax, (hx + 3.3, y), (8.25, y))
    label(ax, 7.85, y + 0.22, "combine_heads", size=7.5)
    slab(8.3, 2.4, 0.5, [c for c in HEADS], "Concat", "(batch, Tq, 512)")
    box(ax, 9.45, y, 0.6, 0.38, "wo", DENSE, size=8.5)
    arrow(ax, (8.8, y), (9.15, y))
    arrow(ax, (9.75, y), (10.15, y))
    label(ax, 10.3, y, "(batch, Tq, 512)", size=7.5, family="monospace", rotation=90)
    label(ax, 5.3, 4.85, "MultiHeadAttention(d_model=512, num_heads=8): depth = 512 / 8 = 64", size=10,
          weight="bold")
    save(fig, path)


# ------------------------------------------------------------------- (d) three attentions
def three_attentions(path):
    SCALE[0] = 1.2
    fig, ax = canvas(10.0, 4.3)
    panels = [
        (1.75, "Encoder self-attention", "EncoderLayer.self_attn", "x (encoder)", "x (encoder)",
         "x (encoder)", "source padding mask", "#b03030"),
        (5.0, "Masked decoder self-attention", "DecoderLayer.self_attn", "x (decoder)", "x (decoder)",
         "x (decoder)", "look-ahead + target padding", "#2060a0"),
        (8.25, "Encoder–decoder attention", "DecoderLayer.cross_attn", "x (decoder)", "enc_output",
         "enc_output", "source padding mask", "#6a3d9a"),
    ]
    for cx, title, attr, q, k, v, mask, color in panels:
        label(ax, cx, 4.05, title, size=10, weight="bold", color=color)
        label(ax, cx, 3.72, attr, size=8, family="monospace")
        box(ax, cx, 2.1, 2.6, 0.7, "MultiHeadAttention\nsoftmax(QKᵀ/√d_k) V, masked", ATTN, size=8)
        for dx, name, src in ((-0.9, "Q", q), (0.0, "K", k), (0.9, "V", v)):
            from_enc = src == "enc_output"
            c = "#b03030" if from_enc or "encoder" in src else "#2060a0"
            box(ax, cx + dx, 3.15, 0.82, 0.36, src, "#ffffff", size=6.8, edge=c)
            arrow(ax, (cx + dx, 2.97), (cx + dx, 2.45), color=c)
            label(ax, cx + dx + 0.12, 2.7, name, size=8, weight="bold", color=c, ha="left")
        label(ax, cx, 1.58, f"mask: {mask}", size=7.8, style="italic")
        arrow(ax, (cx, 1.42), (cx, 1.0))
        label(ax, cx, 0.8, "one output per query", size=7.5)
        label(ax, cx, 0.55, "(batch, Tq, d_model)", size=7.5, family="monospace")
    label(ax, 5.0, 0.15, "red: from the encoder (source)   blue: from the decoder (target)", size=8,
          color="#555555")
    save(fig, path)


# ------------------------------------------------------------------- (e) masks
def masks(path):
    sys.path.insert(0, str(HERE.parent.parent))
    import numpy as np

    from course_pkg import reference as ref

    tokens = [[1, 2, 0, 4, 5, 0]]
    padding = ref.create_padding_mask(tokens)[0, 0]  # (1, 6)
    look_ahead = ref.create_look_ahead_mask(6)  # (6, 6)
    combined = ref.create_combined_mask(tokens)[0, 0]  # (6, 6)
    rows = [("create_padding_mask(tokens)", "(batch, 1, 1, 6): one row, broadcast over the queries", padding),
            ("create_look_ahead_mask(6)", "(6, 6): the strict upper triangle", look_ahead),
            ("create_combined_mask(tokens)", "(batch, 1, 6, 6): maximum of the two", combined)]
    fig, ax = canvas(8.2, 8.8)
    cell = 0.32
    labels = [str(t) for t in tokens[0]]
    for r, (name, sub, m) in enumerate(rows):
        top = 8.1 - r * 2.75
        label(ax, 0.3, top + 0.35, name, size=10, weight="bold", ha="left", family="monospace")
        label(ax, 0.3, top + 0.05, sub, size=8, ha="left", style="italic")
        # the matrix, as printed
        mx = 0.7
        for i in range(m.shape[0]):
            for j in range(6):
                label(ax, mx + j * 0.42, top - 0.35 - i * cell, f"{m[i, j]:.0f}.", size=9, family="monospace")
        h = m.shape[0] * cell
        for side, x in (("[", mx - 0.3), ("]", mx + 5 * 0.42 + 0.3)):
            line(ax, [x + (0.08 if side == "[" else -0.08), x, x, x + (0.08 if side == "[" else -0.08)],
                 [top - 0.18, top - 0.18, top - 0.18 - h, top - 0.18 - h], lw=1.0)
        arrow(ax, (3.35, top - 0.18 - h / 2), (4.05, top - 0.18 - h / 2))
        # the picture (the padding mask drawn broadcast over the six queries)
        pic = np.broadcast_to(m, (6, 6))
        px, py = 5.0, top - 0.15
        for i in range(6):
            for j in range(6):
                blocked = pic[i, j] == 1
                ax.add_patch(Rectangle((px + j * cell, py - (i + 1) * cell), cell, cell,
                                       facecolor="#111111" if blocked else "#ffffff", edgecolor="#999999",
                                       linewidth=0.6))
        for j, t in enumerate(labels):
            label(ax, px + (j + 0.5) * cell, py + 0.12, t, size=7)
            label(ax, px - 0.12, py - (j + 0.5) * cell, t, size=7)
        label(ax, px + 3 * cell, py + 0.32, "key (token id)", size=7)
        label(ax, px - 0.38, py - 3 * cell, "query", size=7, rotation=90)
        if m.shape[0] == 1:
            label(ax, px + 6 * cell + 0.15, py - 3 * cell, "the same row\nfor every query", size=7.5,
                  ha="left", style="italic")
    label(ax, 4.1, 0.15, "tokens = [[1, 2, 0, 4, 5, 0]] (0 = <pad>); 1.0 = blocked = black", size=9)
    save(fig, path)


# ------------------------------------------------------------------- chapter 6: length experiments
def _length_data():
    return json.loads(LENGTH_DATA.read_text(encoding="utf-8"))


def length_accuracy(path):
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


# ------------------------------------------------------------------- output
def save(fig, path):
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)


DRAW = {"transformer.svg": transformer, "seq2seq_bottleneck.svg": seq2seq_bottleneck,
        "seq2seq_attention.svg": seq2seq_attention, "multi_head.svg": multi_head,
        "three_attentions.svg": three_attentions, "masks.svg": masks,
        "length_accuracy.svg": length_accuracy, "length_step_time.svg": length_step_time,
        "everyday_data_size.svg": everyday_data_size}


def main(out=HERE):
    """Write every figure into ``out``; returns their paths."""
    out = Path(out)
    plt.rcParams.update({"svg.hashsalt": "transformer-course", "svg.fonttype": "path",
                         "font.family": "DejaVu Sans"})
    paths = []
    for name, draw in DRAW.items():
        SCALE[0] = 1.0
        draw(out / name)
        paths.append(out / name)
    return paths


if __name__ == "__main__":
    for written in main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(written)
