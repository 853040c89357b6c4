"""Incremental decoding (Transformer.start_decoding / decode_step) matches the full call."""

import numpy as np
import pytest
from helpers import TGT_VOCAB, class_args, random_params

# source length 5 != target length 6, so logits shaped by the wrong sequence fail
SRC = np.array([[5, 9, 3, 7, 0], [4, 12, 1, 6, 8]])
TGT = np.array([[1, 6, 8, 3, 2, 0], [2, 5, 7, 11, 4, 4]])


def _model(fw, interop):
    m = fw.make("Transformer", *class_args("Transformer"))
    interop.set_weights(m, random_params(m, seed=9))
    if fw.name == "torch":
        m.eval()
    return m


def _no_grad(fw):
    if fw.name == "torch":
        import torch
        return torch.no_grad()
    import contextlib
    return contextlib.nullcontext()


@pytest.mark.parametrize("chunks", [[1, 1, 1, 1, 1, 1], [2, 3, 1], [6]])
def test_decode_step_matches_full_forward(fw, interop, chunks):
    model = _model(fw, interop)
    full = fw.call(model, SRC, TGT)
    with _no_grad(fw):
        state = model.start_decoding(fw.tensor(SRC))
        pieces, pos = [], 0
        for n in chunks:
            logits, state = model.decode_step(fw.tensor(TGT[:, pos:pos + n]), state)
            pieces.append(fw.to_numpy(logits))
            pos += n
    inc = np.concatenate(pieces, axis=1)
    assert inc.shape == full.shape == (*TGT.shape, TGT_VOCAB)
    # the padded last target position of row 0 is blocked in both computations
    np.testing.assert_allclose(inc, full, atol=1e-5)


def test_decode_step_respects_max_len(fw, interop):
    model = _model(fw, interop)
    max_len = class_args("Transformer")[-1]
    with _no_grad(fw):
        state = model.start_decoding(fw.tensor(SRC))
        _, state = model.decode_step(fw.tensor(np.ones((2, max_len), np.int64)), state)
        with pytest.raises(ValueError, match=f"sequence length {max_len + 1} exceeds max_len={max_len}"):
            model.decode_step(fw.tensor(np.ones((2, 1), np.int64)), state)
