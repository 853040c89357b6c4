"""The drawing kit of the book's figures (``make_figures.py``): the colours of the block types,
the font scale, an inch-unit canvas, boxes, arrows, lines, labels and the deterministic SVG save.

Importing it selects matplotlib's SVG backend.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

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
HEADS = ["#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a6761d", "#f781bf", "#999999"]


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
    """An arrow from ``start`` to ``end`` (curved by ``rad``)."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10, color=color,
                                 linewidth=lw, linestyle=ls, shrinkA=0, shrinkB=0,
                                 connectionstyle=f"arc3,rad={rad}"))


def line(ax, xs, ys, color="#333333", lw=1.1, ls="-"):
    """A polyline through ``xs``, ``ys``."""
    ax.plot(xs, ys, color=color, linewidth=lw, linestyle=ls, solid_capstyle="butt")


def label(ax, x, y, text, size=8, color="#333333", ha="center", va="center", style="normal", **kw):
    """Text at (x, y), its size scaled by ``SCALE``."""
    ax.text(x, y, text, ha=ha, va=va, fontsize=size * SCALE[0], color=color, style=style, **kw)


def save(fig, path):
    """Write ``fig`` as SVG without a date or creator (the same bytes on every run), and close it."""
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
