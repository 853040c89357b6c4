"""Training: the masked loss and accuracy, the Noam schedule, and a small trainer.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow.training`.
A batch is a triple ``(src, tgt_in, tgt_out)`` of token ids, as
:func:`course_pkg.torch.make_batches` yields them: teacher forcing feeds the
decoder ``tgt_in = <bos> y`` and scores its logits against ``tgt_out = y <eos>``.
Positions where ``tgt_out`` holds ``pad_id`` count neither in the loss nor in
the accuracy.

Example::

    from course_pkg.torch import Trainer, Transformer

    model = Transformer(2, 128, 4, 512, len(src_vocab), len(tgt_vocab), 64)
    trainer = Trainer(model)   # Adam + Noam schedule of the paper, label smoothing 0.1
    history = trainer.fit(train, valid, epochs=10, time_budget=600,
                          checkpoint_path="transformer.pt")
    trainer.restore("transformer.pt")   # later, into Trainer(Transformer(same arguments))
"""

import os

import torch

from .._checks import check_positive, check_token_dtype, check_token_rank
from .._training import (
    ADAM_BETAS,
    ADAM_EPSILON,
    CHECKPOINT_FORMAT,
    check_label_smoothing,
    check_loss_shapes,
    config_differences,
    evaluation_logs,
    fit_loop,
    plain,
)
from ._layers import is_integer



# ------------------------------------------------------------------- loss, accuracy


def _check_labels(labels, logits):
    labels, logits = torch.as_tensor(labels), torch.as_tensor(logits)
    if not is_integer(labels):
        raise TypeError(f"labels must be integer token ids, got dtype {labels.dtype}")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    check_loss_shapes(labels.shape, logits.shape)
    return labels.to(device=logits.device, dtype=torch.int64), logits


def _loss_sums(labels, logits, pad_id, label_smoothing):
    """The loss summed over the counted (non-pad) labels, and their number."""
    check_label_smoothing(label_smoothing)
    labels, logits = _check_labels(labels, logits)
    log_probs = torch.log_softmax(logits.float(), dim=-1)  # (batch, T, vocab) float32
    keep = labels != pad_id  # (batch, T)
    # pad ids may lie outside the vocabulary (e.g. -100): gather at id 0 there instead
    safe = torch.where(keep, labels, 0)  # (batch, T)
    # Cross-entropy against the target q = (1 - eps) one_hot + eps / vocab:
    # -sum(q log p) = (1 - eps) * (-log p[label]) + eps * mean(-log p).
    nll = -log_probs.gather(-1, safe[..., None])[..., 0]  # (batch, T)
    uniform = -log_probs.mean(dim=-1)  # (batch, T)
    per_token = (1.0 - label_smoothing) * nll + label_smoothing * uniform  # (batch, T)
    weights = keep.float()  # (batch, T)
    return (per_token * weights).sum(), weights.sum()


def _hits(labels, logits, keep):
    """1.0 where the most likely token is the label and the label counts, else 0.0."""
    return ((logits.argmax(dim=-1) == labels) & keep).float()  # (batch, T)


def _masked_sums(labels, logits, pad_id, label_smoothing):
    """Summed loss, number of correct predictions and number of counted (non-pad) labels."""
    loss_sum, count = _loss_sums(labels, logits, pad_id, label_smoothing)
    labels, logits = _check_labels(labels, logits)
    return loss_sum, _hits(labels, logits, labels != pad_id).sum(), count


def masked_loss(labels, logits, pad_id=0, label_smoothing=0.0):
    """Cross-entropy averaged over the labels that are not ``pad_id``.

    With ``label_smoothing = eps`` the target distribution is
    ``(1 - eps) * one_hot(label) + eps / vocab`` (Szegedy et al., 2016; the
    paper uses eps = 0.1), as in ``torch.nn.functional.cross_entropy(...,
    label_smoothing=eps)`` and Keras' ``CategoricalCrossentropy(label_smoothing=eps)``.
    Computed in float32 whatever the logits' dtype; a batch with no label to
    count (all pad) gives 0, not NaN.

    Args:
        labels: target token ids (``tgt_out``).
        logits: the model's logits.
        pad_id: the label id to ignore.
        label_smoothing: eps in [0, 1).

    Returns:
        the mean loss, a float32 scalar tensor.

    Shape:
        labels (batch, tgt_len) int, logits (batch, tgt_len, vocab) -> ().
    """
    loss_sum, count = _loss_sums(labels, logits, pad_id, label_smoothing)
    return loss_sum / count.clamp(min=1.0)


def masked_accuracy(labels, logits, pad_id=0):
    """Fraction of the non-pad labels that are the logits' argmax (0 if all are pad).

    Args:
        labels: target token ids (``tgt_out``).
        logits: the model's logits.
        pad_id: the label id to ignore.

    Returns:
        the accuracy, a float32 scalar tensor.

    Shape:
        labels (batch, tgt_len) int, logits (batch, tgt_len, vocab) -> ().
    """
    labels, logits = _check_labels(labels, logits)
    keep = labels != pad_id  # (batch, T)
    return _hits(labels, logits, keep).sum() / keep.sum().clamp(min=1).float()


