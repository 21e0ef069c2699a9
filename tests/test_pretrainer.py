"""The pre-training model: one training step per objective, and save/load round trips."""

import numpy as np
import pytest
import tensorflow as tf
import keras

import backend_parity
from electra_tf2.networks import variable_names
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.config.encoder import BertConfig
from electra_tf2.layers import DiscriminatorHead, EmbeddingBlock, MaskedLMHead, TransformerLayer
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.networks.encoder import Encoder

OBJECTIVES = {
    **backend_parity.OBJECTIVES,
    "uniform_generator": {"uniform_generator": True},
    "tied_generator": {"untied_generator": False, "generator_hidden_size": 1.0},
}


def debug_features(batch=2, seq_len=16, seed=0):
  """Real-looking rows: [CLS] words [SEP] words [SEP] padding (the BERT vocabulary's ids)."""
  rows = backend_parity.features(batch, seq_len, seed, word_ids=(1000, 30000))
  return {name: tf.constant(value) for name, value in rows.items()}


def debug_model(**hparams):
  config = resolve_pretraining_config("electra_small", None, dict(debug=True, **hparams))
  keras.utils.set_random_seed(0)
  return ElectraPretrainer.from_pretraining_config(config)


@pytest.mark.parametrize("objective", sorted(OBJECTIVES))
def test_one_training_step(objective):
  model = debug_model(**OBJECTIVES[objective])
  names = variable_names.pretrainer_variable_map(model)
  before = {n: v.numpy().copy() for n, v in names.items()}
  optimizer = keras.optimizers.Adam(1e-3)
  features = debug_features()
  with tf.GradientTape() as tape:
    out = model(features, training=True, seed=tf.constant([4, 2]))
  grads = tape.gradient(out["total_loss"], model.trainable_variables)
  optimizer.apply_gradients(zip(grads, model.trainable_variables))

  for key in ("total_loss", "mlm_loss", "disc_loss", "cloze_loss"):
    if key in out:
      assert np.isfinite(out[key].numpy()), key
  assert ("disc_loss" in out) == (objective != "bert")
  assert ("cloze_loss" in out) == (objective == "electric")
  assert all(g is not None and np.all(np.isfinite(tf.convert_to_tensor(g).numpy()))
             for g in grads)
  changed = {n for n in names if not np.array_equal(before[n], names[n].numpy())}
  # Every scope that the objective trains has moved.
  scopes = {n.split("/")[0] for n in changed}
  want = {"electra"}
  if objective in ("electra", "uniform_generator", "tied_generator", "electric"):
    want.add("discriminator_predictions")
  if objective == "electra":
    want |= {"generator", "generator_predictions"}
  if objective == "electric":
    want |= {"generator_ltr", "generator_rtl", "cloze_predictions"}
  if objective in ("bert", "tied_generator"):
    want.add("generator_predictions")
  assert scopes == want
  # The uniform generator's MLM loss is the constant log V.
  if objective == "uniform_generator":
    assert out["mlm_loss"].numpy() == pytest.approx(np.log(30522), rel=1e-5)


def test_seed_makes_the_forward_pass_deterministic():
  model = debug_model()
  features = debug_features()
  a = model(features, training=False, seed=tf.constant([1, 1]))
  b = model(features, training=False, seed=tf.constant([1, 1]))
  c = model(features, training=False, seed=tf.constant([1, 2]))
  np.testing.assert_array_equal(a["fake_input_ids"].numpy(), b["fake_input_ids"].numpy())
  assert a["total_loss"].numpy() == b["total_loss"].numpy()
  assert not np.array_equal(a["masked_lm_positions"].numpy(), c["masked_lm_positions"].numpy())


def test_generator_shares_embeddings_and_ties_output():
  model = debug_model()
  assert model.generator.embedding_table is model.discriminator.embedding_table
  untied = debug_model(untied_generator_embeddings=True)
  assert untied.generator.embedding_table is not untied.discriminator.embedding_table


# ---------------------------------------------------------------------------
# get_config / from_config and weight save/load round trips
# ---------------------------------------------------------------------------

SMALL = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=32)


def _round_trip(layer, call):
  """from_config(get_config()) rebuilds the same layer; saved weights reload exactly."""
  config = layer.get_config()
  clone = type(layer).from_config(config)
  assert clone.get_config() == config
  serialized = keras.saving.serialize_keras_object(layer)
  assert keras.saving.deserialize_keras_object(serialized).get_config() == config
  clone.build() if not clone.built else None
  clone.set_weights(layer.get_weights())
  np.testing.assert_array_equal(call(layer), call(clone))


