"""The book's drawn diagrams: the Transformer, the RNN encoder-decoder with and without attention,
multi-head attention, the three attentions and the masks (drawn by ``make_figures.py``).

Every name on a block is a name of the course; the masks are computed by ``course_pkg.reference``.
"""

from __future__ import annotations

import sys

from figure_style import (
    ATTN,
    DENSE,
    EMB,
    FFN,
    HEADS,
    HERE,
    NORM,
    POS_EMB,
    RNN,
    SCALE,
    arrow,
    box,
    canvas,
    label,
    line,
    save,
)
from matplotlib.patches import Rectangle


# ------------------------------------------------------------------- (a) the Transformer
def transformer(path):
    """Vaswani et al.'s Figure 1 with the course's names: encoder, decoder and output layer."""
    fig, ax = canvas(8.6, 9.4)
    w = 2.6
    ex, dx = 2.3, 6.1  # centres of the encoder and decoder columns
    _transformer_encoder(ax, ex, w)
    yd = _transformer_decoder(ax, ex, dx, w)
    _transformer_head(ax, ex, dx, w, yd)
    save(fig, path)


def _transformer_encoder(ax, ex, w):
    """The encoder column, centred on ``ex``, its blocks ``w`` wide."""
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


def _transformer_decoder(ax, ex, dx, w):
    """The decoder column, centred on ``dx`` (the encoder's output comes from ``ex``); returns
    the heights of its six blocks."""
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
    return yd


def _transformer_head(ax, ex, dx, w, yd):
    """The output layer above the decoder (its last block at ``yd[5]``) and the title."""
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


# ------------------------------------------------------------------- (b) seq2seq
def _unrolled_encoder(ax, xs, y, tokens, names, highlight_last):
    """The encoder GRU unrolled over ``tokens`` at ``xs``, its states named ``names``."""
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
    """Chapter 1's encoder-decoder: only the last encoder state, c, reaches the decoder."""
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
    """Chapter 2's encoder-decoder with attention: a new context c_t at every decoder step."""
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
    """Multi-head attention with its shapes: wq/wk/wv, split_heads, eight heads, combine_heads, wo."""
    fig, ax = canvas(10.6, 5.1)
    y = 2.3

    def slab(x, h, w, colors, text, sub):
        """A tensor drawn as a slab of ``colors`` (the heads) at ``x``, named ``text`` over ``sub``."""
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
    """The Transformer's three attentions: where Q, K and V come from, and the mask of each."""
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
    """The three masks of chapter 3, computed by ``course_pkg.reference``: printed and pictured."""
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
