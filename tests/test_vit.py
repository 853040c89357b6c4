"""The Vision Transformer (chapter 9): patches, the ViT, parity with NumPy and Hugging Face.

Images are channels-last ``(batch, height, width, channels)`` in both frameworks; Hugging
Face's ViT takes ``(batch, channels, height, width)``, so its inputs are transposed here.
"""

import numpy as np
import pytest
from helpers import PARITY_ATOL, max_abs_diff, random_params

# a 3-channel 8x8 image in 2x2 patches: 16 patches + the class token = 17 tokens;
# batch 3 != heads 2 != layers 2 ... so that a swapped axis changes a shape
IMAGE, PATCH, CHANNELS, D_MODEL, HEADS, DFF, LAYERS, CLASSES = 8, 2, 3, 16, 2, 24, 2, 5
ARGS = (IMAGE, PATCH, LAYERS, D_MODEL, HEADS, DFF, CLASSES)
KW = {"num_channels": CHANNELS, "dropout": 0.0}
IMAGES = np.random.default_rng(0).normal(size=(3, IMAGE, IMAGE, CHANNELS)).astype(np.float32)


def _model(fw, pooling="cls", **kw):
    fw.seed(0)
    return fw.make("ViT", *ARGS, **{**KW, "pooling": pooling, **kw})


# ----------------------------------------------------------------------------- patches
def test_patchify_cuts_row_by_row(fw, ref):
    images = np.arange(2 * 4 * 6 * 2, dtype=np.float32).reshape(2, 4, 6, 2)  # height 4 != width 6
    layer = fw.make("PatchEmbedding", 2, 2, D_MODEL)
    got = fw.to_numpy(layer.patchify(fw.tensor(images)))
    assert got.shape == (2, 6, 8)  # (4/2)·(6/2) patches of 2·2·2 numbers
    np.testing.assert_array_equal(got, ref.patchify(images, 2))
    # the second patch of the first image: rows 0-1, columns 2-3, both channels per pixel
    np.testing.assert_array_equal(got[0, 1], images[0, 0:2, 2:4].reshape(-1))
    np.testing.assert_array_equal(got[0, 3], images[0, 2:4, 0:2].reshape(-1))  # next row of patches


