"""Exercise 8.9, on section 8.8's Marian loader: which of the course ``Transformer``'s canonical
weights a tensor of a Hugging Face ``MarianMTModel`` checkpoint becomes. How its parameters are
drawn, the reference answer, and what a wrong answer is told (:func:`explain_names`).

The reference is the loader itself, not a second table of names: :func:`loader_map` hands
:func:`course_pkg.common.huggingface.marian.marian_weights` a checkpoint whose every tensor holds
one number of its own (tiny sizes, all equal) and reads back which canonical weights hold which
number. Transposing, renumbering the features and reading a tied table twice move numbers around
but never mix them, so each canonical weight names the one tensor it came from.

:data:`SPECS` holds the exercise's :class:`~course_pkg.exercises.catalog.Exercise` arguments as a
keyword dict; the catalog builds the entry from it (so this module does not import it).
"""

from __future__ import annotations

import functools

import numpy as np

from ..common.huggingface import marian
from .comparison import to_numpy

LAYERS = 6  # opus-mt's encoder and decoder layers each
SHARED, LOGITS_BIAS = "model.shared.weight", "final_logits_bias"
_SIZE = 4  # the probe checkpoint's d_model, feed-forward width, vocabulary and positions alike
ATTENTION = [f"{proj}.{kind}" for proj in ("q_proj", "k_proj", "v_proj", "out_proj")
             for kind in ("weight", "bias")]  # an attention block's tensors


def checkpoint_names(num_layers=LAYERS) -> list:
    """The tensor names of a ``MarianMTModel`` checkpoint as ``save_pretrained`` writes it for
    opus-mt's configuration (shared embeddings tied to the output layer): ``model.shared.weight``
    stands for the tied copies (the stacks' ``embed_tokens``, ``lm_head``), which the file leaves
    out, and the sinusoidal position tables are not stored. Hugging Face's names, not the course's
    (the tests compare them with a model that ``transformers`` saves)."""
    names = [SHARED, LOGITS_BIAS]
    for stack, blocks in (("encoder", ["self_attn"]), ("decoder", ["self_attn", "encoder_attn"])):
        for i in range(num_layers):
            layer = f"model.{stack}.layers.{i}"
            for block in blocks:
                names += [f"{layer}.{block}.{entry}" for entry in ATTENTION]
                names += [f"{layer}.{block}_layer_norm.{kind}" for kind in ("weight", "bias")]
            names += [f"{layer}.{entry}.{kind}" for entry in ("fc1", "fc2", "final_layer_norm")
                      for kind in ("weight", "bias")]
    return names


def _shape(name) -> tuple:
    """The tensor's shape when every size is :data:`_SIZE`: a dense layer's or the embeddings'
    weight a square, a bias or a layer norm's gain a row, the logits' bias one row of them."""
    if name == LOGITS_BIAS:
        return (1, _SIZE)
    if name.endswith((".bias", "layer_norm.weight")):
        return (_SIZE,)
    return (_SIZE, _SIZE)


