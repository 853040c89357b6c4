"""Bad input gives a clear error that says what was expected."""

import numpy as np
import pytest
from helpers import D_MODEL, MAX_LEN, NUM_HEADS, SRC_VOCAB, TGT_VOCAB, class_args

# class taking token ids -> (vocabulary size of its token input, call arguments around those ids)
TOKEN_INPUTS = {
    "PositionalEmbedding": (SRC_VOCAB, lambda toks: (toks,)),
    "Encoder": (SRC_VOCAB, lambda toks: (toks,)),
    "Decoder": (TGT_VOCAB, lambda toks: (toks, np.zeros((np.shape(toks)[0], 3, D_MODEL), np.float32))),
    "Transformer": (SRC_VOCAB, lambda toks: (toks, np.array([[1, 2]], dtype=np.int64))),
}
TOKEN_CLASSES = list(TOKEN_INPUTS)
INTEGER_IDS = r"token ids must be an integer tensor \(int32 or int64\), got dtype (torch\.)?float32"
MASK_NOT_BROADCASTABLE = r"mask of shape \(.*\) does not broadcast to the attention logits of shape"


def _call_with_tokens(fw, name, layer, toks):
    return fw.call(layer, *TOKEN_INPUTS[name][1](toks))


@pytest.mark.parametrize("name", TOKEN_CLASSES)
def test_float_token_ids_type_error(fw, name):
    layer = fw.make(name, *class_args(name))
    with pytest.raises(TypeError, match=INTEGER_IDS):
        _call_with_tokens(fw, name, layer, np.array([[1.0, 2.0, 3.0]], np.float32))


def test_float_target_ids_type_error(fw):
    model = fw.make("Transformer", *class_args("Transformer"))
    with pytest.raises(TypeError, match=INTEGER_IDS):
        fw.call(model, np.array([[1, 2]]), np.array([[1.0, 2.0]], np.float32))


@pytest.mark.parametrize("name", TOKEN_CLASSES)
def test_token_id_too_large_value_error(fw, name):
    layer = fw.make(name, *class_args(name))
    vocab = TOKEN_INPUTS[name][0]
    with pytest.raises(ValueError, match=rf"token ids must lie in \[0, {vocab}\) for vocab_size={vocab}"):
        _call_with_tokens(fw, name, layer, np.array([[1, vocab, 3]]))


def test_target_id_too_large_value_error(fw):
    model = fw.make("Transformer", *class_args("Transformer"))
    expected = (rf"token ids must lie in \[0, {TGT_VOCAB}\) for vocab_size={TGT_VOCAB}, "
                rf"got ids from 1 to {TGT_VOCAB + 5}")
    with pytest.raises(ValueError, match=expected):
        fw.call(model, np.array([[1, 2]]), np.array([[1, TGT_VOCAB + 5]]))


@pytest.mark.parametrize("name", TOKEN_CLASSES)
def test_negative_token_id_value_error(fw, name):
    layer = fw.make(name, *class_args(name))
    vocab = TOKEN_INPUTS[name][0]
    with pytest.raises(ValueError, match=rf"token ids must lie in \[0, {vocab}\) .*got ids from -1 to 3"):
        _call_with_tokens(fw, name, layer, np.array([[1, -1, 3]]))


@pytest.mark.parametrize("name", TOKEN_CLASSES)
def test_sequence_too_long_value_error(fw, name):
    layer = fw.make(name, *class_args(name))
    with pytest.raises(ValueError, match=f"sequence length {MAX_LEN + 1} exceeds max_len={MAX_LEN}"):
        _call_with_tokens(fw, name, layer, np.ones((1, MAX_LEN + 1), np.int64))


def test_target_too_long_value_error(fw):
    model = fw.make("Transformer", *class_args("Transformer"))
    with pytest.raises(ValueError, match=f"sequence length {MAX_LEN + 3} exceeds max_len={MAX_LEN}"):
        fw.call(model, np.array([[1, 2]]), np.ones((1, MAX_LEN + 3), np.int64))


def test_sequence_of_max_len_is_accepted(fw):
    layer = fw.make("Encoder", *class_args("Encoder"))
    out = fw.call(layer, np.ones((1, MAX_LEN), np.int64))
    assert out.shape == (1, MAX_LEN, D_MODEL)


