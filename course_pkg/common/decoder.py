"""The checks of the decoder (``decoder``): a layer with cross-attention needs the encoder output."""

def check_enc_output(cross_attention: bool, enc_output_is_none: bool) -> None:
    """Raise ``ValueError`` when a layer with cross-attention gets no encoder output."""
    if cross_attention and enc_output_is_none:
        raise ValueError("enc_output is None, but this DecoderLayer has a cross-attention "
                         "(cross_attention=True): pass the encoder output")
