"""Primitives against independent oracles: GELU and LayerNorm (values against
numpy, hand-written gradients against numerical differentiation), the MLM head
against numpy. Runs on every Keras backend (tests/test_backends.py)."""

import keras
import numpy as np
import pytest
from keras import ops
from scipy.special import erf

from backend_marks import dtype_name, float64, gradients, numpy, tensor
from electra_tf2.layers import gelu, layer_norm, LayerNorm, MaskedLMHead


def numerical_gradients(loss_fn, *args: np.ndarray, delta: float = 1e-6):
  """Central differences of the scalar `loss_fn(*tensors)` in float64, one element at a time."""
  def loss(values):
    return float(numpy(loss_fn(*[tensor(v) for v in values])))

  grads = []
  for i, arg in enumerate(args):
    grad = np.zeros_like(arg)
    for index in np.ndindex(arg.shape):
      shifted = [list(args), list(args)]
      for sign, values in zip((1, -1), shifted):
        values[i] = arg.copy()
        values[i][index] += sign * delta
      grad[index] = (loss(shifted[0]) - loss(shifted[1])) / (2 * delta)
    grads.append(grad)
  return grads


def test_gelu_values_and_gradient_match_the_erf_formula():
  """gelu(x) = x Phi(x); its gradient Phi(x) + x phi(x), also checked numerically."""
  x = np.linspace(-6, 6, 97)
  phi = np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi)
  cdf = 0.5 * (1 + erf(x / np.sqrt(2)))
  x32 = x.astype(np.float32)
  np.testing.assert_allclose(numpy(gelu(tensor(x32))), x * cdf, rtol=1e-5, atol=1e-6)
  (grad,) = gradients(lambda t: ops.sum(gelu(t)), x32)
  np.testing.assert_allclose(grad, cdf + x * phi, rtol=1e-5, atol=1e-6)
  weights = np.random.default_rng(0).normal(size=x[::8].shape)
  with float64():
    loss = lambda t: ops.sum(tensor(weights) * gelu(t))
    (theoretical,), (numerical,) = gradients(loss, x[::8]), numerical_gradients(loss, x[::8])
  np.testing.assert_allclose(theoretical, numerical, atol=1e-6)
  np.testing.assert_allclose(theoretical, weights * (cdf + x * phi)[::8], rtol=1e-9, atol=1e-15)


def test_gelu_tanh_by_name_matches_the_tanh_formula():
  """get_activation("gelu_tanh") = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), and its
  gradient the formula's derivative; the hidden_act name validates."""
  from electra_tf2.config.encoder import BertConfig  # pylint: disable=g-import-not-at-top
  from electra_tf2.layers.activations import get_activation  # pylint: disable=g-import-not-at-top
  BertConfig(vocab_size=8, hidden_size=4, num_attention_heads=1,
             hidden_act="gelu_tanh").validate("test")
  x = np.linspace(-6, 6, 97)
  inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
  expected = 0.5 * x * (1 + np.tanh(inner))
  derivative = (0.5 * (1 + np.tanh(inner)) + 0.5 * x * (1 - np.tanh(inner) ** 2)
                * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x ** 2))
  gelu_tanh = get_activation("GELU_TANH")
  np.testing.assert_allclose(numpy(gelu_tanh(tensor(x.astype(np.float32)))), expected,
                             rtol=1e-5, atol=1e-6)
  (grad,) = gradients(lambda t: ops.sum(gelu_tanh(t)), x.astype(np.float32))
  np.testing.assert_allclose(grad, derivative, rtol=1e-5, atol=1e-5)
  assert np.abs(expected - x * 0.5 * (1 + erf(x / np.sqrt(2)))).max() > 1e-4  # not gelu


def test_layer_norm_values_match_numpy():
  rng = np.random.default_rng(0)
  x = rng.normal(3.0, 2.0, (2, 5, 16))
  gamma, beta = rng.normal(size=16), rng.normal(size=16)
  with float64():
    got = numpy(layer_norm(tensor(x), tensor(gamma), tensor(beta), 1e-12))
  want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
  np.testing.assert_allclose(got, want * gamma + beta, rtol=1e-10, atol=1e-10)


