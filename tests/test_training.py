"""The models train: finite gradients for every weight (even with fully padded rows)."""

import numpy as np
import pytest

from conftest import TGT_VOCAB, class_args

SRC = np.array([[5, 9, 3, 7, 0, 0], [0, 0, 0, 0, 0, 0], [4, 12, 1, 6, 8, 2]])
TGT_IN = np.array([[1, 6, 8, 3, 0], [0, 0, 0, 0, 0], [2, 5, 7, 11, 4]])
TGT_OUT = np.array([[6, 8, 3, 2, 0], [0, 0, 0, 0, 0], [5, 7, 11, 4, 9]])


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


def test_a_few_steps_reduce_the_loss(fw):
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


def test_keras_fit_with_pair_inputs(tf_fw):
    import keras

    tf_fw.seed(0)
    model = tf_fw.make("Transformer", *class_args("Transformer"), dropout=0.0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit((SRC, TGT_IN), TGT_OUT, batch_size=3, epochs=2, verbose=0)
    losses = hist.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]


# ===========================================================================
# course_pkg.{torch,tensorflow}.training: loss, accuracy, schedule, Trainer
# ===========================================================================
import importlib  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

VOCAB = 12  # copy task: 0 pad, 1 <bos>, 2 <eos>, 3.. symbols


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy 2-core machine
    two torch threads spin against each other (about 10x slower)."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def training(fw):
    return importlib.import_module(f"course_pkg.{fw.name}.training")


