"""Course layers vs the frameworks' native implementations.

Weights are ported by hand here (from the canonical Keras-layout dict of
``interop.get_weights``), masks are converted with the course converters.
"""

import numpy as np
import pytest
from helpers import D_MODEL, DFF, NUM_HEADS, PARITY_ATOL, random_params

DEPTH = D_MODEL // NUM_HEADS
# batch 3 != NUM_HEADS: the (batch * heads, ...) masks torch wants are laid out batch-major
SRC = np.array([[5, 9, 3, 7, 0, 0], [4, 12, 1, 0, 8, 2], [6, 2, 0, 0, 0, 0]])
TGT = np.array([[1, 6, 8, 3, 0], [2, 5, 7, 11, 4], [3, 0, 9, 0, 0]])
BATCH = len(SRC)


@pytest.fixture
def no_torch_fastpath():
    import torch

    old = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(old)


def _sub(p, prefix):
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def _port_torch_mha(native, p):
    import torch

    with torch.no_grad():
        native.in_proj_weight.copy_(torch.from_numpy(np.concatenate(
            [p["wq.kernel"].T, p["wk.kernel"].T, p["wv.kernel"].T])))
        native.in_proj_bias.copy_(torch.from_numpy(np.concatenate(
            [p["wq.bias"], p["wk.bias"], p["wv.bias"]])))
        native.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(p["wo.kernel"].T)))
        native.out_proj.bias.copy_(torch.from_numpy(p["wo.bias"]))


def _port_torch_linear(lin, p, name):
    import torch

    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(p[f"{name}.kernel"].T)))
        lin.bias.copy_(torch.from_numpy(p[f"{name}.bias"]))


def _port_torch_norm(norm, p, name):
    import torch

    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(p[f"{name}.gamma"]))
        norm.bias.copy_(torch.from_numpy(p[f"{name}.beta"]))


def _torch_attn_mask(fw, course_mask, tq, tk):
    """Course float mask -> (batch*heads, Tq, Tk) bool, True = blocked."""
    blocked = fw.to_numpy(fw.cp.to_blocked_mask(course_mask))
    b = blocked.shape[0]
    return np.ascontiguousarray(
        np.broadcast_to(blocked, (b, NUM_HEADS, tq, tk)).reshape(b * NUM_HEADS, tq, tk))


def _setup(fw, interop, name, *args, seed=0):
    layer = fw.make(name, *args)
    p = random_params(layer, seed=seed)
    interop.set_weights(layer, p)
    return layer, p


@pytest.mark.parametrize("mask_kind", ["none", "padding", "combined"])
def test_mha_vs_torch_multihead_attention(fw, interop, mask_kind, record_error):
    import torch

    layer, p = _setup(fw, interop, "MultiHeadAttention", D_MODEL, NUM_HEADS)
    rng = np.random.default_rng(1)
    t = TGT.shape[1]
    x = rng.normal(size=(BATCH, t, D_MODEL)).astype(np.float32)
    mask = None
    if mask_kind == "padding":
        mask = fw.cp.create_padding_mask(fw.tensor(TGT))
    elif mask_kind == "combined":
        mask = fw.cp.create_combined_mask(fw.tensor(TGT))
    out, w = fw.call(layer, x, x, x, mask=mask)

    native = torch.nn.MultiheadAttention(D_MODEL, NUM_HEADS, batch_first=True).eval()
    _port_torch_mha(native, p)
    attn_mask = None if mask is None else torch.from_numpy(_torch_attn_mask(fw, mask, t, t))
    xt = torch.from_numpy(x)
    with torch.no_grad():
        n_out, n_w = native(xt, xt, xt, attn_mask=attn_mask, average_attn_weights=False)
    e1 = record_error(f"MHA[{mask_kind}] {fw.name} vs torch.nn.MultiheadAttention",
                      max(np.abs(out - n_out.numpy()).max(), np.abs(w - n_w.numpy()).max()))
    assert e1 <= PARITY_ATOL


def test_mha_cross_attention_vs_torch_key_padding(fw, interop, record_error):
    import torch

    layer, p = _setup(fw, interop, "MultiHeadAttention", D_MODEL, NUM_HEADS, seed=2)
    rng = np.random.default_rng(2)
    q = rng.normal(size=(BATCH, TGT.shape[1], D_MODEL)).astype(np.float32)
    kv = rng.normal(size=(BATCH, SRC.shape[1], D_MODEL)).astype(np.float32)
    mask = fw.cp.create_padding_mask(fw.tensor(SRC))
    out, w = fw.call(layer, q, kv, kv, mask=mask)
    kpm = fw.to_numpy(fw.cp.to_blocked_mask(mask)).reshape(BATCH, -1)
    native = torch.nn.MultiheadAttention(D_MODEL, NUM_HEADS, batch_first=True).eval()
    _port_torch_mha(native, p)
    with torch.no_grad():
        n_out, n_w = native(torch.from_numpy(q), torch.from_numpy(kv), torch.from_numpy(kv),
                            key_padding_mask=torch.from_numpy(kpm), average_attn_weights=False)
    err = record_error(f"MHA cross {fw.name} vs torch key_padding_mask",
                       max(np.abs(out - n_out.numpy()).max(), np.abs(w - n_w.numpy()).max()))
    assert err <= PARITY_ATOL


