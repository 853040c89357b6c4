"""Saving/loading, configs, and train-vs-inference behaviour (dropout)."""

import numpy as np
import pytest
from helpers import (
    CLASS_NAMES,
    D_MODEL,
    DFF,
    class_args,
    example_inputs,
    max_abs_diff,
    random_params,
)


# ------------------------------------------------------------- TensorFlow
def test_keras_save_load_transformer(tf_fw, interop, tmp_path):
    import keras

    model = tf_fw.make("Transformer", *class_args("Transformer"))
    interop.set_weights(model, random_params(model, seed=1))
    assert isinstance(model, keras.Model)
    args, kw = example_inputs("Transformer")
    before = tf_fw.call(model, *args, **kw)
    path = tmp_path / "transformer.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is type(model)
    after = tf_fw.call(loaded, *args, **kw)
    assert max_abs_diff(before, after) <= 1e-6
    w0, w1 = interop.get_weights(model), interop.get_weights(loaded)
    assert sorted(w0) == sorted(w1)
    for k in w0:
        np.testing.assert_array_equal(w0[k], w1[k], err_msg=k)


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_tf_get_config_round_trip(tf_fw, name):
    layer = tf_fw.make(name, *class_args(name))
    cfg = layer.get_config()
    clone = type(layer).from_config(cfg)
    assert clone.get_config() == cfg
    w0 = [tuple(w.shape) for w in layer.weights]
    w1 = [tuple(w.shape) for w in clone.weights]
    assert w0 and w0 == w1  # weights exist right after construction, same shapes


@pytest.mark.parametrize("name", CLASS_NAMES)
def test_tf_weights_created_in_constructor(tf_fw, interop, name):
    layer = tf_fw.make(name, *class_args(name))
    assert len(layer.weights) > 0
    # canonical weights can be read and written before any call
    w = interop.get_weights(layer)
    assert len(w) > 0
    interop.set_weights(layer, random_params(layer, seed=0))


def test_tf_get_config_keeps_hyperparameters(tf_fw):
    model = tf_fw.make("Transformer", 2, 16, 4, 24, 23, 29, 12, dropout=0.25, pad_id=3)
    cfg = model.get_config()
    clone = type(model).from_config(cfg)
    for attr, val in [("num_layers", 2), ("d_model", 16), ("num_heads", 4), ("dff", 24),
                      ("input_vocab_size", 23), ("target_vocab_size", 29), ("max_len", 12),
                      ("dropout", 0.25), ("pad_id", 3)]:
        assert cfg[attr] == val, attr
    assert clone.get_config()["pad_id"] == 3


# ------------------------------------------------------------------ torch
@pytest.mark.parametrize("name", CLASS_NAMES)
def test_torch_state_dict_round_trip(torch_fw, interop, name, tmp_path):
    import torch

    torch.manual_seed(0)
    layer = torch_fw.make(name, *class_args(name))
    interop.set_weights(layer, random_params(layer, seed=2))
    args, kw = example_inputs(name)
    before = torch_fw.call(layer, *args, **kw)
    path = tmp_path / "state.pt"
    torch.save(layer.state_dict(), path)
    torch.manual_seed(123)
    fresh = torch_fw.make(name, *class_args(name))
    assert max_abs_diff(torch_fw.call(fresh, *args, **kw), before) > 1e-4  # really different
    fresh.load_state_dict(torch.load(path, weights_only=True))
    after = torch_fw.call(fresh, *args, **kw)
    assert max_abs_diff(before, after) == 0.0


def test_torch_modules_train_by_default(torch_fw):
    import torch

    m = torch_fw.make("Transformer", *class_args("Transformer"))
    assert isinstance(m, torch.nn.Module)
    assert m.training


# -------------------------------------------------------- dropout / modes
def test_feed_forward_dropout_only_in_training(fw):
    fw.seed(0)
    ff = fw.make("FeedForward", D_MODEL, DFF, dropout=0.5)
    x = np.random.default_rng(0).normal(size=(4, 8, D_MODEL)).astype(np.float32)
    e1, e2 = fw.call(ff, x), fw.call(ff, x)
    np.testing.assert_array_equal(e1, e2)
    t1, t2 = fw.call_train(ff, x), fw.call_train(ff, x)
    assert np.abs(t1 - t2).max() > 1e-4
    assert np.abs(t1 - e1).max() > 1e-4


@pytest.mark.parametrize("name", CLASS_NAMES[2:])
def test_dropout_only_in_training(fw, name):
    fw.seed(0)
    layer = fw.make(name, *class_args(name), dropout=0.5)
    args, kw = example_inputs(name)
    e1, e2 = fw.call(layer, *args, **kw), fw.call(layer, *args, **kw)
    assert max_abs_diff(e1, e2) == 0.0
    t1, t2 = fw.call_train(layer, *args, **kw), fw.call_train(layer, *args, **kw)
    assert max_abs_diff(t1, t2) > 1e-4


def test_zero_dropout_training_equals_inference(fw):
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"), dropout=0.0)
    args, _ = example_inputs("Transformer")
    assert max_abs_diff(fw.call_train(model, *args), fw.call(model, *args)) <= 1e-6


def test_eval_output_independent_of_dropout_rate(fw, interop):
    a = fw.make("EncoderLayer", D_MODEL, 2, DFF, dropout=0.0)
    b = fw.make("EncoderLayer", D_MODEL, 2, DFF, dropout=0.7)
    p = random_params(a, seed=0)
    interop.set_weights(a, p)
    interop.set_weights(b, p)
    x = np.random.default_rng(0).normal(size=(2, 5, D_MODEL)).astype(np.float32)
    np.testing.assert_allclose(fw.call(a, x), fw.call(b, x), atol=1e-6)


def test_tf_default_call_is_inference(tf_fw):
    tf_fw.seed(0)
    model = tf_fw.make("Transformer", *class_args("Transformer"), dropout=0.5)
    args, _ = example_inputs("Transformer")
    default = tf_fw.to_numpy(model(*[tf_fw.tensor(a) for a in args]))
    np.testing.assert_array_equal(default, tf_fw.call(model, *args))
