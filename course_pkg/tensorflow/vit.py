"""The Vision Transformer (Dosovitskiy et al., 2021): an image as a sequence of patches.

Images are channels-last, ``(batch, height, width, channels)`` as in Keras, in both
frameworks. A ``patch_size`` × ``patch_size`` patch is flattened row by row with each pixel's channels
together, so ``patches = (height / patch_size) · (width / patch_size)`` vectors of
``patch_size² · channels`` numbers; with the class token in front the encoder sees
``tokens = patches + 1`` vectors of ``d_model`` features; ``heads`` attention heads.
"""

import keras
import tensorflow as tf

from ..common.arguments import (
    LAYER_NORM_EPSILON,
    check_activation,
    check_choice,
    check_dropout,
    check_positive,
)
from ..common.huggingface import vit as _hf
from ..common.vit import check_images, check_patch_grid, check_pooling, check_stem_channels
from .base import Layer, Model, dense, dropout_layer, embedding, layer_norm
from .encoder import EncoderLayer
from .positional import LearnedPositionalEncoding


def _as_images(images, dtype):
    """``images`` as a tensor; floats cast to the layer's compute ``dtype`` (as Keras does)."""
    images = tf.convert_to_tensor(images)
    return tf.cast(images, dtype) if images.dtype.is_floating else images


@keras.saving.register_keras_serializable(package="course_pkg")
class PatchEmbedding(Layer):
    """Cut images into ``patch_size`` × ``patch_size`` patches and project each to ``d_model`` features.

    One dense layer, ``projection``, maps a flattened patch to its token. Two ways
    compute the same thing: cutting by reshape then a matrix product
    (``method="reshape"``), or a convolution whose kernel is the patch size and whose
    stride is the patch size too (``method="conv"``, the usual implementation), with the
    projection's kernel reshaped into the filters.

    Args:
        patch_size: side of a square patch, in pixels.
        num_channels: channels of the images (1 for grey levels, 3 for RGB).
        d_model: width of each patch's token.

    Call:
        ``layer(images, method="reshape")``; ``layer.patchify(images)`` returns the
        flattened patches themselves. Integer pixels: ``TypeError``; another shape than
        ``(batch, height, width, num_channels)`` or sides not divisible by ``patch_size``:
        ``ValueError``.

    Shape:
        images (batch, height, width, channels) -> (batch, patches, d_model);
        patchify: -> (batch, patches, patch_size · patch_size · channels).
    """

    def __init__(self, patch_size, num_channels, d_model, **kwargs):
        super().__init__(**kwargs)
        check_positive(patch_size=patch_size, num_channels=num_channels, d_model=d_model)
        self.patch_size, self.num_channels, self.d_model = patch_size, num_channels, d_model
        self.projection = dense(patch_size * patch_size * num_channels, d_model, "projection",
                                self.dtype_policy)
        self.built = True

    def _images(self, images):
        images = _as_images(images, self.compute_dtype)
        check_images(images.shape, images.dtype.is_floating, images.dtype.name, self.patch_size,
                     self.num_channels)
        return images

    def patchify(self, images):
        """The flattened patches, row by row. Shape: (batch, height, width, channels) ->
        (batch, patches, patch_size · patch_size · channels)."""
        images = self._images(images)
        shape = tf.shape(images)
        batch, height, width, channels = shape[0], shape[1], shape[2], self.num_channels
        p = self.patch_size
        rows, cols = height // p, width // p
        x = tf.reshape(images, (batch, rows, p, cols, p, channels))  # (batch, rows, p, cols, p, channels)
        x = tf.transpose(x, (0, 1, 3, 2, 4, 5))  # (batch, rows, cols, p, p, channels)
        return tf.reshape(x, (batch, rows * cols, p * p * channels))  # (batch, patches, p·p·channels)

    def call(self, images, method="reshape"):
        check_choice("method", method, ("reshape", "conv"))
        if method == "reshape":
            return self.projection(self.patchify(images))  # (batch, patches, d_model)
        images = self._images(images)
        p, c = self.patch_size, self.num_channels
        # the kernel (p·p·ch, d_model) as filters (p, p, ch, d_model)
        filters = tf.reshape(tf.cast(self.projection.kernel, images.dtype), (p, p, c, self.d_model))
        x = tf.nn.conv2d(images, filters, strides=p, padding="VALID")  # (batch, rows, cols, d_model)
        x = x + tf.cast(self.projection.bias, x.dtype)
        return tf.reshape(x, (tf.shape(x)[0], -1, self.d_model))  # (batch, patches, d_model)


