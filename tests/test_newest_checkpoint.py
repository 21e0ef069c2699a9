"""A model directory holding both checkpoint formats: every reader takes the highest step.

One tiny TensorFlow run (2 steps) is converted to a portable checkpoint; from it, two
directories are made:
- "jax went on": a portable checkpoint of step 4 with other weights (what a JAX run that
  continued writes) beside the TensorFlow `ckpt-2`;
- "tensorflow went on": TensorFlow pre-training continued to `ckpt-4` beside the older
  `portable-2.npz`.
Then the TensorFlow trainer, the JAX trainer's start, `from_pretrained`, `hf-export` and
`convert to-official` are asked to read them.
"""

import os
import shutil
import sys

import numpy as np
import pytest

from electra_tf2.checkpoints import directories, portable
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.conversion import convert, hf_export
from electra_tf2.training import jax_pretraining
from electra_tf2.training import tf_pretraining as pretraining
from tests.fixtures import write_pretraining_data

TINY = {"debug": True, "vocab_size": 64, "max_seq_length": 32, "train_batch_size": 8,
        "num_train_steps": 2, "embedding_size": 16, "save_checkpoints_steps": 2,
        "model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2,
                                   "num_attention_heads": 2, "intermediate_size": 64}}
PROBS = "replaced_probability"
TEXTS = ["w1 w2 w3 w4 w5", "w6 w7"]


def config(data, model_dir, steps):
  return resolve_pretraining_config("electra_small", data, dict(
      TINY, model_dir=model_dir, num_train_steps=steps))


@pytest.fixture(scope="module")
def base(tmp_path_factory):
  """(data dir, a model directory with ckpt-2 and portable-2.npz of the same weights)."""
  root = tmp_path_factory.mktemp("newest")
  data = str(root / "data")
  write_pretraining_data(data, num_examples=32, seq_len=32, vocab_size=64, bert_ids=False)
  model_dir = str(root / "base")
  pretraining.run_pretraining(config(data, model_dir, 2))
  convert.write_portable_checkpoint(model_dir)
  return data, model_dir


@pytest.fixture
def jax_went_on(base, tmp_path):
  """`ckpt-2` and a newer `portable-4.npz` whose weights differ (scaled by 1.5)."""
  data, model_dir = base
  target = str(tmp_path / "jax_went_on")
  shutil.copytree(model_dir, target)
  arrays, state = portable.load(os.path.join(target, "portable-2.npz"))
  for name in list(arrays):
    if name != "global_step" and arrays[name].dtype.kind == "f":
      arrays[name] = arrays[name] * np.asarray(1.5, arrays[name].dtype)
  arrays["global_step"] = np.asarray(4, arrays["global_step"].dtype)
  os.remove(os.path.join(target, "portable-2.npz"))
  os.remove(os.path.join(target, "portable-2.json"))
  portable.save(target, 4, arrays, state)
  return data, target


@pytest.fixture(scope="module")
def tensorflow_went_on(base, tmp_path_factory):
  """`portable-2.npz` and a newer `ckpt-4` (TensorFlow pre-training continued)."""
  data, model_dir = base
  target = str(tmp_path_factory.mktemp("tf_went_on") / "dir")
  shutil.copytree(model_dir, target)
  pretraining.run_pretraining(config(data, target, 4))
  return data, target


def test_newest_checkpoint_takes_the_highest_step_of_either_format(
    jax_went_on, tensorflow_went_on, monkeypatch):
  _, jax_dir = jax_went_on
  _, tf_dir = tensorflow_went_on
  for tensorflow_loaded in (True, False):  # (without TensorFlow: the .index files' names)
    if not tensorflow_loaded:
      monkeypatch.delitem(sys.modules, "tensorflow")
    newest = directories.newest_checkpoint(jax_dir)
    assert (os.path.basename(newest.path), newest.format, newest.step) == (
        "portable-4.npz", "portable", 4)
    assert os.path.basename(newest.passed_over) == "ckpt-2"
    newest = directories.newest_checkpoint(tf_dir)
    assert (os.path.basename(newest.path), newest.format, newest.step) == (
        "ckpt-4", "TensorFlow", 4)
    assert os.path.basename(newest.passed_over) == "portable-2.npz"
  assert directories.newest_checkpoint(os.path.dirname(jax_dir)) is None