# -------------------------------------------------------------- learning-rate schedule
class NoamSchedule:
    """The learning rate of the paper: warm up linearly, then decay as 1/sqrt(step).

    ``lr = d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)``,
    highest at ``step = warmup_steps``. Optimizers count from 0: step 0 gets
    the step-1 value. A plain callable, meant as ``lr_lambda`` of
    ``torch.optim.lr_scheduler.LambdaLR`` with the optimizer's base lr = 1.0
    (:func:`make_optimizer` does that).

    Args:
        d_model: model width.
        warmup_steps: steps of linear warm-up.

    Call:
        ``schedule(step)`` returns the learning rate at optimizer step ``step``
        as a Python float.
    """

    def __init__(self, d_model, warmup_steps=4000):
        check_positive(d_model=d_model, warmup_steps=warmup_steps)
        self.d_model, self.warmup_steps = d_model, warmup_steps

    def __call__(self, step):
        step = max(float(step), 1.0)
        return self.d_model ** -0.5 * min(step ** -0.5, step * self.warmup_steps ** -1.5)

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps}


def make_optimizer(model, d_model, warmup_steps=4000):
    """Adam with the paper's betas (0.9, 0.98) and epsilon 1e-9, driven by :class:`NoamSchedule`.

    Args:
        model: the model whose parameters are trained.
        d_model: width for the schedule (usually ``model.d_model``).
        warmup_steps: steps of linear warm-up.

    Returns:
        ``(optimizer, schedule)``: a ``torch.optim.Adam`` with base lr 1.0 and the
        ``torch.optim.lr_scheduler.LambdaLR`` that scales it by ``NoamSchedule``;
        call ``schedule.step()`` after every ``optimizer.step()``.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=ADAM_BETAS, eps=ADAM_EPSILON)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, NoamSchedule(d_model, warmup_steps))
    return optimizer, schedule


# --------------------------------------------------------------------------- trainer


class Trainer:
    """Teacher-forced training of a course model: steps, evaluation, ``fit``, checkpoints.

    Args:
        model: a course model called as ``model(src, tgt_in)`` -> logits, with
            ``get_config()`` (the Transformer, the RNN Seq2Seq). It is moved to
            the GPU when there is one.
        optimizer: default: the Adam of :func:`make_optimizer`.
        schedule: the ``torch.optim.lr_scheduler`` stepped after every optimizer
            step (default: :func:`make_optimizer`'s). With an optimizer of your
            own, ``None`` keeps its learning rate constant.
        d_model: width for the Noam schedule (default: ``model.d_model``); only
            used to make the default optimizer.
        warmup_steps: warm-up of the default Noam schedule.
        label_smoothing: eps of :func:`masked_loss`, in training and evaluation.
        pad_id: the padding id of the targets.
        seed: seeds the framework (``torch.manual_seed``) for dropout; ``None``
            leaves it. Seed it before building the model too, for the same
            initial weights.

    Attributes:
        model, optimizer, schedule, label_smoothing, pad_id; ``device``, the
        model's device; ``step``, the number of training steps taken (saved
        and restored with the checkpoints).
    """

    def __init__(self, model, optimizer=None, schedule=None, d_model=None, warmup_steps=4000,
                 label_smoothing=0.1, pad_id=0, seed=0):
        check_label_smoothing(label_smoothing)
        if seed is not None:
            torch.manual_seed(seed)
        self.model = model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
        if optimizer is None:
            if schedule is not None:
                raise ValueError("schedule was given without its optimizer: pass both, or neither "
                                 "to get make_optimizer's")
            if d_model is None:
                d_model = getattr(model, "d_model", None)
            if d_model is None:
                raise ValueError(f"{type(model).__name__} has no d_model attribute: pass d_model "
                                 "(the width the Noam schedule scales by) or an optimizer")
            optimizer, schedule = make_optimizer(self.model, d_model, warmup_steps)
        self.optimizer, self.schedule = optimizer, schedule
        self.label_smoothing, self.pad_id = float(label_smoothing), pad_id
        self.step = 0

    @property
    def device(self):
        """The device of the model's parameters (batches are moved there)."""
        return next(self.model.parameters()).device

    @property
    def learning_rate(self):
        """The learning rate of the next step, a Python float."""
        return float(self.optimizer.param_groups[0]["lr"])

    def _tokens(self, tokens):
        tokens = torch.as_tensor(tokens)
        check_token_dtype(is_integer(tokens), str(tokens.dtype))
        check_token_rank(tokens.shape)
        return tokens.to(self.device, non_blocking=True)

    def train_step(self, src, tgt_in, tgt_out):
        """One optimizer step on one batch (dropout on).

        Returns:
            ``{"loss": float, "accuracy": float}`` of this batch, before the update.

        Shape:
            src (batch, src_len), tgt_in (batch, tgt_len), tgt_out (batch, tgt_len) int.
        """
        src, tgt_in, tgt_out = self._tokens(src), self._tokens(tgt_in), self._tokens(tgt_out)
        self.model.train()
        logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
        loss = masked_loss(tgt_out, logits, self.pad_id, self.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        if self.schedule is not None:
            self.schedule.step()
        self.step += 1
        accuracy = masked_accuracy(tgt_out, logits.detach(), self.pad_id)
        return {"loss": float(loss.detach()), "accuracy": float(accuracy)}

    def evaluate(self, batches):
        """Loss and accuracy over all the non-pad target tokens of ``batches`` (dropout off).

        Every token weighs the same, whatever the size of its batch. The loss
        is label-smoothed like the training loss, so the two compare.

        Returns:
            ``{"loss": float, "accuracy": float}``.
        """
        was_training = self.model.training
        self.model.eval()
        totals, seen = [0.0, 0.0, 0.0], 0  # summed loss, correct predictions, counted tokens
        try:
            with torch.no_grad():
                for src, tgt_in, tgt_out in batches:
                    src, tgt_in, tgt_out = self._tokens(src), self._tokens(tgt_in), self._tokens(tgt_out)
                    logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
                    sums = _masked_sums(tgt_out, logits, self.pad_id, self.label_smoothing)
                    totals, seen = [t + s for t, s in zip(totals, sums)], seen + 1
        finally:
            self.model.train(was_training)
        return evaluation_logs(totals, seen)

    def fit(self, train_batches, valid_batches=None, epochs=1, max_steps=None, time_budget=None,
            progress=True, checkpoint_path=None):
        """Train until ``epochs``, ``max_steps`` or ``time_budget`` (seconds) runs out, whichever first.

        The budgets count this call only and are checked after every step.
        After every epoch, and where training stops, the trainer logs the mean
        training loss and accuracy of the steps since the previous log and, with
        ``valid_batches``, runs :meth:`evaluate` on them.

        Args:
            train_batches: an iterable of ``(src, tgt_in, tgt_out)``, iterated
                once per epoch (a list, a DataLoader, a tf.data.Dataset).
            valid_batches: batches for validation, or ``None``.
            epochs: passes over ``train_batches``.
            max_steps: most training steps, or ``None``.
            time_budget: most seconds of wall-clock time, or ``None``.
            progress: show a tqdm progress bar with the running loss and accuracy.
            checkpoint_path: where to :meth:`save` at the end, or ``None``.

        Returns:
            the history, a dict of lists with one entry per log: ``step`` (the
            trainer's step count), ``loss``, ``accuracy``, ``val_loss``,
            ``val_accuracy`` (``None`` without ``valid_batches``) and ``elapsed``
            (seconds since the start of ``fit``).
        """
        return fit_loop(self, train_batches, valid_batches, epochs, max_steps, time_budget, progress,
                        checkpoint_path)

    # ---------------------------------------------------------------- checkpoints
    def save(self, path):
        """Save a checkpoint to the file ``path``, all at once.

        The checkpoint holds the model's weights, the optimizer's and the
        schedule's state, the step count, the random number generator's state
        (so that dropout continues as without the interruption) and the
        model's ``get_config()``. It is written to a temporary file renamed to
        ``path`` at the end, so ``path`` is never half-written. Only tensors and
        plain Python values are stored: ``torch.load(path, weights_only=True)``
        reads it.
        """
        path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        checkpoint = {
            "format": CHECKPOINT_FORMAT,
            "model_class": type(self.model).__name__,
            "config": plain(self.model.get_config()),
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": None if self.schedule is None else self.schedule.state_dict(),
            "rng": {"cpu": torch.get_rng_state()},
        }
        if self.device.type == "cuda":
            checkpoint["rng"]["cuda"] = torch.cuda.get_rng_state(self.device)
        temporary = f"{path}.tmp-{os.getpid()}"
        try:
            torch.save(checkpoint, temporary)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)

    def restore(self, path):
        """Load a checkpoint written by :meth:`save`; training then continues exactly.

        The model must have the configuration of the saved one: otherwise
        ``ValueError`` names the differing values and nothing is loaded.
        """
        path = os.fspath(path)
        if os.path.isdir(path):
            raise ValueError(f"{path} is a directory; a torch checkpoint is one file "
                             "(TensorFlow checkpoints are directories)")
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
            raise ValueError(f"{path} is not a checkpoint written by Trainer.save")
        expected = {"model_class": type(self.model).__name__, **plain(self.model.get_config())}
        found = {"model_class": checkpoint["model_class"], **checkpoint["config"]}
        differences = config_differences(expected, found)
        if differences:
            raise ValueError(f"checkpoint {path} was saved from a model with another configuration "
                             "(expected: this model, found: the checkpoint): " + "; ".join(differences))
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        if self.schedule is not None and checkpoint["schedule"] is not None:
            self.schedule.load_state_dict(checkpoint["schedule"])
        self.model.load_state_dict(checkpoint["model"])
        self.step = int(checkpoint["step"])
        torch.set_rng_state(checkpoint["rng"]["cpu"])
        if "cuda" in checkpoint["rng"] and self.device.type == "cuda":
            torch.cuda.set_rng_state(checkpoint["rng"]["cuda"], self.device)
