"""The encoder against a numpy reference of the official BERT forward pass.

The reference is written here from spec section 4.1: embeddings (word +
token type + position), LayerNorm with epsilon 1e-12, embeddings_project,
post-LN blocks with exact erf GELU and the -10000 additive mask. Runs on every Keras
backend (tests/test_backends.py).
"""

import numpy as np
import pytest
from scipy.special import erf

from backend_marks import BACKEND, numpy, tensor
from electra_tf2.networks import variable_names
from electra_tf2.config.encoder import BertConfig
from electra_tf2.layers import EmbeddingBlock, TransformerLayer
from electra_tf2.networks.encoder import Encoder

CONFIG = BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=24, max_position_embeddings=32)


def np_layer_norm(x, gamma, beta):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + 1e-12) * gamma + beta


def np_gelu(x):
  return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


# The official modeling.get_activation names (model/modeling.py), written in numpy.
NP_ACTIVATIONS = {"gelu": np_gelu, "relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh,
                  "linear": lambda x: x, "": lambda x: x, None: lambda x: x,
                  "ReLU": lambda x: np.maximum(x, 0.0)}


def np_softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def np_encoder(w, ids, mask, segments, n_layers, heads, direction="bidirectional",
               activation="gelu"):
  """w: official-name -> numpy array; returns [batch, seq_len, hidden] (float64)."""
  L = ids.shape[1]
  x = (w["e/embeddings/word_embeddings"][ids] + w["e/embeddings/token_type_embeddings"][segments]
       + w["e/embeddings/position_embeddings"][:L][None])
  x = np_layer_norm(x, w["e/embeddings/LayerNorm/gamma"], w["e/embeddings/LayerNorm/beta"])
  if "e/embeddings_project/kernel" in w:
    x = x @ w["e/embeddings_project/kernel"] + w["e/embeddings_project/bias"]
  allowed = np.broadcast_to(mask[:, None, :].astype(np.float64), (ids.shape[0], L, L)).copy()
  if direction == "ltr":
    allowed *= np.tril(np.ones((L, L)))
  elif direction == "rtl":
    allowed *= np.triu(np.ones((L, L)))
  bias = (1.0 - allowed) * -10000.0
  H = x.shape[-1]
  d = H // heads
  for k in range(n_layers):
    p = f"e/encoder/layer_{k}/"
    dense = lambda t, name: t @ w[p + name + "/kernel"] + w[p + name + "/bias"]
    q, kk, v = (dense(x, f"attention/self/{n}") for n in ("query", "key", "value"))
    ctx = np.zeros_like(x)
    for head in range(heads):
      s = slice(head * d, (head + 1) * d)
      scores = q[..., s] @ np.swapaxes(kk[..., s], 1, 2) / np.sqrt(d) + bias
      ctx[..., s] = np_softmax(scores) @ v[..., s]
    attn = np_layer_norm(dense(ctx, "attention/output/dense") + x,
                         w[p + "attention/output/LayerNorm/gamma"],
                         w[p + "attention/output/LayerNorm/beta"])
    inter = NP_ACTIVATIONS[activation](dense(attn, "intermediate/dense"))
    x = np_layer_norm(dense(inter, "output/dense") + attn, w[p + "output/LayerNorm/gamma"],
                      w[p + "output/LayerNorm/beta"])
  return x


def randomise(variables, seed):
  """Non-trivial values everywhere (biases, LayerNorm) so every term is exercised."""
  rng = np.random.default_rng(seed)
  for v in variables:
    v.assign(rng.normal(0.0, 0.3, v.shape).astype(np.float32) + (1.0 if "gamma" in v.path else 0))


def inputs(seed=0):
  rng = np.random.default_rng(seed)
  ids = rng.integers(0, CONFIG.vocab_size, (3, 7)).astype(np.int32)
  mask = np.ones((3, 7), np.int32)
  mask[1, 5:] = 0
  mask[2, 3:] = 0
  segments = (np.arange(7)[None] >= np.array([[4], [2], [7]])).astype(np.int32)
  return ids, mask, segments


