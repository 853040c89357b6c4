"""Move weights between the TensorFlow and PyTorch implementations.

Both implementations name their sub-layers alike (``encoder.layers.0.self_attn.wq``),
so a weight has one canonical name in both, and the NumPy oracle
(:mod:`course_pkg.reference`) reads the same names:

=====================  =====================================  ==========================
leaf layer             canonical entries                      PyTorch parameter
=====================  =====================================  ==========================
dense                  ``<path>.kernel`` (in, out),           ``weight`` (out, in) = kernelᵀ,
                       ``<path>.bias``                        ``bias``
layer normalisation    ``<path>.gamma``, ``<path>.beta``      ``weight``, ``bias``
embedding              ``<path>.embeddings`` (vocab, d)       ``weight``
=====================  =====================================  ==========================

A GRU (Keras ``GRU`` / ``GRUCell``; torch ``nn.GRU`` with one layer, or
``nn.GRUCell``) has the canonical entries of Keras' ``reset_after=True`` GRU:
``<path>.kernel`` (in, 3·units), ``<path>.recurrent_kernel`` (units, 3·units)
and ``<path>.bias`` (2, 3·units) = (input bias, recurrent bias), the gates
ordered (z, r, h) along the last axis. PyTorch orders them (r, z, n) along the
first axis of ``weight_ih`` / ``weight_hh``, which are the transposes, and keeps
the two biases as ``bias_ih`` and ``bias_hh``.

Example::

    from course_pkg import interop, tensorflow as ctf, torch as cpt

    tf_model = ctf.Transformer(2, 128, 4, 512, 1000, 1000, 64)
    pt_model = cpt.Transformer(2, 128, 4, 512, 1000, 1000, 64)
    interop.copy_weights(tf_model, pt_model)   # now they compute the same function

Each framework owns its half of the mapping (``course_pkg.torch._weights``,
``course_pkg.tensorflow._weights``: which parameter holds which canonical
entry); this module dispatches to it and checks names and shapes. It imports
a framework only when it is handed one of its objects.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np


def _framework(layer) -> str:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(layer, torch.nn.Module):
        return "torch"
    keras = sys.modules.get("keras")
    if keras is not None and isinstance(layer, keras.layers.Layer):
        return "tensorflow"
    raise TypeError(
        f"expected a course_pkg layer from course_pkg.torch or course_pkg.tensorflow, "
        f"got {type(layer).__module__}.{type(layer).__name__}"
    )


def _half(layer):
    """The framework module that knows where ``layer`` keeps each canonical weight."""
    return importlib.import_module(f"course_pkg.{_framework(layer)}._weights")


def _canonical_shape(slot) -> tuple:
    """The shape of a slot's weight (``(parameter or variable, transpose?)``) in the canonical layout."""
    weight, transpose = slot
    return tuple(weight.shape)[::-1] if transpose else tuple(weight.shape)


# ----------------------------------------------------------------------------- API
def get_weights(layer) -> dict:
    """Every weight of ``layer`` as a float32 NumPy array, under its canonical name.

    Dense kernels come in the Keras layout ``(in, out)`` whatever the framework.
    The dict is what :mod:`course_pkg.reference` takes as ``params``.
    """
    half = _half(layer)
    return {name: half.read(slot) for name, slot in half.weight_slots(layer).items()}


def set_weights(layer, weights: dict) -> None:
    """Load canonical ``weights`` (as :func:`get_weights` returns them) into ``layer``.

    Every weight of ``layer`` must be given, with its exact shape; otherwise a
    ``ValueError`` lists what is missing, unexpected or mis-shaped and nothing
    is changed.
    """
    half = _half(layer)
    slots = half.weight_slots(layer)
    missing = sorted(set(slots) - set(weights))
    unexpected = sorted(set(weights) - set(slots))
    problems = []
    if missing:
        problems.append(f"missing {missing}")
    if unexpected:
        problems.append(f"unexpected {unexpected}")
    for name in sorted(set(slots) & set(weights)):
        want = _canonical_shape(slots[name])
        got = tuple(np.shape(weights[name]))
        if got != want:
            problems.append(f"{name}: expected shape {want}, got {got}")
    if problems:
        raise ValueError(f"cannot load weights into {type(layer).__name__}: " + "; ".join(problems))

    half.write(slots, weights)


