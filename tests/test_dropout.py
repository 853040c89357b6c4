"""The course's dropout layer (``base.dropout_layer``): Keras' ``Dropout`` in TensorFlow, and in
PyTorch a ``nn.Dropout`` that draws its CPU mask from uniform numbers (faster than ``bernoulli_``).

Both must keep each element with probability ``1 - rate``, scale the kept ones by ``1 / (1 - rate)``,
pass gradients only through the kept ones, and be the identity outside training.
"""

import importlib

import numpy as np
import pytest

RATE = 0.1
SHAPE = (64, 32, 128)  # 262,144 elements: the kept fraction's standard deviation is 0.0006


def _layer(fw, rate=RATE):
    return importlib.import_module(f"course_pkg.{fw.name}.base").dropout_layer(rate)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dropout_keeps_one_minus_rate_scaled(fw, dtype):
    fw.seed(0)
    x = np.full(SHAPE, 2.0, np.float32)
    out = fw.to_numpy(fw.call_raw(_layer(fw), fw.tensor(x, dtype), training=True)).astype(np.float32)
    kept = out != 0
    assert abs(kept.mean() - (1 - RATE)) < 0.003  # five standard deviations
    scale = 2.0 / (1 - RATE)
    tol = 1e-6 if dtype == "float32" else 0.02  # bfloat16 rounds the scale
    assert np.all(np.abs(out[kept] - scale) <= tol * scale)
    # no pattern: each row (and each feature) keeps about the same fraction
    assert np.all(np.abs(kept.mean(axis=(0, 1)) - (1 - RATE)) < 0.05)


def test_dropout_is_the_identity_outside_training(fw):
    x = np.random.default_rng(0).normal(size=(4, 5, 8)).astype(np.float32)
    out = fw.to_numpy(fw.call_raw(_layer(fw), fw.tensor(x), training=False))
    np.testing.assert_array_equal(out, x)


def test_dropout_draws_a_new_mask_each_call_and_repeats_with_the_seed(fw):
    x = fw.tensor(np.ones((8, 64), np.float32))
    fw.seed(3)  # before building: a Keras layer takes its seed generator at construction
    layer = _layer(fw, 0.5)
    first, second = (fw.to_numpy(fw.call_raw(layer, x, training=True)) for _ in range(2))
    fw.seed(3)
    again = fw.to_numpy(fw.call_raw(_layer(fw, 0.5), x, training=True))
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, again)


def test_torch_dropout_gradient_flows_through_kept_elements_only():
    torch = pytest.importorskip("torch")
    from course_pkg.torch.base import Dropout, dropout_layer

    layer = dropout_layer(0.25)
    assert isinstance(layer, Dropout) and isinstance(layer, torch.nn.Dropout)  # state dicts, repr, hooks
    torch.manual_seed(0)
    x = torch.randn(32, 16, requires_grad=True)
    out = layer.train()(x)
    out.sum().backward()
    kept = out.detach() != 0
    assert torch.equal(x.grad, kept.float() / 0.75)
    assert torch.allclose(out[kept], x.detach()[kept] / 0.75)
