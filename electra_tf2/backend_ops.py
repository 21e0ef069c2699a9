"""The few operations where `keras.ops` takes other TensorFlow kernels than our own code did.

Everything else in the model core is `keras.ops`; these go to TensorFlow's op
on the TensorFlow backend (the kernels, speed and bits of earlier releases:
bench/behaviour_fingerprint.sh) and to `keras.ops` on the others.
"""

from __future__ import annotations

import functools

import keras
from keras import ops

# The one-hot gradient's chunk: at most this many [tokens, vocab] elements at once
# (2**27 bfloat16 values are 256 MiB; 4,096 tokens of a 30,522-token vocabulary).
ONE_HOT_CHUNK_ELEMENTS = 2**27


def argmax(x, axis: int = -1):
  """int32 argmax. On TensorFlow `tf.argmax` itself: Keras' version first rewrites -0.0
  in four elementwise passes, which costs time on `[batch, n, vocab]` logits."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.argmax(x, axis=axis, output_type=tf.int32)
  return ops.cast(ops.argmax(x, axis=axis), "int32")


def bias_add(x, bias):
  """x + bias over the last axis. On TensorFlow `tf.nn.bias_add`, which oneDNN fuses
  into the preceding MatMul (an AddV2 is not fused: other kernels, other rounding)."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.nn.bias_add(x, bias)
  return x + bias


def matmul_transpose_b(a, b):
  """a @ b^T over the last two axes. On TensorFlow one MatMul / BatchMatMul with
  `transpose_b` (a separate transpose takes other kernels: other rounding, and a copy)."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.matmul(a, b, transpose_b=True)
  return ops.matmul(a, ops.swapaxes(b, -1, -2))


def take_rows(x, indices):
  """x[indices] along axis 0 (indices in range, any shape). On TensorFlow one `tf.gather`:
  Keras' `take` first maps negative indices with a `where`, whose `indices < 0` the TFLite
  converter can fold into a boolean ZerosLike, which it has no kernel for."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.gather(x, indices)
  return ops.take(x, indices, axis=0)



def take_rows_as(table, indices, dtype: str):
  """Rows of `table` `[vocab, E]` at `indices` (any shape `[...]`, in range), cast to
  `dtype`: `[..., E]`. The table's gradient is summed in float32 on every backend.

  On JAX, when `dtype` is 16-bit, the gradient is computed by our own rule
  (`one_hot_row_sums` on GPU and TPU, a float32 scatter-add on CPU). port: XLA's GPU
  compiler turned autodiff's float32 scatter-add into a bfloat16 one (seen in the
  optimized HLO of the step, JAX 0.11.2, H200): bfloat16 has no native atomic add there,
  and with thousands of [MASK] rows per batch its compare-and-swap loops took 85% of
  electra_small's step. The official code looks rows up by one-hot matmul on TPU
  (model/modeling.py:410-464); its gradient is the same product transposed.
  """
  if keras.backend.backend() == "jax" and dtype in ("bfloat16", "float16"):
    return _jax_take_rows_as(dtype)(table, indices)
  return ops.cast(take_rows(table, indices), dtype)


@functools.lru_cache(maxsize=None)
def _jax_take_rows_as(dtype: str):
  """The JAX gather-then-cast of `take_rows_as`, with the table gradient computed in
  float32 by `_jax_row_sums` (built on first use: nothing is traced at import)."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  @jax.custom_vjp
  def take(table, indices):
    return jnp.take(table, indices, axis=0).astype(dtype)

  def forward(table, indices):
    return take(table, indices), (table, indices)

  def backward(residuals, grad):
    table, indices = residuals
    sums = _jax_row_sums(indices.reshape(-1), grad.reshape(-1, table.shape[1]),
                         table.shape[0])
    return sums.astype(table.dtype), None

  take.defvjp(forward, backward)
  return take


def _jax_row_sums(indices, updates, vocab: int):
  """float32 `[vocab, E]`: the sum of the `updates` rows `[n, E]` landing on each of
  `indices` `[n]`. A scatter-add on CPU, `one_hot_row_sums` elsewhere."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top

  def scatter(indices, updates):
    zeros = jnp.zeros((vocab, updates.shape[1]), jnp.float32)
    return zeros.at[indices].add(updates.astype(jnp.float32))

  return jax.lax.platform_dependent(
      indices, updates, cpu=scatter,
      default=functools.partial(one_hot_row_sums, vocab=vocab))


def one_hot_row_sums(indices, updates, vocab: int):
  """`_jax_row_sums` as matrix products, `one_hot(indices)^T @ updates`, over chunks of
  `ONE_HOT_CHUNK_ELEMENTS // vocab` rows: no atomics, products exact, sums in float32.
  `indices` `[n]` int, `updates` `[n, E]` -> float32 `[vocab, E]` (JAX only)."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  n, width = updates.shape
  chunk = max(1, min(n, ONE_HOT_CHUNK_ELEMENTS // vocab))
  pad = -n % chunk  # padded rows have index -1: an all-zero one-hot row
  indices = jnp.pad(indices, (0, pad), constant_values=-1).reshape(-1, chunk)
  updates = jnp.pad(updates, ((0, pad), (0, 0))).reshape(-1, chunk, width)

  def add(total, chunk_rows):
    ids, rows = chunk_rows
    hot = jax.nn.one_hot(ids, vocab, dtype=rows.dtype)
    return total + jnp.einsum("nv,ne->ve", hot, rows,
                              preferred_element_type=jnp.float32), None

  total, _ = jax.lax.scan(add, jnp.zeros((vocab, width), jnp.float32), (indices, updates))
  return total


def einsum(subscripts: str, *operands):
  """`tf.einsum` on TensorFlow (Keras' takes other kernels for some contractions: other
  rounding in the gradients), `keras.ops.einsum` elsewhere."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.einsum(subscripts, *operands)
  return ops.einsum(subscripts, *operands)