@pytest.mark.parametrize("height,width,patch", [(8, 8, 2), (6, 9, 3), (4, 4, 4)])
def test_patch_embedding_by_reshape_equals_strided_convolution(fw, ref, interop, height, width, patch):
    layer = fw.make("PatchEmbedding", patch, CHANNELS, D_MODEL)
    params = random_params(layer, seed=1)
    interop.set_weights(layer, params)
    images = np.random.default_rng(2).normal(size=(2, height, width, CHANNELS)).astype(np.float32)
    by_reshape = fw.call(layer, images)
    by_conv = fw.call(layer, images, method="conv")
    assert by_reshape.shape == (2, (height // patch) * (width // patch), D_MODEL)
    assert max_abs_diff(by_reshape, by_conv) <= PARITY_ATOL
    expected = ref.patch_embedding(params, images, patch)
    assert max_abs_diff(by_reshape, expected) <= PARITY_ATOL


# ----------------------------------------------------------------------------- parity
def _assert_three_way(tf_fw, torch_fw, tf_model, pt_model, expected, pooling, label, record_error):
    """Both models' logits and attention maps on IMAGES against the reference's ``expected`` and
    against each other (<= PARITY_ATOL), with the shapes of ``pooling``'s tokens."""
    tokens = 17 if pooling == "cls" else 16
    outs = {}
    for fw, model in ((tf_fw, tf_model), (torch_fw, pt_model)):
        out = fw.call(model, IMAGES, return_attention=True)
        assert out[0].shape == (3, CLASSES)
        assert [w.shape for w in out[1]] == [(3, HEADS, tokens, tokens)] * LAYERS
        np.testing.assert_allclose(out[1][0].sum(-1), 1.0, atol=1e-5)
        outs[fw.name] = out
        assert record_error(f"{label} {fw.name} vs ref", max_abs_diff(out, expected)) <= PARITY_ATOL
    assert float(np.max(np.abs(expected[0]))) > 0.1  # not trivially small
    between = max_abs_diff(outs["tensorflow"], outs["torch"])
    assert record_error(f"{label} tf vs torch", between) <= PARITY_ATOL


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_vit_three_way_parity(pooling, tf_fw, torch_fw, interop, ref, record_error):
    tf_model, pt_model = _model(tf_fw, pooling), _model(torch_fw, pooling)
    params = random_params(tf_model, seed=3)
    assert ("class_token.embeddings" in params) == (pooling == "cls")
    interop.set_weights(tf_model, params)
    interop.set_weights(pt_model, params)
    expected = ref.vit({k: v.astype(np.float64) for k, v in params.items()}, IMAGES, PATCH, HEADS,
                       pooling=pooling)
    _assert_three_way(tf_fw, torch_fw, tf_model, pt_model, expected, pooling, f"ViT({pooling})", record_error)


@pytest.mark.parametrize("pooling,stem", [("cls", 7), ("mean", (4, 7))])
def test_vit_with_convolutional_stem_three_way_parity(pooling, stem, tf_fw, torch_fw, interop, ref,
                                                      record_error):
    tf_model = _model(tf_fw, pooling, stem_channels=stem)
    pt_model = _model(torch_fw, pooling, stem_channels=stem)
    params = random_params(tf_model, seed=9)
    # each stem kernel: a dense kernel over 3x3 windows of its input channels; the patches then have 7
    channels = (CHANNELS,) + ((stem,) if isinstance(stem, int) else stem)
    assert sorted(k for k in params if k.startswith("stem.")) == sorted(
        f"stem.{i}.{w}" for i in range(len(channels) - 1) for w in ("kernel", "bias"))
    for i in range(len(channels) - 1):
        assert params[f"stem.{i}.kernel"].shape == (9 * channels[i], channels[i + 1])
    assert params["patch_embedding.projection.kernel"].shape == (PATCH * PATCH * 7, D_MODEL)
    interop.set_weights(tf_model, params)
    interop.set_weights(pt_model, params)
    params64 = {k: v.astype(np.float64) for k, v in params.items()}
    expected = ref.vit(params64, IMAGES, PATCH, HEADS, pooling=pooling)
    _assert_three_way(tf_fw, torch_fw, tf_model, pt_model, expected, pooling, f"ViT({pooling}, stem)",
                      record_error)
    # the stem is applied: the same weights' patches cut from the raw pixels are another function
    stem_out = ref.conv_stem(params64, IMAGES)  # (3, 8, 8, 7)
    assert stem_out.shape == (3, IMAGE, IMAGE, 7)
    without_stem = {k: v for k, v in params64.items() if not k.startswith("stem.")}
    by_hand = ref.vit(without_stem, stem_out, PATCH, HEADS, pooling=pooling)
    np.testing.assert_allclose(by_hand[0], expected[0], atol=1e-12)


def test_convolutional_stem_is_a_same_size_convolution(ref):
    """The reference stem against a direct loop: pixel (r, c) of channel o sees the 3x3 window
    around (r, c), zeros outside the image, kernel rows ordered like a patch's (row, column, channel)."""
    rng = np.random.default_rng(10)
    images = rng.normal(size=(2, 5, 4, 2))
    kernel, bias = rng.normal(size=(18, 3)), rng.normal(size=3)
    got = ref.conv_stem({"stem.0.kernel": kernel, "stem.0.bias": bias}, images)
    assert got.shape == (2, 5, 4, 3)
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)))
    w = kernel.reshape(3, 3, 2, 3)
    for r, c in ((0, 0), (2, 1), (4, 3)):
        pre = np.einsum("bijk,ijko->bo", padded[:, r:r + 3, c:c + 3], w) + bias
        np.testing.assert_allclose(got[:, r, c], ref.gelu(pre), atol=1e-12)
    # two layers: the second convolves the first's output
    kernel2, bias2 = rng.normal(size=(27, 4)), rng.normal(size=4)
    two = ref.conv_stem({"stem.0.kernel": kernel, "stem.0.bias": bias, "stem.1.kernel": kernel2,
                         "stem.1.bias": bias2}, images)
    assert two.shape == (2, 5, 4, 4)
    np.testing.assert_allclose(two, ref.conv_stem({"stem.0.kernel": kernel2, "stem.0.bias": bias2}, got),
                               atol=1e-12)


