"""Argument checks of the vision models (``vit``, chapter 9), shared by both frameworks.

Each framework turns its tensors' static facts (shape tuples, dtype names) into plain values and
calls these functions, so that both refuse bad images with the same messages. Images are
channels-last, ``(batch, height, width, channels)``. The ViT's Hugging Face mapping is
:mod:`course_pkg.common.huggingface.vit`.
"""

from __future__ import annotations

from typing import Optional

from .arguments import Shape


def check_patch_grid(image_size: int, patch_size: int) -> int:
    """Return the patches per side; raise ``ValueError`` unless ``patch_size`` divides ``image_size``."""
    if image_size % patch_size:
        raise ValueError(
            f"image_size={image_size} is not divisible by patch_size={patch_size}: the image is "
            "cut into whole patch_size x patch_size patches; pick a patch size that divides it "
            "(or crop / pad the images)"
        )
    return image_size // patch_size


def check_pooling(pooling: str) -> None:
    """Raise ``ValueError`` unless ``pooling`` is ``"cls"`` or ``"mean"``."""
    if pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' (the class token) or 'mean' (mean of the patches), "
                         f"got {pooling!r}")


def check_stem_channels(stem_channels):
    """``None``, or the stem's channels as a tuple of positive ints (an int is one layer);
    anything else: ``ValueError``."""
    if stem_channels is None:
        return None
    layers = (stem_channels,) if isinstance(stem_channels, int) and not isinstance(stem_channels, bool) \
        else stem_channels
    try:
        layers = tuple(layers)
    except TypeError:
        layers = ()
    if not layers or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in layers):
        raise ValueError(f"stem_channels must be None, a positive int or a non-empty sequence of positive "
                         f"ints, got {stem_channels!r}")
    return layers


def check_images(shape: Shape, is_floating: bool, dtype_name: str, patch_size: int,
                 num_channels: int, image_size: Optional[int] = None) -> None:
    """Raise unless ``images`` are float ``(batch, height, width, num_channels)`` with sides that
    ``patch_size`` divides (and equal to ``image_size`` when given).

    ``TypeError`` for integer (or boolean) pixels, ``ValueError`` for a bad shape.
    """
    shape = tuple(shape)
    if len(shape) != 4:
        hint = " (add the channel axis: images[..., None])" if len(shape) == 3 else ""
        raise ValueError(f"images must have shape (batch, height, width, {num_channels}) "
                         f"(channels last), got {shape}{hint}")
    if not is_floating:
        raise TypeError(f"images must be floating point, got dtype {dtype_name}; scale the pixels "
                        "to floats first (e.g. images / 255.0)")
    _, height, width, channels = shape
    if channels is not None and channels != num_channels:
        hint = (" (channels first? the course's images are channels last: "
                "images.transpose(0, 2, 3, 1))" if shape[1] == num_channels else "")
        raise ValueError(f"images have {channels} channels (last axis), the model expects "
                         f"{num_channels}: shape {shape}{hint}")
    for side, value in (("height", height), ("width", width)):
        if value is None:
            continue
        if image_size is not None and value != image_size:
            raise ValueError(f"images must be {image_size}x{image_size} (the position table has one "
                             f"row per patch), got {side} {value} in shape {shape}")
        if value % patch_size:
            raise ValueError(f"image {side} {value} is not divisible by patch_size={patch_size}, "
                             f"got shape {shape}")
