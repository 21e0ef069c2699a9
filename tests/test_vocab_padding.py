"""`vocab_pad_multiple` (issue #59 item 3): the MLM and cloze heads multiply against the word
embeddings padded to a multiple of 64 or 128 rows, and no number changes.

Oracles: the unpadded pre-trainer with the same weights, features and seed (every output
bitwise; gradients within float32 rounding), numpy's logits of the head, and the unpadded
model's exports. The pre-trainers' comparison runs on TensorFlow here and on JAX in a
subprocess where TensorFlow cannot be imported, which also reads the padded width in XLA's
compiled HLO.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator, List

import keras
import numpy as np
import pytest

import backend_parity
from electra_tf2.config.hparams import ConfigError
from electra_tf2.config.pretraining import (ObjectiveConfig, PretrainingConfig,
                                            resolve_pretraining_config)
from electra_tf2.layers import MaskedLMHead
from electra_tf2.utils import backend_ops

VOCAB = 1000  # backend_parity's tiny pre-trainer: 24 padding rows at 64 and at 128


@contextlib.contextmanager
def matmul_widths(widths: List[int]) -> Iterator[None]:
  """Appends the row count of every `matmul_transpose_b`'s right operand to `widths`."""
  real = backend_ops.matmul_transpose_b
  def recorded(a, b):
    widths.append(int(b.shape[0]))
    return real(a, b)
  backend_ops.matmul_transpose_b = recorded
  try:
    yield
  finally:
    backend_ops.matmul_transpose_b = real


