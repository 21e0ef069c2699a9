"""Primitives against independent oracles: the MLM head against numpy."""

import numpy as np
import tensorflow as tf
from scipy.special import erf

from electra_tf2.layers import MaskedLMHead


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
