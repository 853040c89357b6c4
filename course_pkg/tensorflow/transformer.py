"""The whole Transformer: encoder, decoder and the final projection to the vocabulary.

Shapes: ``batch`` sentence pairs of ``src_len`` source and ``tgt_len`` target
positions, ``d_model`` features, logits over ``target_vocab_size`` target
tokens; an attention map is ``(batch, heads, Tq, Tk)``, ``heads`` attention
heads of ``Tq`` queries and ``Tk`` keys. Incremental decoding feeds ``new``
target positions after the ``past`` ones already decoded.
"""

import keras
import tensorflow as tf

from ..common.arguments import (
    LAYER_NORM_EPSILON,
    check_activation,
    check_batch,
    check_epsilon,
    check_flag,
    check_pad_id,
)
from ..common.huggingface import marian as _marian
from ..common.transformer import unpack_pair
from .base import Model, dense
from .decoder import Decoder
from .encoder import Encoder
from .masks import create_combined_mask, create_look_ahead_mask, create_padding_mask
from .tokens import check_token_ids, token_ids


@keras.saving.register_keras_serializable(package="course_pkg")
class Transformer(Model):
    """The encoder-decoder Transformer of Vaswani et al. (2017), post-LN.

    It builds its own masks from ``pad_id``: the source padding mask for the
    encoder's self-attention and the decoder's cross-attention, the combined
    look-ahead + target padding mask for the decoder's self-attention (the look-ahead
    mask alone with ``mask_target_padding=False``).

    Args:
        num_layers: layers in the encoder and in the decoder.
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dff: feed-forward hidden width.
        input_vocab_size: source vocabulary size.
        target_vocab_size: target vocabulary size (the logits' last axis).
        max_len: longest source or target sequence.
        dropout: dropout rate.
        pad_id: the padding token id, in both vocabularies: an int below both
            vocabulary sizes (checked here).
        activation, layer_norm_eps: the feed-forward activation and the layer norms' epsilon
            of every layer (see :class:`EncoderLayer`; Marian: ``"silu"`` and 1e-5).
        mask_target_padding: whether the decoder's self-attention blocks the target tokens
            equal to ``pad_id``. ``False`` applies the look-ahead mask alone, as Hugging Face
            does without a ``decoder_attention_mask``: for a decoder that starts from ``<pad>``
            (Marian's ``decoder_start_token_id`` is its ``pad_token_id``), whose first query
            would otherwise see no key at all. The logits at the real positions of right-padded
            targets are the same either way: a query never sees the later positions.

    Call:
        ``model(src_tokens, tgt_tokens)`` returns the logits; so does
        ``model((src_tokens, tgt_tokens))``, the form Keras' ``fit`` uses. Every attention
        map of the same forward pass comes with
        ``logits, maps = model(src_tokens, tgt_tokens, return_attention=True)``:
        ``maps["encoder_self"]``, ``maps["decoder_self"]`` and
        ``maps["decoder_cross"]`` are lists with one ``(batch, heads, Tq, Tk)``
        tensor per layer. The plain call is unchanged and nothing is stored on
        the model. Token ids of any integer dtype are accepted; ids of another
        rank than ``(batch, length)``, or a target batch that differs from the
        source's, raise ``ValueError``.

    Shape:
        src_tokens (batch, src_len) int, tgt_tokens (batch, tgt_len) int ->
        logits (batch, tgt_len, target_vocab_size).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, input_vocab_size,
                 target_vocab_size, max_len, dropout=0.1, pad_id=0, *, activation="relu",
                 layer_norm_eps=LAYER_NORM_EPSILON, mask_target_padding=True, **kwargs):
        super().__init__(**kwargs)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.input_vocab_size, self.target_vocab_size = input_vocab_size, target_vocab_size
        self.max_len, self.dropout, self.pad_id = max_len, dropout, pad_id
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        self.mask_target_padding = check_flag("mask_target_padding", mask_target_padding)
        options = {"activation": activation, "layer_norm_eps": layer_norm_eps}
        self.encoder = Encoder(num_layers, d_model, num_heads, dff, input_vocab_size, max_len, dropout,
                               **options, name="encoder", dtype=self.dtype_policy)
        self.decoder = Decoder(num_layers, d_model, num_heads, dff, target_vocab_size, max_len, dropout,
                               **options, name="decoder", dtype=self.dtype_policy)
        self.final_layer = dense(d_model, target_vocab_size, "final_layer", self.dtype_policy)
        check_pad_id(pad_id, min(input_vocab_size, target_vocab_size))
        self.built = True

    def call(self, src_tokens, tgt_tokens=None, return_attention=False, training=None):
        if tgt_tokens is None:
            src_tokens, tgt_tokens = unpack_pair(src_tokens)
        src_tokens, tgt_tokens = self._as_tokens(src_tokens), self._as_tokens(tgt_tokens)
        check_batch(src_tokens.shape[0], tgt_tokens=tgt_tokens.shape)
        src_mask = create_padding_mask(src_tokens, self.pad_id)  # (batch, 1, 1, src_len)
        if self.mask_target_padding:  # look-ahead + target padding
            tgt_mask = create_combined_mask(tgt_tokens, self.pad_id)  # (batch, 1, tgt_len, tgt_len)
        else:  # the look-ahead mask alone (a decoder that starts from <pad>)
            tgt_mask = create_look_ahead_mask(tf.shape(tgt_tokens)[1])  # (tgt_len, tgt_len)
        if not return_attention:  # no weights formed: the fused kernel
            enc_output = self.encoder(src_tokens, mask=src_mask, training=training)
            dec_output = self.decoder(tgt_tokens, enc_output, look_ahead_mask=tgt_mask, padding_mask=src_mask,
                                      training=training)  # (batch, tgt_len, d_model)
            return self.final_layer(dec_output)  # (batch, tgt_len, target_vocab_size)
        enc_output, enc_maps = self.encoder(src_tokens, mask=src_mask, return_attention=True,
                                           training=training)
        dec_output, self_maps, cross_maps = self.decoder(
            tgt_tokens, enc_output, look_ahead_mask=tgt_mask, padding_mask=src_mask,
            return_attention=True, training=training
        )  # (batch, tgt_len, d_model)
        logits = self.final_layer(dec_output)  # (batch, tgt_len, target_vocab_size)
        return logits, {"encoder_self": enc_maps, "decoder_self": self_maps,
                        "decoder_cross": cross_maps}

    def _as_tokens(self, tokens):
        """Token ids as a ``(batch, length)`` tensor on the model's device (lists and arrays
        welcome, in any integer dtype)."""
        tokens = token_ids(tokens)
        check_token_ids(tokens)
        return tokens

    def _target_padding(self, tgt_tokens):
        """The target keys blocked as padding: 1.0 where ``tgt_tokens == pad_id``, none at all
        with ``mask_target_padding=False``.

        Shape:
            tgt_tokens (batch, new) int -> (batch, 1, 1, new) float32.
        """
        mask = create_padding_mask(tgt_tokens, self.pad_id)  # (batch, 1, 1, new)
        return mask if self.mask_target_padding else tf.zeros_like(mask)

    def encode(self, src_tokens, training=None):
        """Run the encoder once. Returns ``(enc_output, src_mask)``.

        Shape:
            src_tokens (batch, src_len) int ->
            enc_output (batch, src_len, d_model), src_mask (batch, 1, 1, src_len).
        """
        src_tokens = self._as_tokens(src_tokens)
        src_mask = create_padding_mask(src_tokens, self.pad_id)  # (batch, 1, 1, src_len)
        return self.encoder(src_tokens, mask=src_mask, training=training), src_mask

    def start_decoding(self, src_tokens):
        """Encode the source; return the state that :meth:`decode_step` grows.

        The state is a dict of batch-first tensors (and lists of dicts of them):
        the source mask, the target padding seen so far and every decoder
        layer's key/value cache.
        """
        enc_output, src_mask = self.encode(src_tokens)
        return {"src_mask": src_mask, "tgt_pad": src_mask[..., :0],
                "layers": self.decoder.init_cache(enc_output)}

    def decode_step(self, tgt_tokens, state):
        """Logits for new target tokens, attending to all earlier ones via the cache.

        Incremental decoding: each call costs O(new) instead of recomputing the
        whole prefix, and gives the logits that ``model(src, prefix)`` gives at
        the new positions (within float rounding).

        Shape:
            tgt_tokens (batch, new) int -> logits (batch, new, target_vocab_size), state.
        """
        tgt_tokens = self._as_tokens(tgt_tokens)
        past, new = tf.shape(state["tgt_pad"])[-1], tf.shape(tgt_tokens)[1]  # dynamic: may be compiled
        tgt_pad = tf.concat([state["tgt_pad"], self._target_padding(tgt_tokens)], axis=-1)
        look_ahead = create_look_ahead_mask(past + new)[past:]  # (new, past + new)
        mask = tf.maximum(look_ahead, tgt_pad)  # (batch, 1, new, past + new)
        x, layers = self.decoder.step(tgt_tokens, state["layers"], mask, state["src_mask"])
        logits = self.final_layer(x)  # (batch, new, target_vocab_size)
        return logits, {**state, "tgt_pad": tgt_pad, "layers": layers}


def marian_from_huggingface(source, config=None):
    """A course :class:`Transformer` with the configuration and weights of a Hugging Face Marian.

    Marian (the opus-mt translation models) is the paper's post-LN encoder-decoder with an
    activation (SiLU in opus-mt), PyTorch's layer-norm epsilon (1e-5) and a bias on the logits:
    the model returned has ``activation``, ``layer_norm_eps=1e-5`` and
    ``mask_target_padding=False`` (the decoder starts from ``<pad>``), and computes Hugging
    Face's logits. Its ``d_model`` features are Marian's in another order (Marian's position
    table holds the sines and the cosines in two halves, the course's interleaves them): the
    mapping and the reasons are in ``course_pkg.common.huggingface.marian``. Decode with the
    configuration's ids, ``bos_id=config.decoder_start_token_id``, ``eos_id=config.eos_token_id``
    and ``pad_id=config.pad_token_id`` (the dict ``decoding_ids(config)`` of that module), as
    ``greedy_decode(model, src, **decoding_ids(config))``.

    Args:
        source: a ``transformers`` ``MarianMTModel`` or ``MarianModel``, or its state dict.
        config: its ``MarianConfig`` (or the config's dict); taken from ``source`` when it is a model.

    Returns:
        The course model (call it with ``training=False``, the default).

    Raises:
        ValueError: the configuration is another family's (its ``model_type``), lacks a size, or
            asks for what the course's Transformer does not compute (encoder and decoder of other
            sizes, another activation, pre-LN ``normalize_before``, an embedding layer norm; the
            message names the key); an entry is missing, unexpected, of another shape than the
            configuration gives it, or a tied copy differs (the message names the checkpoint's own
            key). ``TypeError``: an entry is not numbers. No model is returned then.
    """
    return _marian.marian_from_huggingface(Transformer, source, config)