@pytest.mark.parametrize("mask_kind", ["none", "padding", "combined"])
def test_mha_vs_keras_multi_head_attention(fw, interop, mask_kind, record_error):
    import keras

    layer, p = _setup(fw, interop, "MultiHeadAttention", D_MODEL, NUM_HEADS, seed=3)
    rng = np.random.default_rng(3)
    t = TGT.shape[1]
    q = rng.normal(size=(BATCH, t, D_MODEL)).astype(np.float32)
    kv = q if mask_kind == "combined" else rng.normal(size=(BATCH, t, D_MODEL)).astype(np.float32)
    mask = None
    if mask_kind == "padding":
        mask = fw.cp.create_padding_mask(fw.tensor(TGT))
    elif mask_kind == "combined":
        mask = fw.cp.create_combined_mask(fw.tensor(TGT))
    out, w = fw.call(layer, q, kv, kv, mask=mask)

    native = keras.layers.MultiHeadAttention(num_heads=NUM_HEADS, key_dim=DEPTH)
    native(q, kv, kv)  # build
    for nd, cd in [(native._query_dense, "wq"), (native._key_dense, "wk"),
                   (native._value_dense, "wv")]:
        nd.kernel.assign(p[f"{cd}.kernel"].reshape(D_MODEL, NUM_HEADS, DEPTH))
        nd.bias.assign(p[f"{cd}.bias"].reshape(NUM_HEADS, DEPTH))
    native._output_dense.kernel.assign(p["wo.kernel"].reshape(NUM_HEADS, DEPTH, D_MODEL))
    native._output_dense.bias.assign(p["wo.bias"])
    attention_mask = None
    if mask is not None:
        attend = fw.to_numpy(fw.cp.to_attend_mask(mask))[:, 0]
        attention_mask = np.broadcast_to(attend, (BATCH, t, t))
    n_out, n_w = native(q, kv, kv, attention_mask=attention_mask, return_attention_scores=True)
    err = record_error(f"MHA[{mask_kind}] {fw.name} vs keras.layers.MultiHeadAttention",
                       max(np.abs(out - np.asarray(n_out)).max(), np.abs(w - np.asarray(n_w)).max()))
    assert err <= PARITY_ATOL


@pytest.mark.parametrize("mask_kind", ["key_padding", "combined"])
def test_encoder_layer_vs_torch(fw, interop, mask_kind, no_torch_fastpath, record_error):
    import torch

    layer, p = _setup(fw, interop, "EncoderLayer", D_MODEL, NUM_HEADS, DFF, seed=4)
    toks = SRC if mask_kind == "key_padding" else TGT
    t = toks.shape[1]
    x = np.random.default_rng(4).normal(size=(BATCH, t, D_MODEL)).astype(np.float32)
    if mask_kind == "key_padding":
        mask = fw.cp.create_padding_mask(fw.tensor(toks))
    else:
        mask = fw.cp.create_combined_mask(fw.tensor(toks))
    out = fw.call(layer, x, mask=mask)

    native = torch.nn.TransformerEncoderLayer(
        D_MODEL, NUM_HEADS, dim_feedforward=DFF, dropout=0.0, activation="relu",
        layer_norm_eps=1e-6, batch_first=True, norm_first=False).eval()
    _port_torch_mha(native.self_attn, _sub(p, "self_attn."))
    _port_torch_linear(native.linear1, p, "ffn.w1")
    _port_torch_linear(native.linear2, p, "ffn.w2")
    _port_torch_norm(native.norm1, p, "norm1")
    _port_torch_norm(native.norm2, p, "norm2")
    with torch.no_grad():
        if mask_kind == "key_padding":
            kpm = fw.to_numpy(fw.cp.to_blocked_mask(mask)).reshape(BATCH, t)
            n_out = native(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(kpm))
        else:
            n_out = native(torch.from_numpy(x),
                           src_mask=torch.from_numpy(_torch_attn_mask(fw, mask, t, t)))
    err = record_error(f"EncoderLayer[{mask_kind}] {fw.name} vs nn.TransformerEncoderLayer",
                       np.abs(out - n_out.numpy()).max())
    assert err <= PARITY_ATOL


def test_decoder_layer_vs_torch(fw, interop, no_torch_fastpath, record_error):
    import torch

    layer, p = _setup(fw, interop, "DecoderLayer", D_MODEL, NUM_HEADS, DFF, seed=5)
    rng = np.random.default_rng(5)
    t, s = TGT.shape[1], SRC.shape[1]
    x = rng.normal(size=(BATCH, t, D_MODEL)).astype(np.float32)
    enc = rng.normal(size=(BATCH, s, D_MODEL)).astype(np.float32)
    la = fw.cp.create_combined_mask(fw.tensor(TGT))
    pad = fw.cp.create_padding_mask(fw.tensor(SRC))
    out = fw.call(layer, x, enc, look_ahead_mask=la, padding_mask=pad)

    native = torch.nn.TransformerDecoderLayer(
        D_MODEL, NUM_HEADS, dim_feedforward=DFF, dropout=0.0, activation="relu",
        layer_norm_eps=1e-6, batch_first=True, norm_first=False).eval()
    _port_torch_mha(native.self_attn, _sub(p, "self_attn."))
    _port_torch_mha(native.multihead_attn, _sub(p, "cross_attn."))
    _port_torch_linear(native.linear1, p, "ffn.w1")
    _port_torch_linear(native.linear2, p, "ffn.w2")
    for n in ("norm1", "norm2", "norm3"):
        _port_torch_norm(getattr(native, n), p, n)
    mkpm = fw.to_numpy(fw.cp.to_blocked_mask(pad)).reshape(BATCH, s)
    with torch.no_grad():
        n_out = native(torch.from_numpy(x), torch.from_numpy(enc),
                       tgt_mask=torch.from_numpy(_torch_attn_mask(fw, la, t, t)),
                       memory_key_padding_mask=torch.from_numpy(mkpm))
    err = record_error(f"DecoderLayer {fw.name} vs nn.TransformerDecoderLayer",
                       np.abs(out - n_out.numpy()).max())
    assert err <= PARITY_ATOL
