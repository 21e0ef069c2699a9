"""The BERT-style encoder of ELECTRA (official `BertModel`, model/modeling.py:130-290).

embeddings (own or shared) -> `embeddings_project` when E != H (linear, glorot,
with bias, no dropout or LayerNorm) -> `num_hidden_layers` post-LN Transformer
blocks. No pooler: the official "pooled output" is `sequence_output[:, 0]`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import keras
from keras import ops

from electra_tf2.config.encoder import BertConfig
from electra_tf2.layers import initializers
from electra_tf2.layers.embeddings import EmbeddingBlock
from electra_tf2.layers.transformer import attention_bias, TransformerLayer

ATTENTION_DIRECTIONS = ("bidirectional", "ltr", "rtl")


@keras.saving.register_keras_serializable(package="electra_tf2")
class Encoder(keras.layers.Layer):
  """Token ids -> contextual states `[batch, seq_len, hidden_size]`.

  Args:
    bert_config: a `BertConfig` or its dict.
    embedding_size: E; None means hidden_size.
    attention_direction: "bidirectional", or "ltr"/"rtl" for the causal towers
      of the ELECTRIC cloze generator.
    embeddings: a shared `EmbeddingBlock` (the official `electra/embeddings`
      reused by the generator). When None the encoder owns one. A shared block
      is not part of `get_config`: `from_config` builds an owned one, and the
      pre-trainer re-creates the sharing from its own config.

  >>> import numpy as np
  >>> encoder = Encoder(BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
  ...                              num_attention_heads=1, intermediate_size=256),
  ...                   embedding_size=32)
  >>> ids = np.array([[2, 7, 9, 3, 0]], "int32")
  >>> tuple(encoder(ids, (ids > 0).astype("int32"), np.zeros_like(ids)).shape)
  (1, 5, 64)
  """

  def __init__(self, bert_config: BertConfig | Dict[str, Any], embedding_size: Optional[int] = None,
               attention_direction: str = "bidirectional",
               embeddings: Optional[EmbeddingBlock] = None, **kwargs):
    super().__init__(**kwargs)
    if isinstance(bert_config, dict):
      bert_config = BertConfig(**bert_config)
    if attention_direction not in ATTENTION_DIRECTIONS:
      raise ValueError(f"attention_direction must be one of {ATTENTION_DIRECTIONS}, "
                       f"got {attention_direction!r}")
    self.bert_config = bert_config
    self.embedding_size = embedding_size or bert_config.hidden_size
    self.attention_direction = attention_direction
    self.owns_embeddings = embeddings is None
    if embeddings is None:
      embeddings = EmbeddingBlock(
          vocab_size=bert_config.vocab_size, embedding_size=self.embedding_size,
          max_position_embeddings=bert_config.max_position_embeddings,
          type_vocab_size=bert_config.type_vocab_size,
          initializer_range=bert_config.initializer_range,
          dropout_rate=bert_config.hidden_dropout_prob, name="embeddings",
          dtype=self.dtype_policy)
    elif embeddings.embedding_size != self.embedding_size:
      raise ValueError(f"shared embeddings have size {embeddings.embedding_size}, "
                       f"this encoder expects {self.embedding_size}")
    self.embeddings = embeddings
    self.embeddings_project = None
    if self.embedding_size != bert_config.hidden_size:
      self.embeddings_project = keras.layers.Dense(
          bert_config.hidden_size, name="embeddings_project", dtype=self.dtype_policy,
          kernel_initializer=initializers.glorot_uniform())
    # Attributes, not a list: tf.train.Checkpoint does not see lists of Keras 3 layers.
    for i in range(bert_config.num_hidden_layers):
      setattr(self, f"layer_{i}", TransformerLayer(
            hidden_size=bert_config.hidden_size,
            num_attention_heads=bert_config.num_attention_heads,
            intermediate_size=bert_config.intermediate_size,
            hidden_dropout_prob=bert_config.hidden_dropout_prob,
            attention_probs_dropout_prob=bert_config.attention_probs_dropout_prob,
            initializer_range=bert_config.initializer_range,
            hidden_act=bert_config.hidden_act, name=f"layer_{i}", dtype=self.dtype_policy))

  def build(self, input_shape=None):
    if not self.embeddings.built:
      self.embeddings.build()
    if self.embeddings_project is not None:
      self.embeddings_project.build((None, None, self.embedding_size))
    for layer in self.transformer_layers:
      layer.build()
    super().build(input_shape)

  @property
  def transformer_layers(self) -> List[TransformerLayer]:
    return [getattr(self, f"layer_{i}") for i in range(self.bert_config.num_hidden_layers)]

  @property
  def hidden_size(self) -> int:
    return self.bert_config.hidden_size

  @property
  def embedding_table(self) -> keras.Variable:
    """`[vocab_size, embedding_size]` word embeddings (tied MLM output matrix)."""
    return self.embeddings.embedding_table

  def call(self, input_ids, input_mask, segment_ids, training: bool = False,
           skip_padding: bool = False):
    """`[batch, seq_len]` int ids, mask, segments -> `[batch, seq_len, hidden_size]`.

    skip_padding: inference on the real tokens alone (input_mask 1): the dense layers
    and LayerNorms skip the padding's rows, attention keeps the padded layout. The real
    tokens' states are the same (to float rounding); the padding's are zeros instead of
    the pad tokens' states. Bidirectional attention only, and shapes known only at run
    time: the TensorFlow and PyTorch backends, not JAX. A serving graph's lever for
    batches of mixed lengths (docs/benchmarks.md, server graph levers).
    """
    hidden = self.embeddings(input_ids, segment_ids, training=training)
    bias = attention_bias(input_mask, self.attention_direction, self.compute_dtype)
    if not skip_padding:
      return self._run_layers(hidden, bias, training)
    if training or self.attention_direction != "bidirectional":
      raise ValueError("skip_padding is for inference with bidirectional attention")
    if keras.backend.backend() == "jax":
      raise ValueError("skip_padding needs shapes known only at run time, which JAX does "
                       "not trace: call without it, or use the TensorFlow or PyTorch backend")
    # A batch without padding (every batch of one) keeps the plain graph.
    return ops.cond(ops.all(ops.cast(input_mask, "bool")),
                    lambda: self._run_layers(hidden, bias, training),
                    lambda: self._run_layers_without_padding(hidden, input_mask, bias))

  def _run_layers(self, embedded, bias, training: bool):
    """`[batch, seq_len, embedding_size]` embeddings -> the last layer's states."""
    hidden = embedded
    if self.embeddings_project is not None:
      hidden = self.embeddings_project(hidden)
    for layer in self.transformer_layers:
      hidden = layer(hidden, bias, training=training)
    return hidden

  def _run_layers_without_padding(self, embedded, input_mask, bias):
    """`_run_layers` on the real tokens alone (skip_padding), zeros at the padding."""
    batch, seq_len = ops.shape(input_mask)[0], ops.shape(input_mask)[1]
    token_index = ops.nonzero(ops.reshape(input_mask, (-1,)))[0]  # [tokens]
    hidden = ops.take(ops.reshape(embedded, (-1, self.embedding_size)), token_index, axis=0)
    if self.embeddings_project is not None:
      hidden = self.embeddings_project(hidden)
    for layer in self.transformer_layers:
      hidden = layer(hidden, bias, token_index=token_index)
    hidden = ops.scatter(ops.expand_dims(token_index, 1), hidden,
                         (batch * seq_len, self.hidden_size))
    return ops.reshape(hidden, (batch, seq_len, self.hidden_size))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(bert_config=self.bert_config.to_dict(), embedding_size=self.embedding_size,
                  attention_direction=self.attention_direction)
    return config
