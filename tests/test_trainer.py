"""Trainer (course_pkg.{torch,tensorflow}.trainer): steps, fit and its budgets, evaluation,
argument checks, its read-only step and device, and seeding only when asked.

A TensorFlow Trainer's first step (and first evaluation) traces its graph, seconds on a CPU, where
the steps after it take milliseconds: tests that read what one run showed share that run, made
once per framework by a module-scoped fixture (``stepped``, ``evaluated``, ``three_epochs``) that
records everything they assert before any of them reads it, so that none depends on the steps
another test took. A test whose claim is about a trainer at step 0 (the time budgets, a fit that
prints nothing) builds its own (training_helpers.tiny_trainer).
"""

import re
from types import SimpleNamespace

import numpy as np
import pytest
from training_helpers import (
    VOCAB,
    copy_batches,
    fw_batches,
    once_per_framework,
    one_torch_thread,
    tiny_model,
    tiny_trainer,
)

from course_pkg.reference import noam_learning_rate


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield


def test_copy_task_reaches_90_percent_validation_accuracy_in_300_steps(fw):
    """A 1-layer d_model=16 Transformer learns to copy in a few hundred steps (one epoch of 300 batches)."""
    train = fw_batches(fw, copy_batches(300, batch=32))
    valid = fw_batches(fw, copy_batches(4, batch=32, seed=1))
    trainer = tiny_trainer(fw, warmup_steps=100, label_smoothing=0.1)
    history = trainer.fit(train, valid, epochs=1, progress=False)
    assert history["val_accuracy"][-1] > 0.9, history


def test_seeded_runs_give_identical_losses(fw):
    batches = copy_batches(8, batch=8)
    runs = []
    for _ in range(2):
        trainer = fw.cp.Trainer(tiny_model(fw, dropout=0.3), warmup_steps=4, seed=0)
        runs.append([trainer.train_step(*b)["loss"] for b in batches])
    assert runs[0] == runs[1]


def _stepped(fw):
    """A fresh trainer through 8 train_steps on copy_batches(8, batch=8), and what they showed: the
    learning rate before each step, the step count before the first and after each (and their types),
    and after the first step the devices of the model's weights and the trainer's device."""
    trainer = tiny_trainer(fw)
    seen = SimpleNamespace(trainer=trainer, rates=[], steps=[trainer.step], step_types=[])
    for b in copy_batches(8, batch=8):
        seen.rates.append(trainer.learning_rate)
        trainer.train_step(*b)
        seen.steps.append(trainer.step)
        seen.step_types.append(type(trainer.step))
        if len(seen.steps) == 2:
            seen.weight_devices, seen.device = _weight_devices(fw, trainer.model), trainer.device
    return seen


def _weight_devices(fw, model):
    if fw.name == "torch":
        return {p.device for p in model.parameters()}
    return {v.value.device for v in model.variables}


@pytest.fixture(scope="module")
def stepped():
    """``stepped(fw)``: :func:`_stepped`, run once per framework."""
    return once_per_framework(_stepped)


def test_the_learning_rate_of_each_step_is_the_noam_formula_at_the_steps_taken(fw, stepped):
    """The learning rate of step k + 1 is the Noam formula at optimizer step k (d_model 16, 4 warm-up)."""
    rates = stepped(fw).rates
    assert rates == pytest.approx([noam_learning_rate(k, 16, 4) for k in range(8)], rel=1e-6)


def _batches_of_several_lengths():
    batches = copy_batches(6, batch=2, min_len=1, max_len=8)
    assert len({b[0].shape for b in batches}) > 2  # the test's own data: several shapes to trace for
    return batches


def test_tf_train_step_traces_once_for_every_batch_shape_and_int_dtype(tf_fw, stepped):
    """Batches of other lengths (and int32 ids) reuse the one traced graph: that of the steps of
    ``stepped`` (batches of 8 rows; taking more steps here changes nothing it recorded)."""
    trainer = stepped(tf_fw).trainer
    batches = _batches_of_several_lengths()
    for b in batches:
        trainer.train_step(*b)
    trainer.train_step(*(a.astype(np.int32) for a in batches[0]))
    assert trainer._train_function.experimental_get_tracing_count() == 1


