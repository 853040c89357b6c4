"""Trainer (course_pkg.{torch,tensorflow}.trainer): steps, fit and its budgets, evaluation,
argument checks, its read-only step and device, and seeding only when asked.

Every test builds its own trainer (training_helpers.tiny_trainer): none depends on the steps
another one took.
"""

import re
from types import SimpleNamespace

import numpy as np
import pytest
from training_helpers import VOCAB, copy_batches, fw_batches, one_torch_thread, tiny_model, tiny_trainer

from course_pkg.reference import noam_learning_rate


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield


def test_copy_task_reaches_90_percent_validation_accuracy_in_300_steps(fw):
    """A 1-layer d_model=16 Transformer learns to copy in a few hundred steps."""
    train = fw_batches(fw, copy_batches(300, batch=32))
    valid = fw_batches(fw, copy_batches(4, batch=32, seed=1))
    trainer = tiny_trainer(fw, warmup_steps=100, label_smoothing=0.1)
    history = trainer.fit(train, valid, epochs=1, progress=False)
    assert history["step"] == [300]
    assert history["val_accuracy"][-1] > 0.9
    assert trainer.evaluate(valid)["accuracy"] == pytest.approx(history["val_accuracy"][-1])


def test_seeded_runs_give_identical_losses_and_the_noam_learning_rate(fw):
    batches = copy_batches(8, batch=8)
    runs = []
    for _ in range(2):
        trainer = fw.cp.Trainer(tiny_model(fw, dropout=0.3), warmup_steps=4, seed=0)
        losses = []
        for k, b in enumerate(batches):
            # the learning rate of step k + 1 is the Noam formula at optimizer step k
            assert trainer.step == k
            assert trainer.learning_rate == pytest.approx(noam_learning_rate(k, 16, 4), rel=1e-6)
            losses.append(trainer.train_step(*b)["loss"])
        runs.append(losses)
    assert runs[0] == runs[1]


def test_tf_train_step_traces_once_for_every_batch_shape_and_int_dtype(tf_fw):
    """Batches of other lengths (and int32 ids) reuse the one traced graph."""
    trainer = tiny_trainer(tf_fw)
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
    trainer = tiny_trainer(fw)
    history = trainer.fit(train, valid, epochs=3, max_steps=10, progress=False,
                          checkpoint_path=tmp_path / "ckpt")
    assert history["step"] == [4, 8, 10]
    assert set(history) == {"step", "loss", "accuracy", "val_loss", "val_accuracy", "elapsed"}
    assert all(len(v) == 3 for v in history.values())
    assert all(np.isfinite(history["val_loss"])) and history["elapsed"] == sorted(history["elapsed"])
    assert history["val_loss"][-1] == pytest.approx(trainer.evaluate(valid)["loss"])
    history = trainer.fit(train, epochs=2, progress=False)
    assert history["step"] == [14, 18] and history["val_loss"] == [None, None]
    fresh = tiny_trainer(fw)
    fresh.restore(tmp_path / "ckpt")
    assert fresh.step == 10


def test_fit_with_a_time_budget_of_zero_stops_after_one_step(fw):
    trainer = tiny_trainer(fw)
    history = trainer.fit(copy_batches(5, batch=2), epochs=3, time_budget=0, progress=False)
    assert history["step"] == [1] and len(history["loss"]) == 1
    assert trainer.step == 1


def test_fit_stops_at_the_first_step_that_spends_the_time_budget(fw, monkeypatch):
    """With a clock that advances 1 s per training step, a budget of 2.5 s ends fit after step 3."""
    from course_pkg import _training

    clock = [100.0]
    monkeypatch.setattr(_training, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    trainer = tiny_trainer(fw)
    train_step = trainer.train_step

    def one_second_step(*batch):
        clock[0] += 1.0
        return train_step(*batch)

    trainer.train_step = one_second_step
    history = trainer.fit(copy_batches(4, batch=2), epochs=3, time_budget=2.5, progress=False)
    assert history["step"] == [3] and history["elapsed"] == [3.0]


def test_progress_false_prints_nothing_and_true_shows_a_bar(fw, capsys):
    train = copy_batches(3, batch=4)
    trainer = tiny_trainer(fw)
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
    trainer = tiny_trainer(fw)
    split = trainer.evaluate([(src[:1], tgt_in[:1], tgt_out[:1]), (src[1:], tgt_in[1:], tgt_out[1:])])
    whole = trainer.evaluate([(src, tgt_in, tgt_out)])
    assert split["loss"] == pytest.approx(whole["loss"], abs=1e-6)
    assert split["accuracy"] == pytest.approx(whole["accuracy"], abs=1e-7)
    with pytest.raises(ValueError, match="no batch"):
        trainer.evaluate([])


def test_trainer_checks_its_arguments(fw):
    cp = fw.cp
    seq2seq = cp.Seq2Seq(VOCAB, VOCAB, 8, 16)
    with pytest.raises(ValueError, match="d_model"):
        cp.Trainer(seq2seq)
    trainer = cp.Trainer(seq2seq, d_model=16, warmup_steps=4, seed=0)  # any model called model(src, tgt_in)
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])
    batches = (b for b in copy_batches(2, batch=4))
    with pytest.raises(ValueError, match="one-shot iterator"):
        trainer.fit(batches, epochs=2, progress=False)
    with pytest.raises(ValueError, match="schedule"):
        cp.Trainer(tiny_model(fw), schedule=cp.NoamSchedule(16))
    with pytest.raises(TypeError, match="integer"):
        trainer.train_step(*(a.astype(np.float32) for a in copy_batches(1, batch=4)[0]))
    with pytest.raises(ValueError, match="time_budget"):
        trainer.fit(copy_batches(1, batch=4), time_budget=-1, progress=False)


def test_step_and_device_are_read_only_properties(fw):
    trainer = tiny_trainer(fw)
    assert trainer.step == 0
    trainer.train_step(*copy_batches(1, batch=4)[0])
    assert trainer.step == 1 and type(trainer.step) is int
    with pytest.raises(AttributeError, match="step"):
        trainer.step = 5
    with pytest.raises(AttributeError, match="device"):
        trainer.device = "cpu"
    if fw.name == "torch":
        assert all(p.device == trainer.device for p in trainer.model.parameters())
    else:
        assert re.search(r"/device:(CPU|GPU):\d+$", trainer.device), trainer.device
        assert {v.value.device for v in trainer.model.variables} == {trainer.device}


def test_torch_trainer_moves_the_model_to_the_gpu_when_there_is_one(torch_fw):
    import torch

    trainer = tiny_trainer(torch_fw)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert trainer.device.type == expected
    assert all(p.device.type == expected for p in trainer.model.parameters())
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])


def test_trainer_seeds_the_framework_only_when_given_a_seed(fw):
    def draw():
        return fw.to_numpy(fw.torch.rand(4) if fw.name == "torch" else fw.tf.random.uniform([4]))

    model = tiny_model(fw)
    fw.seed(5)
    unseeded = draw()
    fw.seed(0)
    seeded = draw()

    fw.seed(5)
    fw.cp.Trainer(model, warmup_steps=4)  # seed=None: the generator goes on undisturbed
    np.testing.assert_array_equal(draw(), unseeded)
    fw.seed(5)
    fw.cp.Trainer(model, warmup_steps=4, seed=0)
    np.testing.assert_array_equal(draw(), seeded)