def _config(layer) -> dict:
    return layer.get_config() if hasattr(layer, "get_config") else {}


# Constructor arguments that no weight depends on: copying between, say, a
# training model (dropout 0.1) and an inference one (dropout 0.0) is fine.
_NOT_ARCHITECTURE = {"name", "trainable", "dtype", "dropout", "pad_id"}


def copy_weights(src, dst) -> None:
    """Copy every weight of ``src`` into ``dst``, across frameworks or within one.

    ``src`` and ``dst`` must be instances of the same course class (e.g. a
    ``course_pkg.tensorflow.EncoderLayer`` and a ``course_pkg.torch.EncoderLayer``)
    built with the same arguments (``dropout`` and ``pad_id`` may differ: no
    weight depends on them); otherwise ``ValueError`` and ``dst`` is left as it was.
    """
    if type(src).__name__ != type(dst).__name__:
        raise ValueError(
            f"copy_weights needs two instances of the same class, got "
            f"{type(src).__name__} and {type(dst).__name__}"
        )
    src_cfg, dst_cfg = _config(src), _config(dst)
    shared = (src_cfg.keys() & dst_cfg.keys()) - _NOT_ARCHITECTURE
    differ = {k: (src_cfg[k], dst_cfg[k]) for k in sorted(shared) if src_cfg[k] != dst_cfg[k]}
    if differ:
        raise ValueError(f"copy_weights needs the same constructor arguments; differ (src, dst): {differ}")
    set_weights(dst, get_weights(src))


# ----------------------------------------------------------------------------- Hugging Face ViT
# Where each weight of a Hugging Face ``ViTModel`` / ``ViTForImageClassification`` goes in the
# course's ViT. Both spellings of the state dict are read: transformers >= 5 (``layers.N.attention.
# q_proj``, ``mlp.fc1``) and the older one that checkpoints on the Hub use
# (``encoder.layer.N.attention.attention.query``, ``intermediate.dense``).
_HF_VIT_LAYER = {
    "layernorm_before": "norm1", "layernorm_after": "norm2",
    "attention.q_proj": "self_attn.wq", "attention.k_proj": "self_attn.wk",
    "attention.v_proj": "self_attn.wv", "attention.o_proj": "self_attn.wo",
    "mlp.fc1": "ffn.w1", "mlp.fc2": "ffn.w2",
    # the older names
    "attention.attention.query": "self_attn.wq", "attention.attention.key": "self_attn.wk",
    "attention.attention.value": "self_attn.wv", "attention.output.dense": "self_attn.wo",
    "intermediate.dense": "ffn.w1", "output.dense": "ffn.w2",
}
_HF_ACTIVATIONS = {"gelu": "gelu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_new": "gelu_tanh"}


def _as_array(value) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor (torch is not imported here)
        value = value.detach().cpu().float().numpy()
    return np.asarray(value, dtype=np.float32)


def _hf_config(config) -> dict:
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a transformers ViTConfig or its dict, got {type(config).__name__}")
    return config


def vit_arguments_from_huggingface(state_dict, config) -> dict:
    """The course ``ViT``'s constructor arguments for a Hugging Face ViT's state dict and config.

    ``num_classes`` is the classifier's output width, or ``None`` for a ``ViTModel`` (no head:
    the course model then returns the class token's features).
    """
    config = _hf_config(config)
    act = config.get("hidden_act", "gelu")
    if act not in _HF_ACTIVATIONS:
        raise ValueError(f"hidden_act={act!r} has no course counterpart; expected one of "
                         f"{sorted(_HF_ACTIVATIONS)}")
    keys = {k.removeprefix("vit.") for k in state_dict}
    head = next((k for k in state_dict if k in ("classifier.weight",)), None)
    num_layers = len({k.split(".")[1] for k in keys if k.startswith("layers.")}
                     | {k.split(".")[2] for k in keys if k.startswith("encoder.layer.")})
    return {
        "image_size": int(config["image_size"]), "patch_size": int(config["patch_size"]),
        "num_layers": num_layers, "d_model": int(config["hidden_size"]),
        "num_heads": int(config["num_attention_heads"]), "dff": int(config["intermediate_size"]),
        "num_classes": int(np.shape(state_dict[head])[0]) if head else None,
        "num_channels": int(config.get("num_channels", 3)), "dropout": 0.0,
        "layer_norm_eps": float(config.get("layer_norm_eps", 1e-12)),
        "activation": _HF_ACTIVATIONS[act],
    }


