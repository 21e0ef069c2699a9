"""The few operations where `keras.ops` adds work to TensorFlow's own kernel.

Everything else in the model core is `keras.ops`; these go to TensorFlow's op
on the TensorFlow backend (the kernels and bits of earlier releases) and to
`keras.ops` on the others.
"""

from __future__ import annotations

import keras
from keras import ops


def argmax(x, axis: int = -1):
  """int32 argmax. On TensorFlow `tf.argmax` itself: Keras' version first rewrites -0.0
  in four elementwise passes, which costs time on `[batch, n, vocab]` logits."""
  if keras.backend.backend() == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.argmax(x, axis=axis, output_type=tf.int32)
  return ops.cast(ops.argmax(x, axis=axis), "int32")
