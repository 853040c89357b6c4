"""Training batches in both frameworks: course_pkg.{tensorflow,torch}.data.make_batches.

The ``fw`` fixture (conftest.py) runs each test for TensorFlow and PyTorch;
both must give exactly the batches of the NumPy ``course_pkg.data.make_batches``.
"""

import importlib

import numpy as np
import pytest

from course_pkg import data as D


@pytest.fixture(scope="module")
def setup():
    corpus = D.make_number_corpus(size=1000, seed=5)
    src_vocab = D.Vocab.build([s for s, _ in corpus.train], D.Tokenizer("fr"))
    tgt_vocab = D.Vocab.build([t for _, t in corpus.train], D.Tokenizer("en"))
    return corpus.train, src_vocab, tgt_vocab


def make(fw, *args, **kwargs):
    return importlib.import_module(f"course_pkg.{fw.name}.data").make_batches(*args, **kwargs)


def numpy_epochs(batches, fw, epochs=1):
    return [[tuple(fw.to_numpy(t) for t in batch) for batch in batches] for _ in range(epochs)]


def assert_same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype == b.dtype == np.int64
            np.testing.assert_array_equal(a, b)


def test_loader_type_length_dtype_and_batch_shapes(fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    loader = make(fw, pairs, src_vocab, tgt_vocab, batch_size=32, shuffle=True, seed=0, max_len=10)
    if fw.name == "torch":
        assert isinstance(loader, fw.torch.utils.data.DataLoader)
    else:
        assert isinstance(loader, fw.tf.data.Dataset)
    assert len(loader) == 25  # 800 training pairs / 32
    (epoch,) = numpy_epochs(loader, fw)
    assert len(epoch) == 25
    for src, tgt_in, tgt_out in epoch:
        assert src.dtype == tgt_in.dtype == tgt_out.dtype == np.int64
        assert src.shape[0] == tgt_in.shape[0] == tgt_out.shape[0] == 32
        assert tgt_in.shape == tgt_out.shape
        assert src.shape[1] <= 10 and tgt_in.shape[1] <= 10
        # padded per batch: the last column holds a real token somewhere, pad is 0
        assert (src[:, -1] != 0).any() and (tgt_out[:, -1] != 0).any()
        assert (tgt_in[:, 0] == D.BOS_ID).all()
        assert ((src == D.EOS_ID).sum(axis=1) == 1).all()
        assert ((tgt_out == D.EOS_ID).sum(axis=1) == 1).all()


def test_same_batches_as_numpy_over_two_epochs(fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    args = (pairs, src_vocab, tgt_vocab, 48, True, 7, 12)
    got = numpy_epochs(make(fw, *args), fw, epochs=2)
    reference = D.make_batches(*args)
    want = [list(reference) for _ in range(2)]  # each pass is the next epoch
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    # a new shuffle every epoch
    assert not np.array_equal(got[0][0][0][:, :2], got[1][0][0][:, :2])


def test_batches_are_deterministic_per_seed(fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    a = numpy_epochs(make(fw, pairs, src_vocab, tgt_vocab, 64, True, 1), fw)[0]
    b = numpy_epochs(make(fw, pairs, src_vocab, tgt_vocab, 64, True, 1), fw)[0]
    c = numpy_epochs(make(fw, pairs, src_vocab, tgt_vocab, 64, True, 2), fw)[0]
    assert_same(a, b)
    assert not np.array_equal(a[0][0][:, :2], c[0][0][:, :2])


def test_unshuffled_arrays_keep_their_order(fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    arrays = D.encode_pairs(pairs[:10], src_vocab, tgt_vocab)
    batches = numpy_epochs(make(fw, arrays, batch_size=4), fw)[0]
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]  # last batch smaller
    src, _, tgt_out = batches[0]
    np.testing.assert_array_equal(src, arrays[0][:4, :src.shape[1]])
    assert tgt_vocab.decode(tgt_out[1]) == pairs[1][1]
    assert src_vocab.decode(src[1]) == pairs[1][0]


def test_empty_too_long_or_unencodable_input_raises_value_error(fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    with pytest.raises(ValueError, match="corpus is empty"):
        make(fw, [], src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match=r"has a (source|target) of length \d+ .*max_len=3"):
        make(fw, pairs, src_vocab, tgt_vocab, max_len=3)
    arrays = D.encode_pairs(pairs, src_vocab, tgt_vocab)
    with pytest.raises(ValueError, match=r"src holds a sequence of length \d+, more than max_len=3"):
        make(fw, arrays, max_len=3)
    with pytest.raises(ValueError, match="needs src_vocab and tgt_vocab"):
        make(fw, pairs)


def test_tensorflow_and_torch_give_identical_batches(tf_fw, torch_fw, setup):
    pairs, src_vocab, tgt_vocab = setup
    args = (pairs, src_vocab, tgt_vocab, 100, True, 3, 12)
    tf_batches = numpy_epochs(make(tf_fw, *args), tf_fw, epochs=2)
    pt_batches = numpy_epochs(make(torch_fw, *args), torch_fw, epochs=2)
    for e in range(2):
        assert_same(tf_batches[e], pt_batches[e])