def test_tensorflow_resumes_from_a_newer_portable_checkpoint(jax_went_on, capsys):
  """TensorFlow after JAX: weights, slots and step of portable-4, not ckpt-2."""
  data, model_dir = jax_went_on
  result = pretraining.run_pretraining(config(data, model_dir, 5))
  out, err = capsys.readouterr()
  newer = os.path.join(model_dir, "portable-4.npz")
  assert (f"resumed from {newer} (a portable checkpoint) at step 4; the input stream starts "
          "afresh") in out
  assert f"resumed from {os.path.join(model_dir, 'ckpt-2')}" not in out
  assert (f"{model_dir} holds both checkpoint formats: reading portable-4.npz (portable, "
          "step 4), the newest; ckpt-2 (TensorFlow, step 2) is older") in err
  assert result["step"] == 5 and result["history"][0]["step"] == 5  # one step trained


class _StubRun:
  """What jax_pretraining._start reads of a run: its config (the directory's own, so that
  the shape check passes), and restore."""

  def __init__(self, model_dir):
    self.config = directories.load_pretraining_config(model_dir).replace(model_dir=model_dir)
    self.restored = []

  def restore(self, path, reader):
    self.restored.append(path)
    return directories.checkpoint_step(path)


def test_jax_refuses_a_newer_tensorflow_checkpoint(tensorflow_went_on):
  """JAX after TensorFlow: ckpt-4 is newer than portable-2, so resuming from the portable
  one would discard two steps; the JAX trainer says how to convert instead."""
  _, model_dir = tensorflow_went_on
  run = _StubRun(model_dir)
  with pytest.raises(jax_pretraining.JaxTrainingError) as raised:
    jax_pretraining._start(run, None)  # pylint: disable=protected-access
  message = str(raised.value)
  assert "ckpt-4" in message and "portable-2.npz" in message
  assert f"electra convert to-portable --model-dir {model_dir}" in message
  assert run.restored == []


def test_jax_resumes_from_the_newest_portable_checkpoint(jax_went_on, tensorflow_went_on,
                                                        tmp_path, capsys):
  _, model_dir = jax_went_on
  run = _StubRun(model_dir)
  assert jax_pretraining._start(run, None) == 4  # pylint: disable=protected-access
  assert run.restored == [os.path.join(model_dir, "portable-4.npz")]
  assert "reading portable-4.npz (portable, step 4), the newest" in capsys.readouterr().err
  # A TensorFlow checkpoint converted (the same step in both formats): the portable one.
  _, tf_dir = tensorflow_went_on
  converted = str(tmp_path / "converted")
  shutil.copytree(tf_dir, converted)
  convert.write_portable_checkpoint(converted)
  run = _StubRun(converted)
  assert jax_pretraining._start(run, None) == 4  # pylint: disable=protected-access
  assert run.restored == [os.path.join(converted, "portable-4.npz")]


def test_from_pretrained_reads_the_newer_portable_checkpoint(jax_went_on, capsys):
  """Probabilities equal those of portable-4 named explicitly, and differ from ckpt-2's."""
  from electra_tf2.models.discriminator import Discriminator  # pylint: disable=g-import-not-at-top
  _, model_dir = jax_went_on
  probabilities = Discriminator.from_pretrained(model_dir).predict(TEXTS, verbose=0)[PROBS]
  line = capsys.readouterr().err
  newer = Discriminator.from_pretrained(os.path.join(model_dir, "portable-4.npz"))
  older = Discriminator.from_pretrained(os.path.join(model_dir, "ckpt-2"))
  np.testing.assert_array_equal(probabilities, newer.predict(TEXTS, verbose=0)[PROBS])
  assert np.max(np.abs(probabilities - older.predict(TEXTS, verbose=0)[PROBS])) > 1e-3
  assert "holds both checkpoint formats: reading portable-4.npz (portable, step 4)" in line


def test_hf_export_and_to_official_read_the_newer_checkpoint(jax_went_on, tmp_path, capsys):
  """`hf-export` and `convert to-official` write portable-4's weights and step."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  _, model_dir = jax_went_on
  arrays, _ = portable.load(os.path.join(model_dir, "portable-4.npz"))
  prefix = convert.export_official_checkpoint(model_dir, str(tmp_path / "official"))
  assert prefix.endswith("model.ckpt-4")
  name = "electra/embeddings/word_embeddings"
  np.testing.assert_array_equal(tf.train.load_checkpoint(prefix).get_tensor(name), arrays[name])
  assert hf_export.main(["--model-dir", model_dir, "--output-dir", str(tmp_path / "hf")]) == 0
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  weights = load_file(str(tmp_path / "hf" / "model.safetensors"))
  np.testing.assert_array_equal(weights["electra.embeddings.word_embeddings.weight"],
                                arrays[name])
  assert capsys.readouterr().err.count("reading portable-4.npz (portable, step 4)") == 2
