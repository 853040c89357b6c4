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

Which chapter shows which figure (with its alt text) is listed in ``FIGURES``. The drawing is
in the modules next to this script: ``figure_style.py`` (colours, boxes, arrows, the SVG save),
``architecture_figures.py`` (the diagrams) and ``measured_figures.py`` (the plots of measurements).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the modules next to this script (also when a test loads it by path)
    sys.path.insert(0, str(HERE))

import matplotlib  # noqa: E402

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from architecture_figures import (  # noqa: E402
    masks,
    multi_head,
    seq2seq_attention,
    seq2seq_bottleneck,
    three_attentions,
    transformer,
)
from figure_style import SCALE  # noqa: E402
from measured_figures import everyday_data_size, length_accuracy, length_step_time  # noqa: E402

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


# ------------------------------------------------------------------- output
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
