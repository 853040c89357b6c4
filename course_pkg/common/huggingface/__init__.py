"""Hugging Face checkpoints into the course's models: the machinery that every family's loader shares.

The public loaders are each framework's ``bert_from_huggingface``, ``gpt_from_huggingface``,
``vit_from_huggingface``, ``llama_from_huggingface`` and ``marian_from_huggingface``: they build the
course model from the Hugging Face configuration and load the weights that this package maps, one
module per family, named after its ``model_type`` (each with its table of what maps to what):
:mod:`~course_pkg.common.huggingface.bert`, :mod:`~course_pkg.common.huggingface.gpt2`,
:mod:`~course_pkg.common.huggingface.vit`, :mod:`~course_pkg.common.huggingface.llama` and
:mod:`~course_pkg.common.huggingface.marian`. Nothing here imports ``transformers`` (nor a
framework): the loaders take the Hugging Face model, or its state dict (tensors or NumPy arrays)
with its configuration, as arguments.

This module holds what the families share: :func:`split_source` (the state dict and configuration
of what was passed), :func:`check_config` (the family's ``model_type`` and sizes), :class:`Reader`
(entries read by name, their shapes checked, the unused ones refused), the activations' names,
:func:`load_into` and :func:`build_from_huggingface` (the model built and its weights set, once
everything is read). Canonical names are those of :mod:`course_pkg.interop`; a
``torch.nn.Linear`` weight is (out, in), the canonical kernel its transpose.

Weights a checkpoint lacks keep their initial values when they are optional (the
pooler of a ``BertForMaskedLM``, the MLM head of a ``BertModel``). Everything is checked before
a model is built, and each refusal names the checkpoint's own key (prefix included): a
configuration of another family (its ``model_type``) or without a size, a missing or unexpected
entry, an entry of another shape than the configuration gives it (the shape found and the shape
expected, in the checkpoint's layout: GPT-2's fused ``c_attn`` is ``(d_model, 3 · d_model)``)
raise ``ValueError``; an entry that is not numbers raises ``TypeError``.
"""

from __future__ import annotations

import numpy as np

# Hugging Face activation names -> the course's FeedForward activations (BERT, GPT-2, ViT).
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


def _as_array(value, key) -> np.ndarray:
    """A tensor (torch, TF) or array as a float32 NumPy array, without importing a framework."""
    try:
        if hasattr(value, "detach"):  # torch
            value = value.detach().cpu().float().numpy()
        elif hasattr(value, "numpy"):  # TensorFlow
            value = value.numpy()
        return np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"the checkpoint's {key!r} is not a tensor or array of numbers: "
                        f"got {type(value).__name__}") from None


def split_source(source, config=None):
    """``(state_dict, config dict)`` from a Hugging Face model, or from a state dict and its config."""
    if hasattr(source, "state_dict"):
        state_dict = source.state_dict()
        config = source.config if config is None else config
    elif isinstance(source, dict):
        state_dict = source
    else:
        raise TypeError(f"expected a Hugging Face model or a state dict, got {type(source).__name__}")
    if config is None:
        raise ValueError("a state dict needs its configuration: pass config= (a Hugging Face config or dict)")
    if hasattr(config, "to_dict"):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a Hugging Face config or a dict, got {type(config).__name__}")
    return state_dict, config


def course_activation(name):
    """The course's FeedForward activation of a Hugging Face activation name (``ACTIVATIONS``)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation {name!r} of the checkpoint has no course counterpart; "
                         f"supported: {sorted(ACTIVATIONS)}")
    return ACTIVATIONS[name]


def check_config(config: dict, family: str, model_type: str, sizes) -> None:
    """Raise ``ValueError`` unless ``config`` is a Hugging Face ``family`` configuration: its
    ``model_type`` (when it has one) is ``model_type``, and each key of ``sizes`` is a positive int."""
    found = config.get("model_type")
    if found is not None and found != model_type:
        raise ValueError(f"expected the configuration of a Hugging Face {family} (model_type "
                         f"{model_type!r}), got one of model_type {found!r}")
    for key in sizes:
        if key not in config:
            raise ValueError(f"the configuration has no {key!r}, which a Hugging Face {family} "
                             f"configuration has: is it another family's?")
        value = config[key]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise ValueError(f"the configuration's {key!r} must be a positive int, got {value!r}")


class Reader:
    """Reads entries of a state dict (under an optional prefix), checks their shapes against the
    configuration's, and records which were used. Errors name the checkpoint's own key."""

    def __init__(self, state_dict, prefix, family):
        self.state, self.prefix, self.family, self.used = state_dict, prefix, family, set()

    def has(self, name):
        return self.prefix + name in self.state

    def get(self, name, shape):
        key = self.prefix + name
        if key not in self.state:
            raise ValueError(f"the checkpoint has no {key!r}, which a Hugging Face {self.family} "
                             f"of this configuration has")
        value = _as_array(self.state[key], key)
        if value.shape != tuple(shape):
            raise ValueError(f"the checkpoint's {key!r} has shape {value.shape}; a Hugging Face "
                             f"{self.family} of this configuration has {tuple(shape)}")
        self.used.add(key)
        return value

    def linear(self, out, src, name, n_in, n_out, conv1d=False):
        """A dense layer: ``src.weight`` ((out, in) for nn.Linear, (in, out) for GPT-2's Conv1D)
        and ``src.bias``, as the canonical kernel (in, out) and bias."""
        weight = self.get(f"{src}.weight", (n_in, n_out) if conv1d else (n_out, n_in))
        out[f"{name}.kernel"] = weight if conv1d else weight.T
        out[f"{name}.bias"] = self.get(f"{src}.bias", (n_out,))

    def norm(self, out, src, name, width):
        out[f"{name}.gamma"] = self.get(f"{src}.weight", (width,))
        out[f"{name}.beta"] = self.get(f"{src}.bias", (width,))

    def check_all_used(self, ignore=()):
        left = sorted(k for k in self.state if k not in self.used and not k.endswith(tuple(ignore)))
        if left:
            raise ValueError(f"unexpected entries in the checkpoint (not mapped): {left}")


# Weights a checkpoint may lack (they keep their initial values).
OPTIONAL = {"BERT": ("pooler.", "mlm_"), "GPT": ()}


def load_into(model, weights: dict, interop) -> None:
    """Set ``weights`` into ``model``; optional ones it lacks keep their values, others: ``ValueError``."""
    current = interop.get_weights(model)
    optional = OPTIONAL.get(type(model).__name__, ())
    missing = sorted(k for k in set(current) - set(weights) if not k.startswith(optional))
    if missing:
        raise ValueError(f"the checkpoint lacks weights of the course {type(model).__name__}: {missing}")
    interop.set_weights(model, {**current, **weights})


def build_from_huggingface(model_class, source, config, read_config, read_weights):
    """A course ``model_class`` from a Hugging Face model or state dict (+ config). Both readers get
    the raw configuration (a dict): ``read_config(config, state_dict)`` gives the constructor's
    arguments, ``read_weights(state_dict, config)`` the course's weights, all checked before a
    model is built."""
    from ... import interop

    state_dict, config = split_source(source, config)
    kwargs = read_config(config, state_dict)
    weights = read_weights(state_dict, config)  # all checked before a model is built
    model = model_class(**kwargs)
    load_into(model, weights, interop)
    return model
