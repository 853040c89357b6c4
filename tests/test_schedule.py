"""NoamSchedule and make_optimizer (course_pkg.{torch,tensorflow}.schedule): the paper's
formula (its NumPy oracle is course_pkg.reference.noam_learning_rate) and the paper's Adam."""

import numpy as np
import pytest
from training_helpers import as_float, tiny_model

from course_pkg.reference import noam_learning_rate


def test_noam_schedule_follows_the_formula_and_peaks_at_warmup(fw):
    schedule = fw.cp.NoamSchedule(512, 4000)
    for step in (1, 4000, 40000):
        assert as_float(schedule(step)) == pytest.approx(noam_learning_rate(step, 512, 4000), rel=1e-6)
    assert as_float(schedule(0)) == pytest.approx(noam_learning_rate(1, 512, 4000), rel=1e-6)
    steps = np.arange(1, 12001, 50).tolist() + [3999, 4000, 4001]
    assert max(steps, key=lambda s: as_float(schedule(s))) == 4000
    assert as_float(schedule(4000)) == pytest.approx(512 ** -0.5 * 4000 ** -0.5, rel=1e-6)
    # The paper's 4,000 warm-up steps are the default, in the twins and the reference.
    assert as_float(fw.cp.NoamSchedule(512)(4000)) == as_float(schedule(4000))
    peak = noam_learning_rate(4000, 512)
    assert noam_learning_rate(4001, 512) < peak == noam_learning_rate(4000, 512, 4000)


def test_noam_schedule_config_round_trips_and_rejects_zero_warmup(fw):
    cp = fw.cp
    schedule = cp.NoamSchedule(64, warmup_steps=50)
    assert schedule.get_config() == {"d_model": 64, "warmup_steps": 50, "peak_learning_rate": None}
    if fw.name == "tensorflow":
        import keras

        clone = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    else:
        clone = cp.NoamSchedule(**schedule.get_config())
    assert type(clone) is cp.NoamSchedule and clone.get_config() == schedule.get_config()
    with pytest.raises(ValueError, match="warmup_steps"):
        cp.NoamSchedule(64, warmup_steps=0)


def test_a_peak_learning_rate_scales_the_same_curve_to_that_peak(fw):
    schedule = fw.cp.NoamSchedule(warmup_steps=150, peak_learning_rate=0.004)
    assert as_float(schedule(150)) == pytest.approx(0.004, rel=1e-6)
    paper = fw.cp.NoamSchedule(512, 150)  # the same shape, another scale
    for step in (1, 75, 150, 151, 600, 10_000):
        expected = noam_learning_rate(step, warmup_steps=150, peak_learning_rate=0.004)
        assert as_float(schedule(step)) == pytest.approx(expected, rel=1e-6)
        assert as_float(schedule(step)) / as_float(paper(step)) == pytest.approx(
            0.004 * (512 * 150) ** 0.5, rel=1e-5)
    assert noam_learning_rate(600, warmup_steps=150, peak_learning_rate=0.004) == pytest.approx(0.002)
    config = schedule.get_config()
    assert config == {"d_model": None, "warmup_steps": 150, "peak_learning_rate": 0.004}
    assert as_float(fw.cp.NoamSchedule(**config)(40)) == pytest.approx(as_float(schedule(40)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(), "not neither"),
    (dict(d_model=64, peak_learning_rate=1e-3), "not both"),
    (dict(peak_learning_rate=0.0), "positive number"),
    (dict(peak_learning_rate=-1e-3), "positive number"),
    (dict(peak_learning_rate=float("nan")), "positive number"),
    (dict(peak_learning_rate="0.001"), "positive number"),
    (dict(peak_learning_rate=True), "positive number"),
    (dict(d_model=64.0), "d_model must be a positive int"),
])
def test_the_noam_schedule_takes_exactly_one_scale(fw, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fw.cp.NoamSchedule(warmup_steps=10, **kwargs)


def test_trainer_takes_a_peak_learning_rate_for_its_default_schedule(fw):
    trainer = fw.cp.Trainer(tiny_model(fw), warmup_steps=4, peak_learning_rate=0.002)
    assert trainer.learning_rate == pytest.approx(0.002 / 4, rel=1e-6)  # step 0 gets step 1's rate
    optimizer, _ = fw.cp.make_optimizer(tiny_model(fw), 16, warmup_steps=4)
    with pytest.raises(ValueError, match="optimizer of your own"):
        fw.cp.Trainer(tiny_model(fw), optimizer=optimizer, peak_learning_rate=0.002)
    with pytest.raises(ValueError, match="not both"):
        fw.cp.Trainer(tiny_model(fw), d_model=16, peak_learning_rate=0.002)


def test_torch_lambda_lr_follows_the_noam_formula_step_by_step(torch_fw):
    import torch

    model = tiny_model(torch_fw)
    optimizer, scheduler = torch_fw.cp.make_optimizer(model, 16, warmup_steps=5)
    assert isinstance(optimizer, torch.optim.Adam)
    assert isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR)
    for k in range(15):  # k optimizer steps taken
        assert optimizer.param_groups[0]["lr"] == pytest.approx(noam_learning_rate(k, 16, 5), rel=1e-12)
        optimizer.step()
        scheduler.step()


def test_make_optimizer_is_the_papers_adam_with_the_noam_schedule(fw):
    model = tiny_model(fw)
    optimizer, schedule = fw.cp.make_optimizer(model, 16, warmup_steps=5)
    if fw.name == "torch":
        group = optimizer.param_groups[0]
        assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9 and group["lr"] == pytest.approx(
            noam_learning_rate(0, 16, 5))
        assert schedule.lr_lambdas[0].get_config() == {"d_model": 16, "warmup_steps": 5,
                                                       "peak_learning_rate": None}
    else:
        import keras

        assert isinstance(optimizer, keras.optimizers.Adam)
        assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
        assert isinstance(schedule, fw.cp.NoamSchedule)
        assert as_float(optimizer.learning_rate) == pytest.approx(noam_learning_rate(0, 16, 5), rel=1e-6)