def test_features_and_plain_call(fw, interop, ref):
    model = _model(fw)
    params = random_params(model, seed=4)
    interop.set_weights(model, params)
    feats = fw.to_numpy(model.features(fw.tensor(IMAGES)))
    expected, _ = ref.vit_features({k: v.astype(np.float64) for k, v in params.items()}, IMAGES, PATCH, HEADS)
    assert feats.shape == (3, 17, D_MODEL)
    assert max_abs_diff(feats, expected) <= PARITY_ATOL
    logits = fw.call(model, IMAGES)
    np.testing.assert_allclose(logits, feats[:, 0] @ params["head.kernel"] + params["head.bias"], atol=1e-5)


def test_copy_weights_across_frameworks(tf_fw, torch_fw, interop):
    tf_model, pt_model = _model(tf_fw), _model(torch_fw)
    torch_fw.seed(5)
    pt_model = torch_fw.make("ViT", *ARGS, **KW)
    interop.copy_weights(pt_model, tf_model)
    assert max_abs_diff(tf_fw.call(tf_model, IMAGES), torch_fw.call(pt_model, IMAGES)) <= PARITY_ATOL


def test_config_round_trip(fw):
    model = _model(fw, "mean", activation="gelu_tanh", layer_norm_eps=1e-12, stem_channels=4)
    config = model.get_config()
    keys = ("pooling", "activation", "layer_norm_eps", "num_channels", "stem_channels")
    assert {k: config[k] for k in keys} == {
        "pooling": "mean", "activation": "gelu_tanh", "layer_norm_eps": 1e-12, "num_channels": CHANNELS,
        "stem_channels": (4,)}  # an int is a stem of one layer
    assert _model(fw).get_config()["stem_channels"] is None
    again = type(model).from_config(config)
    assert again.get_config() == config


def test_training_mode_applies_dropout_and_trains(fw):
    fw.seed(0)
    model = fw.make("ViT", *ARGS, num_channels=CHANNELS, dropout=0.5)
    a, b = fw.call_train(model, IMAGES), fw.call(model, IMAGES)
    assert not np.allclose(a, b)  # dropout acts in training only
    np.testing.assert_allclose(fw.call(model, IMAGES), b, atol=0)  # eval is deterministic


# ----------------------------------------------------------------------------- Hugging Face
def _hf(kind, seed, **config):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.ViTConfig(
        image_size=IMAGE, patch_size=PATCH, num_channels=CHANNELS, hidden_size=D_MODEL,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=DFF, num_labels=CLASSES,
        hidden_act="gelu", layer_norm_eps=1e-12, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        **config)
    torch.manual_seed(seed)
    model = getattr(transformers, kind)(cfg).eval()
    with torch.no_grad():  # the initial weights are near zero: make every weight count
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    with torch.no_grad():
        out = model(torch.from_numpy(IMAGES.transpose(0, 3, 1, 2)))  # channels first for HF
    return model, out


@pytest.mark.parametrize("kind", ["ViTForImageClassification", "ViTModel"])
def test_vit_equals_hugging_face(fw, kind, record_error):
    hf_model, out = _hf(kind, seed=6)
    model = fw.cp.vit_from_huggingface(hf_model)
    assert model.layer_norm_eps == 1e-12 and model.activation == "gelu"
    if kind == "ViTModel":
        assert model.num_classes is None
        got, expected = fw.to_numpy(model.features(fw.tensor(IMAGES))), out.last_hidden_state.numpy()
    else:
        assert model.num_classes == CLASSES
        got, expected = fw.call(model, IMAGES), out.logits.numpy()
    assert float(np.max(np.abs(expected))) > 0.5
    assert record_error(f"{kind} {fw.name} vs Hugging Face", max_abs_diff(got, expected)) <= PARITY_ATOL


def test_hugging_face_state_dict_in_either_naming(fw, interop):
    """A state dict as the Hub's checkpoints spell it, with NumPy arrays and no q/k/v biases."""
    hf_model, out = _hf("ViTForImageClassification", seed=7, qkv_bias=False)
    old = {"attention.q_proj": "attention.attention.query", "attention.k_proj": "attention.attention.key",
           "attention.v_proj": "attention.attention.value", "attention.o_proj": "attention.output.dense",
           "mlp.fc1": "intermediate.dense", "mlp.fc2": "output.dense"}
    state = {}
    for key, value in hf_model.state_dict().items():
        key = key.replace("vit.layers.", "vit.encoder.layer.")
        for new_name, old_name in old.items():
            key = key.replace(new_name, old_name)
        state[key] = value.numpy()
    assert any(".attention.attention.query.weight" in k for k in state)
    assert not any(".attention.attention.query.bias" in k for k in state)
    model = fw.cp.vit_from_huggingface(state, hf_model.config.to_dict())
    assert max_abs_diff(fw.call(model, IMAGES), out.logits.numpy()) <= PARITY_ATOL
    assert not np.any(interop.get_weights(model)["blocks.0.self_attn.wq.bias"])


