"""The whole Transformer: encoder, decoder and the final projection to the vocabulary."""

from torch import nn

from .._checks import unpack_pair
from ._layers import dense
from .decoder import Decoder
from .encoder import Encoder
from .masks import create_combined_mask, create_padding_mask


class Transformer(nn.Module):
    """The encoder-decoder Transformer of Vaswani et al. (2017), post-LN.

    It builds its own masks from ``pad_id``: the source padding mask for the
    encoder's self-attention and the decoder's cross-attention, the combined
    look-ahead + target padding mask for the decoder's self-attention.

    Args:
        num_layers: layers in the encoder and in the decoder.
        d_model: model width.
        num_heads: attention heads (must divide ``d_model``).
        dff: feed-forward hidden width.
        input_vocab_size: source vocabulary size.
        target_vocab_size: target vocabulary size (the logits' last axis).
        max_len: longest source or target sequence.
        dropout: dropout rate.
        pad_id: the padding token id, in both vocabularies.

    Call:
        ``model(src_tokens, tgt_tokens)`` returns the logits; so does
        ``model((src_tokens, tgt_tokens))``, the form Keras' ``fit`` uses. Every attention
        map of the same forward pass comes with
        ``logits, maps = model(src_tokens, tgt_tokens, return_attention=True)``:
        ``maps["encoder_self"]``, ``maps["decoder_self"]`` and
        ``maps["decoder_cross"]`` are lists with one ``(batch, heads, Tq, Tk)``
        tensor per layer. The plain call is unchanged and nothing is stored on
        the model.

    Shape:
        src_tokens (batch, src_len) int, tgt_tokens (batch, tgt_len) int ->
        logits (batch, tgt_len, target_vocab_size).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, input_vocab_size,
                 target_vocab_size, max_len, dropout=0.1, pad_id=0):
        super().__init__()
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.input_vocab_size, self.target_vocab_size = input_vocab_size, target_vocab_size
        self.max_len, self.rate, self.pad_id = max_len, dropout, pad_id
        self.encoder = Encoder(num_layers, d_model, num_heads, dff, input_vocab_size, max_len, dropout)
        self.decoder = Decoder(num_layers, d_model, num_heads, dff, target_vocab_size, max_len, dropout)
        self.final_layer = dense(d_model, target_vocab_size)

    def forward(self, src_tokens, tgt_tokens=None, return_attention=False):
        if tgt_tokens is None:
            src_tokens, tgt_tokens = unpack_pair(src_tokens)
        src_mask = create_padding_mask(src_tokens, self.pad_id)  # (batch, 1, 1, src_len)
        tgt_mask = create_combined_mask(tgt_tokens, self.pad_id)  # (batch, 1, tgt_len, tgt_len)
        enc_output, enc_maps = self.encoder(src_tokens, src_mask, return_attention=True)
        dec_output, self_maps, cross_maps = self.decoder(
            tgt_tokens, enc_output, tgt_mask, src_mask, return_attention=True
        )  # (batch, tgt_len, d_model)
        logits = self.final_layer(dec_output)  # (batch, tgt_len, target_vocab_size)
        if not return_attention:
            return logits
        return logits, {"encoder_self": enc_maps, "decoder_self": self_maps,
                        "decoder_cross": cross_maps}

    def get_config(self):
        """The constructor arguments (mirrors Keras' ``get_config``)."""
        return {"num_layers": self.num_layers, "d_model": self.d_model,
                "num_heads": self.num_heads, "dff": self.dff,
                "input_vocab_size": self.input_vocab_size,
                "target_vocab_size": self.target_vocab_size, "max_len": self.max_len,
                "dropout": self.rate, "pad_id": self.pad_id}