@functools.lru_cache(maxsize=None)
def loader_map(num_layers=LAYERS) -> dict:
    """``{Hugging Face name: sorted canonical names}``: the course weights that
    :func:`~course_pkg.common.huggingface.marian.marian_weights` fills from each tensor of a
    checkpoint of :func:`checkpoint_names` (opus-mt's configuration: tied, shared, scaled
    embeddings; the shapes :data:`_SIZE` wide), read from the loader's own output."""
    config = {"model_type": "marian", "d_model": _SIZE, "encoder_layers": num_layers,
              "decoder_layers": num_layers, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
              "encoder_ffn_dim": _SIZE, "decoder_ffn_dim": _SIZE, "vocab_size": _SIZE,
              "max_position_embeddings": _SIZE, "pad_token_id": _SIZE - 1, "scale_embedding": True,
              "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True}
    names = checkpoint_names(num_layers)
    tagged = {name: np.full(_shape(name), i + 1, dtype=np.float32) for i, name in enumerate(names)}
    filled = {name: [] for name in names}
    for course, value in marian.marian_weights(tagged, config).items():
        tags = np.unique(value)
        if tags.size != 1:
            raise RuntimeError(f"the loader's {course!r} mixes several tensors of the checkpoint")
        filled[names[int(tags[0]) - 1]].append(course)
    return {name: sorted(courses) for name, courses in filled.items()}


def draw_names(rng) -> dict:
    """Six names of :func:`checkpoint_names`: ``model.shared.weight``, ``final_logits_bias`` and four
    of the layers' tensors, in a random order, drawn again until every one of :data:`MISTAKES`
    gets at least one of them wrong.

    Shape:
        -> {"names": source of a list of six str}.
    """
    layer_names = checkpoint_names()[2:]
    while True:
        names = [SHARED, LOGITS_BIAS] + [str(n) for n in rng.choice(layer_names, 4, replace=False)]
        names = [names[i] for i in rng.permutation(len(names))]
        if all(any(mistake(name) != expected_names(name) for name in names) for mistake in MISTAKES.values()):
            return {"names": repr(names)}


def expected_names(name) -> list:
    """The reference answer of exercise 8.9 for one name: :func:`loader_map`'s (``KeyError`` for a
    name that is not a checkpoint's)."""
    return list(loader_map()[name])


def _renamed(*pairs):
    """A wrong answer: the right names with each ``old`` written ``new``."""
    def answer(name):
        out = []
        for course in expected_names(name):
            for old, new in pairs:
                course = course.replace(old, new)
            out.append(course)
        return sorted(out)
    return answer


# Plausible wrong rules, each a function name -> names; every drawn set of names rejects all of them.
MISTAKES = {
    "Hugging Face's `weight` for a dense layer's kernel": _renamed((".kernel", ".weight")),
    "`weight` and `bias` for a layer norm's gain and offset": _renamed((".gamma", ".weight"),
                                                                       (".beta", ".bias")),
    "Hugging Face's names for the projections": _renamed(
        (".wq.", ".q_proj."), (".wk.", ".k_proj."), (".wv.", ".v_proj."), (".wo.", ".out_proj.")),
    "Hugging Face's `encoder_attn` for the cross-attention": _renamed(("cross_attn", "encoder_attn")),
    "the decoder's last layer norm numbered as the encoder's": _renamed(("norm3", "norm2")),
    "the prefix `model.` kept": lambda name: ["model." + course for course in expected_names(name)],
    "the shared table as the encoder's embeddings alone": lambda name: (
        ["encoder.embedding.token_embedding.embeddings"] if name == SHARED else expected_names(name)),
}


def explain_names(params, result):
    """What a wrong answer of exercise 8.9 gets wrong, in the exercise's terms: the first name whose
    answer is not the loader's, the names given and the names expected (a text where a list is
    asked, or the right names unsorted, said so). ``None`` where ``result`` cannot be read as lists
    of texts: the general message then says what differs.

    Shape:
        params {"names": [str, ...]}, result one list of str per name -> str or None.
    """
    names = params["names"]
    if not isinstance(result, (list, tuple)) or len(result) != len(names):
        return None
    for name, value in zip(names, result):
        right, given = expected_names(name), _texts(value)
        if given is None:
            return None
        if given == right:
            continue
        call = f"course_names({name!r})"
        if isinstance(given, str):
            return f"{call} returned the text {given!r}, not a list; the loader fills {right}"
        if sorted(given) == right:
            return f"{call} returned the right names, {given}, but not sorted: {right}"
        return f"{call} returned {given}; the loader fills {right}"
    return None


def _texts(value):
    """``value`` as a list of str, or as one str (a text where a list is asked), else None."""
    if isinstance(value, (list, tuple)):
        items = [to_numpy(v) for v in value]
        if all(item.ndim == 0 and item.dtype.kind == "U" for item in items):
            return [str(item) for item in items]
        return None
    array = to_numpy(value)
    if array.dtype.kind != "U" or array.ndim > 1:
        return None
    return str(array) if array.ndim == 0 else [str(v) for v in array]


def _per_name(answer, params):
    return [answer(name) for name in params["names"]]


SPECS = [
    dict(id="8.9", chapter="08_families", title="A Marian checkpoint's names in the course's Transformer",
         points=2, answer="course_names", draw=draw_names,
         expected=lambda names: [expected_names(name) for name in names], call=_per_name, exact=True,
         explain=explain_names),
]