def vit_weights_from_huggingface(state_dict, position_name="position_embedding.table.embeddings") -> dict:
    """A Hugging Face ViT's state dict (``ViTModel`` or ``ViTForImageClassification``) as the
    course ViT's canonical weights (:func:`get_weights`' names and layouts).

    The patch projection, a ``Conv2d`` weight ``(d_model, channels, p, p)``, becomes the dense
    kernel ``(p·p·channels, d_model)`` that multiplies the flattened channels-last patches; linear
    weights are transposed; query/key/value without biases (``qkv_bias=False``) get zero biases;
    the pooler of ``ViTModel`` (not part of the course model) is left out.
    ``position_name`` is the course model's name of its position table.
    """
    sd = {k.removeprefix("vit."): _as_array(v) for k, v in state_dict.items()}
    conv = sd["embeddings.patch_embeddings.projection.weight"]  # (d_model, channels, p, p)
    d_model = conv.shape[0]
    out = {
        "patch_embedding.projection.kernel": conv.transpose(2, 3, 1, 0).reshape(-1, d_model),
        "patch_embedding.projection.bias": sd["embeddings.patch_embeddings.projection.bias"],
        "class_token.embeddings": sd["embeddings.cls_token"].reshape(1, d_model),
        position_name: sd["embeddings.position_embeddings"].reshape(-1, d_model),
        "final_norm.gamma": sd["layernorm.weight"], "final_norm.beta": sd["layernorm.bias"],
    }
    if "classifier.weight" in sd:
        out["head.kernel"] = sd["classifier.weight"].T
        out["head.bias"] = sd["classifier.bias"]
    for key, value in sd.items():
        for prefix in ("layers.", "encoder.layer."):
            if not key.startswith(prefix):
                continue
            index, rest = key[len(prefix):].split(".", 1)
            module, leaf = rest.rsplit(".", 1)
            if module not in _HF_VIT_LAYER:
                raise ValueError(f"unknown Hugging Face ViT weight {key!r}")
            name = f"blocks.{index}.{_HF_VIT_LAYER[module]}"
            if module.startswith("layernorm"):
                out[f"{name}.{'gamma' if leaf == 'weight' else 'beta'}"] = value
            else:
                out[f"{name}.{'kernel' if leaf == 'weight' else 'bias'}"] = value.T if leaf == "weight" else value
    for key in [k for k in out if k.endswith(".kernel") and ".self_attn.w" in k]:
        out.setdefault(key[:-len("kernel")] + "bias", np.zeros(out[key].shape[1], np.float32))
    return out


def vit_from_huggingface(module, hf_model_or_state_dict, config=None):
    """A course ViT of framework ``module`` (``course_pkg.torch`` or ``course_pkg.tensorflow``)
    computing what the Hugging Face ViT computes; the frameworks' ``vit_from_huggingface`` call this."""
    source = hf_model_or_state_dict
    if hasattr(source, "state_dict"):
        config = source.config if config is None else config
        source = source.state_dict()
    if config is None:
        raise ValueError("vit_from_huggingface needs the model's config when given a state dict")
    model = module.ViT(**vit_arguments_from_huggingface(source, config))
    position = [k for k in get_weights(model) if k.startswith("position_embedding.")]
    set_weights(model, vit_weights_from_huggingface(source, position[0]))
    return model
