"""The Vision Transformer (chapter 9): patches, the convolutional stem, the ViT, attention rollout,
and the parameter count of its input side.

Mirrors ``course_pkg.torch.vit`` and ``course_pkg.tensorflow.vit``.
"""

import numpy as np

from .base import LAYER_NORM_EPSILON, dense, layer_norm, sub
from .encoder import encoder_layer
from .feed_forward import gelu
from .positional import learned_positional_encoding


# Images are channels-last, ``(batch, height, width, channels)``, as in Keras; a ``p``×``p``
# patch is flattened row by row, each pixel's channels together: index (row·p + col)·C + channel.
# ``patches`` = (height / p)·(width / p); ``tokens`` = patches + 1 with a class token.
def patchify(images, patch_size):
    """Cut images into non-overlapping ``patch_size`` × ``patch_size`` patches, row by row, each flattened.

    Shape: (batch, height, width, channels) -> (batch, patches, patch_size · patch_size · channels).
    """
    images = np.asarray(images)
    batch, height, width, channels = images.shape
    p = patch_size
    x = images.reshape(batch, height // p, p, width // p, p, channels)
    x = x.transpose(0, 1, 3, 2, 4, 5)  # (batch, rows, cols, p, p, channels)
    return x.reshape(batch, (height // p) * (width // p), p * p * channels)


def patch_embedding(params, images, patch_size):
    """Each patch through one dense layer ``projection``: a strided convolution written as a
    matrix product. Shape: (batch, height, width, channels) -> (batch, patches, d_model)."""
    return dense(params, patchify(np.asarray(images, np.float64), patch_size), "projection")


def conv_stem(params, images):
    """A ViT's convolutional stem: per layer ``stem.<i>`` a 3 × 3 convolution (stride 1, zero
    padding keeping the size) whose kernel is a dense kernel over each pixel's 3 × 3 window
    flattened like a patch, then GELU.

    Shape: (batch, height, width, channels) -> (batch, height, width, stem_channels[-1])."""
    x = np.asarray(images, np.float64)
    i = 0
    while f"stem.{i}.kernel" in params:
        batch, height, width, channels = x.shape
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        windows = np.stack([padded[:, r:r + height, c:c + width] for r in range(3) for c in range(3)],
                           axis=3)  # (batch, height, width, 9, channels), row by row
        x = gelu(dense(params, windows.reshape(batch, height, width, 9 * channels), f"stem.{i}"))
        i += 1
    return x


def vit_features(params, images, patch_size, num_heads, pooling="cls", eps=LAYER_NORM_EPSILON,
                 activation="gelu"):
    """The ViT's token sequence after its final layer norm (Hugging Face's ``last_hidden_state``).

    The convolutional stem first if ``params`` has one (``stem.0.kernel``, see :func:`conv_stem`),
    then the patches' embeddings, the class token in front (``pooling="cls"``; none with
    ``"mean"``), plus the learned position table; then the pre-LN encoder layers and
    ``final_norm``. Returns ``(features, [attention weights per layer])``.

    Shape: (batch, height, width, channels) -> (batch, tokens, d_model),
    weights (batch, heads, tokens, tokens).
    """
    if "stem.0.kernel" in params:
        images = conv_stem(params, images)  # (batch, height, width, stem_channels)
    x = patch_embedding(sub(params, "patch_embedding"), images, patch_size)  # (batch, patches, d)
    if pooling == "cls":
        cls = np.asarray(params["class_token.embeddings"], np.float64)  # (1, d_model)
        x = np.concatenate([np.broadcast_to(cls, (x.shape[0], 1, x.shape[2])), x], axis=1)
    x = learned_positional_encoding(sub(params, "position_embedding"), x)  # (batch, tokens, d_model)
    maps = []
    for i in range(len({k.split(".")[1] for k in params if k.startswith("blocks.")})):
        x, weights = encoder_layer(sub(params, f"blocks.{i}"), x, num_heads, norm_first=True,
                                   activation=activation, eps=eps)
        maps.append(weights)
    return layer_norm(sub(params, "final_norm"), x, eps), maps


def vit(params, images, patch_size, num_heads, pooling="cls", eps=LAYER_NORM_EPSILON,
        activation="gelu"):
    """The ViT: :func:`vit_features`, pooled (the class token's vector, or the mean over the
    patches), then the classification ``head`` if ``params`` has one.

    Returns ``(logits or pooled features, [attention weights per layer])``.
    Shape: (batch, height, width, channels) -> (batch, classes) or (batch, d_model).
    """
    x, maps = vit_features(params, images, patch_size, num_heads, pooling, eps, activation)
    pooled = x[:, 0] if pooling == "cls" else x.mean(axis=1)  # (batch, d_model)
    if "head.kernel" in params:
        return dense(params, pooled, "head"), maps
    return pooled, maps


def attention_rollout(maps, residual=0.5):
    """Attention rollout (Abnar and Zuidema, 2020): how much each token draws on each input token
    through all layers. Per layer, heads averaged and the residual path added,
    ``A = residual·I + (1 - residual)·mean_heads(weights)``; the layers' ``A`` multiplied.

    Shape: [(batch, heads, tokens, tokens) per layer] -> (batch, tokens, tokens); rows sum to 1.
    """
    rollout = None
    for weights in maps:
        a = np.asarray(weights, np.float64).mean(axis=1)  # (batch, tokens, tokens)
        a = residual * np.eye(a.shape[-1]) + (1.0 - residual) * a
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a if rollout is None else a @ rollout
    return rollout


def vit_embedding_parameters(image_size, patch_size, num_channels, d_model):
    """``(tokens, parameters)`` of a ViT's input side: the patches plus the class token, and the
    trainable parameters of the patch projection, the class token and the position table."""
    tokens = (image_size // patch_size) ** 2 + 1
    projection = patch_size * patch_size * num_channels * d_model + d_model
    return tokens, projection + d_model + tokens * d_model
