"""The few operations where `keras.ops` takes other TensorFlow kernels than our own code did.

Everything else in the model core is `keras.ops`; these go to TensorFlow's op
on the TensorFlow backend (the kernels, speed and bits of earlier releases:
bench/parity/behaviour_fingerprint.sh) and to `keras.ops` on the others.
"""

from __future__ import annotations

import keras
from keras import ops


def argmax(x, axis: int = -1):
  """int32 argmax, the first of equal maxima (-0.0 equals 0.0, as in numpy). On TensorFlow
  `tf.argmax` itself: Keras' version first rewrites -0.0 in four elementwise passes, which
  costs time on `[batch, n, vocab]` logits. On JAX `jnp.argmax` itself: Keras' version on a
  CPU rewrites -0.0 as well, inside XLA's reduction loop, which the CPU compiler does not
  vectorise (bench/gpu/jax_pretrain_step.py --profile: the Gumbel sample's and the generator's
  argmax over the vocabulary were 15% of electra_small's step)."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.argmax(x, axis=axis, output_type=tf.int32)
  if keras.backend.backend() == "jax":
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    return jnp.argmax(x, axis=axis).astype("int32")
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



def einsum(subscripts: str, *operands):
  """`tf.einsum` on TensorFlow (Keras' takes other kernels for some contractions: other
  rounding in the gradients), `keras.ops.einsum` elsewhere."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.einsum(subscripts, *operands)
  return ops.einsum(subscripts, *operands)


def gather_positions(sequence, positions):
  """Gathers the values at `positions` in every row of a minibatch.

  Args:
    sequence: [batch, seq_len] or [batch, seq_len, depth] values.
    positions: [batch, n_positions] int indices into seq_len. Position 0 (the
      padded prediction slots) simply gathers the [CLS] value.

  Returns:
    [batch, n_positions] or [batch, n_positions, depth] values of `sequence`.
  """
  rank = len(sequence.shape)
  if rank not in (2, 3):
    raise ValueError(f"gather_positions: sequence must have rank 2 or 3, got shape "
                     f"{sequence.shape}")
  if rank == 2:
    sequence = ops.expand_dims(sequence, -1)
  batch_size, seq_len, depth = ops.shape(sequence)
  # Row b's positions index the flattened [batch * seq_len, depth] sequence.
  shift = ops.expand_dims(seq_len * ops.arange(batch_size, dtype="int32"), -1)
  flat_positions = ops.reshape(ops.cast(positions, "int32") + shift, (-1,))
  flat_sequence = ops.reshape(sequence, (batch_size * seq_len, depth))
  gathered = take_rows(flat_sequence, flat_positions)
  if rank == 2:
    return ops.reshape(gathered, (batch_size, -1))
  return ops.reshape(gathered, (batch_size, -1, depth))
