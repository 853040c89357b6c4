"""Data, models and settings shared by the training tests (losses, schedule, trainer, checkpoints).

The Trainer tests learn a copy task: ``src = y <eos>``, ``tgt_in = <bos> y``,
``tgt_out = y <eos>`` over a vocabulary of VOCAB ids (0 pad, 1 <bos>, 2 <eos>,
3.. symbols), with a 1-layer ``d_model = 16`` Transformer.
"""

import contextlib

import numpy as np

VOCAB = 12  # copy task: 0 pad, 1 <bos>, 2 <eos>, 3.. symbols


@contextlib.contextmanager
def one_torch_thread():
    """Run torch on one thread: tiny models gain nothing from intra-op threads, and on a
    busy 2-core machine two torch threads spin against each other (about 10x slower)."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def once_per_framework(make):
    """``get(fw)``: ``make(fw)`` under :func:`one_torch_thread`, made on the first call for each framework
    and returned again after. The body of a module-scoped fixture whose run several tests read: a
    TensorFlow Trainer's first step traces its graph (seconds), the steps after it take milliseconds.
    Made lazily, so that a selection of one framework's tests (``-k tensorflow``) makes the other's
    not at all."""
    made = {}

    def get(fw):
        if fw.name not in made:
            with one_torch_thread():
                made[fw.name] = make(fw)
        return made[fw.name]

    return get


def copy_batches(n, batch=16, min_len=3, max_len=7, seed=0):
    """``n`` copy-task batches ``(src, tgt_in, tgt_out)`` of NumPy int64 ids, ``batch`` rows each."""
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
    """The batches as the framework's tensors."""
    return [tuple(fw.tensor(a) for a in b) for b in batches]


def tiny_model(fw, dropout=0.0, seed=0, **overrides):
    """A 1-layer d_model=16 Transformer over VOCAB ids, built after seeding the framework with ``seed``."""
    fw.seed(seed)
    args = dict(num_layers=1, d_model=16, num_heads=2, dff=32, input_vocab_size=VOCAB,
                target_vocab_size=VOCAB, max_len=10, dropout=dropout)
    args.update(overrides)
    return fw.cp.Transformer(**args)


def tiny_trainer(fw, **kwargs):
    """A fresh Trainer of a fresh :func:`tiny_model` (4 warm-up steps, seed 0): no test sees
    another's steps."""
    return fw.cp.Trainer(tiny_model(fw), **{"warmup_steps": 4, "seed": 0, **kwargs})


def fp16_trainer(fw):
    """A fresh fp16 Trainer of the tiny model (4 warm-up steps, seed 0)."""
    model = tiny_model(fw, **({"dtype": "mixed_float16"} if fw.name == "tensorflow" else {}))
    return fw.cp.Trainer(model, warmup_steps=4, seed=0, precision="fp16")


def set_loss_scale(trainer, scale):
    """Set the fp16 trainer's loss scale (before its first step too)."""
    if hasattr(trainer, "_scaler"):
        if trainer._scaler._scale is None:  # torch makes the scaler's state on its first step, from this
            trainer._scaler._init_scale = float(scale)
            trainer._scaler._lazy_init_scale_growth_tracker(trainer.device)
        trainer._scaler.update(float(scale))  # GradScaler.update(new_scale): the public way to set it
    else:
        trainer.optimizer.dynamic_scale.assign(float(scale))
    assert trainer.loss_scale == scale


def model_weights(model):
    """``{canonical name: NumPy array}`` of a model's weights."""
    from course_pkg import interop

    return {k: np.array(v) for k, v in interop.get_weights(model).items()}


def as_float(x):
    """A scalar tensor or array as a Python float."""
    return float(np.asarray(x))