def test_tf_evaluate_traces_once_for_every_batch_shape(tf_fw, evaluated):
    trainer = evaluated(tf_fw).trainer  # evaluated on batches of 1, 5 and 6 rows already
    batches = _batches_of_several_lengths()
    trainer.evaluate(batches[:3])
    trainer.evaluate(batches[3:])
    assert trainer._evaluate_function.experimental_get_tracing_count() == 1


# fit over 4 training batches for 3 epochs with max_steps=10: the epochs end at steps 4, 8 and 10.
VALID = copy_batches(2, batch=4, seed=1)  # NumPy batches work too


def _fit_three_epochs(fw, trainer=None, **kwargs):
    """``(trainer, history)`` of ``fit(4 batches, VALID, epochs=3, max_steps=10)``."""
    trainer = tiny_trainer(fw) if trainer is None else trainer
    train = fw_batches(fw, copy_batches(4, batch=4))
    history = trainer.fit(train, VALID, epochs=3, max_steps=10, progress=False, **kwargs)
    return trainer, history


def _one_second_steps(trainer, monkeypatch):
    """Make fit's clock advance 1 s per training step, and only then."""
    from course_pkg.common import trainer as common_trainer

    clock = [100.0]
    monkeypatch.setattr(common_trainer, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    train_step = trainer.train_step

    def one_second_step(*batch):
        clock[0] += 1.0
        return train_step(*batch)

    trainer.train_step = one_second_step
    return trainer


def _three_epochs(fw, folder):
    """``_fit_three_epochs`` on a fresh trainer whose fit clock advances 1 s per training step, saving a
    checkpoint at its end; then what the tests read of it: its history, ``evaluate(VALID)`` right after
    it, the step of a fresh trainer that restored the checkpoint, and the history of a second
    ``fit(4 batches, epochs=2)`` without validation batches."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        trainer, history = _fit_three_epochs(fw, _one_second_steps(tiny_trainer(fw), monkeypatch),
                                             checkpoint_path=folder / f"ckpt-{fw.name}")
    del trainer.train_step  # the class's own again, on the real clock
    evaluated = trainer.evaluate(VALID)
    fresh = tiny_trainer(fw)
    fresh.restore(folder / f"ckpt-{fw.name}")
    second = trainer.fit(copy_batches(4, batch=4), epochs=2, progress=False)
    return SimpleNamespace(trainer=trainer, history=history, evaluated=evaluated, restored_step=fresh.step,
                           second=second)


@pytest.fixture(scope="module")
def three_epochs(tmp_path_factory):
    """``three_epochs(fw)``: :func:`_three_epochs`, run once per framework."""
    folder = tmp_path_factory.mktemp("three_epochs")
    return once_per_framework(lambda fw: _three_epochs(fw, folder))


def test_fit_stops_at_max_steps(fw, three_epochs):
    assert three_epochs(fw).history["step"] == [4, 8, 10]


def test_fit_history_holds_one_entry_of_every_log_per_epoch(fw, three_epochs):
    history = three_epochs(fw).history
    keys = ("step", "loss", "accuracy", "val_loss", "val_accuracy", "elapsed")
    assert {key: len(values) for key, values in history.items()} == dict.fromkeys(keys, 3)


def test_fit_validates_after_every_epoch(fw, three_epochs):
    history = three_epochs(fw).history
    logs = history["val_loss"] + history["val_accuracy"]
    assert all(log is not None and np.isfinite(log) for log in logs), history


def test_fit_logs_evaluate_of_the_validation_batches(fw, three_epochs):
    seen = three_epochs(fw)
    logged = {"loss": seen.history["val_loss"][-1], "accuracy": seen.history["val_accuracy"][-1]}
    assert logged == pytest.approx(seen.evaluated)


def test_fit_elapsed_is_the_seconds_since_fit_began_at_each_epochs_end(fw, three_epochs):
    """With a clock that advances 1 s per training step, the epochs end 4, 8 and 10 s into fit."""
    assert three_epochs(fw).history["elapsed"] == [4.0, 8.0, 10.0]


def test_fit_without_validation_batches_logs_none_for_them(fw, three_epochs):
    history = three_epochs(fw).second  # fit(copy_batches(4, batch=4), epochs=2, progress=False)
    assert (history["val_loss"], history["val_accuracy"]) == ([None, None], [None, None])


def test_a_second_fit_goes_on_counting_steps(fw, three_epochs):
    assert three_epochs(fw).second["step"] == [14, 18]


def test_fit_saves_a_checkpoint_at_its_end(fw, three_epochs):
    assert three_epochs(fw).restored_step == 10


def _budgets(fw):
    """A fresh trainer's fit with a time budget of 0 (its history, then its step count), then the same
    trainer's fit with a budget of 2.5 s on a clock that advances 1 s per training step (its history)."""
    trainer = tiny_trainer(fw)
    zero = trainer.fit(copy_batches(5, batch=2), epochs=3, time_budget=0, progress=False)
    seen = SimpleNamespace(zero=zero, step_after_zero=trainer.step)
    with pytest.MonkeyPatch.context() as monkeypatch:
        seen.spent = _one_second_steps(trainer, monkeypatch).fit(copy_batches(4, batch=2), epochs=3,
                                                                  time_budget=2.5, progress=False)
    return seen


@pytest.fixture(scope="module")
def budgets():
    """``budgets(fw)``: :func:`_budgets`, run once per framework."""
    return once_per_framework(_budgets)


def test_fit_with_a_time_budget_of_zero_stops_after_one_step(fw, budgets):
    history = budgets(fw).zero
    assert history["step"] == [1] and len(history["loss"]) == 1
    assert budgets(fw).step_after_zero == 1


def test_fit_stops_at_the_first_step_that_spends_the_time_budget(fw, budgets):
    """With a clock that advances 1 s per training step, a budget of 2.5 s ends fit after its third step
    (the trainer had taken one step before this fit)."""
    seen = budgets(fw)
    assert seen.spent["step"] == [seen.step_after_zero + 3]


def test_progress_false_prints_nothing(fw, capsys):
    train = copy_batches(3, batch=4)
    trainer = tiny_trainer(fw)
    capsys.readouterr()
    trainer.fit(train, train, epochs=2, progress=False)
    assert capsys.readouterr() == ("", "")


def test_progress_true_shows_a_bar_with_the_loss(fw, three_epochs, capsys):
    train = copy_batches(3, batch=4)
    trainer = three_epochs(fw).trainer  # traced already (what the bar shows does not depend on it)
    capsys.readouterr()
    trainer.fit(train, train, epochs=1, progress=True)
    out, err = capsys.readouterr()
    assert "loss" in out + err and "3/3" in out + err, out + err


def _evaluated(fw):
    """A fresh trainer's evaluate over two batches (of 1 and 5 rows, few/many pads) and over their
    concatenation."""
    src, tgt_in, tgt_out = copy_batches(1, batch=6, min_len=1, max_len=7, seed=4)[0]
    trainer = tiny_trainer(fw)
    split = trainer.evaluate([(src[:1], tgt_in[:1], tgt_out[:1]), (src[1:], tgt_in[1:], tgt_out[1:])])
    whole = trainer.evaluate([(src, tgt_in, tgt_out)])
    return SimpleNamespace(trainer=trainer, split=split, whole=whole)


@pytest.fixture(scope="module")
def evaluated():
    """``evaluated(fw)``: :func:`_evaluated`, run once per framework."""
    return once_per_framework(_evaluated)


@pytest.mark.parametrize("metric, tolerance", [("loss", 1e-6), ("accuracy", 1e-7)], ids=["loss", "accuracy"])
def test_evaluate_weighs_tokens_not_batches(fw, evaluated, metric, tolerance):
    """evaluate over two batches == evaluate over their concatenation (batches hold few/many pads)."""
    seen = evaluated(fw)
    assert seen.split[metric] == pytest.approx(seen.whole[metric], abs=tolerance)


def test_evaluate_refuses_no_batches(fw):
    with pytest.raises(ValueError, match="no batch"):
        tiny_trainer(fw).evaluate([])


def _seq2seq_trainer(fw):
    """A Trainer of a model without a d_model attribute (the RNN Seq2Seq), given d_model."""
    return fw.cp.Trainer(fw.cp.Seq2Seq(VOCAB, VOCAB, 8, 16), d_model=16, warmup_steps=4, seed=0)


def test_trainer_trains_any_model_called_with_src_and_tgt_in(fw):
    trainer = _seq2seq_trainer(fw)
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])


