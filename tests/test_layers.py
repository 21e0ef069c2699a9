"""Primitives against independent oracles: GELU and LayerNorm (values against
numpy, hand-written gradients against numerical differentiation), the MLM head
against numpy."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from scipy.special import erf

from electra_tf2.layers import gelu, layer_norm, LayerNorm, MaskedLMHead


def test_gelu_values_and_gradient_match_the_erf_formula():
  """gelu(x) = x Phi(x); its gradient Phi(x) + x phi(x), also checked numerically."""
  x = np.linspace(-6, 6, 97)
  phi = np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi)
  cdf = 0.5 * (1 + erf(x / np.sqrt(2)))
  x32 = tf.constant(x, tf.float32)
  with tf.GradientTape() as tape:
    tape.watch(x32)
    y = gelu(x32)
  np.testing.assert_allclose(y.numpy(), x * cdf, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(tape.gradient(y, x32).numpy(), cdf + x * phi, rtol=1e-5, atol=1e-6)
  theoretical, numerical = tf.test.compute_gradient(gelu, [tf.constant(x[::8])])
  np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-6)


def test_layer_norm_values_match_numpy():
  rng = np.random.default_rng(0)
  x = rng.normal(3.0, 2.0, (2, 5, 16))
  gamma, beta = rng.normal(size=16), rng.normal(size=16)
  got = layer_norm(tf.constant(x), tf.constant(gamma), tf.constant(beta), 1e-12).numpy()
  want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
  np.testing.assert_allclose(got, want * gamma + beta, rtol=1e-10, atol=1e-10)


def test_layer_norm_gradients_match_numerical_differentiation():
  """The closed-form backward pass for x, gamma and beta (float64, central differences)."""
  rng = np.random.default_rng(1)
  x = tf.constant(rng.normal(1.0, 2.0, (3, 7)))
  gamma, beta = tf.constant(rng.normal(size=7)), tf.constant(rng.normal(size=7))
  weights = tf.constant(rng.normal(size=(3, 7)))  # a loss that is not a plain sum

  def loss(x, gamma, beta):
    return tf.reduce_sum(weights * layer_norm(x, gamma, beta, 1e-12) ** 2)

  theoretical, numerical = tf.test.compute_gradient(loss, [x, gamma, beta])
  for t, n in zip(theoretical, numerical):
    np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-6)


def test_layer_norm_layer_matches_keras_and_keeps_its_config():
  """Same values as keras.layers.LayerNormalization; 16-bit inputs normalised in float32."""
  rng = np.random.default_rng(2)
  ours, theirs = LayerNorm(epsilon=1e-12), keras.layers.LayerNormalization(epsilon=1e-12)
  for layer in (ours, theirs):
    layer.build((None, 8))
  for a, b in zip(ours.weights, theirs.weights):
    value = rng.normal(size=a.shape).astype(np.float32)
    a.assign(value)
    b.assign(value)
  x = tf.constant(rng.normal(0.5, 3.0, (4, 8)).astype(np.float32))
  np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
  assert [w.name for w in ours.weights] == ["gamma", "beta"]
  clone = LayerNorm.from_config(ours.get_config())
  assert clone.epsilon == 1e-12 and clone.get_config() == ours.get_config()

  half = LayerNorm(epsilon=1e-12, dtype="mixed_float16")
  half.build((None, 8))
  for a, b in zip(half.weights, ours.weights):
    a.assign(b)
  y = half(tf.cast(x, tf.float16))
  assert y.dtype == tf.float16
  np.testing.assert_allclose(y.numpy(), ours(tf.cast(tf.cast(x, tf.float16), tf.float32)),
                             rtol=2e-3, atol=2e-3)
  with pytest.raises(ValueError, match="axis"):
    LayerNorm(axis=1)


def test_masked_lm_head_matches_numpy():
  """logits = LayerNorm(gelu(h W + b)) E^T + output_bias (run_pretraining.py:254-268)."""
  batch, n, hidden, E, V = 2, 3, 6, 4, 11
  head = MaskedLMHead(E, V)
  head.build((None, None, hidden))
  rng = np.random.default_rng(0)
  for w in head.weights:
    w.assign(rng.normal(size=w.shape).astype(np.float32))
  h = rng.normal(size=(batch, n, hidden)).astype(np.float32)
  table = rng.normal(size=(V, E)).astype(np.float32)
  got = head(tf.constant(h), tf.constant(table)).numpy()

  x = h.astype(np.float64) @ head.dense.kernel.numpy() + head.dense.bias.numpy()
  x = 0.5 * x * (1 + erf(x / np.sqrt(2)))
  x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
  x = x * head.layer_norm.gamma.numpy() + head.layer_norm.beta.numpy()
  want = x @ table.T + head.output_bias.numpy()
  assert got.shape == (batch, n, V)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
