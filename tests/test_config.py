"""Every course class's configuration is its constructor's arguments, with no ``get_config`` to write.

The base ``Layer`` of each twin records the arguments of the outermost constructor call
(:mod:`course_pkg.common.config`); ``get_config`` returns them (Keras adds name, dtype and
trainable) and ``from_config`` builds the layer again. The tests build every layer and model
class the framework package exports with arguments other than the defaults where the class
allows, and a subclass whose constructor adds an argument, changes one, or drops some.
"""

import inspect

import numpy as np
import pytest

# Every layer and model class that course_pkg.torch and course_pkg.tensorflow export: (args, kwargs),
# tiny sizes and, where the class has them, options other than the defaults.
ARGUMENTS = {
    "MultiHeadAttention": ((16, 4), {"num_kv_heads": 2, "use_bias": False, "rope_theta": 500000.0}),
    "PositionalEmbedding": ((23, 16, 12), {}),
    "LearnedPositionalEncoding": ((12, 16), {}),
    "FeedForward": ((16, 24), {"dropout": 0.25, "activation": "gelu", "gated": True, "use_bias": False}),
    "EncoderLayer": ((16, 2, 24, 0.2), {"norm_first": True, "activation": "gelu", "layer_norm_eps": 1e-5}),
    "DecoderLayer": ((16, 2, 24), {"norm_first": True, "cross_attention": False}),
    "Encoder": ((2, 16, 2, 24, 23, 12), {"dropout": 0.0, "activation": "gelu_tanh"}),
    "Decoder": ((2, 16, 2, 24, 29, 12), {"layer_norm_eps": 1e-5, "cross_attention": False}),
    "Transformer": ((2, 16, 2, 24, 23, 29, 12), {"pad_id": 3, "mask_target_padding": False}),
    "ClassificationHead": ((16, 3), {"dropout": 0.0, "token_index": 1}),
    "BERT": ((2, 16, 2, 24, 23, 12), {"type_vocab_size": 3, "pad_id": 0}),
    "GPT": ((2, 16, 2, 24, 23, 12), {"tie_embeddings": False, "pad_id": 0}),
    "RMSNorm": ((16,), {"epsilon": 1e-5}),
    "RotaryEmbedding": ((8,), {"theta": 500000.0}),
    "Llama": ((2, 16, 4, 24, 23, 12), {"num_kv_heads": 2, "rope_theta": 500000.0, "tie_embeddings": True}),
    "LlamaBlock": ((16, 4, 24), {"num_kv_heads": 2, "rms_norm_eps": 1e-5, "dropout": 0.1}),
    "PatchEmbedding": ((4, 3, 16), {}),
    "ViT": ((8, 4, 2, 16, 2, 24, 5), {"num_channels": 3, "pooling": "mean", "stem_channels": [4, 8]}),
    "BahdanauAttention": ((8,), {"query_dim": 6, "key_dim": 5}),
    "LuongAttention": ((8,), {"score": "general", "key_dim": 5}),
    "Seq2SeqEncoder": ((23, 8, 6), {"pad_id": 1}),
    "Seq2SeqDecoder": ((29, 8, 6), {}),
    "AttentionDecoder": ((29, 8, 6), {"attention": "luong_general"}),
    "Seq2Seq": ((23, 29, 8, 6), {"attention": "bahdanau", "pad_id": 1}),
}
KERAS_KEYS = {"name", "trainable", "dtype"}
# The arguments a class's own get_config gives transformed, as they are for ARGUMENTS.
TRANSFORMED = {"ViT": {"stem_channels": (4, 8)}}
# Defaults that the configuration holds resolved: (args, kwargs) -> what the config holds.
RESOLVED = {
    "MultiHeadAttention": ((16, 4), {"num_kv_heads": 4}),
    "LlamaBlock": ((16, 4, 24), {"num_kv_heads": 4}),
    "Llama": ((2, 16, 4, 24, 23, 12), {"num_kv_heads": 4}),
    "BahdanauAttention": ((8,), {"query_dim": 8, "key_dim": 8}),
    "LuongAttention": ((8,), {"key_dim": 8}),
    "ViT": ((8, 4, 2, 16, 2, 24, 5), {"stem_channels": None}),
}


def _layer_classes(fw):
    """name -> class, for every class the framework package exports that is a course layer."""
    base = fw.cp.base.Layer
    return {name: getattr(fw.cp, name) for name in fw.cp.__all__
            if isinstance(getattr(fw.cp, name), type) and issubclass(getattr(fw.cp, name), base)}