@pytest.mark.parametrize("embedding_size,direction", [
    (16, "bidirectional"), (8, "bidirectional"), (8, "ltr"), (16, "rtl")])
def test_encoder_matches_numpy_reference(embedding_size, direction):
  encoder = Encoder(CONFIG, embedding_size, attention_direction=direction)
  encoder.build()
  randomise(encoder.weights, seed=1)
  names = variable_names.encoder_variable_map(encoder, "e")
  assert ("e/embeddings_project/kernel" in names) == (embedding_size != CONFIG.hidden_size)
  w = {n: numpy(v).astype(np.float64) for n, v in names.items()}
  ids, mask, segments = inputs()
  got = encoder(tensor(ids), tensor(mask), tensor(segments), training=False)
  want = np_encoder(w, ids, mask, segments, CONFIG.num_hidden_layers,
                    CONFIG.num_attention_heads, direction)
  # Compared at real tokens: a padding query whose every key is masked (rtl at the
  # end of a row) sees scores of about -10000, where float32 keeps only ~3 digits.
  real = mask.astype(bool)
  np.testing.assert_allclose(numpy(got)[real], want[real], atol=1e-5, rtol=0)


def test_embeddings_and_one_block_match_numpy_reference():
  """The primitives on their own: embedding block, then one Transformer block."""
  block = EmbeddingBlock(vocab_size=40, embedding_size=16, max_position_embeddings=32)
  layer = TransformerLayer(hidden_size=16, num_attention_heads=4, intermediate_size=24)
  block.build()
  layer.build()
  randomise(block.weights + layer.weights, seed=2)
  ids, mask, segments = inputs(seed=3)
  w = {n.replace("x/", "e/"): numpy(v).astype(np.float64) for n, v in {
      **variable_names.embeddings_variable_map(block, "x/embeddings"),
      **variable_names.transformer_layer_variable_map(layer, "x/encoder/layer_0")}.items()}
  from electra_tf2.layers import attention_bias
  emb = block(tensor(ids), tensor(segments))
  got = layer(emb, attention_bias(tensor(mask), "bidirectional", "float32"))
  want = np_encoder(w, ids, mask, segments, n_layers=1, heads=4)
  np.testing.assert_allclose(numpy(got), want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("embedding_size", [16, 8])
def test_skip_padding_gives_each_rows_states_as_the_reference_and_zeros_at_the_padding(
    embedding_size):
  """skip_padding (the serving graph's lever): the real tokens' states equal the numpy
  reference, each row's as if run alone, and the padding's are zeros; a batch with no
  padding takes the plain graph. JAX refuses it in one line (no run-time shapes)."""
  encoder = Encoder(CONFIG, embedding_size)
  encoder.build()
  randomise(encoder.weights, seed=4)
  w = {n: numpy(v).astype(np.float64)
       for n, v in variable_names.encoder_variable_map(encoder, "e").items()}
  ids, mask, segments = inputs(seed=5)
  if BACKEND == "jax":
    with pytest.raises(ValueError, match="skip_padding needs shapes known only at run time"):
      encoder(tensor(ids), tensor(mask), tensor(segments), skip_padding=True)
    return
  real = mask.astype(bool)
  for rows in (slice(None), slice(0, 1)):  # row 0 alone has no padding
    got = numpy(encoder(tensor(ids[rows]), tensor(mask[rows]), tensor(segments[rows]),
                        skip_padding=True))
    for i in range(got.shape[0]):
      n = int(mask[rows][i].sum())
      alone = np_encoder(w, ids[rows][i:i + 1, :n], mask[rows][i:i + 1, :n],
                         segments[rows][i:i + 1, :n], CONFIG.num_hidden_layers,
                         CONFIG.num_attention_heads)
      np.testing.assert_allclose(got[i, :n], alone[0], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(got[~real[rows]], 0.0)
  with pytest.raises(ValueError, match="inference with bidirectional attention"):
    Encoder(CONFIG, attention_direction="ltr")(tensor(ids), tensor(mask), tensor(segments),
                                               skip_padding=True)


def test_dropout_only_in_training():
  encoder = Encoder(CONFIG.replace(hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5))
  ids, mask, segments = (tensor(a) for a in inputs())
  a = numpy(encoder(ids, mask, segments, training=False))
  b = numpy(encoder(ids, mask, segments, training=False))
  c = numpy(encoder(ids, mask, segments, training=True))
  np.testing.assert_array_equal(a, b)
  assert np.abs(a - c).max() > 1e-3


def test_shared_embeddings_are_one_variable():
  shared = EmbeddingBlock(vocab_size=40, embedding_size=8, name="embeddings")
  disc = Encoder(CONFIG, 8, embeddings=shared, name="electra")
  gen = Encoder(CONFIG.replace(hidden_size=4, num_attention_heads=1, intermediate_size=16), 8,
                embeddings=shared, name="generator")
  disc.build()
  gen.build()
  assert gen.embedding_table is disc.embedding_table
  assert not gen.owns_embeddings
  with pytest.raises(ValueError, match="shared embeddings have size 8"):
    Encoder(CONFIG, 16, embeddings=shared)


@pytest.mark.parametrize("activation", sorted(NP_ACTIVATIONS, key=str))
def test_every_official_activation_in_the_encoder_and_heads(activation):
  """hidden_act drives the feed-forward and the MLM/discriminator head denses, as the
  official get_activation: gelu, relu, tanh, linear, "" and null (case-insensitive)."""
  from electra_tf2.layers import DiscriminatorHead, MaskedLMHead
  config = CONFIG.replace(hidden_act=activation)
  config.validate("test")
  encoder = Encoder(config, 8)
  encoder.build()
  randomise(encoder.weights, seed=4)
  w = {n: numpy(v).astype(np.float64)
       for n, v in variable_names.encoder_variable_map(encoder, "e").items()}
  ids, mask, segments = inputs(seed=5)
  got = encoder(tensor(ids), tensor(mask), tensor(segments))
  want = np_encoder(w, ids, mask, segments, CONFIG.num_hidden_layers,
                    CONFIG.num_attention_heads, activation=activation)
  real = mask.astype(bool)
  np.testing.assert_allclose(numpy(got)[real], want[real], atol=1e-5, rtol=0)

  act = NP_ACTIVATIONS[activation]
  hidden = np.random.default_rng(6).normal(0, 1, (2, 3, 16)).astype(np.float32)
  head = DiscriminatorHead(16, hidden_act=activation)
  head.build(hidden.shape)
  randomise(head.weights, seed=7)
  k, b, k1, b1 = (numpy(v).astype(np.float64) for v in
                  (head.dense.kernel, head.dense.bias, head.dense_1.kernel, head.dense_1.bias))
  np.testing.assert_allclose(numpy(head(tensor(hidden))),
                             (act(hidden @ k + b) @ k1 + b1)[..., 0], atol=1e-4, rtol=1e-5)
  mlm = MaskedLMHead(8, 40, hidden_act=activation)
  mlm.build(hidden.shape)
  randomise(mlm.weights, seed=8)
  table = np.random.default_rng(9).normal(0, 1, (40, 8))
  k, b, g, beta, out_b = (numpy(v).astype(np.float64) for v in (
      mlm.dense.kernel, mlm.dense.bias, mlm.layer_norm.gamma, mlm.layer_norm.beta,
      mlm.output_bias))
  want = np_layer_norm(act(hidden @ k + b), g, beta) @ table.T + out_b
  np.testing.assert_allclose(numpy(mlm(tensor(hidden), tensor(table, "float32"))),
                             want, atol=1e-4, rtol=1e-5)


def test_unknown_activation_is_a_config_error():
  from electra_tf2.config.hparams import ConfigError
  with pytest.raises(ConfigError, match="hidden_act: unsupported activation 'swish'"):
    CONFIG.replace(hidden_act="swish").validate("model_hparam_overrides")
