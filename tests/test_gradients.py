"""The models train: finite gradients for every weight (even with fully padded rows), a few
optimizer steps reduce the loss, and Keras' ``fit`` takes ``(src, tgt)`` pairs."""

import numpy as np
import pytest
from helpers import TGT_VOCAB, class_args
from training_helpers import one_torch_thread

SRC = np.array([[5, 9, 3, 7, 0, 0], [0, 0, 0, 0, 0, 0], [4, 12, 1, 6, 8, 2]])
TGT_IN = np.array([[1, 6, 8, 3, 0], [0, 0, 0, 0, 0], [2, 5, 7, 11, 4]])
TGT_OUT = np.array([[6, 8, 3, 2, 0], [0, 0, 0, 0, 0], [5, 7, 11, 4, 9]])


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield


def _grads_and_loss(fw, model):
    """Masked cross-entropy loss (pad targets ignored) and per-weight gradients."""
    if fw.name == "torch":
        import torch

        model.train()
        logits = model(torch.from_numpy(SRC), torch.from_numpy(TGT_IN))
        tgt = torch.from_numpy(TGT_OUT)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, TGT_VOCAB), tgt.reshape(-1),
                                                 ignore_index=0)
        model.zero_grad()
        loss.backward()
        grads = {n: (None if p.grad is None else p.grad.numpy()) for n, p in model.named_parameters()}
        return float(loss.detach()), grads
    import tensorflow as tf

    with tf.GradientTape() as tape:
        logits = model(tf.constant(SRC), tf.constant(TGT_IN), training=True)
        tgt = tf.constant(TGT_OUT)
        ce = tf.keras.losses.sparse_categorical_crossentropy(tgt, logits, from_logits=True)
        w = tf.cast(tgt != 0, ce.dtype)
        loss = tf.reduce_sum(ce * w) / tf.reduce_sum(w)
    g = tape.gradient(loss, model.trainable_variables)
    return float(loss), {v.path: (None if gi is None else np.asarray(tf.convert_to_tensor(gi)))
                         for v, gi in zip(model.trainable_variables, g)}


def test_gradients_finite_with_fully_padded_rows(fw):
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"), dropout=0.0)
    loss, grads = _grads_and_loss(fw, model)
    assert np.isfinite(loss)
    assert grads, "no trainable weights"
    missing = [n for n, g in grads.items() if g is None]
    assert not missing, f"weights without gradient: {missing}"
    bad = [n for n, g in grads.items() if not np.all(np.isfinite(g))]
    assert not bad, f"non-finite gradients: {bad}"
    # the final projection certainly receives signal
    assert sum(float(np.abs(g).sum()) for g in grads.values()) > 0


def test_fifteen_adam_steps_reduce_the_loss_by_30_percent(fw):
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"), dropout=0.0)
    if fw.name == "torch":
        import torch

        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        first = None
        for _ in range(15):
            loss, _ = _grads_and_loss(fw, model)
            first = loss if first is None else first
            opt.step()
    else:
        import keras

        opt = keras.optimizers.Adam(1e-2)
        import tensorflow as tf

        first = None
        for _ in range(15):
            with tf.GradientTape() as tape:
                logits = model(tf.constant(SRC), tf.constant(TGT_IN), training=True)
                tgt = tf.constant(TGT_OUT)
                ce = keras.losses.sparse_categorical_crossentropy(tgt, logits, from_logits=True)
                w = tf.cast(tgt != 0, ce.dtype)
                loss = tf.reduce_sum(ce * w) / tf.reduce_sum(w)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            first = float(loss) if first is None else first
        loss = float(loss)
    assert loss < 0.7 * first, (first, loss)


def test_keras_fit_takes_pair_inputs_and_reduces_the_loss(tf_fw):
    import keras

    tf_fw.seed(0)
    # one layer: Keras traces fit's step twice (the optimizer makes its variables in the first trace),
    # seconds per layer, and the number of layers has nothing to do with how fit takes its inputs
    model = tf_fw.make("Transformer", *class_args("Transformer", num_layers=1), dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit((SRC, TGT_IN), TGT_OUT, batch_size=3, epochs=2, verbose=0)
    losses = hist.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]
