"""Bad input to the models, the masks and the losses gives a clear error, the same in both frameworks.

Batch sizes that differ between the source and the target, token ids of the wrong rank,
a ``pad_id`` outside the vocabulary and labels outside the vocabulary are refused with a
``ValueError`` that names the argument; token ids of any integer dtype are accepted.
"""

import re

import numpy as np
import pytest
from helpers import MAX_LEN, SRC_VOCAB, TGT_VOCAB, class_args
from training_helpers import copy_batches, model_weights, tiny_trainer

SRC2 = np.array([[5, 9, 3, 0], [4, 2, 1, 7]], np.int64)  # (2, 4)
TGT3 = np.array([[1, 6, 8], [2, 7, 0], [1, 1, 3]], np.int64)  # (3, 3)
SEQ2SEQ_ATTENTIONS = [None, "bahdanau"]
SAME_BATCH = r"has batch size %d, expected %d \(that of the first input\)"


def _transformer(fw, **kwargs):
    fw.seed(0)
    return fw.make("Transformer", *class_args("Transformer"), **kwargs)


def _seq2seq(fw, attention=None, **kwargs):
    fw.seed(0)
    return fw.cp.Seq2Seq(SRC_VOCAB, TGT_VOCAB, 8, 12, attention=attention, **kwargs)


# ------------------------------------------------------------- 1. batch sizes that differ
@pytest.mark.parametrize("src_batch", [2, 1], ids=["2_vs_3", "1_vs_3"])
def test_transformer_refuses_source_and_target_batch_sizes_that_differ(fw, src_batch):
    model = _transformer(fw)
    with pytest.raises(ValueError, match="tgt_tokens " + SAME_BATCH % (3, src_batch)):
        fw.call(model, SRC2[:src_batch], TGT3)


@pytest.mark.parametrize("attention", SEQ2SEQ_ATTENTIONS)
@pytest.mark.parametrize("src_batch", [2, 1], ids=["2_vs_3", "1_vs_3"])
def test_seq2seq_refuses_source_and_target_batch_sizes_that_differ(fw, src_batch, attention):
    model = _seq2seq(fw, attention)
    with pytest.raises(ValueError, match="tgt_tokens " + SAME_BATCH % (3, src_batch)):
        fw.call(model, SRC2[:src_batch], TGT3)


# ------------------------------------------------------------------- 2. rank, pad_id, dtype
@pytest.mark.parametrize("shape", [(4,), (2, 4, 1)], ids=["1d", "3d"])
@pytest.mark.parametrize("side", ["src", "tgt"])
@pytest.mark.parametrize("model", ["Transformer", "Seq2Seq"])
def test_models_refuse_token_ids_of_the_wrong_rank(fw, model, side, shape):
    net = _transformer(fw) if model == "Transformer" else _seq2seq(fw, "bahdanau")
    bad = np.ones(shape, np.int64)
    args = (bad, SRC2) if side == "src" else (SRC2, bad)
    expected = r"token ids must have shape \(batch, length\), got " + re.escape(str(shape))
    with pytest.raises(ValueError, match=expected):
        fw.call(net, *args)


@pytest.mark.parametrize("shape", [(4,), (2, 4, 1)], ids=["1d", "3d"])
@pytest.mark.parametrize("function", ["create_padding_mask", "create_combined_mask"])
def test_masks_refuse_token_ids_of_the_wrong_rank(fw, function, shape):
    expected = r"token ids must have shape \(batch, length\), got " + re.escape(str(shape))
    with pytest.raises(ValueError, match=expected):
        getattr(fw.cp, function)(fw.tensor(np.ones(shape, np.int64)))


@pytest.mark.parametrize("pad_id", [SRC_VOCAB, -1, 1.0, True], ids=["vocab", "negative", "float", "bool"])
def test_transformer_checks_pad_id_at_construction(fw, pad_id):
    # pad_id is padding in both vocabularies: it must lie in the smaller one
    with pytest.raises(ValueError, match=r"pad_id must be an int in \[0, %d\), got %r"
                       % (min(SRC_VOCAB, TGT_VOCAB), pad_id)):
        _transformer(fw, pad_id=pad_id)


