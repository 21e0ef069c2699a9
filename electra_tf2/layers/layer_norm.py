"""LayerNorm over the last axis (the official `tf.contrib.layers.layer_norm`, epsilon 1e-12).

`LayerNorm` is a `keras.layers.LayerNormalization` (same `gamma`/`beta`
variables, config and checkpoint names) whose call has two differences:

- the variance is `mean((x - mean)^2)`, as `tf.nn.moments` and the official
  code compute it, instead of Keras' `mean(x^2) - mean^2`;
- the backward pass is the closed form
  `dx = inv * (g - mean(g) - xhat * mean(g * xhat))` with `g = dy * gamma`,
  instead of automatic differentiation through the moments, which builds
  roughly twice as many elementwise passes. Measured on an electra_small
  pre-training step in docs/benchmarks.md.

As in Keras, 16-bit inputs are normalised in float32 and the result is cast
back to the layer's compute dtype.
"""

from __future__ import annotations

import keras
import tensorflow as tf


def layer_norm(x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float) -> tf.Tensor:
  """Normalises `[..., d]` over d, then scales by gamma `[d]` and shifts by beta `[d]`."""

  @tf.custom_gradient
  def normalise(x, gamma, beta):
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    inv = tf.math.rsqrt(variance + epsilon)
    xhat = (x - mean) * inv

    def grad(dy):
      g = dy * gamma
      dx = inv * (g - tf.reduce_mean(g, -1, keepdims=True)
                  - xhat * tf.reduce_mean(g * xhat, -1, keepdims=True))
      dy_2d = tf.reshape(dy, [-1, dy.shape[-1]])
      xhat_2d = tf.reshape(xhat, [-1, dy.shape[-1]])
      return dx, tf.reduce_sum(dy_2d * xhat_2d, 0), tf.reduce_sum(dy_2d, 0)

    return xhat * gamma + beta, grad

  return normalise(x, tf.convert_to_tensor(gamma), tf.convert_to_tensor(beta))


@keras.saving.register_keras_serializable(package="electra_tf2")
class LayerNorm(keras.layers.LayerNormalization):
  """`[..., d]` -> same shape; a last-axis, centred and scaled LayerNormalization."""

  def __init__(self, epsilon: float = 1e-12, **kwargs):
    if kwargs.get("axis", -1) not in (-1, [-1], (-1,)):
      raise ValueError(f"LayerNorm normalises the last axis only, got axis={kwargs['axis']!r}")
    for name, required in (("center", True), ("scale", True), ("rms_scaling", False)):
      if kwargs.get(name, required) != required:
        raise ValueError(f"LayerNorm supports only {name}={required!r}")
    super().__init__(epsilon=epsilon, **kwargs)

  def call(self, inputs: tf.Tensor) -> tf.Tensor:
    dtype = tf.float64 if inputs.dtype == tf.float64 else tf.float32
    outputs = layer_norm(tf.cast(inputs, dtype), tf.cast(self.gamma, dtype),
                         tf.cast(self.beta, dtype), self.epsilon)
    return tf.cast(outputs, self.compute_dtype)