def test_hugging_face_loader_refuses_what_it_cannot_map(fw):
    hf_model, _ = _hf("ViTForImageClassification", seed=8)
    with pytest.raises(ValueError, match="a state dict needs its configuration"):
        fw.cp.vit_from_huggingface(hf_model.state_dict())
    config = {**hf_model.config.to_dict(), "hidden_act": "silu"}
    with pytest.raises(ValueError, match="activation .silu. of the checkpoint has no course counterpart"):
        fw.cp.vit_from_huggingface(hf_model.state_dict(), config)


# ----------------------------------------------------------------------------- bad input
def test_image_size_not_divisible_by_patch_size(fw):
    with pytest.raises(ValueError, match="image_size=10 is not divisible by patch_size=4"):
        fw.make("ViT", 10, 4, LAYERS, D_MODEL, HEADS, DFF, CLASSES)
    layer = fw.make("PatchEmbedding", 3, 1, D_MODEL)
    with pytest.raises(ValueError, match="image height 8 is not divisible by patch_size=3"):
        fw.call(layer, np.zeros((1, 8, 9, 1), np.float32))


@pytest.mark.parametrize("images,error,message", [
    (np.zeros((2, 8, 8, 1), np.float32), ValueError,
     r"images have 1 channels \(last axis\), the model expects 3"),
    (np.zeros((2, 3, 8, 8), np.float32), ValueError, r"channels first\?"),
    (np.zeros((2, 8, 8), np.float32), ValueError, r"add the channel axis"),
    (np.zeros((2, 8, 8, 3), np.int64), TypeError, r"images must be floating point, got dtype int64"),
    (np.zeros((2, 4, 4, 3), np.float32), ValueError, r"images must be 8x8 .* got height 4"),
], ids=["channels", "channels-first", "rank-3", "integers", "size"])
@pytest.mark.parametrize("stem", [None, 5], ids=["plain", "stem"])
def test_bad_images_are_refused(fw, images, error, message, stem):
    model = _model(fw, stem_channels=stem)
    with pytest.raises(error, match=message):
        fw.call(model, images)


def test_bad_arguments_are_refused(fw):
    with pytest.raises(ValueError, match="pooling must be 'cls'"):
        fw.make("ViT", *ARGS, pooling="max")
    with pytest.raises(ValueError, match="activation must be one of"):
        fw.make("ViT", *ARGS, activation="swish")
    for bad in (0, (), (8, 0), "16", 2.0):
        with pytest.raises(ValueError, match="stem_channels must be None, a positive int or a non-empty"):
            fw.make("ViT", *ARGS, stem_channels=bad)
    with pytest.raises(ValueError, match="method must be one of"):
        fw.call(fw.make("PatchEmbedding", 2, 1, 4), np.zeros((1, 4, 4, 1), np.float32), method="unfold")


# ----------------------------------------------------------------------------- reference helpers
def test_attention_rollout(ref):
    rng = np.random.default_rng(0)
    maps = [ref.softmax(rng.normal(size=(2, 3, 5, 5))) for _ in range(3)]
    rollout = ref.attention_rollout(maps)
    assert rollout.shape == (2, 5, 5)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-12)
    one = 0.5 * np.eye(5) + 0.5 * maps[0].mean(1)
    np.testing.assert_allclose(ref.attention_rollout(maps[:1]), one, atol=1e-12)
    two = (0.5 * np.eye(5) + 0.5 * maps[1].mean(1)) @ one
    np.testing.assert_allclose(ref.attention_rollout(maps[:2]), two, atol=1e-12)


def test_embedding_parameter_count_matches_the_model(fw, ref, interop):
    model = _model(fw)
    weights = interop.get_weights(model)
    counted = sum(v.size for k, v in weights.items()
                  if k.split(".")[0] in ("patch_embedding", "class_token", "position_embedding"))
    assert ref.vit_embedding_parameters(IMAGE, PATCH, CHANNELS, D_MODEL) == (17, counted)