@pytest.mark.parametrize("pad_id", [SRC_VOCAB, 2.0])
def test_seq2seq_checks_pad_id_at_construction(fw, pad_id):
    with pytest.raises(ValueError, match=r"pad_id must be an int in \[0, %d\), got %r" % (SRC_VOCAB, pad_id)):
        _seq2seq(fw, pad_id=pad_id)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint16", "uint32", "int32"])
@pytest.mark.parametrize("model", ["Transformer", "Seq2Seq"])
def test_narrow_and_unsigned_token_ids_give_the_int64_logits(fw, model, dtype):
    net = _transformer(fw) if model == "Transformer" else _seq2seq(fw, "bahdanau")
    expected = fw.call(net, SRC2, TGT3[:2])
    got = fw.call(net, SRC2.astype(dtype), TGT3[:2].astype(dtype))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32"])
def test_masks_accept_narrow_and_unsigned_token_ids(fw, dtype):
    expected = fw.to_numpy(fw.cp.create_combined_mask(fw.tensor(SRC2)))
    got = fw.to_numpy(fw.cp.create_combined_mask(fw.tensor(SRC2.astype(dtype))))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32"])
def test_decoding_accepts_narrow_and_unsigned_source_ids(fw, dtype):
    model = _transformer(fw)
    expected = fw.to_numpy(fw.cp.greedy_decode(model, SRC2, max_len=3))
    np.testing.assert_array_equal(fw.to_numpy(fw.cp.greedy_decode(model, SRC2.astype(dtype), max_len=3)),
                                  expected)


# --------------------------------------------------------------------- 3. losses and metrics
LOGITS = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32)  # vocab 5


@pytest.mark.parametrize("function", ["masked_loss", "masked_accuracy"])
@pytest.mark.parametrize("bad,shown", [(5, "5"), (-3, "-3"), (7, "7")])
def test_losses_refuse_labels_outside_the_vocabulary(fw, function, bad, shown):
    labels = np.array([[1, bad, 0], [1, 2, 3]])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 5\) \(or be pad_id=0\), "
                                         r"got labels from %s to %s" % (min(bad, 1), max(bad, 3))):
        getattr(fw.cp, function)(fw.tensor(labels), fw.tensor(LOGITS))


@pytest.mark.parametrize("function", ["masked_loss", "masked_accuracy"])
def test_losses_accept_a_pad_id_outside_the_vocabulary(fw, function):
    labels = np.array([[1, -100, 4], [1, 2, 3]])  # no 0: pad_id=0 below ignores exactly the -100
    got = getattr(fw.cp, function)(fw.tensor(labels), fw.tensor(LOGITS), pad_id=-100)
    expected = getattr(fw.cp, function)(fw.tensor(np.where(labels == -100, 0, labels)), fw.tensor(LOGITS))
    assert float(fw.to_numpy(got)) == float(fw.to_numpy(expected))


def test_losses_of_an_all_pad_batch_stay_zero(fw):
    labels = np.zeros((2, 3), np.int64)
    assert float(fw.to_numpy(fw.cp.masked_loss(fw.tensor(labels), fw.tensor(LOGITS)))) == 0.0
    assert float(fw.to_numpy(fw.cp.masked_accuracy(fw.tensor(labels), fw.tensor(LOGITS)))) == 0.0


@pytest.mark.parametrize("budget", [float("nan"), float("inf"), -1.0, -1])
def test_fit_refuses_a_time_budget_that_is_not_a_finite_number_of_seconds(fw, budget):
    trainer = tiny_trainer(fw)
    with pytest.raises(ValueError, match=r"time_budget must be a number of seconds >= 0, got %s"
                       % repr(budget).replace("-", r"\-")):
        trainer.fit(copy_batches(1), time_budget=budget, progress=False)
    assert trainer.step == 0


# ------------------------------------------------------------ 1 and 4. the trainer's checks
def _batch():
    """A good copy-task batch of 3 rows, 4 positions each, no padding (VOCAB = 12, max_len 10)."""
    return copy_batches(1, batch=3, min_len=3, max_len=3)[0]