@pytest.mark.parametrize("misuse, error, match", [
    pytest.param(lambda fw: fw.cp.Trainer(fw.cp.Seq2Seq(VOCAB, VOCAB, 8, 16)),
                 ValueError, "has no d_model attribute", id="model-without-d_model-and-no-d_model"),
    pytest.param(lambda fw: fw.cp.Trainer(tiny_model(fw), schedule=fw.cp.NoamSchedule(16)),
                 ValueError, "schedule was given without its optimizer", id="schedule-without-optimizer"),
    pytest.param(lambda fw: _seq2seq_trainer(fw).fit((b for b in copy_batches(2, batch=4)), epochs=2,
                                                     progress=False),
                 ValueError, "one-shot iterator", id="fit-a-generator-for-2-epochs"),
    pytest.param(lambda fw: _seq2seq_trainer(fw).train_step(
                     *(a.astype(np.float32) for a in copy_batches(1, batch=4)[0])),
                 TypeError, "integer", id="train_step-on-float-ids"),
    pytest.param(lambda fw: _seq2seq_trainer(fw).fit(copy_batches(1, batch=4), time_budget=-1,
                                                     progress=False),
                 ValueError, "time_budget", id="fit-with-a-negative-time_budget"),
])
def test_trainer_refuses_a_misuse(fw, misuse, error, match):
    with pytest.raises(error, match=match):
        misuse(fw)