def _arguments(config):
    """The constructor's arguments in a config (Keras' own keys left out)."""
    return {key: value for key, value in config.items() if key not in KERAS_KEYS}


def _weight_shapes(fw, layer):
    weights = layer.weights if fw.name == "tensorflow" else list(layer.parameters())
    return [tuple(w.shape) for w in weights]


def test_every_exported_layer_class_has_arguments_here(fw):
    assert sorted(_layer_classes(fw)) == sorted(ARGUMENTS)


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_config_is_the_constructor_arguments_and_builds_the_same_layer(fw, name):
    cls = _layer_classes(fw)[name]
    args, kwargs = ARGUMENTS[name]
    layer = cls(*args, **kwargs)
    config = layer.get_config()
    parameters = [p for p in list(inspect.signature(cls).parameters.values())
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    bound = inspect.signature(cls).bind(*args, **kwargs)
    bound.apply_defaults()
    expected = {p.name: bound.arguments[p.name] for p in parameters}
    assert _arguments(config) == {**expected, **TRANSFORMED.get(name, {})}
    if fw.name == "tensorflow":
        assert KERAS_KEYS <= set(config)
    clone = type(layer).from_config(config)
    assert type(clone) is cls and clone.get_config() == config
    assert _weight_shapes(fw, clone) == _weight_shapes(fw, layer)
    config["d_model" if "d_model" in config else next(iter(_arguments(config)))] = "changed"
    assert layer.get_config() != config  # a copy: changing it changes nothing in the layer


@pytest.mark.parametrize("name", sorted(RESOLVED))
def test_a_default_resolved_from_other_arguments_is_resolved_in_the_config(fw, name):
    """``None`` for ``num_kv_heads`` is ``num_heads``, for an RNN attention's widths ``units``: layers
    of the same shapes have the same configuration (``interop.copy_weights`` compares them)."""
    args, resolved = RESOLVED[name]
    layer = getattr(fw.cp, name)(*args)
    assert {key: layer.get_config()[key] for key in resolved} == resolved
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_an_int_stem_is_a_tuple_in_the_config(fw):
    vit = fw.cp.ViT(8, 4, 2, 16, 2, 24, 5, stem_channels=4)
    assert vit.get_config()["stem_channels"] == (4,)


def test_a_new_constructor_argument_is_in_the_config_with_no_get_config(fw):
    class Scaled(fw.cp.FeedForward):
        """A FeedForward with one argument more (its output would be scaled)."""

        def __init__(self, d_model, dff, scale=1.0, **kwargs):
            super().__init__(d_model, dff, **kwargs)
            self.scale = scale

    class Square(fw.cp.FeedForward):
        """A FeedForward whose dff is d_model: fewer arguments than its base."""

        def __init__(self, d_model, **kwargs):
            super().__init__(d_model, d_model, activation="gelu", **kwargs)

    assert "get_config" not in vars(Scaled) and "get_config" not in vars(Square)
    scaled = Scaled(16, 24, scale=0.5, dropout=0.0)
    config = scaled.get_config()
    assert _arguments(config) == {"d_model": 16, "dff": 24, "scale": 0.5}
    clone = Scaled.from_config(config)
    assert type(clone) is Scaled and clone.scale == 0.5 and clone.get_config() == config

    square = Square(16)  # the outermost constructor's arguments, not those it passes on
    assert _arguments(square.get_config()) == {"d_model": 16}
    assert square.activation == "gelu" and Square.from_config(square.get_config()).dff == 16


def test_a_wrong_constructor_call_raises_pythons_own_error(fw):
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'dff'"):
        fw.cp.FeedForward(16)


def test_keras_serialises_the_recorded_config(tf_fw, tmp_path):
    import keras

    for name, (args, kwargs) in sorted(ARGUMENTS.items()):
        layer = getattr(tf_fw.cp, name)(*args, **kwargs)
        again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
        assert type(again) is type(layer) and again.get_config() == layer.get_config(), name
    model = tf_fw.cp.GPT(*ARGUMENTS["GPT"][0], **ARGUMENTS["GPT"][1])
    tokens = np.array([[3, 4, 5]])
    before = np.asarray(model(tokens))
    model.save(tmp_path / "gpt.keras")
    loaded = keras.models.load_model(tmp_path / "gpt.keras")
    assert loaded.get_config() == model.get_config()
    np.testing.assert_allclose(np.asarray(loaded(tokens)), before, atol=1e-6)
