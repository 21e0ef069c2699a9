"""One post-LayerNorm BERT Transformer block (model/modeling.py:597-927).

Sub-layer names follow the official checkpoint scopes under
`encoder/layer_<k>/`: `attention/self/{query,key,value}`,
`attention/output/dense`, `attention/output/LayerNorm`, `intermediate/dense`,
`output/dense`, `output/LayerNorm`.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

import keras
from keras import ops

from electra_tf2.utils import backend_ops
from electra_tf2.layers import initializers
from electra_tf2.layers.fused_attention import cudnn_attention
from electra_tf2.layers.activations import get_activation
from electra_tf2.layers.layer_norm import LayerNorm


def attention_bias(input_mask, direction: str, dtype):
  """Additive attention mask, -10000 where a query may not attend.

  Args:
    input_mask: `[batch, seq_len]`, 1 for real tokens.
    direction: "bidirectional" (keys only), "ltr" (lower triangular) or "rtl"
      (upper triangular), as modeling.py:239-245 and 563-594.
    dtype: the attention scores' dtype.

  Returns:
    `[batch, 1, 1, seq_len]` (bidirectional) or `[batch, 1, seq_len, seq_len]`.
  """
  # expand_dims, not [:, None, None, :]: TFLite has no kernel for that strided
  # slice on a dynamic shape.
  mask = ops.expand_dims(ops.expand_dims(ops.cast(input_mask, "float32"), 1), 1)
  if direction != "bidirectional":
    seq_len = ops.shape(input_mask)[1]
    ones = ops.ones((seq_len, seq_len), "float32")
    triangle = ops.tril(ones) if direction == "ltr" else ops.triu(ones)
    mask = mask * ops.expand_dims(ops.expand_dims(triangle, 0), 0)
  return ops.cast((1.0 - mask) * -10000.0, dtype)


@keras.saving.register_keras_serializable(package="electra_tf2")
class TransformerLayer(keras.layers.Layer):
  """Self-attention + feed-forward: `[batch, seq_len, hidden]` -> same shape.

  hidden_act: the feed-forward activation by official name (`get_activation`).

  `cudnn_seed`, None unless a run sets it (not part of the config): an int runs the
  attention by cuDNN's fused kernel with that dropout seed (layers/fused_attention.py).
  """

  def __init__(self, hidden_size: int, num_attention_heads: int, intermediate_size: int,
               hidden_dropout_prob: float = 0.1, attention_probs_dropout_prob: float = 0.1,
               initializer_range: float = 0.02, hidden_act: Optional[str] = "gelu", **kwargs):
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
    self.hidden_act = hidden_act
    self.cudnn_seed: Optional[int] = None

    def dense(units: int, name: str, activation=None) -> keras.layers.Dense:
      return keras.layers.Dense(
          units, activation=activation, name=name, dtype=self.dtype_policy,
          kernel_initializer=initializers.truncated_normal(initializer_range))

    def layer_norm(name: str) -> LayerNorm:
      return LayerNorm(epsilon=1e-12, name=name, dtype=self.dtype_policy)

    # attention/self/*
    self.query = dense(hidden_size, "query")
    self.key = dense(hidden_size, "key")
    self.value = dense(hidden_size, "value")
    # attention/output/*
    self.attention_output_dense = dense(hidden_size, "attention_output_dense")
    self.attention_layer_norm = layer_norm("attention_output_LayerNorm")
    # intermediate/dense, output/*
    self.intermediate_dense = dense(intermediate_size, "intermediate_dense",
                                    activation=get_activation(hidden_act))
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

  def _dense(self, layer: keras.layers.Dense, x):
    """A Dense layer's weights on a 2-D `[tokens, in]` tensor (MatMul+BiasAdd fuse on CPU)."""
    dtype = self.compute_dtype
    y = backend_ops.bias_add(ops.matmul(x, ops.cast(layer.kernel, dtype)),
                             ops.cast(layer.bias, dtype))
    return layer.activation(y) if layer.activation is not None else y

  def _qkv(self, x, training: bool):
    """q, k and v of `[tokens, hidden]`, side by side: `[tokens, 3 * hidden]`.

    Training runs one projection on the kernels concatenated `[hidden, 3 * hidden]`;
    inference runs three, as a copy of the kernels on every call costs more than
    the matmul at small batches (docs/benchmarks.md, inference). Same values.
    """
    layers = (self.query, self.key, self.value)
    if not training:
      return ops.concatenate([self._dense(layer, x) for layer in layers], 1)
    kernel = ops.concatenate([layer.kernel for layer in layers], 1)
    qkv_bias = ops.concatenate([layer.bias for layer in layers], 0)
    dtype = self.compute_dtype
    return backend_ops.bias_add(ops.matmul(x, ops.cast(kernel, dtype)), ops.cast(qkv_bias, dtype))

  def call(self, hidden, bias, training: bool = False, token_index=None):
    """hidden: `[batch, seq_len, hidden]`; bias: from `attention_bias`.

    token_index: the real tokens' flat positions in `[batch * seq_len]`, int32 `[tokens]`
    (`Encoder.call`'s skip_padding): hidden is then `[tokens, hidden]`, those tokens'
    states alone, and so is the result. The dense layers and LayerNorms run on them
    only; attention runs on the padded layout with the padding's keys and values zero
    (masked out by `bias` as before: the same values for every real token).
    """
    heads, head_size = self.num_attention_heads, self.head_size
    if token_index is None:
      batch, seq_len = ops.shape(hidden)[0], ops.shape(hidden)[1]
      x = ops.reshape(hidden, (-1, self.hidden_size))  # [tokens, hidden]
    else:
      batch, seq_len = ops.shape(bias)[0], ops.shape(bias)[-1]
      x = hidden

    qkv = self._qkv(x, training)
    if token_index is not None:
      qkv = ops.scatter(ops.expand_dims(token_index, 1), qkv,
                        (batch * seq_len, 3 * self.hidden_size))
    qkv = ops.reshape(qkv, (batch, seq_len, 3, heads, head_size))
    context = ops.reshape(self._attention(qkv, bias, training), (-1, self.hidden_size))
    if token_index is not None:
      context = ops.take(context, token_index, axis=0)

    attention = self.hidden_dropout(self._dense(self.attention_output_dense, context),
                                    training=training)
    attention = self.attention_layer_norm(attention + x)
    output = self._dense(self.output_dense, self._dense(self.intermediate_dense, attention))
    output = self.hidden_dropout(output, training=training)
    output = self.output_layer_norm(output + attention)
    if token_index is not None:
      return output
    return ops.reshape(output, (batch, seq_len, self.hidden_size))

  def _attention(self, qkv, bias, training: bool):
    """Scaled dot-product attention with its dropout (model/modeling.py:652-780).

    qkv: `[batch, seq_len, 3, heads, head_size]`; bias: from `attention_bias`.
    Returns the context `[batch, seq_len, heads, head_size]`.
    """
    if self.cudnn_seed is not None:
      rate = self.attention_probs_dropout_prob if training else 0.0
      return cudnn_attention(qkv, bias, rate, self.cudnn_seed)
    dtype = self.compute_dtype
    # [3, batch, heads, seq_len, head_size]; unstack, not qkv[i]: the gradient
    # of three slices is three full-size zero-padded tensors and a sum; that of
    # unstack is one stack.
    q, k, v = ops.unstack(ops.transpose(qkv, (2, 0, 3, 1, 4)), num=3, axis=0)
    scores = backend_ops.matmul_transpose_b(
        q * ops.cast(1.0 / math.sqrt(self.head_size), dtype), k)
    scores = ops.cast(scores, "float32") + ops.cast(bias, "float32")
    probs = ops.cast(ops.softmax(scores, axis=-1), dtype)
    probs = self.attention_dropout(probs, training=training)
    return ops.transpose(ops.matmul(probs, v), (0, 2, 1, 3))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  intermediate_size=self.intermediate_size,
                  hidden_dropout_prob=self.hidden_dropout_prob,
                  attention_probs_dropout_prob=self.attention_probs_dropout_prob,
                  initializer_range=self.initializer_range, hidden_act=self.hidden_act)
    return config