VOCAB_12 = r"token ids must lie in \[0, 12\) for vocab_size=12, "
LABELS_12 = r"labels must lie in \[0, 12\) \(or be pad_id=0\), "
BAD_BATCHES = {
    # name: (change to a good (src, tgt_in, tgt_out), error class, message)
    "tgt_in batch 3 vs 2": (lambda s, i, o: (s[:2], i, o), ValueError, "tgt_in " + SAME_BATCH % (3, 2)),
    "tgt_in batch 3 vs 1": (lambda s, i, o: (s[:1], i, o), ValueError, "tgt_in " + SAME_BATCH % (3, 1)),
    "tgt_out batch 2 vs 3": (lambda s, i, o: (s, i, o[:2]), ValueError, "tgt_out " + SAME_BATCH % (2, 3)),
    "tgt_out length": (lambda s, i, o: (s, i, o[:, :-1]), ValueError,
                       r"tgt_out has shape \(3, 3\), expected \(3, 4\) \(that of tgt_in\)"),
    "src id out of vocabulary": (lambda s, i, o: (s + 12, i, o), ValueError,
                                 VOCAB_12 + r"got ids from 14 to 2[0-3]"),
    "tgt_in id out of vocabulary": (lambda s, i, o: (s, np.where(i == 1, 40, i), o), ValueError,
                                    VOCAB_12 + r"got ids from \d+ to 40"),
    "tgt_out label out of vocabulary": (lambda s, i, o: (s, i, np.where(o == 2, 12, o)), ValueError,
                                        LABELS_12 + r"got labels from \d+ to 12"),
    "negative label": (lambda s, i, o: (s, i, np.where(o == 2, -5, o)), ValueError,
                       LABELS_12 + r"got labels from -5 to \d+"),
    "src too long": (lambda s, i, o: (np.ones((3, 11), np.int64), i, o), ValueError,
                     r"sequence length 11 exceeds max_len=10"),
    "tgt too long": (lambda s, i, o: (s, np.ones((3, 12), np.int64), np.ones((3, 12), np.int64)), ValueError,
                     r"sequence length 12 exceeds max_len=10"),
    "float ids": (lambda s, i, o: (s.astype(np.float32), i, o), TypeError,
                  r"token ids must be an integer tensor"),
    "1-D src": (lambda s, i, o: (s[0], i, o), ValueError,
                r"token ids must have shape \(batch, length\), got \(4,\)"),
}


@pytest.mark.parametrize("case", list(BAD_BATCHES))
@pytest.mark.parametrize("method", ["train_step", "evaluate"])
def test_trainer_refuses_bad_batches_with_the_same_error_in_both_frameworks(fw, method, case):
    change, error, message = BAD_BATCHES[case]
    batch = change(*_batch())
    trainer = tiny_trainer(fw)
    before = model_weights(trainer.model)
    with pytest.raises(error, match=message):
        if method == "train_step":
            trainer.train_step(*batch)
        else:
            trainer.evaluate([batch])
    assert trainer.step == 0
    after = model_weights(trainer.model)
    assert all(np.array_equal(before[k], after[k]) for k in before)  # nothing was trained


def test_trainer_still_trains_on_good_batches_of_narrow_ids(fw):
    trainer = tiny_trainer(fw)
    src, tgt_in, tgt_out = _batch()
    logs = trainer.train_step(src.astype(np.int32), tgt_in.astype(np.uint8), tgt_out.astype(np.int16))
    assert np.isfinite(logs["loss"]) and trainer.step == 1
    assert np.isfinite(trainer.evaluate([(src, tgt_in, tgt_out)])["loss"])


def test_trainer_accepts_sequences_of_max_len(fw):
    trainer = tiny_trainer(fw)
    ones = np.ones((2, 10), np.int64)
    assert np.isfinite(trainer.train_step(ones, ones, ones)["loss"])


def test_transformer_refuses_a_target_longer_than_max_len_in_both_frameworks(fw):
    model = _transformer(fw)
    with pytest.raises(ValueError, match=f"sequence length {MAX_LEN + 1} exceeds max_len={MAX_LEN}"):
        fw.call(model, SRC2, np.ones((2, MAX_LEN + 1), np.int64))
