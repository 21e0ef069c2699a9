"""The two initialisers of the official code."""

import keras


def truncated_normal(stddev: float = 0.02) -> keras.initializers.Initializer:
  """TF1 `truncated_normal_initializer(stddev)`: normal cut at two standard deviations."""
  return keras.initializers.TruncatedNormal(stddev=stddev)


def glorot_uniform() -> keras.initializers.Initializer:
  """TF1's default for `tf.layers.dense` without an explicit initialiser."""
  return keras.initializers.GlorotUniform()
