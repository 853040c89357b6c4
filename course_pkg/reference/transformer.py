"""The whole Transformer: encoder, decoder and the final projection to the vocabulary.

Mirrors ``course_pkg.torch.transformer`` and ``course_pkg.tensorflow.transformer``.
"""

from .base import dense, sub
from .decoder import decoder
from .encoder import encoder
from .masks import create_combined_mask, create_padding_mask


def transformer(params, src, tgt, num_heads, pad_id=0):
    """The whole model. Returns ``(logits, attention_maps)``.

    ``attention_maps`` has the keys ``encoder_self``, ``decoder_self`` and
    ``decoder_cross``, each a list with one (batch, heads, Tq, Tk) array per layer.
    """
    src_mask = create_padding_mask(src, pad_id)  # (batch, 1, 1, src_len)
    tgt_mask = create_combined_mask(tgt, pad_id)  # (batch, 1, tgt_len, tgt_len)
    enc, enc_maps = encoder(sub(params, "encoder"), src, num_heads, src_mask)
    dec, self_maps, cross_maps = decoder(sub(params, "decoder"), tgt, enc, num_heads, tgt_mask, src_mask)
    logits = dense(params, dec, "final_layer")  # (batch, tgt_len, vocab)
    return logits, {"encoder_self": enc_maps, "decoder_self": self_maps, "decoder_cross": cross_maps}
