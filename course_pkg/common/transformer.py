"""The framework-free half of the two ``transformer`` modules (``seq2seq`` uses it too): a
``(src_tokens, tgt_tokens)`` pair passed as one argument, as Keras' ``fit`` does."""

def unpack_pair(inputs, model="Transformer"):
    """Split ``(src_tokens, tgt_tokens)`` passed as one argument (as Keras' ``fit`` does)."""
    if isinstance(inputs, (tuple, list)) and len(inputs) == 2:
        return inputs[0], inputs[1]
    if isinstance(inputs, dict) and set(inputs) == {"src_tokens", "tgt_tokens"}:
        return inputs["src_tokens"], inputs["tgt_tokens"]
    raise TypeError(
        f"{model} expects (src_tokens, tgt_tokens): two arguments, a pair, or a dict with "
        f"those keys; got a single {type(inputs).__name__}"
    )