@pytest.mark.parametrize("d_model,num_heads", [(10, 3), (16, 5)])
@pytest.mark.parametrize("name", ["MultiHeadAttention", "EncoderLayer", "DecoderLayer",
                                  "Encoder", "Transformer"])
def test_heads_must_divide_d_model(fw, name, d_model, num_heads):
    args = {
        "MultiHeadAttention": (d_model, num_heads),
        "EncoderLayer": (d_model, num_heads, 8),
        "DecoderLayer": (d_model, num_heads, 8),
        "Encoder": (1, d_model, num_heads, 8, 10, 6),
        "Transformer": (1, d_model, num_heads, 8, 10, 10, 6),
    }[name]
    with pytest.raises(ValueError, match=f"d_model={d_model} is not divisible by num_heads={num_heads}"):
        fw.make(name, *args)


def test_sdpa_mask_not_broadcastable(fw):
    q = np.zeros((2, 3, 4), np.float32)
    k = np.zeros((2, 5, 4), np.float32)
    for bad in (np.zeros((1, 1, 4), np.float32), np.zeros((3, 3, 5), np.float32),
                np.zeros((2, 5, 3), np.float32)):
        with pytest.raises(ValueError, match=MASK_NOT_BROADCASTABLE):
            fw.cp.scaled_dot_product_attention(fw.tensor(q), fw.tensor(k), fw.tensor(k),
                                               fw.tensor(bad))


def test_mha_mask_not_broadcastable(fw):
    mha = fw.make("MultiHeadAttention", D_MODEL, NUM_HEADS)
    x = np.zeros((2, 5, D_MODEL), np.float32)
    with pytest.raises(ValueError, match=MASK_NOT_BROADCASTABLE):
        fw.call(mha, x, x, x, mask=np.zeros((2, 1, 1, 4), np.float32))
    with pytest.raises(ValueError, match=MASK_NOT_BROADCASTABLE):
        fw.call(mha, x, x, x, mask=np.zeros((3, 1, 5, 5), np.float32))


def test_encoder_layer_mask_not_broadcastable(fw):
    layer = fw.make("EncoderLayer", *class_args("EncoderLayer"))
    x = np.zeros((2, 5, D_MODEL), np.float32)
    with pytest.raises(ValueError, match=MASK_NOT_BROADCASTABLE):
        fw.call(layer, x, mask=np.zeros((2, 1, 1, 6), np.float32))


def test_set_weights_rejects_a_transposed_kernel(fw, interop):
    layer = fw.make("FeedForward", D_MODEL, 24)
    w = interop.get_weights(layer)
    w["w1.kernel"] = np.zeros((24, D_MODEL), np.float32)  # transposed layout
    expected = rf"w1\.kernel: expected shape \({D_MODEL}, 24\), got \(24, {D_MODEL}\)"
    with pytest.raises(ValueError, match=expected):
        interop.set_weights(layer, w)


@pytest.mark.parametrize("bool_mask", [True, False])
def test_boolean_mask_refused_with_pointer_to_converters(fw, bool_mask):
    """A bool mask's polarity differs between libraries: the course refuses to guess."""
    q = fw.tensor(np.ones((1, 2, 4), np.float32))
    mask = fw.tensor(np.array([[False, bool_mask]]))
    with pytest.raises(TypeError, match="from_blocked_mask"):
        fw.cp.scaled_dot_product_attention(q, q, q, mask)
    converted = fw.cp.from_blocked_mask(mask)  # the documented way in
    _, weights = fw.cp.scaled_dot_product_attention(q, q, q, converted)
    np.testing.assert_array_equal(fw.to_numpy(weights)[0, :, 1], 0.0 if bool_mask else 0.5)


def test_token_ids_as_arrays(fw):
    """Both frameworks take NumPy token ids, not only their own tensors (torch: lists too)."""
    fw.seed(0)
    model = fw.make("Transformer", *class_args("Transformer"))
    src, tgt = np.array([[5, 9, 3, 0]]), np.array([[1, 6, 2]])
    expected = fw.call(model, fw.tensor(src), fw.tensor(tgt))
    if fw.name == "torch":
        model.eval()
        np.testing.assert_allclose(fw.to_numpy(model(src.tolist(), tgt.tolist())), expected, atol=1e-6)
        got = model(src, tgt)
    else:
        got = model(src, tgt, training=False)
    np.testing.assert_allclose(fw.to_numpy(got), expected, atol=1e-6)
