"""A small trainer: teacher-forced steps, evaluation, ``fit`` with budgets, checkpoints.

Same names, signatures and numbers as :mod:`course_pkg.tensorflow.trainer`.
A batch is a triple ``(src, tgt_in, tgt_out)`` of token ids, as
:func:`course_pkg.torch.make_batches` yields them: teacher forcing feeds the
decoder ``tgt_in = <bos> y`` and scores its logits against ``tgt_out = y <eos>``
with :func:`~course_pkg.torch.masked_loss`.

Shapes: ``batch`` sentence pairs of ``src_len`` source and ``tgt_len`` target
positions, logits over ``vocab`` target tokens.

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

from ..common.losses import check_label_smoothing
from ..common.trainer import check_batch_shapes, check_precision, evaluation_logs, fit_loop
from .checkpoint import restore_checkpoint, save_checkpoint
from .losses import masked_accuracy, masked_loss, masked_sums
from .schedule import make_optimizer
from .tokens import check_token_ids, token_ids


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
        d_model: width for the Noam schedule (default: ``model.d_model``, unless
            ``peak_learning_rate`` is given); only used to make the default optimizer.
        warmup_steps: warm-up of the default Noam schedule.
        label_smoothing: eps of :func:`masked_loss`, in training and evaluation.
        pad_id: the padding id of the targets.
        seed: ``None`` (the default) leaves the framework's random generator
            as it is; pass ``seed=...`` to seed it (``torch.manual_seed``) for
            dropout. Seed it before building the model too, for the same
            initial weights.
        precision: ``"fp32"`` (the default), ``"bf16"`` or ``"fp16"``: the
            forward passes of training and evaluation run under
            ``torch.autocast`` in that dtype (the weights, the optimizer and the
            loss stay in float32); ``"fp16"`` adds a ``torch.amp.GradScaler``
            against gradients that underflow. A step whose scaled gradients
            overflow is skipped (the weights and the optimizer stay as they
            were, the loss scale halves): it counts in ``step`` but does not
            advance the learning-rate schedule, which follows the updates made
            (as Adam's own step count does).
        peak_learning_rate: the default Noam schedule's rate at the end of the
            warm-up, instead of the one ``d_model`` gives
            (``(d_model * warmup_steps) ** -0.5``); give at most one of the two.

    Distributed training: when ``torch.distributed`` is initialised (``torchrun``
    and :func:`course_pkg.torch.init_distributed`), the model is wrapped in
    ``DistributedDataParallel`` and every process takes its share of the rows of
    each batch (process ``r`` of ``W`` the rows ``[B*r//W, B*(r+1)//W)``): every
    process iterates over the same batches, a step on ``W`` processes is the step
    on the whole batch in one process, and the schedule, the step count and the
    checkpoints do not depend on ``W``. The loss and accuracy are summed over the
    processes; process 0 alone writes checkpoints and shows the progress bar; any
    number of processes can restore them. Without an initialised process group
    nothing of this runs.

    Attributes:
        model, optimizer, schedule, label_smoothing, pad_id, precision. Read-only:
        ``device``, where the model's weights live; ``step``, the number of
        training steps taken (saved and restored with the checkpoints);
        ``learning_rate``, that of the next step; ``loss_scale``, the fp16 loss
        scale (``None`` otherwise); ``num_replicas``, the number of processes
        that share each batch (1 without distribution); ``is_chief``, whether
        this process writes the checkpoints.
    """

    def __init__(self, model, optimizer=None, schedule=None, d_model=None, warmup_steps=4000,
                 label_smoothing=0.1, pad_id=0, seed=None, precision="fp32", peak_learning_rate=None):
        check_label_smoothing(label_smoothing)
        self.precision = check_precision(precision)
        if seed is not None:
            torch.manual_seed(seed)
        self._rank, self._world = _process_group()
        self.model = model.to(_default_device(self._world))
        if optimizer is None:
            if schedule is not None:
                raise ValueError("schedule was given without its optimizer: pass both, or neither "
                                 "to get make_optimizer's")
            if d_model is None and peak_learning_rate is None:
                d_model = getattr(model, "d_model", None)
                if d_model is None:
                    raise ValueError(f"{type(model).__name__} has no d_model attribute: pass d_model "
                                     "(the width the Noam schedule scales by), peak_learning_rate "
                                     "or an optimizer")
            optimizer, schedule = make_optimizer(self.model, d_model, warmup_steps, peak_learning_rate)
        elif d_model is not None or peak_learning_rate is not None:
            raise ValueError("d_model and peak_learning_rate set the default optimizer's schedule: "
                             "with an optimizer of your own, leave them out")
        self.optimizer, self.schedule = optimizer, schedule
        self.label_smoothing, self.pad_id = float(label_smoothing), pad_id
        self._step = 0
        self._scaler = torch.amp.GradScaler(self.device.type, enabled=precision == "fp16")
        self._forward = self.model  # the DistributedDataParallel wrapper when distributed
        if self._world:
            from torch.nn.parallel import DistributedDataParallel

            index = [self.device.index] if self.device.type == "cuda" else None
            self._forward = DistributedDataParallel(self.model, device_ids=index, output_device=None)

    @property
    def step(self):
        """The number of training steps taken, a Python int."""
        return self._step

    @property
    def device(self):
        """The ``torch.device`` of the model's first parameter, where its weights live (batches are
        moved there)."""
        return next(self.model.parameters()).device

    @property
    def learning_rate(self):
        """The learning rate of the next step, a Python float."""
        return float(self.optimizer.param_groups[0]["lr"])

    @property
    def loss_scale(self):
        """The loss scale of ``precision="fp16"`` (a Python float), ``None`` otherwise."""
        return float(self._scaler.get_scale()) if self._scaler.is_enabled() else None

    @property
    def num_replicas(self):
        """The number of replicas that share each batch (processes in PyTorch, devices in TensorFlow;
        1 without distribution)."""
        return self._world or 1

    @property
    def is_chief(self):
        """Whether this process writes checkpoints and shows progress (process 0 in PyTorch, the chief
        or worker 0 in TensorFlow, or the only one)."""
        return self._rank == 0

    def any_process(self, flag):
        """``flag`` or-ed over the processes, so that all of them stop at the same step (``fit``'s time
        budget), or learn together that a checkpoint could not be written; ``flag`` itself in one process."""
        if not self._world:  # one process
            return flag
        import torch.distributed as dist

        flag = torch.tensor([float(flag)], device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())

    def _autocast(self):
        """The ``torch.autocast`` context of ``precision`` (disabled for ``"fp32"``)."""
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)
        return torch.autocast(self.device.type, dtype=dtype, enabled=dtype is not None)

    def _tokens(self, tokens):
        tokens = token_ids(tokens)
        check_token_ids(tokens)
        return tokens.to(self.device, non_blocking=True)

    def _batch(self, src, tgt_in, tgt_out):
        """The batch on the model's device, checked: integer ``(batch, length)`` ids, one batch size,
        ``tgt_out`` shaped as ``tgt_in``. The model checks the ids and lengths, the loss the labels."""
        src, tgt_in, tgt_out = self._tokens(src), self._tokens(tgt_in), self._tokens(tgt_out)
        check_batch_shapes(src.shape, tgt_in.shape, tgt_out.shape)
        return src, tgt_in, tgt_out

    def train_step(self, src, tgt_in, tgt_out):
        """One optimizer step on one batch (dropout on).

        Returns:
            ``{"loss": float, "accuracy": float}`` of this batch, before the update.

        Raises:
            ValueError: batch sizes that differ, ``tgt_out`` not shaped as ``tgt_in``, ids
                outside the vocabularies (labels other than ``pad_id`` included), sequences
                longer than the model's ``max_len``; nothing is updated then.

        Shape:
            src (batch, src_len), tgt_in (batch, tgt_len), tgt_out (batch, tgt_len) int.
        """
        src, tgt_in, tgt_out = self._batch(src, tgt_in, tgt_out)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        if self._world:
            loss, accuracy = self._distributed_backward(src, tgt_in, tgt_out)
        else:
            with self._autocast():
                logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
            logits = logits.float()  # the loss in float32 (a no-op in fp32)
            loss = masked_loss(tgt_out, logits, self.pad_id, self.label_smoothing)
            self._scaler.scale(loss).backward()  # scale and step are plain backward and step unless fp16
            accuracy = masked_accuracy(tgt_out, logits.detach(), self.pad_id)
        scale = self._scaler.get_scale() if self._scaler.is_enabled() else None
        self._scaler.step(self.optimizer)  # skipped when fp16 gradients overflowed
        self._scaler.update()
        skipped = scale is not None and self._scaler.get_scale() < scale  # the scale halves on a skip
        if self.schedule is not None and not skipped:
            self.schedule.step()  # the schedule follows the updates made
        self._step += 1
        return {"loss": float(loss.detach()), "accuracy": float(accuracy)}

    def _distributed_backward(self, src, tgt_in, tgt_out):
        """Forward and backward of this process's rows; the loss and accuracy of the whole batch.

        Each process scales its summed loss by ``W / N`` (``N`` counted labels of
        the whole batch, which every process holds): DDP averages the gradients
        over the ``W`` processes, which gives the gradient of the mean loss over
        the ``N`` labels, the single-process one. A process whose share is empty
        (a last batch smaller than ``W``) runs one row with weight 0, since
        every process must take part in the gradients' all-reduce.
        """
        import torch.distributed as dist

        count = (tgt_out != self.pad_id).sum().clamp(min=1)  # counted labels of the whole batch
        rows, weight = _rows(src.shape[0], self._rank, self._world)
        src, tgt_in, tgt_out = src[rows], tgt_in[rows], tgt_out[rows]
        with self._autocast():
            logits = self._forward(src, tgt_in)  # (rows, tgt_len, vocab)
        loss_sum, hits, counted = masked_sums(tgt_out, logits.float(), self.pad_id, self.label_smoothing)
        self._scaler.scale(loss_sum * (weight * self._world / count)).backward()
        sums = torch.stack([loss_sum.detach(), hits.float(), counted.float()]) * weight
        dist.all_reduce(sums)  # summed over the processes
        return sums[0] / sums[2].clamp(min=1), sums[1] / sums[2].clamp(min=1)

    def evaluate(self, batches):
        """Loss and accuracy over all the non-pad target tokens of ``batches`` (dropout off).

        Every token weighs the same, whatever the size of its batch. The loss
        is label-smoothed like the training loss, so the two compare.

        Returns:
            ``{"loss": float, "accuracy": float}``.

        Raises:
            ValueError: for a bad batch, as :meth:`train_step`.
        """
        was_training = self.model.training
        self.model.eval()
        totals, seen = [0.0, 0.0, 0.0], 0  # summed loss, correct predictions, counted tokens
        try:
            with torch.no_grad():
                for src, tgt_in, tgt_out in batches:
                    src, tgt_in, tgt_out = self._batch(src, tgt_in, tgt_out)
                    if self._world:  # this process's rows; the sums are all-reduced at the end
                        rows, weight = _rows(src.shape[0], self._rank, self._world)
                        if not weight:
                            seen += 1
                            continue
                        src, tgt_in, tgt_out = src[rows], tgt_in[rows], tgt_out[rows]
                    with self._autocast():
                        logits = self.model(src, tgt_in)  # (batch, tgt_len, vocab)
                    sums = masked_sums(tgt_out, logits.float(), self.pad_id, self.label_smoothing)
                    totals, seen = [t + s for t, s in zip(totals, sums)], seen + 1
        finally:
            self.model.train(was_training)
        if self._world and seen:
            import torch.distributed as dist

            totals = torch.stack([torch.as_tensor(t, dtype=torch.float32, device=self.device)
                                  for t in totals])
            dist.all_reduce(totals)
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
        schedule's state, the fp16 loss scaler's state, the step count, the random number generator's state
        (so that dropout continues as without the interruption) and the
        model's ``get_config()``. It is written to a temporary file beside
        ``path``, synced to disk and renamed to ``path`` at the end: an
        interrupted save (an error, ``KeyboardInterrupt``) leaves the previous
        checkpoint as it was, and a reader finds the old checkpoint or the new
        one, never half of one. Only tensors and plain Python values are
        stored: ``torch.load(path, weights_only=True)`` reads it. Under
        distribution process 0 alone writes it (to a file system that every
        process sees) and the others wait for it.

        Raises:
            ValueError: ``path`` is a directory.
            OSError: ``path``'s folder cannot be created or written (the
                message names ``path``).
        """
        save_checkpoint(self, path, self._step, self._scaler)

    def restore(self, path):
        """Load a checkpoint written by :meth:`save`; training then continues exactly.

        The model must have the configuration of the saved one: otherwise
        ``ValueError`` names the differing values and nothing is loaded.
        A checkpoint saved in another precision (``"fp32"``, ``"bf16"``,
        ``"fp16"``) resumes too: the weights are float32 in each, so the
        weights, the optimizer's moments and the step count carry over; an
        fp16 loss scale is dropped where the trainer uses none, and starts at
        its initial value where the checkpoint had none.
        Everything is read and checked before anything is loaded (the
        configuration, the names, shapes and dtypes of the weights and of the
        optimizer's state, the random state), so a restore that fails leaves the
        model, the optimizer, the schedule, the step count and the random state as they were.

        Raises:
            FileNotFoundError: there is no file ``path``.
            ValueError: ``path`` is a directory; or it is empty, truncated,
                damaged or not written by :meth:`save`; or it was saved from
                another configuration. The message names ``path``.
        """
        self._step = restore_checkpoint(self, path, self._scaler)


def _process_group():
    """``(rank, world size)`` of the initialised ``torch.distributed`` process group, else ``(0, 0)``."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 0


def _default_device(world):
    """The GPU of this process (``LOCAL_RANK`` of torchrun under distribution) when there is one."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    if not world:
        return torch.device("cuda")
    index = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _rows(batch, replica, replicas):
    """This replica's rows of a batch of ``batch`` rows (a slice), and their weight: 0.0 for an empty
    share (a last batch smaller than the replicas), which runs one stand-in row that counts for nothing."""
    start, stop = batch * replica // replicas, batch * (replica + 1) // replicas
    if stop > start:
        return slice(start, stop), 1.0
    return slice(0, 1), 0.0
