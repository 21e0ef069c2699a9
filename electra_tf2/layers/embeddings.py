"""The ELECTRA embedding block: word + position + token-type, LayerNorm, dropout.

Official scope `electra/embeddings` (model/modeling.py:185-222, 410-560). The
block is shared by the generator and the discriminator unless the config
unties it, so it lives in its own layer that encoders receive.
"""

from __future__ import annotations

from typing import Any, Dict

import keras
from keras import ops

from electra_tf2.utils import backend_ops
from electra_tf2.layers import initializers
from electra_tf2.layers.layer_norm import LayerNorm


def lookup(table, ids, dtype: str):
  """Rows of `table` `[vocab, E]` at `ids` `[batch, seq_len]` -> `[batch, seq_len, E]` in
  `dtype` (the compute dtype).

  port: gathered from the float32 table and cast afterwards, so that under mixed precision
  the table's gradient is summed in float32. Casting the table first (the values are the
  same) would scatter-add the gradient in bfloat16, where a frequent token's repeats stop
  adding up (past 256 repeats of 1.0 a bfloat16 sum no longer grows), and where a GPU has
  no native atomic add: on an H200 (JAX 0.11.2) that scatter took 85% of electra_small's
  step (docs/benchmarks.md#gpu). The official code has float32 only
  (model/modeling.py:410-464). `table` must be float32 here: a Keras variable read
  inside a mixed-precision `call` is a bfloat16 copy unless made with `autocast=False`.
  """
  return ops.cast(backend_ops.take_rows(ops.convert_to_tensor(table), ids), dtype)


@keras.saving.register_keras_serializable(package="electra_tf2")
class EmbeddingBlock(keras.layers.Layer):
  """Embeds token ids: `[batch, seq_len]` -> `[batch, seq_len, embedding_size]`.

  Variables (official names under `<scope>/embeddings/`): `word_embeddings`
  [V, E], `token_type_embeddings` [T, E], `position_embeddings` [P, E]
  (truncated normal), `LayerNorm/{gamma,beta}` [E] (epsilon 1e-12).
  """

  def __init__(self, vocab_size: int, embedding_size: int, max_position_embeddings: int = 512,
               type_vocab_size: int = 2, initializer_range: float = 0.02,
               dropout_rate: float = 0.1, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.layer_norm = LayerNorm(epsilon=1e-12, name="LayerNorm", dtype=self.dtype_policy)
    self.dropout = keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)

  def build(self, input_shape=None):
    # One initializer per table: a Keras initializer instance has a fixed seed, so
    # sharing one would make every table a copy of the first rows of another.
    def init():
      return initializers.truncated_normal(self.initializer_range)
    # autocast=False: read inside `call` under mixed precision, the table stays float32,
    # so that `lookup` gathers from it and its gradient is summed in float32 (Keras
    # would otherwise hand `call` a bfloat16 copy). The MLM heads cast it themselves.
    self.word_embeddings = self.add_weight(
        name="word_embeddings", shape=(self.vocab_size, self.embedding_size), initializer=init(),
        autocast=False)
    self.token_type_embeddings = self.add_weight(
        name="token_type_embeddings", shape=(self.type_vocab_size, self.embedding_size),
        initializer=init())
    self.position_embeddings = self.add_weight(
        name="position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
        initializer=init())
    self.layer_norm.build((None, None, self.embedding_size))
    super().build(input_shape)

  @property
  def embedding_table(self) -> keras.Variable:
    """The word embedding matrix `[vocab_size, embedding_size]` (tied to the MLM output)."""
    return self.word_embeddings

  def call(self, input_ids, segment_ids, training: bool = False):
    """input_ids, segment_ids: `[batch, seq_len]` int -> `[batch, seq_len, E]`."""
    seq_len = ops.shape(input_ids)[1]
    dtype = self.compute_dtype
    embeddings = lookup(self.word_embeddings, input_ids, dtype)
    # Token types by one-hot matmul in training, as the official code always
    # does: the table's gradient is then dense, as officially (a gather's would
    # be sparse, which changes the global norm that gradients are clipped by).
    # Inference gathers the same rows (exactly: one 1 and zeros per row).
    types = ops.cast(self.token_type_embeddings, dtype)
    if training:  # tf.one_hot's zeros past the table (PyTorch's one_hot raises there)
      one_hot = ops.cast(ops.equal(ops.expand_dims(ops.cast(segment_ids, "int32"), -1),
                                   ops.arange(self.type_vocab_size, dtype="int32")), dtype)
      embeddings += backend_ops.einsum("bst,te->bse", one_hot, types)
    elif self.type_vocab_size == 1:  # pairs' segment 1 is past the table: the one-hot's zeros
      embeddings += ops.expand_dims(ops.cast(ops.equal(segment_ids, 0), dtype), -1) * types[0]
    else:
      embeddings += backend_ops.take_rows(types, segment_ids)
    embeddings += ops.expand_dims(ops.cast(self.position_embeddings[:seq_len], dtype), 0)
    embeddings = self.layer_norm(embeddings)
    return self.dropout(embeddings, training=training)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  max_position_embeddings=self.max_position_embeddings,
                  type_vocab_size=self.type_vocab_size,
                  initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
    return config
