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
back to the layer's compute dtype. Backend-neutral (`keras.ops`).
"""

from __future__ import annotations

import keras
from keras import ops


def layer_norm(x, gamma, beta, epsilon: float):
  """Normalises `[..., d]` over d, then scales by gamma `[d]` and shifts by beta `[d]`."""

  def mean(values):
    # sum / depth, not ops.mean: Keras' mean on JAX and PyTorch sums float64 in float32.
    return ops.sum(values, axis=-1, keepdims=True) / values.shape[-1]

  @ops.custom_gradient
  def normalise(x, gamma, beta):
    centred = x - mean(x)
    variance = mean(ops.square(centred))
    inv = ops.rsqrt(variance + epsilon)
    xhat = centred * inv

    def grad(*args, upstream=None):
      dy = args[0] if upstream is None else upstream
      g = dy * gamma
      dx = inv * (g - mean(g) - xhat * mean(g * xhat))
      depth = dy.shape[-1]
      dy_2d = ops.reshape(dy, (-1, depth))
      xhat_2d = ops.reshape(xhat, (-1, depth))
      return dx, ops.sum(dy_2d * xhat_2d, axis=0), ops.sum(dy_2d, axis=0)

    return xhat * gamma + beta, grad

  return normalise(x, ops.convert_to_tensor(gamma), ops.convert_to_tensor(beta))


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

  def call(self, inputs):
    dtype = "float64" if keras.backend.standardize_dtype(inputs.dtype) == "float64" else "float32"
    outputs = layer_norm(ops.cast(inputs, dtype), ops.cast(self.gamma, dtype),
                         ops.cast(self.beta, dtype), self.epsilon)
    return ops.cast(outputs, self.compute_dtype)
