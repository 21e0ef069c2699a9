"""Pre-training heads with the official structure and scope names.

- `MaskedLMHead` (`generator_predictions`, `cloze_predictions`;
  run_pretraining.py:254-268): dense to E with the config's `hidden_act` (gelu),
  LayerNorm, logits against the tied word embeddings plus `output_bias`; optionally
  through a table padded to a multiple of 64 or 128 rows (`vocab_pad_multiple`).
- `DiscriminatorHead` (`discriminator_predictions`; run_pretraining.py:183-218):
  dense H with `hidden_act`, then `dense_1` to one logit (glorot init).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import keras
from keras import ops

from electra_tf2.utils import backend_ops
from electra_tf2.layers import initializers
from electra_tf2.layers.activations import get_activation
from electra_tf2.layers.layer_norm import LayerNorm


def _hidden_dense(units: int, hidden_act: Optional[str], initializer_range: float,
                  dtype_policy) -> keras.layers.Dense:
  """The heads' first layer, `dense`: `hidden_act` and a truncated normal initializer."""
  return keras.layers.Dense(units, activation=get_activation(hidden_act), name="dense",
                            dtype=dtype_policy,
                            kernel_initializer=initializers.truncated_normal(initializer_range))


@keras.saving.register_keras_serializable(package="electra_tf2")
class MaskedLMHead(keras.layers.Layer):
  """`[batch, n, hidden]` states -> `[batch, n, vocab_size]` token logits.

  The output matrix is the word-embedding table, passed to `call` so that the
  head never owns (or double-tracks) the shared embedding variable.

  vocab_pad_multiple: 1, or 64/128: the matmul runs against the table padded with zero
  rows to `padded_vocab_size` (a multiple of it), so that on a GPU its output width and
  its gradients' widths fill whole tensor-core tiles (BERT's 30,522 is no multiple of 64),
  and the product is sliced back to `[.., vocab_size]` at once, before the bias. Padding ids
  are then never scored nor sampled, and every number after the matmul is the unpadded
  head's: each logit is the same dot product over E (bitwise on the CPU, TensorFlow and
  JAX; a GPU's matmul may pick another kernel for another width: float32 rounding at most).
  The input gradient sums over the padded width (zeros, in another blocking): float32
  rounding. The variables keep `vocab_size` rows, so checkpoints and exports are the
  unpadded head's. port: no such option officially; the padding is a per-step copy of the
  table, fused with the bfloat16 cast under mixed precision. XLA keeps the padded widths
  (JAX's compiled HLO on the CPU, tests/test_vocab_padding.py); the GPU gain is not measured.
  """

  def __init__(self, embedding_size: int, vocab_size: int, initializer_range: float = 0.02,
               hidden_act: Optional[str] = "gelu", vocab_pad_multiple: int = 1, **kwargs):
    super().__init__(**kwargs)
    self.embedding_size = embedding_size
    self.vocab_size = vocab_size
    self.vocab_pad_multiple = vocab_pad_multiple
    self.initializer_range = initializer_range
    self.hidden_act = hidden_act
    self.dense = _hidden_dense(embedding_size, hidden_act, initializer_range, self.dtype_policy)
    self.layer_norm = LayerNorm(epsilon=1e-12, name="LayerNorm", dtype=self.dtype_policy)

  def build(self, input_shape):
    self.dense.build(input_shape)
    self.layer_norm.build(tuple(input_shape[:-1]) + (self.embedding_size,))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,),
                                       initializer="zeros")
    super().build(input_shape)

  @property
  def padded_vocab_size(self) -> int:
    """The matmul's output width: vocab_size rounded up to a multiple of vocab_pad_multiple."""
    return -(-self.vocab_size // self.vocab_pad_multiple) * self.vocab_pad_multiple

  def call(self, hidden, embedding_table):
    """hidden `[batch, n, h]`, embedding_table `[V, E]` -> logits `[batch, n, V]` (float32)."""
    hidden = self.layer_norm(self.dense(hidden))
    # One 2-D matmul over all slots: a batched matmul against the shared table
    # would make its gradient a [batch, V, E] product summed over the batch.
    shape = ops.shape(hidden)
    flat = ops.reshape(hidden, (-1, self.embedding_size))
    table = ops.cast(embedding_table, hidden.dtype)
    padding = self.padded_vocab_size - self.vocab_size
    if padding:  # [padded V, E]; the product's padding columns are sliced off at once
      table = ops.pad(table, ((0, padding), (0, 0)))
    logits = backend_ops.matmul_transpose_b(flat, table)
    if padding:
      logits = logits[:, :self.vocab_size]
    logits = ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
    return ops.reshape(logits, (shape[0], shape[1], self.vocab_size))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(embedding_size=self.embedding_size, vocab_size=self.vocab_size,
                  initializer_range=self.initializer_range, hidden_act=self.hidden_act,
                  vocab_pad_multiple=self.vocab_pad_multiple)
    return config


@keras.saving.register_keras_serializable(package="electra_tf2")
class DiscriminatorHead(keras.layers.Layer):
  """`[batch, seq_len, hidden]` -> `[batch, seq_len]` replaced-token logits (float32)."""

  def __init__(self, hidden_size: int, initializer_range: float = 0.02,
               hidden_act: Optional[str] = "gelu", **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.hidden_act = hidden_act
    self.dense = _hidden_dense(hidden_size, hidden_act, initializer_range, self.dtype_policy)
    self.dense_1 = keras.layers.Dense(1, name="dense_1", dtype=self.dtype_policy,
                                      kernel_initializer=initializers.glorot_uniform())

  def build(self, input_shape):
    self.dense.build(input_shape)
    self.dense_1.build(tuple(input_shape[:-1]) + (self.hidden_size,))
    super().build(input_shape)

  def call(self, hidden):
    return ops.cast(ops.squeeze(self.dense_1(self.dense(hidden)), -1), "float32")

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range,
                  hidden_act=self.hidden_act)
    return config