def test_step_counts_the_train_steps(fw, stepped):
    assert stepped(fw).steps == [0, 1, 2, 3, 4, 5, 6, 7, 8]


def test_step_is_a_python_int(fw, stepped):
    step_types = stepped(fw).step_types  # after each step
    assert step_types == [int] * 8, step_types


@pytest.mark.parametrize("attribute, value", [("step", 5), ("device", "cpu")], ids=["step", "device"])
def test_read_only_property_refuses_assignment(fw, attribute, value):
    trainer = tiny_trainer(fw)
    with pytest.raises(AttributeError, match=attribute):
        setattr(trainer, attribute, value)


def test_the_models_weights_live_on_the_trainers_device_after_a_step(fw, stepped):
    seen = stepped(fw)  # after the first step
    assert seen.weight_devices == {seen.device}


def test_tf_trainer_device_is_a_full_device_name(tf_fw):
    device = tiny_trainer(tf_fw).device
    assert re.search(r"/device:(CPU|GPU):\d+$", device), device


def test_torch_trainer_picks_the_gpu_when_there_is_one(torch_fw):
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert tiny_trainer(torch_fw).device.type == expected


def test_torch_trainer_trains_numpy_batches_on_its_device(torch_fw):
    trainer = tiny_trainer(torch_fw)
    assert np.isfinite(trainer.train_step(*copy_batches(1, batch=4)[0])["loss"])


@pytest.mark.parametrize("seed", [None, 0], ids=["seed=None-leaves-the-generator-alone", "seed=0-seeds-it"])
def test_trainer_seeds_the_framework_only_when_given_a_seed(fw, seed):
    def draw():
        return fw.to_numpy(fw.torch.rand(4) if fw.name == "torch" else fw.tf.random.uniform([4]))

    model = tiny_model(fw)
    fw.seed(5 if seed is None else seed)  # seed=None: the generator goes on as it was seeded before
    expected = draw()
    fw.seed(5)
    fw.cp.Trainer(model, warmup_steps=4, seed=seed)
    np.testing.assert_array_equal(draw(), expected)
