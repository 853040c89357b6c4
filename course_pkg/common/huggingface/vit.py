"""Hugging Face ViT checkpoints into the course's ``ViT`` (framework-free half of its loader).

The public loaders are ``course_pkg.torch.vit_from_huggingface`` and its TensorFlow twin; what
every family's loader shares is :mod:`course_pkg.common.huggingface`.

What maps to what (``ViTModel``, ``ViTForImageClassification``; keys may carry a ``vit.`` prefix; both
spellings are read, that of ``transformers`` 5 and the older one of the Hub's checkpoints,
in brackets; ``i`` a layer; canonical names as :mod:`course_pkg.interop`). The patch projection,
a ``Conv2d`` weight (d_model, channels, p, p), becomes the dense kernel (p · p · channels, d_model)
that multiplies the flattened channels-last patches; query, key and value without biases
(``qkv_bias=False``) get zero biases:

=====================================================  ====================================
embeddings.patch_embeddings.projection                 patch_embedding.projection
embeddings.cls_token (1, 1, d_model)                   class_token (1, d_model)
embeddings.position_embeddings (1, tokens, d_model)    position_embedding.table
layers.i.layernorm_before / layernorm_after            blocks.i.norm1 / norm2
layers.i.attention.q_proj / k_proj / v_proj            blocks.i.self_attn.wq / wk / wv
(encoder.layer.i.attention.attention.query / ...)
layers.i.attention.o_proj (...attention.output.dense)  blocks.i.self_attn.wo
layers.i.mlp.fc1 / fc2 (intermediate.dense /           blocks.i.ffn.w1 / w2
output.dense)
layernorm                                              final_norm
classifier (``ViTForImageClassification``)             head
pooler (``ViTModel``; not in the course model)         left out
=====================================================  ====================================

A ViT has as many layers as its configuration's ``num_hidden_layers``, not as its keys suggest.
"""

from __future__ import annotations

import numpy as np

from . import Reader, build_from_huggingface, check_config, course_activation

# The course's names of a ViT layer's weights -> Hugging Face's: transformers 5, then the older
# names of the checkpoints on the Hub.
_VIT_LAYER = {
    "new": {"norm1": "layernorm_before", "norm2": "layernorm_after",
            "self_attn.wq": "attention.q_proj", "self_attn.wk": "attention.k_proj",
            "self_attn.wv": "attention.v_proj", "self_attn.wo": "attention.o_proj",
            "ffn.w1": "mlp.fc1", "ffn.w2": "mlp.fc2"},
    "old": {"norm1": "layernorm_before", "norm2": "layernorm_after",
            "self_attn.wq": "attention.attention.query", "self_attn.wk": "attention.attention.key",
            "self_attn.wv": "attention.attention.value", "self_attn.wo": "attention.output.dense",
            "ffn.w1": "intermediate.dense", "ffn.w2": "output.dense"},
}


def vit_config(config: dict, state_dict) -> dict:
    """The course ``ViT`` constructor arguments of a Hugging Face ``ViTConfig`` (as a dict) and
    its state dict: ``num_classes`` is the classifier's width, ``None`` for a ``ViTModel``."""
    check_config(config, "ViT", "vit", ("image_size", "patch_size", "hidden_size", "num_hidden_layers",
                                        "num_attention_heads", "intermediate_size"))
    head = state_dict.get("classifier.weight")
    return {
        "image_size": int(config["image_size"]), "patch_size": int(config["patch_size"]),
        "num_layers": config["num_hidden_layers"], "d_model": config["hidden_size"],
        "num_heads": config["num_attention_heads"], "dff": config["intermediate_size"],
        "num_classes": None if head is None or np.ndim(head) != 2 else int(np.shape(head)[0]),
        "num_channels": config.get("num_channels", 3), "dropout": 0.0,
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
        "activation": course_activation(config.get("hidden_act", "gelu")),
    }


def vit_weights(state_dict, config: dict) -> dict:
    """A Hugging Face ViT's state dict as the course ``ViT``'s canonical weights (table above), each
    entry checked against the shape that its configuration gives it (through :func:`vit_config`)."""
    size = vit_config(config, state_dict)
    d, ff, p, channels = size["d_model"], size["dff"], size["patch_size"], size["num_channels"]
    prefix = "vit." if any(k.startswith("vit.") for k in state_dict) else ""
    r = Reader(state_dict, prefix, "ViT")
    conv = r.get("embeddings.patch_embeddings.projection.weight", (d, channels, p, p))
    tokens = (size["image_size"] // p) ** 2 + 1
    out = {
        "patch_embedding.projection.kernel": conv.transpose(2, 3, 1, 0).reshape(-1, d),
        "patch_embedding.projection.bias": r.get("embeddings.patch_embeddings.projection.bias", (d,)),
        "class_token.embeddings": r.get("embeddings.cls_token", (1, 1, d)).reshape(1, d),
        "position_embedding.table.embeddings":
            r.get("embeddings.position_embeddings", (1, tokens, d)).reshape(tokens, d),
    }
    r.norm(out, "layernorm", "final_norm", d)
    if size["num_classes"] is not None or "classifier.weight" in state_dict:
        head = Reader(state_dict, "", "ViT")
        head.linear(out, "classifier", "head", d, size["num_classes"] or 0)
        r.used |= head.used
    # either naming of the layers: that of transformers 5, else the Hub's older one
    old = not any(k.startswith(prefix + "layers.") for k in state_dict)
    names = _VIT_LAYER["old" if old else "new"]
    for i in range(size["num_layers"]):
        src, dst = f"{'encoder.layer' if old else 'layers'}.{i}", f"blocks.{i}"
        r.norm(out, f"{src}.{names['norm1']}", f"{dst}.norm1", d)
        r.norm(out, f"{src}.{names['norm2']}", f"{dst}.norm2", d)
        for course in ("wq", "wk", "wv"):  # without biases (qkv_bias=False): zero biases
            name = f"{src}.{names['self_attn.' + course]}"
            if r.has(f"{name}.bias"):
                r.linear(out, name, f"{dst}.self_attn.{course}", d, d)
            else:
                out[f"{dst}.self_attn.{course}.kernel"] = r.get(f"{name}.weight", (d, d)).T
                out[f"{dst}.self_attn.{course}.bias"] = np.zeros(d, np.float32)
        r.linear(out, f"{src}.{names['self_attn.wo']}", f"{dst}.self_attn.wo", d, d)
        r.linear(out, f"{src}.{names['ffn.w1']}", f"{dst}.ffn.w1", d, ff)
        r.linear(out, f"{src}.{names['ffn.w2']}", f"{dst}.ffn.w2", ff, d)
    r.check_all_used(ignore=("pooler.dense.weight", "pooler.dense.bias"))  # ViTModel's pooler: left out
    return out


def vit_from_huggingface(vit_class, source, config=None):
    """A course ``vit_class`` with the configuration and weights of a Hugging Face ViT."""
    return build_from_huggingface(vit_class, source, config, vit_config, vit_weights)
