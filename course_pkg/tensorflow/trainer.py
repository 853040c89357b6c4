"""A small trainer: teacher-forced steps, evaluation, ``fit`` with budgets, checkpoints.

Same names, signatures and numbers as :mod:`course_pkg.torch.trainer`.
A batch is a triple ``(src, tgt_in, tgt_out)`` of token ids, as
:func:`course_pkg.tensorflow.make_batches` yields them: teacher forcing feeds the
decoder ``tgt_in = <bos> y`` and scores its logits against ``tgt_out = y <eos>``
with :func:`~course_pkg.tensorflow.masked_loss`.

Shapes: ``batch`` sentence pairs of ``src_len`` source and ``tgt_len`` target
positions, logits over ``vocab`` target tokens.

Example::

    from course_pkg.tensorflow import Trainer, Transformer

    model = Transformer(2, 128, 4, 512, len(src_vocab), len(tgt_vocab), 64)
    trainer = Trainer(model)   # Adam + Noam schedule of the paper, label smoothing 0.1
    history = trainer.fit(train, valid, epochs=10, time_budget=600,
                          checkpoint_path="transformer_ckpt")
    trainer.restore("transformer_ckpt")   # later, into Trainer(Transformer(same arguments))
"""

import keras
import tensorflow as tf

from ..common.losses import check_label_range, check_label_smoothing
from ..common.tokens import check_length, check_token_range
from ..common.trainer import check_batch_shapes, check_precision, evaluation_logs, fit_loop
from .checkpoint import POLICIES, restore_checkpoint, save_checkpoint
from .losses import masked_accuracy, masked_loss, masked_sums
from .schedule import make_optimizer
from .tokens import check_token_ids, token_ids