@keras.saving.register_keras_serializable(package="course_pkg")
class ViT(Model):
    """The Vision Transformer: patches, a class token, learned positions, a pre-LN encoder.

    ``x = [class_token; PatchEmbedding(images)] + positions``, then ``num_layers``
    pre-LN :class:`EncoderLayer` with a GELU feed-forward network, a final layer
    normalisation (``final_norm``), the class token's vector (``pooling="cls"``) or the
    mean of the patches' vectors (``pooling="mean"``, without a class token), and the
    classification ``head``. Hugging Face's ``ViTForImageClassification`` with the same
    weights computes the same logits (see :func:`vit_from_huggingface`).

    Args:
        image_size: side of the square images, in pixels.
        patch_size: side of a patch (must divide ``image_size``).
        num_layers: encoder layers.
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dff: feed-forward hidden width.
        num_classes: classes of the head; ``None``: no head, the model returns the pooled
            features.
        num_channels: channels of the images.
        dropout: dropout rate (embeddings, sub-layers).
        pooling: ``"cls"`` or ``"mean"``.
        layer_norm_eps: epsilon of every layer normalisation (Hugging Face's ViT: 1e-12).
        activation: of the feed-forward networks, ``"gelu"`` (exact), ``"gelu_tanh"`` or ``"relu"``.
        stem_channels: ``None`` (default): the patches are cut from the pixels, as in the ViT
            paper and Hugging Face. An int, or a tuple of ints: a convolutional stem first
            (Xiao et al., 2021), ``stem``: per entry one 3 × 3 convolution (stride 1, zero
            padding that keeps the size) to that many channels, then a GELU; the patches are
            cut from its output. Each kernel is kept as a dense kernel ``(3 · 3 · in_channels,
            out_channels)``, a 3 × 3 window flattened like a patch.

    Call:
        ``model(images)`` returns the logits; ``model(images, return_attention=True)``
        returns ``(logits, [attention_weights per layer])``. ``model.features(images)``
        returns the whole token sequence after ``final_norm`` (Hugging Face's
        ``last_hidden_state``). Images must be float ``(batch, image_size, image_size,
        num_channels)``: otherwise ``TypeError`` / ``ValueError``.

    Shape:
        images (batch, image_size, image_size, channels) -> logits (batch, num_classes)
        (``(batch, d_model)`` without a head); attention_weights (batch, heads, tokens, tokens);
        with a stem, images -> (batch, image_size, image_size, stem_channels[-1]) -> patches.
    """

    def __init__(self, image_size, patch_size, num_layers, d_model, num_heads, dff, num_classes,
                 num_channels=1, dropout=0.1, pooling="cls", layer_norm_eps=LAYER_NORM_EPSILON,
                 activation="gelu", stem_channels=None, **kwargs):
        super().__init__(**kwargs)
        check_positive(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                       num_channels=num_channels)
        if num_classes is not None:
            check_positive(num_classes=num_classes)
        stem_channels = check_stem_channels(stem_channels)
        check_dropout(dropout)
        check_pooling(pooling)
        check_activation(activation)
        side = check_patch_grid(image_size, patch_size)
        self.image_size, self.patch_size, self.num_layers = image_size, patch_size, num_layers
        self.d_model, self.num_heads, self.dff, self.num_classes = d_model, num_heads, dff, num_classes
        self.num_channels, self.dropout, self.pooling = num_channels, dropout, pooling
        self.layer_norm_eps, self.activation, self.stem_channels = layer_norm_eps, activation, stem_channels
        self.num_patches = side * side
        self.num_tokens = self.num_patches + (pooling == "cls")
        policy = self.dtype_policy
        ins = (num_channels,) + (stem_channels or ())[:-1]
        self.stem = ([dense(9 * i, o, f"stem_{k}", policy)
                      for k, (i, o) in enumerate(zip(ins, stem_channels))]
                     if stem_channels else None)  # one 3 x 3 convolution per entry
        self.patch_embedding = PatchEmbedding(patch_size, (stem_channels or (num_channels,))[-1], d_model,
                                              name="patch_embedding", dtype=policy)
        self.class_token = (embedding(1, d_model, "class_token", policy)
                            if pooling == "cls" else None)  # (1, d_model)
        self.position_embedding = LearnedPositionalEncoding(self.num_tokens, d_model,
                                                            name="position_embedding", dtype=policy)
        self.embedding_dropout = dropout_layer(dropout, dtype=policy)
        self.blocks = [
            EncoderLayer(d_model, num_heads, dff, dropout, norm_first=True, activation=activation,
                         layer_norm_eps=layer_norm_eps, name=f"layer_{i}", dtype=policy)
            for i in range(num_layers)]
        self.final_norm = layer_norm(d_model, layer_norm_eps, name="final_norm", dtype=policy)
        self.head = dense(d_model, num_classes, "head", policy) if num_classes is not None else None
        self.built = True

    def features(self, images, return_attention=False, training=None):
        """The token sequence after ``final_norm``; with ``return_attention=True`` also the
        attention weights of every layer.

        Shape:
            images (batch, image_size, image_size, channels) -> (batch, tokens, d_model).
        """
        images = _as_images(images, self.compute_dtype)
        check_images(images.shape, images.dtype.is_floating, images.dtype.name, self.patch_size,
                     self.num_channels, self.image_size)
        if self.stem is not None:
            images = self._stem(images)  # (batch, image_size, image_size, stem_channels[-1])
        x = self.patch_embedding(images)  # (batch, patches, d_model)
        if self.class_token is not None:
            cls = tf.cast(self.class_token.embeddings, x.dtype)[tf.newaxis]  # (1, 1, d_model)
            cls = tf.tile(cls, (tf.shape(x)[0], 1, 1))  # (batch, 1, d_model)
            x = tf.concat([cls, x], axis=1)  # (batch, tokens, d_model)
        x = self.embedding_dropout(self.position_embedding(x), training=training)  # (batch, tokens, d_model)
        maps = []
        for layer in self.blocks:
            if not return_attention:  # no weights formed: the fused kernel
                x = layer(x, training=training)
                continue
            x, weights = layer(x, return_attention=True,
                               training=training)  # weights: (batch, heads, tokens, tokens)
            maps.append(weights)
        x = self.final_norm(x)  # (batch, tokens, d_model)
        return (x, maps) if return_attention else x

    def _stem(self, images):
        """The convolutional stem: per layer a 3 × 3 convolution, same size, then GELU. Shape:
        (batch, height, width, channels) -> (batch, height, width, stem_channels[-1])."""
        x = images  # (batch, height, width, channels)
        for conv in self.stem:
            c, out = conv.kernel.shape[0] // 9, conv.kernel.shape[1]
            # the kernel (3·3·in, out) as filters (3, 3, in, out)
            filters = tf.reshape(tf.cast(conv.kernel, x.dtype), (3, 3, c, out))
            x = tf.nn.conv2d(x, filters, strides=1, padding="SAME")  # (batch, height, width, out)
            x = tf.nn.gelu(x + tf.cast(conv.bias, x.dtype), approximate=False)
        return x  # (batch, height, width, stem_channels[-1])

    def call(self, images, return_attention=False, training=None):
        x, maps = (self.features(images, return_attention=True, training=training) if return_attention
                   else (self.features(images, training=training), None))  # (batch, tokens, d_model)
        pooled = x[:, 0] if self.pooling == "cls" else tf.reduce_mean(x, axis=1)  # (batch, d_model)
        out = self.head(pooled) if self.head is not None else pooled  # (batch, num_classes)
        return (out, maps) if return_attention else out

    def get_config(self):
        """The recorded arguments, ``stem_channels`` as the tuple the stem is built from.

        The argument may be an int (a stem of one layer) or any sequence of ints; the configuration
        names each stem one way, as the tuple (``(4,)`` for ``4`` and ``[4]``).
        """
        return {**super().get_config(), "stem_channels": self.stem_channels}


def vit_from_huggingface(hf_model_or_state_dict, config=None):
    """A course :class:`ViT` with the weights of a Hugging Face ViT: same outputs.

    Args:
        hf_model_or_state_dict: a ``transformers`` ``ViTForImageClassification`` or
            ``ViTModel`` (PyTorch), or its ``state_dict()``, or a dict of NumPy arrays with
            the same names (either naming of the weights: the ``transformers`` 5 one or the
            older one of the Hub's checkpoints).
        config: its ``ViTConfig`` (or ``config.to_dict()``); taken from the model when a
            model is given.

    Returns:
        a :class:`ViT` with dropout 0: for a classifier its logits equal the Hugging Face
        model's; for a ``ViTModel`` (no head) ``model.features(images)`` equals
        ``last_hidden_state``. Images go in channels-last:
        ``tf.transpose(pixel_values, (0, 2, 3, 1))``.

    Raises:
        ValueError: the configuration is another family's (its ``model_type``) or lacks a size;
            an entry is missing, unexpected or of another shape than the configuration gives
            it (the message names the checkpoint's own key, the shape found and the shape
            expected). ``TypeError``: an entry is not numbers. No model is returned then.
    """
    return _hf.vit_from_huggingface(ViT, hf_model_or_state_dict, config)