def test_layer_round_trips():
  ids = tf.constant([[1, 5, 7, 2]])
  mask = tf.constant([[1, 1, 1, 0]])
  seg = tf.constant([[0, 0, 1, 1]])
  block = EmbeddingBlock(vocab_size=50, embedding_size=8)
  block.build()
  _round_trip(block, lambda l: l(ids, seg).numpy())
  layer = TransformerLayer(16, 2, 32)
  layer.build()
  x = tf.random.stateless_normal([1, 4, 16], seed=[1, 2])
  from electra_tf2.layers import attention_bias
  bias = attention_bias(mask, "bidirectional", tf.float32)
  _round_trip(layer, lambda l: l(x, bias).numpy())
  encoder = Encoder(SMALL, 8, attention_direction="ltr")
  encoder.build()
  _round_trip(encoder, lambda l: l(ids, mask, seg).numpy())
  head = MaskedLMHead(8, 50)
  head.build((None, None, 16))
  table = tf.random.stateless_normal([50, 8], seed=[3, 4])
  clone_call = lambda l: l(x, table).numpy()
  config = head.get_config()
  clone = MaskedLMHead.from_config(config)
  clone.build((None, None, 16))
  clone.set_weights(head.get_weights())
  np.testing.assert_array_equal(clone_call(head), clone_call(clone))
  disc = DiscriminatorHead(16)
  disc.build((None, None, 16))
  clone = DiscriminatorHead.from_config(disc.get_config())
  clone.build((None, None, 16))
  clone.set_weights(disc.get_weights())
  np.testing.assert_array_equal(disc(x).numpy(), clone(x).numpy())


def test_pretrainer_config_and_weights_round_trip(tmp_path):
  model = debug_model(electric_objective=True)
  clone = ElectraPretrainer.from_config(model.get_config())
  assert clone.config.to_dict() == model.config.to_dict()
  path = str(tmp_path / "model.weights.h5")
  model.save_weights(path)
  clone.load_weights(path)
  features = debug_features()
  a = model(features, seed=tf.constant([5, 5]))
  b = clone(features, seed=tf.constant([5, 5]))
  assert a["total_loss"].numpy() == b["total_loss"].numpy()
  # A tf.train.Checkpoint (what the training driver writes) restores too.
  ckpt_path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
  fresh = ElectraPretrainer.from_config(model.get_config())
  tf.train.Checkpoint(model=fresh).read(ckpt_path).assert_existing_objects_matched()
  c = fresh(features, seed=tf.constant([5, 5]))
  assert a["total_loss"].numpy() == c["total_loss"].numpy()


def test_loss_denominators_are_the_batch_weight_sums():
  """Known before masking, they equal the sums the official losses divide by."""
  from electra_tf2.pretraining import objectives
  model = debug_model(electric_objective=True)
  features = debug_features(batch=4, seq_len=16, seed=3)
  dens = objectives.loss_denominators(model.objective, features)
  out = model(features, seed=tf.constant([9, 9]))
  assert dens["mlm"].numpy() == out["masked_lm_weights"].numpy().sum()
  assert dens["disc"].numpy() == features["input_mask"].numpy().sum()
  ids, mask = features["input_ids"].numpy(), features["input_mask"].numpy()
  assert dens["cloze"].numpy() == np.sum((mask == 1) & ~np.isin(ids, [101, 102, 103]))
  again = model(features, seed=tf.constant([9, 9]), denominators=dens)
  np.testing.assert_allclose(again["total_loss"].numpy(), out["total_loss"].numpy(), rtol=1e-6)


TRUNCATED_NORMAL_STD = 0.02 * 0.8796256610342398  # std of N(0, 0.02) cut at 2 sigma


@pytest.mark.parametrize("objective", ["electra", "electric"])
def test_initial_weights_follow_the_official_initializers(objective):
  """Every variable has the distribution of its official initialiser (model/modeling.py), drawn
  independently: truncated normal(0.02), glorot uniform, zeros or ones."""
  model = debug_model(**OBJECTIVES[objective])
  names = variable_names.pretrainer_variable_map(model)
  glorot = ("embeddings_project/kernel", "discriminator_predictions/dense_1/kernel")
  first_values = {}
  for name, variable in names.items():
    value = variable.numpy().astype(np.float64)
    if name.endswith("LayerNorm/gamma"):
      np.testing.assert_array_equal(value, 1.0, err_msg=name)
      continue
    if name.endswith(("/bias", "LayerNorm/beta", "output_bias")):
      np.testing.assert_array_equal(value, 0.0, err_msg=name)
      continue
    if name.endswith(glorot):
      fan_in, fan_out = value.shape
      limit = np.sqrt(6.0 / (fan_in + fan_out))
      assert np.abs(value).max() <= limit, name
      expected_std = limit / np.sqrt(3.0)
    else:
      assert np.abs(value).max() <= 0.04 + 1e-7, name
      expected_std = TRUNCATED_NORMAL_STD
    # Tolerance: 5 standard errors of a standard deviation estimate (plus 2% slack).
    tolerance = 5 * expected_std / np.sqrt(2 * value.size) + 0.02 * expected_std
    assert abs(value.std() - expected_std) < tolerance, (name, value.std(), expected_std)
    assert abs(value.mean()) < 5 * expected_std / np.sqrt(value.size), name
    first_values[name] = tuple(np.round(value.reshape(-1)[:4], 7))
  # Independent draws: no two variables start with the same values (a Keras
  # initializer instance shared by two weights would give both the same stream).
  by_values = {}
  for name, key in first_values.items():
    assert key not in by_values, f"{name} and {by_values[key]} share their initial values"
    by_values[key] = name