def test_layer_norm_gradients_match_numerical_differentiation():
  """The closed-form backward pass for x, gamma and beta (float64, central differences)."""
  rng = np.random.default_rng(1)
  x = rng.normal(1.0, 2.0, (3, 7))
  gamma, beta = rng.normal(size=7), rng.normal(size=7)
  weights = rng.normal(size=(3, 7))  # a loss that is not a plain sum

  def loss(x, gamma, beta):
    return ops.sum(tensor(weights) * layer_norm(x, gamma, beta, 1e-12) ** 2)

  with float64():
    theoretical = gradients(loss, x, gamma, beta)
    numerical = numerical_gradients(loss, x, gamma, beta)
  for t, n in zip(theoretical, numerical):
    assert t.dtype == np.float64
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
  x = tensor(rng.normal(0.5, 3.0, (4, 8)).astype(np.float32))
  np.testing.assert_allclose(numpy(ours(x)), numpy(theirs(x)), rtol=1e-5, atol=1e-5)
  assert [w.name for w in ours.weights] == ["gamma", "beta"]
  clone = LayerNorm.from_config(ours.get_config())
  assert clone.epsilon == 1e-12 and clone.get_config() == ours.get_config()

  half = LayerNorm(epsilon=1e-12, dtype="mixed_float16")
  half.build((None, 8))
  for a, b in zip(half.weights, ours.weights):
    a.assign(b)
  y = half(ops.cast(x, "float16"))
  assert keras.backend.standardize_dtype(y.dtype) == "float16"
  np.testing.assert_allclose(numpy(y), numpy(ours(ops.cast(ops.cast(x, "float16"), "float32"))),
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
  got = numpy(head(tensor(h), tensor(table)))

  x = h.astype(np.float64) @ numpy(head.dense.kernel) + numpy(head.dense.bias)
  x = 0.5 * x * (1 + erf(x / np.sqrt(2)))
  x = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
  x = x * numpy(head.layer_norm.gamma) + numpy(head.layer_norm.beta)
  want = x @ table.T + numpy(head.output_bias)
  assert got.shape == (batch, n, V)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_embedding_lookup_sums_the_table_gradient_in_float32():
  """Under mixed precision a frequent token's gradient keeps adding up: 512 repeats, each
  with upstream gradient 1 + 1/64 (exact in bfloat16), give 520 exactly (hand-computed).
  A bfloat16 scatter-add stalls: its spacing is 2 past 256 and 4 past 512."""
  from electra_tf2.layers.embeddings import lookup
  ids = np.full((64, 8), 3, np.int32)
  table = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)

  def loss(t):
    rows = lookup(t, tensor(ids), "bfloat16")
    assert dtype_name(rows) == "bfloat16"
    return ops.sum(ops.cast(rows, "float32") * (1.0 + 1.0 / 64.0))

  (grad,) = gradients(loss, table)
  np.testing.assert_array_equal(grad[3], np.full(4, 520.0, np.float32))
  np.testing.assert_array_equal(np.delete(grad, 3, axis=0), 0.0)
  rows = numpy(ops.cast(lookup(tensor(table), tensor(ids[:1]), "bfloat16"), "float32"))
  np.testing.assert_array_equal(rows[0, 0], table[3].astype("bfloat16").astype(np.float32))


def test_embedding_block_table_gradient_sums_in_float32_inside_a_mixed_precision_call():
  """Through EmbeddingBlock's own variable, read inside a mixed_bfloat16 layer call (where
  Keras autocasts variables), 257 repeats of gradient 1 give 257 (hand-computed; not a
  bfloat16 number, so the test fails wherever the gradient is summed into a bfloat16
  table, even where the CPU compiler adds in float32 and rounds once). A bfloat16 copy of
  the table also made the GPU scatter ~4,000x slower (bench/gpu/embedding_grad.py)."""
  from electra_tf2.layers.embeddings import EmbeddingBlock, lookup

  class Rows(EmbeddingBlock):  # the block's own variable, read in its own call
    def call(self, ids):  # pylint: disable=arguments-differ
      return lookup(self.word_embeddings, ids, self.compute_dtype)

  class Model(keras.layers.Layer):  # as in training: the block called inside a model
    def __init__(self):
      super().__init__(dtype="mixed_bfloat16")
      self.block = Rows(8, 4, max_position_embeddings=16, dtype="mixed_bfloat16")

    def build(self, input_shape):
      self.block.build(input_shape)

    def call(self, ids):
      return self.block(ids)

  ids = np.full((1, 257), 3, np.int32)
  layer = Model()
  layer.build(ids.shape)
  names = [v.path for v in layer.trainable_variables]
  values = [numpy(v) for v in layer.trainable_variables]
  word = next(i for i, name in enumerate(names) if name.endswith("word_embeddings"))
  fixed = [tensor(numpy(v)) for v in layer.non_trainable_variables]

  def loss(table):
    trainable = [table if i == word else tensor(v) for i, v in enumerate(values)]
    rows, _ = layer.stateless_call(trainable, fixed, tensor(ids))
    assert dtype_name(rows) == "bfloat16"
    return ops.sum(ops.cast(rows, "float32"))

  (grad,) = gradients(loss, values[word])
  np.testing.assert_array_equal(grad[3], np.full(4, 257.0, np.float32))


@pytest.mark.parametrize("type_vocab_size", [1, 2])
def test_token_types_at_inference_are_the_official_one_hot(type_vocab_size):
  """Inference gathers the token-type rows; training (and the official code) multiplies a
  one-hot by the table, whose row for an id past the table is zeros: a model with one
  token type given pairs (segment 1) adds nothing for segment 1 (before: a gather error)."""
  from electra_tf2.layers.embeddings import EmbeddingBlock
  block = EmbeddingBlock(10, 4, max_position_embeddings=8, type_vocab_size=type_vocab_size,
                         dropout_rate=0.0)
  ids = np.array([[2, 3, 4, 5, 6]], np.int32)
  segments = np.array([[0, 0, 1, 1, 1]], np.int32)
  block(tensor(ids), tensor(segments))
  types = numpy(block.token_type_embeddings)
  one_hot = (segments[..., None] == np.arange(type_vocab_size)).astype(np.float32)  # tf.one_hot
  expected_sum = numpy(block.word_embeddings)[ids] + np.einsum("bst,te->bse", one_hot, types) \
      + numpy(block.position_embeddings)[:5][None]
  mean = expected_sum.mean(-1, keepdims=True)
  var = ((expected_sum - mean) ** 2).mean(-1, keepdims=True)
  expected = (expected_sum - mean) / np.sqrt(var + 1e-12)  # LayerNorm at its initial 1, 0
  for training in (False, True):
    np.testing.assert_allclose(numpy(block(tensor(ids), tensor(segments), training=training)),
                               expected, atol=1e-5)