class Trainer:
    """Teacher-forced training of a course model: steps, evaluation, ``fit``, checkpoints.

    Args:
        model: a course model called as ``model(src, tgt_in)`` -> logits, with
            ``get_config()`` (the Transformer, the RNN Seq2Seq). TensorFlow
            places it on the GPU when there is one.
        optimizer: default: the Adam of :func:`make_optimizer`.
        schedule: the ``LearningRateSchedule`` the optimizer follows (default:
            :func:`make_optimizer`'s); kept for reference only, since a Keras
            optimizer evaluates its schedule by itself.
        d_model: width for the Noam schedule (default: ``model.d_model``, unless
            ``peak_learning_rate`` is given); only used to make the default optimizer.
        warmup_steps: warm-up of the default Noam schedule.
        label_smoothing: eps of :func:`masked_loss`, in training and evaluation.
        pad_id: the padding id of the targets.
        seed: ``None`` (the default) leaves the framework's random generator
            as it is; pass ``seed=...`` to seed it (``keras.utils.set_random_seed``).
            Keras fixes dropout's random streams when it builds the model: seed
            before building it, for the same initial weights and dropout masks.
        precision: ``"fp32"`` (the default), ``"bf16"`` or ``"fp16"``. Keras fixes
            a layer's compute dtype when the layer is made, by its dtype policy:
            build the model with ``dtype="mixed_bfloat16"`` (``"mixed_float16"``)
            for ``"bf16"`` (``"fp16"``); the weights stay in float32 and the loss
            is computed in float32. ``"fp16"`` wraps the optimizer in a
            ``keras.optimizers.LossScaleOptimizer`` against gradients that underflow.
            A step whose scaled gradients overflow is skipped (the weights and the
            optimizer stay as they were, the loss scale halves): it counts in
            ``step`` but does not advance the learning-rate schedule, which
            follows the optimizer's ``iterations``, the updates made.
        peak_learning_rate: the default Noam schedule's rate at the end of the
            warm-up, instead of the one ``d_model`` gives
            (``(d_model * warmup_steps) ** -0.5``); give at most one of the two.

    Distributed training: a Trainer made inside ``with strategy.scope():`` of a
    ``tf.distribute`` strategy (``MirroredStrategy``, ``MultiWorkerMirroredStrategy``;
    :func:`course_pkg.tensorflow.init_distributed`), with a model built in that
    scope too, runs every training step on the strategy's replicas: replica ``r``
    of ``W`` takes the rows ``[B*r//W, B*(r+1)//W)`` of each batch, the gradients
    and the metrics are summed over the replicas, and a step on ``W`` replicas is
    the step on the whole batch on one device; the schedule, the step count and
    the checkpoints do not depend on ``W``. Evaluation runs on one device of each
    worker. The chief alone writes checkpoints and shows progress; any number of
    replicas can restore them. Outside a strategy's scope nothing of this runs.

    Attributes:
        model, optimizer, schedule, label_smoothing, pad_id, precision. Read-only:
        ``device``, where the model's weights live; ``step``, the number of
        training steps taken (saved and restored with the checkpoints);
        ``learning_rate``, that of the next step; ``loss_scale``, the fp16 loss
        scale (``None`` otherwise); ``num_replicas``, the number of replicas
        that share each batch (1 without distribution); ``is_chief``, whether
        this worker writes the checkpoints.
    """

    def __init__(self, model, optimizer=None, schedule=None, d_model=None, warmup_steps=4000,
                 label_smoothing=0.1, pad_id=0, seed=None, precision="fp32", peak_learning_rate=None):
        check_label_smoothing(label_smoothing)
        self.precision = check_precision(precision)
        policy = POLICIES[precision]
        if model.dtype_policy.name != policy:
            raise ValueError(f"precision={precision!r} needs a model built with dtype={policy!r} "
                             f"(Keras fixes a layer's dtype policy when it is made); this model's policy "
                             f"is {model.dtype_policy.name!r}")
        if seed is not None:
            keras.utils.set_random_seed(seed)
        self._strategy = tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
        if self._strategy is not None and model.variables and not isinstance(
                model.variables[0].value, tf.distribute.DistributedValues):
            raise ValueError("the Trainer is made inside a tf.distribute strategy's scope, but the model "
                             "was built outside it: build the model inside the same "
                             "`with strategy.scope():`")
        self.model = model
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
        if precision == "fp16" and not isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        self.optimizer, self.schedule = optimizer, schedule
        self.label_smoothing, self.pad_id = float(label_smoothing), pad_id
        self._step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")  # mirrored in a scope
        if not self.optimizer.built:  # its variables must exist before a restore
            self.optimizer.build(self.model.trainable_variables)
        # One graph for every batch shape: (None, None) int64, so that batches of
        # other lengths do not retrace.
        tokens = tf.TensorSpec((None, None), tf.int64)
        train_graph = self._train_graph if self._strategy is None else self._distributed_train_graph
        self._train_function = tf.function(train_graph, input_signature=[tokens] * 3)
        self._evaluate_function = tf.function(self._evaluate_graph, input_signature=[tokens] * 3)

    @property
    def step(self):
        """The number of training steps taken, a Python int."""
        return int(self._step.numpy())

    @property
    def device(self):
        """The device string of the model's first variable, where its weights live, e.g.
        ``"/job:localhost/replica:0/task:0/device:GPU:0"`` (TensorFlow places the batches itself)."""
        return self.model.variables[0].value.device

    @property
    def learning_rate(self):
        """The learning rate of the next step, a Python float."""
        return float(self.optimizer.learning_rate)

    @property
    def loss_scale(self):
        """The loss scale of ``precision="fp16"`` (a Python float), ``None`` otherwise."""
        if self.precision != "fp16":
            return None
        return float(self.optimizer.dynamic_scale.numpy())

    @property
    def num_replicas(self):
        """The number of replicas that share each batch (processes in PyTorch, devices in TensorFlow;
        1 without distribution)."""
        return 1 if self._strategy is None else int(self._strategy.num_replicas_in_sync)

    @property
    def is_chief(self):
        """Whether this process writes checkpoints and shows progress (process 0 in PyTorch, the chief
        or worker 0 in TensorFlow, or the only one)."""
        resolver = getattr(self._strategy, "cluster_resolver", None)
        task_type = getattr(resolver, "task_type", None)
        return task_type is None or task_type == "chief" or (task_type == "worker" and resolver.task_id == 0)

    def any_process(self, flag):
        """``flag`` or-ed over the processes, so that all of them stop at the same step (``fit``'s time
        budget), or learn together that a checkpoint could not be written; ``flag`` itself in one process."""
        if getattr(self._strategy, "cluster_resolver", None) is None:  # one process
            return flag
        value = self._strategy.run(lambda: tf.constant(float(flag)))  # ReduceOp has no MAX: a sum > 0
        return bool(self._strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None).numpy() > 0)

    def _tokens(self, tokens):
        tokens = token_ids(tokens)
        check_token_ids(tokens)
        return tf.cast(tokens, tf.int64)

    def _batch(self, src, tgt_in, tgt_out):
        """The batch as int64 tensors, checked: integer ``(batch, length)`` ids, one batch size,
        ``tgt_out`` shaped as ``tgt_in``, and (when executing eagerly) ids in the model's
        vocabularies, no longer than its ``max_len``, labels in the target vocabulary or ``pad_id``.

        Inside the compiled step only the static checks would run: checking here first raises the
        ``ValueError`` that PyTorch's model and loss raise, at the cost of one min and one max per
        tensor (on the host, where the batches come from).
        """
        src, tgt_in, tgt_out = self._tokens(src), self._tokens(tgt_in), self._tokens(tgt_out)
        check_batch_shapes(tuple(src.shape), tuple(tgt_in.shape), tuple(tgt_out.shape))
        if not tf.executing_eagerly():
            return src, tgt_in, tgt_out
        max_len = getattr(self.model, "max_len", None)
        target_vocab_size = getattr(self.model, "target_vocab_size", None)
        for tokens, vocab_size in ((src, getattr(self.model, "input_vocab_size", None)),
                                   (tgt_in, target_vocab_size)):
            if max_len is not None:
                check_length(tokens.shape[1], max_len)
            if vocab_size is not None and tokens.shape.num_elements():
                ids = tokens.numpy()
                check_token_range(int(ids.min()), int(ids.max()), vocab_size)
        labels = tgt_out.numpy()
        counted = labels[labels != self.pad_id]
        if target_vocab_size is not None and counted.size:
            check_label_range(int(counted.min()), int(counted.max()), target_vocab_size, self.pad_id)
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
        loss, accuracy = self._train_function(src, tgt_in, tgt_out)  # a traced tf.function
        return {"loss": float(loss), "accuracy": float(accuracy)}

    def _train_graph(self, src, tgt_in, tgt_out):
        with tf.GradientTape() as tape:
            logits = self.model(src, tgt_in, training=True)  # (batch, tgt_len, vocab)
            logits = tf.cast(logits, tf.float32)  # the loss in float32 (a no-op in fp32)
            loss = masked_loss(tgt_out, logits, self.pad_id, self.label_smoothing)
            scaled = self.optimizer.scale_loss(loss) if self.precision == "fp16" else loss
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(scaled, variables), variables))  # unscaled there
        self._step.assign_add(1)
        return loss, masked_accuracy(tgt_out, logits, self.pad_id)

    def _distributed_train_graph(self, src, tgt_in, tgt_out):
        """One step on the strategy's replicas: each takes its rows of the batch and scales its summed
        loss by ``1 / N`` (``N`` counted labels of the whole batch): the optimizer sums the gradients
        over the replicas, which gives the gradient of the mean loss over the ``N`` labels."""
        count = tf.maximum(tf.reduce_sum(tf.cast(tgt_out != self.pad_id, tf.float32)), 1.0)

        def replica_step(src, tgt_in, tgt_out):
            context = tf.distribute.get_replica_context()
            rows, weight = _rows(tf.shape(src)[0], context.replica_id_in_sync_group,
                                 context.num_replicas_in_sync)
            src, tgt_in, tgt_out = src[rows], tgt_in[rows], tgt_out[rows]
            with tf.GradientTape() as tape:
                logits = self.model(src, tgt_in, training=True)  # (rows, tgt_len, vocab)
                loss_sum, hits, counted = masked_sums(tgt_out, tf.cast(logits, tf.float32), self.pad_id,
                                                       self.label_smoothing)
                loss = loss_sum * (weight / count)
                scaled = self.optimizer.scale_loss(loss) if self.precision == "fp16" else loss
            variables = self.model.trainable_variables
            gradients = tape.gradient(scaled, variables)
            if self.precision == "fp16":  # every replica must see the same overflow, and skip alike
                share = 1.0 / context.num_replicas_in_sync  # the optimizer sums the replicas' again
                summed = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
                gradients = [_scaled(g, share) for g in summed]
            self.optimizer.apply_gradients(zip(gradients, variables))  # summed over the replicas there
            return tf.stack([loss_sum, tf.cast(hits, tf.float32), tf.cast(counted, tf.float32)]) * weight

        sums = self._strategy.run(replica_step, args=(src, tgt_in, tgt_out))
        sums = self._strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)
        self._step.assign_add(1)
        return sums[0] / tf.maximum(sums[2], 1.0), sums[1] / tf.maximum(sums[2], 1.0)

    def _evaluate_graph(self, src, tgt_in, tgt_out):
        logits = self.model(src, tgt_in, training=False)  # (batch, tgt_len, vocab)
        return masked_sums(tgt_out, tf.cast(logits, tf.float32), self.pad_id, self.label_smoothing)

    def evaluate(self, batches):
        """Loss and accuracy over all the non-pad target tokens of ``batches`` (dropout off).

        Every token weighs the same, whatever the size of its batch. The loss
        is label-smoothed like the training loss, so the two compare.

        Returns:
            ``{"loss": float, "accuracy": float}``.

        Raises:
            ValueError: for a bad batch, as :meth:`train_step`.
        """
        totals, seen = [0.0, 0.0, 0.0], 0  # summed loss, correct predictions, counted tokens
        for src, tgt_in, tgt_out in batches:
            src, tgt_in, tgt_out = self._batch(src, tgt_in, tgt_out)
            sums = self._evaluate_function(src, tgt_in, tgt_out)  # a traced tf.function
            totals, seen = [t + s for t, s in zip(totals, sums)], seen + 1
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
        """Save a checkpoint to the directory ``path``, all at once.

        The checkpoint holds the model's weights, the optimizer's state (its
        step count drives the schedule; in fp16 the loss scale), the step count, the random state of
        dropout (so that it continues as without the interruption) and the
        model's ``get_config()``. In ``path``:

        * ``config.json``, the manifest: the model's configuration, the step
          count and the name of the checkpoint version it stands for;
        * ``checkpoint-<step>-<id>.index`` and ``.data-*``, the
          ``tf.train.Checkpoint`` of each version.

        A save writes a new version beside the others, syncs it to disk and
        then replaces ``config.json`` in one rename (``os.replace``), the
        moment the new checkpoint takes over: before it, ``path`` is the
        previous checkpoint, complete; after it, the new one. An interrupted
        save (an error, ``KeyboardInterrupt``) removes what it wrote and leaves
        the previous checkpoint. The previous version's files stay until the
        next save, so that a reader that read ``config.json`` just before the
        rename still finds the files it names; older versions are removed.

        Under ``MultiWorkerMirroredStrategy`` every worker must call it (saving
        may need them all); the chief writes ``path``, the others a temporary
        directory that they remove.

        Raises:
            ValueError: ``path`` is a file.
            OSError: ``path`` cannot be created or written (the message names ``path``;
                TensorFlow's own error, a ``PermissionDeniedError`` say, is its cause).
        """
        save_checkpoint(self, path, self._step, None)  # the loss scale is the optimizer's

    def restore(self, path):
        """Load a checkpoint written by :meth:`save`; training then continues exactly.

        The model must have the configuration of the saved one: otherwise
        ``ValueError`` names the differing values and nothing is loaded.
        A checkpoint saved in another precision (``"fp32"``, ``"bf16"``,
        ``"fp16"``) resumes too: the weights are float32 in each (the
        Keras dtype policies ``float32``, ``mixed_bfloat16``, ``mixed_float16``), so the
        weights, the optimizer's moments and the step count carry over; an
        fp16 loss scale is dropped where the trainer uses none, and starts at
        its initial value where the checkpoint had none.
        Everything is read and checked before anything is loaded (the
        configuration, the names, shapes and dtypes of the weights and of the
        optimizer's state, the random state), so a restore that fails leaves the
        model, the optimizer, the schedule, the step count and the random state as they were.

        Raises:
            FileNotFoundError: there is no directory ``path``.
            ValueError: ``path`` is a file; or its files are missing, empty,
                truncated, damaged or not written by :meth:`save`; or it was
                saved from another configuration. The message names the file.
        """
        self._step.assign(restore_checkpoint(self, path, None))


def _scaled(gradient, factor):
    """``gradient * factor`` for a dense gradient or the ``IndexedSlices`` of an embedding's."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(gradient.values * factor, gradient.indices, gradient.dense_shape)
    return gradient * factor


def _rows(batch, replica, replicas):
    """This replica's rows of a batch of ``batch`` rows (a slice), and their weight: 0.0 for an empty
    share (a last batch smaller than the replicas), which runs one stand-in row that counts for nothing."""
    batch, replica = tf.cast(batch, tf.int32), tf.cast(replica, tf.int32)
    start, stop = batch * replica // replicas, batch * (replica + 1) // replicas
    empty = stop <= start
    start, stop = tf.where(empty, 0, start), tf.where(empty, 1, stop)
    return slice(start, stop), tf.where(empty, 0.0, 1.0)
