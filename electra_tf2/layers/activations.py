"""GELU, the activation of the feed-forward blocks and the heads (model/modeling.py:264-276).

The official `gelu` is the exact erf form, 0.5 x (1 + erf(x / sqrt(2))). Ours
computes the same values, but with a hand-written gradient: automatic
differentiation of the formula runs about ten elementwise passes over the
`[tokens, intermediate]` tensor in the backward pass, the closed form below
needs five (about 1% of an electra_small step on two CPU cores; see
docs/benchmarks.md).
"""

from __future__ import annotations

import math

import tensorflow as tf

_SQRT_HALF = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@tf.custom_gradient
def gelu(x: tf.Tensor):
  """x Phi(x), elementwise; d/dx = Phi(x) + x phi(x) (Phi, phi: the normal cdf and pdf)."""
  cdf = 0.5 * (1.0 + tf.math.erf(x * _SQRT_HALF))

  def grad(dy: tf.Tensor) -> tf.Tensor:
    return dy * (cdf + x * (tf.exp(-0.5 * tf.square(x)) * _INV_SQRT_2PI))

  return x * cdf, grad
