"""Trainer(precision=...): bf16 and fp16 training on the CPU stays near float32, with no NaN."""

import numpy as np
import pytest
from training_helpers import copy_batches, fw_batches, one_torch_thread, tiny_model

LOSS_TOLERANCE = 0.02  # absolute, on losses near 2.5 (< 1%); measured: at most about 7e-3 (TF bf16)
POLICIES = {"fp32": None, "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}  # Keras dtype policies


def run(fw, precision, batches):
    """Losses of 8 training steps, then the evaluation loss, of the tiny copy-task model."""
    dtype = POLICIES[precision] if fw.name == "tensorflow" else None
    model = tiny_model(fw, **({} if dtype is None else {"dtype": dtype}))
    trainer = fw.cp.Trainer(model, warmup_steps=10, seed=0, precision=precision)
    with one_torch_thread():
        losses = [trainer.train_step(*batch)["loss"] for batch in batches]
        losses.append(trainer.evaluate(batches[:2])["loss"])
    return np.array(losses)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_half_precision_losses_stay_near_float32(fw, precision):
    batches = fw_batches(fw, copy_batches(8))
    want = run(fw, "fp32", batches)
    got = run(fw, precision, batches)
    assert np.all(np.isfinite(got))
    assert want[-2] < want[0] - 0.2, "the float32 run must learn for the comparison to mean anything"
    assert np.abs(got - want).max() <= LOSS_TOLERANCE, (got, want)


def test_precision_is_checked(fw):
    with pytest.raises(ValueError, match="precision must be one of"):
        fw.cp.Trainer(tiny_model(fw), precision="fp64")


def test_tf_precision_needs_the_matching_dtype_policy(tf_fw):
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        tf_fw.cp.Trainer(tiny_model(tf_fw), precision="bf16")
