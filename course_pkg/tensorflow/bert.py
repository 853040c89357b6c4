"""BERT (Devlin et al., 2019): the encoder alone, pre-trained by masked language modelling.

Shapes: ``batch`` sequences of ``seq`` tokens, ``d_model`` features, logits
over ``vocab`` tokens.
"""

import keras
import tensorflow as tf

from ..common.arguments import check_activation, check_dropout, check_epsilon, check_pad_id, check_positive
from ..common.bert import check_segment_ids
from ..common.huggingface import bert as _hf
from .base import Bias, Model, dense, dropout_layer, embedding, layer_norm
from .encoder import EncoderLayer
from .feed_forward import ACTIVATION_FUNCTIONS
from .masks import padding_mask_2d
from .positional import LearnedPositionalEncoding
from .tokens import check_tokens, is_integer, token_ids


@keras.saving.register_keras_serializable(package="course_pkg")
class BERT(Model):
    """BERT: token + position + segment embeddings, a post-LN GELU encoder, pooler, masked-LM head.

    ``x = dropout(norm(token_embedding(t) + position_embedding + segment_embedding(s)))``,
    then ``num_layers`` :class:`EncoderLayer` (post-LN, GELU, epsilon 1e-12); the
    pooler is ``tanh(dense(x[:, 0]))`` (the ``[CLS]`` state), the masked-LM head
    ``norm(gelu(dense(x))) @ token_embeddingᵀ + bias`` (the decoder tied to the word
    embeddings). No scaling by √d_model and learned positions, unlike the paper's encoder.
    With the weights of a Hugging Face ``BertModel`` / ``BertForMaskedLM``
    (:func:`bert_from_huggingface`) it computes what they compute in eval mode.
    Dropout sits where the course's layers put it (not on the attention weights).

    Args:
        num_layers, d_model, num_heads, dff: the encoder's sizes.
        vocab_size: number of token ids.
        max_len: positions of the learned table (512 in BERT).
        type_vocab_size: number of segments (2: sentence A and B).
        dropout: dropout rate.
        activation, layer_norm_eps: of the encoder layers and the MLM head ("gelu", 1e-12).
        pad_id: when given, tokens equal to it are padding unless a ``padding_mask`` is passed.

    Call:
        ``bert(tokens, segment_ids=None, padding_mask=None, return_attention=False)``
        returns ``(sequence_output, pooled_output)`` (and the list of attention maps
        with ``return_attention=True``). ``padding_mask`` is 1.0 at padding (the
        course's convention; Hugging Face's ``attention_mask`` is ``1 - padding_mask``):
        padding keys are blocked; the states at padding positions are computed but mean
        nothing. ``bert.mlm_logits(sequence_output)`` and
        ``bert.masked_lm(tokens, segment_ids=None, padding_mask=None)`` give the
        masked-LM logits.

    Shape:
        tokens, segment_ids, padding_mask (batch, seq) -> sequence_output (batch, seq, d_model),
        pooled_output (batch, d_model); mlm logits (batch, seq, vocab).
    """

    def __init__(self, num_layers, d_model, num_heads, dff, vocab_size, max_len, type_vocab_size=2,
                 dropout=0.1, *, activation="gelu", layer_norm_eps=1e-12, pad_id=None, **kwargs):
        super().__init__(**kwargs)
        check_positive(num_layers=num_layers, vocab_size=vocab_size, type_vocab_size=type_vocab_size)
        check_dropout(dropout)
        if pad_id is not None:
            check_pad_id(pad_id, vocab_size)
        self.num_layers, self.d_model, self.num_heads, self.dff = num_layers, d_model, num_heads, dff
        self.vocab_size, self.max_len, self.type_vocab_size = vocab_size, max_len, type_vocab_size
        self.dropout, self.pad_id = dropout, pad_id
        self.activation = check_activation(activation)
        self.layer_norm_eps = check_epsilon(layer_norm_eps)
        policy = self.dtype_policy
        self.token_embedding = embedding(vocab_size, d_model, "token_embedding", policy)
        self.position_embedding = LearnedPositionalEncoding(max_len, d_model, name="position_embedding",
                                                            dtype=policy)
        self.segment_embedding = embedding(type_vocab_size, d_model, "segment_embedding", policy)
        self.embedding_norm = layer_norm(d_model, layer_norm_eps, name="embedding_norm", dtype=policy)
        self.embedding_dropout = dropout_layer(dropout, dtype=policy)
        self.blocks = [
            EncoderLayer(d_model, num_heads, dff, dropout, norm_first=False, activation=activation,
                         layer_norm_eps=layer_norm_eps, name=f"block_{i}", dtype=policy)
            for i in range(num_layers)
        ]
        self.pooler = dense(d_model, d_model, "pooler", policy)
        self.mlm_dense = dense(d_model, d_model, "mlm_dense", policy)
        self.mlm_norm = layer_norm(d_model, layer_norm_eps, name="mlm_norm", dtype=policy)
        self.mlm_bias = Bias(vocab_size, name="mlm_bias", dtype=policy)
        self.built = True

    def _inputs(self, tokens, segment_ids, padding_mask):
        tokens = token_ids(tokens)
        check_tokens(tokens, self.vocab_size, self.max_len)
        segment_ids = tf.zeros_like(tokens) if segment_ids is None else token_ids(segment_ids)
        integer = is_integer(segment_ids)
        known = (integer and tf.executing_eagerly() and tuple(segment_ids.shape) == tuple(tokens.shape)
                 and int(tf.size(segment_ids)) > 0)
        lowest, highest = ((int(tf.reduce_min(segment_ids)), int(tf.reduce_max(segment_ids))) if known
                           else (None, None))
        check_segment_ids(integer, segment_ids.dtype.name, tuple(segment_ids.shape), tuple(tokens.shape),
                          lowest, highest, self.type_vocab_size)
        return tokens, segment_ids, padding_mask_2d(tokens, padding_mask, self.pad_id)

    def call(self, tokens, segment_ids=None, padding_mask=None, return_attention=False, training=None):
        tokens, segment_ids, pad = self._inputs(tokens, segment_ids, padding_mask)
        mask = None if pad is None else pad[:, tf.newaxis, tf.newaxis, :]  # (batch, 1, 1, seq)
        x = self.token_embedding(tokens) + self.segment_embedding(segment_ids)  # (batch, seq, d_model)
        x = self.embedding_dropout(self.embedding_norm(self.position_embedding(x)),
                                   training=training)  # (batch, seq, d_model)
        maps = []
        for block in self.blocks:
            if not return_attention:  # no weights formed: the fused kernel
                x = block(x, mask=mask, training=training)
                continue
            x, weights = block(x, mask=mask, return_attention=True,
                               training=training)  # weights: (batch, heads, seq, seq)
            maps.append(weights)
        pooled = tf.tanh(self.pooler(x[:, 0]))  # (batch, d_model): the [CLS] state
        return (x, pooled, maps) if return_attention else (x, pooled)

    def mlm_logits(self, sequence_output):
        """Masked-LM logits: ``norm(act(dense(x))) @ token_embeddingᵀ + bias``.

        Shape:
            (batch, seq, d_model) -> (batch, seq, vocab).
        """
        h = self.mlm_norm(ACTIVATION_FUNCTIONS[self.activation](self.mlm_dense(sequence_output)))
        table = tf.cast(self.token_embedding.embeddings, h.dtype)  # (vocab, d_model)
        return self.mlm_bias(tf.matmul(h, table, transpose_b=True))  # (batch, seq, vocab)

    def masked_lm(self, tokens, segment_ids=None, padding_mask=None, training=None):
        """The masked-LM logits of ``tokens`` (Hugging Face's ``BertForMaskedLM`` logits).

        Shape:
            tokens (batch, seq) -> (batch, seq, vocab).
        """
        return self.mlm_logits(self(tokens, segment_ids, padding_mask, training=training)[0])


def bert_from_huggingface(source, config=None):
    """A course :class:`BERT` with the configuration and weights of a Hugging Face BERT.

    Args:
        source: a ``transformers`` ``BertModel`` or ``BertForMaskedLM``, or its state dict.
        config: its ``BertConfig`` (or the config's dict); taken from ``source`` when it is
            a model.

    Returns:
        The course model (call it with ``training=False``, the default). A checkpoint without
        pooler (``BertForMaskedLM``) or without MLM head (``BertModel``) leaves those weights
        at their initial values; the mapping is documented in :mod:`course_pkg.common.huggingface.bert`.

    Raises:
        ValueError: the configuration is another family's (its ``model_type``) or lacks a size;
            an entry is missing, unexpected or of another shape than the configuration gives
            it (the message names the checkpoint's own key, the shape found and the shape
            expected). ``TypeError``: an entry is not numbers. No model is returned then.
    """
    return _hf.bert_from_huggingface(BERT, source, config)