def check_padding_changes_no_number(objective: str, multiple: int) -> None:
  """The pre-trainer padded to `multiple` against the unpadded one with its weights.

  Outputs (losses, masked positions, sampled tokens, discriminator probabilities) must be
  bitwise equal: each logit is the same dot product over E, only the matmul is wider, and
  the logits are sliced back before any softmax or draw. Gradients within float32 rounding:
  the heads' input gradient sums over the padded width (zeros added in another blocking).
  """
  base = backend_parity.model_for(objective)
  padded = backend_parity.model_for(objective, vocab_pad_multiple=multiple)
  # The rule: the variables keep vocab_size rows, so checkpoints and exports are unchanged.
  assert [tuple(w.shape) for w in padded.weights] == [tuple(w.shape) for w in base.weights]
  padded.set_weights(base.get_weights())
  batch = backend_parity.features()
  results = []
  for model in (base, padded):
    widths: List[int] = []
    with matmul_widths(widths):
      results.append((*backend_parity.forward_and_gradients(model, batch), widths))
  (want, want_grads, base_widths), (got, grads, widths) = results
  padded_width = -(-VOCAB // multiple) * multiple
  assert VOCAB in base_widths and padded_width in widths and VOCAB not in widths
  assert got.keys() == want.keys()
  for name, value in want.items():
    np.testing.assert_array_equal(got[name], value, err_msg=name)
  assert want["masked_lm_weights"].sum() > 0  # slots were scored (and sampled)
  # Relative to each variable's largest gradient, floored at 1e-5 of the model's largest
  # (the attention key biases' gradients are 0 in exact arithmetic, ~1e-11 in float32).
  floor = 1e-5 * max(float(np.max(np.abs(g))) for g in want_grads)
  for i, (grad, want_grad) in enumerate(zip(grads, want_grads)):
    scale = max(float(np.max(np.abs(want_grad))), floor)
    assert np.max(np.abs(grad - want_grad)) <= 1e-5 * scale, padded.trainable_variables[i].path


def check_xla_keeps_the_padded_width() -> None:
  """On JAX, the compiled step of a head padded to 64 still multiplies 1024 columns wide
  (XLA could fold slice(dot(h, pad(table))) back to dot(h, table): the option then gains
  nothing), forward and in the table's gradient."""
  import jax  # pylint: disable=g-import-not-at-top
  head = MaskedLMHead(8, VOCAB, vocab_pad_multiple=64)
  head.build((None, None, 16))
  weights = [v.value for v in head.trainable_variables]
  def loss(table, hidden):
    logits, _ = head.stateless_call(weights, [], hidden, table)
    return jax.nn.logsumexp(logits, -1).sum()
  hidden, table = np.ones((2, 3, 16), "float32"), np.ones((VOCAB, 8), "float32")
  compiled = jax.jit(jax.grad(loss)).lower(table, hidden).compile().as_text()
  shapes = [line.split(" dot(")[0] for line in compiled.splitlines() if " dot(" in line]
  assert any(s.endswith("f32[6,1024]{1,0}") for s in shapes), shapes  # logits, 2 x 3 slots
  assert any(s.endswith("f32[1024,8]{1,0}") for s in shapes), shapes  # the table's gradient
  assert not any("1000" in s for s in shapes), shapes


@pytest.mark.parametrize("objective, multiple", [("electra", 64), ("electric", 128),
                                                 ("bert", 128)])
def test_padded_pretrainer_changes_no_number(objective, multiple):
  check_padding_changes_no_number(objective, multiple)


@pytest.mark.slow
def test_padded_pretrainer_changes_no_number_on_jax():
  """`check_padding_changes_no_number` and `check_xla_keeps_the_padded_width` on JAX."""
  env = dict(os.environ, KERAS_BACKEND="jax", ELECTRA_BLOCK_TENSORFLOW="1", JAX_PLATFORMS="cpu")
  script = ("import runpy, sys; sys.path.insert(0, 'tests'); import block_tensorflow; "
            "runpy.run_path('tests/test_vocab_padding.py', run_name='__main__')")
  result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  assert "jax: no number changed" in result.stdout


def test_head_logits_are_numpys_over_the_real_vocabulary():
  """Padded to 64, a 50-token head's logits are `[batch, n, 50]`: numpy's LN(dense(h)) @
  table^T + bias, and bitwise the unpadded head's; the padding is not a variable."""
  rng = np.random.default_rng(0)
  hidden = rng.normal(size=(2, 3, 16)).astype("float32")
  table = rng.normal(size=(50, 8)).astype("float32")
  plain, padded = MaskedLMHead(8, 50), MaskedLMHead(8, 50, vocab_pad_multiple=64)
  for head in (plain, padded):
    head.build((None, None, 16))
  plain.output_bias.assign(rng.normal(size=50).astype("float32"))
  padded.set_weights(plain.get_weights())
  assert padded.padded_vocab_size == 64 and padded.output_bias.shape == (50,)
  normed = keras.ops.convert_to_numpy(padded.layer_norm(padded.dense(hidden)))
  want = normed @ table.T + keras.ops.convert_to_numpy(padded.output_bias)
  widths: List[int] = []
  with matmul_widths(widths):
    got = keras.ops.convert_to_numpy(padded(hidden, table))
  assert widths == [64] and got.shape == (2, 3, 50)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  np.testing.assert_array_equal(got, keras.ops.convert_to_numpy(plain(hidden, table)))
  clone = MaskedLMHead.from_config(padded.get_config())
  assert clone.vocab_pad_multiple == 64 and clone.get_config() == padded.get_config()


@pytest.mark.parametrize("vocab, multiple, padded", [(30522, 64, 30528), (30522, 128, 30592),
                                                     (30522, 1, 30522), (128, 64, 128)])
def test_padded_vocab_size_rounds_up(vocab, multiple, padded):
  assert MaskedLMHead(8, vocab, vocab_pad_multiple=multiple).padded_vocab_size == padded


def test_config_accepts_1_64_128_and_refuses_the_rest_in_one_line():
  for multiple in (1, 64, 128):
    config = resolve_pretraining_config("electra_small", None,
                                        {"debug": True, "vocab_pad_multiple": multiple})
    assert config.objective.vocab_pad_multiple == multiple
  for bad in (0, 32, 100, -64, 256):
    with pytest.raises(ConfigError, match=f"^vocab_pad_multiple must be 1 \\(off\\), 64 or 128, "
                                          f"got {bad}$"):
      resolve_pretraining_config("electra_small", None, {"debug": True, "vocab_pad_multiple": bad})
  with pytest.raises(ConfigError, match="vocab_pad_multiple must be of type int"):
    resolve_pretraining_config("electra_small", None, {"debug": True, "vocab_pad_multiple": 64.0})


def test_configs_saved_before_the_option_mean_off():
  """pretrain_config.json and a Keras pre-trainer's objective written without it: 1."""
  config = resolve_pretraining_config("electra_small", None, {"debug": True})
  saved = config.to_dict()
  del saved["vocab_pad_multiple"]
  assert PretrainingConfig.from_dict(saved) == config
  objective = config.objective.to_dict()
  del objective["vocab_pad_multiple"]
  assert ObjectiveConfig.from_dict(objective).vocab_pad_multiple == 1


def test_exports_and_checkpoints_are_the_unpadded_models(tmp_path):
  """Every official-name writer and exporter reads `pretrainer_variable_map`; the Hugging Face
  export (discriminator and generator) of a padded model is the unpadded one's, and a
  TensorFlow checkpoint of one restores into the other."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from electra_tf2.conversion.hf_export import hf_state_dict
  from electra_tf2.networks import variable_names
  base = backend_parity.model_for("electra")
  padded = backend_parity.model_for("electra", vocab_pad_multiple=128)
  padded.set_weights(base.get_weights())
  names = variable_names.pretrainer_variable_map(padded)
  assert {k: v.shape for k, v in names.items()} == {
      k: v.shape for k, v in variable_names.pretrainer_variable_map(base).items()}
  assert names["electra/embeddings/word_embeddings"].shape[0] == VOCAB
  assert names["generator_predictions/output_bias"].shape == (VOCAB,)
  for generator in (False, True):
    want, got = hf_state_dict(base, generator), hf_state_dict(padded, generator)
    assert got.keys() == want.keys()
    for name, value in want.items():
      np.testing.assert_array_equal(got[name], value, err_msg=name)
  path = tf.train.Checkpoint(model=padded).save(str(tmp_path / "ckpt"))
  fresh = backend_parity.model_for("electra")
  tf.train.Checkpoint(model=fresh).read(path).assert_existing_objects_matched()
  for a, b in zip(fresh.weights, base.weights):
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))


if __name__ == "__main__":  # the JAX run (test_padded_pretrainer_changes_no_number_on_jax)
  for objective_, multiple_ in (("electra", 64), ("electric", 128)):
    check_padding_changes_no_number(objective_, multiple_)
  check_xla_keeps_the_padded_width()
  print(f"{keras.backend.backend()}: no number changed")