def noam(step, d_model, warmup):
    step = max(step, 1)
    return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def copy_batches(n, batch=16, min_len=3, max_len=7, seed=0):
    """Copy task batches (src, tgt_in, tgt_out): src = y <eos>, tgt_in = <bos> y, tgt_out = y <eos>."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lengths = rng.integers(min_len, max_len + 1, size=batch)
        width = int(lengths.max()) + 1
        src, tgt_in, tgt_out = (np.zeros((batch, width), np.int64) for _ in range(3))
        for i, length in enumerate(lengths):
            y = rng.integers(3, VOCAB, size=length)
            src[i, :length], src[i, length] = y, 2
            tgt_in[i, 0], tgt_in[i, 1:length + 1] = 1, y
            tgt_out[i, :length], tgt_out[i, length] = y, 2
        out.append((src, tgt_in, tgt_out))
    return out


def fw_batches(fw, batches):
    return [tuple(fw.tensor(a) for a in b) for b in batches]


def tiny_model(fw, dropout=0.0, seed=0, **overrides):
    fw.seed(seed)
    args = dict(num_layers=1, d_model=16, num_heads=2, dff=32, input_vocab_size=VOCAB,
                target_vocab_size=VOCAB, max_len=10, dropout=dropout)
    args.update(overrides)
    return fw.cp.Transformer(**args)


_WARM = {}


def warm_trainer(fw):
    """One trainer per framework shared by the tests that only need *a* trained trainer
    (its TensorFlow step is traced once, which costs seconds on a CPU). Assert on
    differences of ``trainer.step``, never on its value."""
    if fw.name not in _WARM:
        _WARM[fw.name] = training(fw).Trainer(tiny_model(fw), warmup_steps=4)
    return _WARM[fw.name]


def model_weights(model):
    from course_pkg import interop

    return {k: np.array(v) for k, v in interop.get_weights(model).items()}


# Labels with pads at the end, in the middle and a fully padded row.
LABELS = np.array([[4, 6, 2, 0, 0], [0, 0, 0, 0, 0], [3, 0, 5, 6, 2], [1, 1, 6, 4, 2]])
LOGITS = (np.random.default_rng(0).normal(size=(4, 5, 7)) * 3).astype(np.float32)


def as_float(x):
    return float(np.asarray(x))


# --------------------------------------------------------------- masked loss, accuracy
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_masked_loss_matches_torch_cross_entropy(fw, eps):
    import torch

    expected = torch.nn.functional.cross_entropy(
        torch.from_numpy(LOGITS).reshape(-1, 7), torch.from_numpy(LABELS).reshape(-1),
        ignore_index=0, label_smoothing=eps)
    got = training(fw).masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=eps)
    assert abs(as_float(fw.to_numpy(got)) - float(expected)) <= 1e-6


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_masked_loss_matches_keras_categorical_crossentropy(fw, eps):
    import keras

    keep = LABELS != 0
    expected = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=eps)(
        np.eye(7, dtype=np.float32)[LABELS[keep]], LOGITS[keep])
    got = training(fw).masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=eps)
    assert abs(as_float(fw.to_numpy(got)) - as_float(expected)) <= 1e-6


def test_masked_accuracy_value(fw):
    keep = LABELS != 0
    expected = (LOGITS.argmax(-1) == LABELS)[keep].mean()
    got = training(fw).masked_accuracy(fw.tensor(LABELS), fw.tensor(LOGITS))
    assert abs(as_float(fw.to_numpy(got)) - expected) <= 1e-7


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("pad_id", [0, 6, -100])
def test_loss_and_accuracy_tf_torch_parity(tf_fw, torch_fw, eps, pad_id):
    labels = np.where(LABELS == 0, pad_id, LABELS) if pad_id < 0 else LABELS
    values = {}
    for fw in (tf_fw, torch_fw):
        t = training(fw)
        values[fw.name] = (
            as_float(fw.to_numpy(t.masked_loss(fw.tensor(labels), fw.tensor(LOGITS), pad_id, eps))),
            as_float(fw.to_numpy(t.masked_accuracy(fw.tensor(labels), fw.tensor(LOGITS), pad_id))))
    (tf_loss, tf_acc), (pt_loss, pt_acc) = values["tensorflow"], values["torch"]
    assert abs(tf_loss - pt_loss) <= 1e-6 and abs(tf_acc - pt_acc) <= 1e-7
    if pad_id == -100:  # pad ids outside the vocabulary, as torch's ignore_index=-100
        import torch

        expected = torch.nn.functional.cross_entropy(
            torch.from_numpy(LOGITS).reshape(-1, 7), torch.from_numpy(labels).reshape(-1),
            ignore_index=-100, label_smoothing=eps)
        assert abs(pt_loss - float(expected)) <= 1e-6


def test_all_pad_gives_zero_not_nan(fw):
    t = training(fw)
    labels = fw.tensor(np.zeros((2, 3), np.int64))
    logits = fw.tensor(LOGITS[:2, :3])
    assert as_float(fw.to_numpy(t.masked_loss(labels, logits, label_smoothing=0.1))) == 0.0
    assert as_float(fw.to_numpy(t.masked_accuracy(labels, logits))) == 0.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_loss_computed_in_float32(fw, dtype):
    t = training(fw)
    low = fw.tensor(LOGITS, dtype)
    loss = t.masked_loss(fw.tensor(LABELS), low, label_smoothing=0.1)
    assert "float32" in str(loss.dtype)
    same_values = fw.tensor(fw.to_numpy(low).astype(np.float32))
    expected = t.masked_loss(fw.tensor(LABELS), same_values, label_smoothing=0.1)
    assert abs(as_float(fw.to_numpy(loss)) - as_float(fw.to_numpy(expected))) <= 1e-6


def test_loss_rejects_bad_inputs(fw):
    t = training(fw)
    with pytest.raises(TypeError, match="integer"):
        t.masked_loss(fw.tensor(LABELS.astype(np.float32)), fw.tensor(LOGITS))
    with pytest.raises(ValueError, match=r"\(batch, tgt_len\)"):
        t.masked_loss(fw.tensor(LABELS[:, :4]), fw.tensor(LOGITS))
    with pytest.raises(ValueError, match=r"\(batch, tgt_len, vocab\)"):
        t.masked_accuracy(fw.tensor(LABELS), fw.tensor(LOGITS[..., 0]))
    with pytest.raises(ValueError, match="label_smoothing"):
        t.masked_loss(fw.tensor(LABELS), fw.tensor(LOGITS), label_smoothing=1.0)


# ------------------------------------------------------------------- Noam schedule
def test_noam_schedule_values_and_peak(fw):
    schedule = training(fw).NoamSchedule(512, 4000)
    for step in (1, 4000, 40000):
        assert as_float(schedule(step)) == pytest.approx(noam(step, 512, 4000), rel=1e-6)
    assert as_float(schedule(0)) == pytest.approx(noam(1, 512, 4000), rel=1e-6)
    steps = np.arange(1, 12001, 50).tolist() + [3999, 4000, 4001]
    assert max(steps, key=lambda s: as_float(schedule(s))) == 4000
    assert as_float(schedule(4000)) == pytest.approx(512 ** -0.5 * 4000 ** -0.5, rel=1e-6)


def test_noam_schedule_config(fw):
    t = training(fw)
    schedule = t.NoamSchedule(64, warmup_steps=50)
    assert schedule.get_config() == {"d_model": 64, "warmup_steps": 50}
    if fw.name == "tensorflow":
        import keras

        clone = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    else:
        clone = t.NoamSchedule(**schedule.get_config())
    assert type(clone) is t.NoamSchedule and clone.get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="warmup_steps"):
        t.NoamSchedule(64, warmup_steps=0)


def test_lambda_lr_gives_the_formula(torch_fw):
    import torch

    model = tiny_model(torch_fw)
    optimizer, scheduler = training(torch_fw).make_optimizer(model, 16, warmup_steps=5)
    assert isinstance(optimizer, torch.optim.Adam)
    assert isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR)
    for k in range(15):  # k optimizer steps taken
        assert optimizer.param_groups[0]["lr"] == pytest.approx(noam(k, 16, 5), rel=1e-12)
        optimizer.step()
        scheduler.step()


def test_make_optimizer_is_the_papers_adam(fw):
    model = tiny_model(fw)
    optimizer, schedule = training(fw).make_optimizer(model, 16, warmup_steps=5)
    if fw.name == "torch":
        group = optimizer.param_groups[0]
        assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9 and group["lr"] == pytest.approx(
            noam(0, 16, 5))
        assert schedule.lr_lambdas[0].get_config() == {"d_model": 16, "warmup_steps": 5}
    else:
        import keras

        assert isinstance(optimizer, keras.optimizers.Adam)
        assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
        assert isinstance(schedule, training(fw).NoamSchedule)
        assert as_float(optimizer.learning_rate) == pytest.approx(noam(0, 16, 5), rel=1e-6)


# ------------------------------------------------------------------------- Trainer
def test_copy_task_reaches_high_accuracy(fw):
    """A 1-layer d_model=16 Transformer learns to copy in a few hundred steps."""
    train = fw_batches(fw, copy_batches(300, batch=32))
    valid = fw_batches(fw, copy_batches(4, batch=32, seed=1))
    trainer = training(fw).Trainer(tiny_model(fw), warmup_steps=100, label_smoothing=0.1)
    start = time.perf_counter()
    history = trainer.fit(train, valid, epochs=1, progress=False)
    elapsed = time.perf_counter() - start
    print(f"{fw.name}: 300 steps in {elapsed:.1f}s ({300 / elapsed:.0f} steps/s), "
          f"val accuracy {history['val_accuracy'][-1]:.3f}")
    assert history["step"] == [300]
    assert history["val_accuracy"][-1] > 0.9
    assert trainer.evaluate(valid)["accuracy"] == pytest.approx(history["val_accuracy"][-1])
    assert elapsed < 20


def test_seeded_runs_give_identical_losses(fw):
    batches = copy_batches(8, batch=8)
    runs = []
    for _ in range(2):
        trainer = training(fw).Trainer(tiny_model(fw, dropout=0.3), warmup_steps=4, seed=0)
        losses = []
        for k, b in enumerate(batches):
            # the learning rate of step k + 1 is the Noam formula at optimizer step k
            assert trainer.step == k
            assert trainer.learning_rate == pytest.approx(noam(k, 16, 4), rel=1e-6)
            losses.append(trainer.train_step(*b)["loss"])
        runs.append(losses)
    assert runs[0] == runs[1]


def test_resume_equals_straight_run(fw, tmp_path):
    """N steps, save, restore into a fresh trainer, M more == N + M steps straight (dropout on)."""
    t = training(fw)
    batches = copy_batches(11, batch=8)
    straight = t.Trainer(tiny_model(fw, dropout=0.2), warmup_steps=4)
    for b in batches[:6]:
        straight.train_step(*b)
    path = tmp_path / "ckpt"
    straight.save(path)  # saving changes nothing: the run goes on as if never saved
    lr_at_save = straight.learning_rate
    for b in batches[6:]:
        straight.train_step(*b)
    # a fresh model and trainer (other seeds: everything must come from the checkpoint)
    resumed = t.Trainer(tiny_model(fw, dropout=0.2, seed=1), warmup_steps=4, seed=1)
    resumed.restore(path)
    assert resumed.step == 6
    assert resumed.learning_rate == pytest.approx(lr_at_save, rel=1e-7)
    for b in batches[6:]:
        resumed.train_step(*b)
    assert resumed.step == straight.step == 11
    a, b = model_weights(straight.model), model_weights(resumed.model)
    assert sorted(a) == sorted(b)
    for name in a:
        if fw.name == "torch":
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        else:
            np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-6, err_msg=name)


def test_restore_other_config_raises_and_changes_nothing(fw, tmp_path):
    t = training(fw)
    batch = copy_batches(1, batch=4)[0]
    saved = t.Trainer(tiny_model(fw), warmup_steps=4)
    saved.train_step(*batch)
    saved.save(tmp_path / "ckpt")

    other = t.Trainer(tiny_model(fw, seed=3, dff=24, num_layers=2), warmup_steps=4)
    before, lr = model_weights(other.model), other.learning_rate
    with pytest.raises(ValueError, match=r"dff: expected 24, found 32") as info:
        other.restore(tmp_path / "ckpt")
    assert "num_layers: expected 2, found 1" in str(info.value)
    after = model_weights(other.model)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)
    assert other.step == 0 and other.learning_rate == lr


def test_save_is_atomic(fw, tmp_path, monkeypatch):
    t = training(fw)
    batch = copy_batches(1, batch=4)[0]
    trainer = t.Trainer(tiny_model(fw), warmup_steps=4)
    trainer.train_step(*batch)
    path = tmp_path / "ckpt"
    trainer.save(path)
    trainer.train_step(*batch)
    trainer.save(path)  # overwrite
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    if fw.name == "tensorflow":  # a directory: tf.train.Checkpoint files + config.json
        import json

        files = sorted(os.listdir(path))
        assert "config.json" in files and "checkpoint.index" in files
        info = json.loads((path / "config.json").read_text())
        assert info["step"] == 2 and info["config"]["d_model"] == 16

    def broken(*args, **kwargs):
        raise OSError("disk full")

    trainer.train_step(*batch)
    # fail in the middle of writing: torch.save itself / the JSON beside the TF checkpoint
    monkeypatch.setattr(*((t.torch, "save", broken) if fw.name == "torch" else (t.json, "dump", broken)))
    with pytest.raises(OSError, match="disk full"):
        trainer.save(path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    fresh = t.Trainer(tiny_model(fw), warmup_steps=4)
    fresh.restore(path)
    assert fresh.step == 2  # the last complete checkpoint


def test_torch_checkpoint_loads_weights_only(torch_fw, tmp_path):
    import torch

    trainer = training(torch_fw).Trainer(tiny_model(torch_fw), warmup_steps=4)
    trainer.train_step(*copy_batches(1, batch=4)[0])
    trainer.save(tmp_path / "model.pt")
    checkpoint = torch.load(tmp_path / "model.pt", weights_only=True)
    assert checkpoint["step"] == 1
    assert checkpoint["config"] == trainer.model.get_config()
    assert set(checkpoint) >= {"model", "optimizer", "schedule", "config", "step"}


def test_tf_train_step_traces_once(tf_fw):
    """Batches of other lengths (and int32 ids) reuse the one traced graph."""
    trainer = warm_trainer(tf_fw)
    batches = copy_batches(6, batch=2, min_len=1, max_len=8)
    assert len({b[0].shape for b in batches}) > 2
    for b in batches:
        trainer.train_step(*b)
    trainer.train_step(*(a.astype(np.int32) for a in batches[0]))
    trainer.evaluate(batches[:3])
    trainer.evaluate(batches[3:])
    assert trainer._train_function.experimental_get_tracing_count() == 1
    assert trainer._evaluate_function.experimental_get_tracing_count() == 1


def test_fit_stops_at_max_steps_and_validates_each_epoch(fw, tmp_path):
    train = fw_batches(fw, copy_batches(4, batch=4))
    valid = copy_batches(2, batch=4, seed=1)  # NumPy batches work too
    trainer = warm_trainer(fw)
    s = trainer.step
    history = trainer.fit(train, valid, epochs=3, max_steps=10, progress=False,
                          checkpoint_path=tmp_path / "ckpt")
    assert history["step"] == [s + 4, s + 8, s + 10]
    assert set(history) == {"step", "loss", "accuracy", "val_loss", "val_accuracy", "elapsed"}
    assert all(len(v) == 3 for v in history.values())
    assert all(np.isfinite(history["val_loss"])) and history["elapsed"] == sorted(history["elapsed"])
    assert history["val_loss"][-1] == pytest.approx(trainer.evaluate(valid)["loss"])
    history = trainer.fit(train, epochs=2, progress=False)
    assert history["step"] == [s + 14, s + 18] and history["val_loss"] == [None, None]
    fresh = training(fw).Trainer(tiny_model(fw), warmup_steps=4)
    fresh.restore(tmp_path / "ckpt")
    assert fresh.step == s + 10


def test_fit_time_budget_stops_early(fw):
    train = copy_batches(2000, batch=2, min_len=2, max_len=3)
    trainer = warm_trainer(fw)
    trainer.train_step(*train[0])  # trace / warm up outside the budget
    s = trainer.step
    start = time.perf_counter()
    history = trainer.fit(train, epochs=5, time_budget=0.5, progress=False)
    assert time.perf_counter() - start < 5
    assert 1 <= history["step"][-1] - s < 2000
    assert len(history["step"]) == 1 and history["elapsed"][0] >= 0.5


def test_progress_false_prints_nothing(fw, capsys):
    train = copy_batches(3, batch=4)
    trainer = warm_trainer(fw)
    capsys.readouterr()
    trainer.fit(train, train, epochs=2, progress=False)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    trainer.fit(train, train, epochs=1, progress=True)
    out, err = capsys.readouterr()
    assert "loss" in out + err and "3/3" in out + err


def test_evaluate_weighs_tokens_not_batches(fw):
    """evaluate over two batches == evaluate over their concatenation (batches hold few/many pads)."""
    src, tgt_in, tgt_out = copy_batches(1, batch=6, min_len=1, max_len=7, seed=4)[0]
    trainer = warm_trainer(fw)
    split = trainer.evaluate([(src[:1], tgt_in[:1], tgt_out[:1]), (src[1:], tgt_in[1:], tgt_out[1:])])
    whole = trainer.evaluate([(src, tgt_in, tgt_out)])
    assert split["loss"] == pytest.approx(whole["loss"], abs=1e-6)
    assert split["accuracy"] == pytest.approx(whole["accuracy"], abs=1e-7)
    with pytest.raises(ValueError, match="no batch"):
        trainer.evaluate([])


def test_trainer_checks_its_arguments(fw):
    t = training(fw)
    seq2seq = fw.cp.Seq2Seq(VOCAB, VOCAB, 8, 16)
    with pytest.raises(ValueError, match="d_model"):
        t.Trainer(seq2seq)
    trainer = t.Trainer(seq2seq, d_model=16, warmup_steps=4)  # any model called model(src, tgt_in)
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])
    batches = (b for b in copy_batches(2, batch=4))
    with pytest.raises(ValueError, match="one-shot iterator"):
        trainer.fit(batches, epochs=2, progress=False)
    with pytest.raises(ValueError, match="schedule"):
        t.Trainer(tiny_model(fw), schedule=t.NoamSchedule(16))
    with pytest.raises(TypeError, match="integer"):
        trainer.train_step(*(a.astype(np.float32) for a in copy_batches(1, batch=4)[0]))
    with pytest.raises(ValueError, match="time_budget"):
        trainer.fit(copy_batches(1, batch=4), time_budget=-1, progress=False)


def test_torch_trainer_uses_the_models_device(torch_fw):
    import torch

    trainer = training(torch_fw).Trainer(tiny_model(torch_fw), warmup_steps=4)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert trainer.device.type == expected
    assert all(p.device.type == expected for p in trainer.model.parameters())
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])
