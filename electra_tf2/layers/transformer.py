"""One post-LayerNorm BERT Transformer block (model/modeling.py:597-927).

Sub-layer names follow the official checkpoint scopes under
`encoder/layer_<k>/`: `attention/self/{query,key,value}`,
`attention/output/dense`, `attention/output/LayerNorm`, `intermediate/dense`,
`output/dense`, `output/LayerNorm`.
"""

from __future__ import annotations

import math
from typing import Any, Dict

import keras
import tensorflow as tf

from electra_tf2.layers import initializers


def gelu(x: tf.Tensor) -> tf.Tensor:
  """The exact erf GELU of the official code: 0.5 x (1 + erf(x / sqrt(2)))."""
  return tf.nn.gelu(x, approximate=False)


def attention_bias(input_mask: tf.Tensor, direction: str, dtype: tf.DType) -> tf.Tensor:
  """Additive attention mask, -10000 where a query may not attend.

  Args:
    input_mask: `[batch, seq_len]`, 1 for real tokens.
    direction: "bidirectional" (keys only), "ltr" (lower triangular) or "rtl"
      (upper triangular), as modeling.py:239-245 and 563-594.
    dtype: the attention scores' dtype.

  Returns:
    `[batch, 1, 1, seq_len]` (bidirectional) or `[batch, 1, seq_len, seq_len]`.
  """
  mask = tf.cast(input_mask, tf.float32)[:, tf.newaxis, tf.newaxis, :]
  if direction != "bidirectional":
    seq_len = tf.shape(input_mask)[1]
    ones = tf.ones([seq_len, seq_len], tf.float32)
    triangle = (tf.linalg.band_part(ones, -1, 0) if direction == "ltr"
                else tf.linalg.band_part(ones, 0, -1))
    mask = mask * triangle[tf.newaxis, tf.newaxis]
  return tf.cast((1.0 - mask) * -10000.0, dtype)


@keras.saving.register_keras_serializable(package="electra_tf2")
class TransformerLayer(keras.layers.Layer):
  """Self-attention + feed-forward: `[batch, seq_len, hidden]` -> same shape."""

  def __init__(self, hidden_size: int, num_attention_heads: int, intermediate_size: int,
               hidden_dropout_prob: float = 0.1, attention_probs_dropout_prob: float = 0.1,
               initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads:
      raise ValueError(f"hidden_size {hidden_size} is not a multiple of "
                       f"num_attention_heads {num_attention_heads}")
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.head_size = hidden_size // num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.initializer_range = initializer_range

    def dense(units: int, name: str, activation=None) -> keras.layers.Dense:
      return keras.layers.Dense(
          units, activation=activation, name=name, dtype=self.dtype_policy,
          kernel_initializer=initializers.truncated_normal(initializer_range))

    def layer_norm(name: str) -> keras.layers.LayerNormalization:
      return keras.layers.LayerNormalization(epsilon=1e-12, name=name, dtype=self.dtype_policy)

    # attention/self/*
    self.query = dense(hidden_size, "query")
    self.key = dense(hidden_size, "key")
    self.value = dense(hidden_size, "value")
    # attention/output/*
    self.attention_output_dense = dense(hidden_size, "attention_output_dense")
    self.attention_layer_norm = layer_norm("attention_output_LayerNorm")
    # intermediate/dense, output/*
    self.intermediate_dense = dense(intermediate_size, "intermediate_dense", activation=gelu)
    self.output_dense = dense(hidden_size, "output_dense")
    self.output_layer_norm = layer_norm("output_LayerNorm")
    self.attention_dropout = keras.layers.Dropout(attention_probs_dropout_prob,
                                                  dtype=self.dtype_policy)
    self.hidden_dropout = keras.layers.Dropout(hidden_dropout_prob, dtype=self.dtype_policy)

  def build(self, input_shape=None):
    hidden_shape = (None, None, self.hidden_size)
    for layer in (self.query, self.key, self.value, self.attention_output_dense,
                  self.intermediate_dense):
      layer.build(hidden_shape)
    self.output_dense.build((None, None, self.intermediate_size))
    self.attention_layer_norm.build(hidden_shape)
    self.output_layer_norm.build(hidden_shape)
    super().build(input_shape)

  def _split_heads(self, x: tf.Tensor, batch: tf.Tensor, seq_len: tf.Tensor) -> tf.Tensor:
    """`[batch, seq_len, hidden]` -> `[batch, heads, seq_len, head_size]`."""
    x = tf.reshape(x, [batch, seq_len, self.num_attention_heads, self.head_size])
    return tf.transpose(x, [0, 2, 1, 3])

  def call(self, hidden: tf.Tensor, bias: tf.Tensor, training: bool = False) -> tf.Tensor:
    """hidden: `[batch, seq_len, hidden]`; bias: from `attention_bias`."""
    batch, seq_len = tf.shape(hidden)[0], tf.shape(hidden)[1]
    dtype = self.compute_dtype
    # One fused projection for q, k and v: [hidden, 3 * hidden].
    kernel = tf.cast(tf.concat([self.query.kernel, self.key.kernel, self.value.kernel], 1), dtype)
    qkv_bias = tf.cast(tf.concat([self.query.bias, self.key.bias, self.value.bias], 0), dtype)
    qkv = tf.matmul(tf.reshape(hidden, [-1, self.hidden_size]), kernel) + qkv_bias
    q, k, v = tf.split(tf.reshape(qkv, [batch, seq_len, 3 * self.hidden_size]), 3, axis=-1)
    q = self._split_heads(q, batch, seq_len)
    k = self._split_heads(k, batch, seq_len)
    v = self._split_heads(v, batch, seq_len)

    scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(self.head_size))
    scores = tf.cast(scores, tf.float32) + tf.cast(bias, tf.float32)
    probs = tf.cast(tf.nn.softmax(scores, axis=-1), dtype)
    probs = self.attention_dropout(probs, training=training)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    context = tf.reshape(context, [batch, seq_len, self.hidden_size])

    attention_output = self.hidden_dropout(self.attention_output_dense(context), training=training)
    attention_output = self.attention_layer_norm(attention_output + hidden)
    layer_output = self.output_dense(self.intermediate_dense(attention_output))
    layer_output = self.hidden_dropout(layer_output, training=training)
    return self.output_layer_norm(layer_output + attention_output)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  intermediate_size=self.intermediate_size,
                  hidden_dropout_prob=self.hidden_dropout_prob,
                  attention_probs_dropout_prob=self.attention_probs_dropout_prob,
                  initializer_range=self.initializer_range)
    return config
