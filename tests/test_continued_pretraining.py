"""Continued pre-training from a released-style checkpoint (official layout, no Adam slots).

The oracle for the learning rate is the official schedule itself
(model/optimization.py:35-44: `tf.compat.v1.train.polynomial_decay` of the
global step times the warm-up factor); the oracle for the first loss is the
converted model evaluated on the first batch with the first step's seed.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.models import model_directory
from electra_tf2.conversion import convert
from electra_tf2.pretraining import objectives
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.training import tf_pretraining as pretraining
from tests.test_pretraining import NO_DROPOUT, TINY, tiny_data

RELEASED_STEP = 4_000_000  # the released ELECTRA-Small++ checkpoint's global_step


def official_rate(learning_rate, step, num_train_steps, warmup_steps, power=1.0):
  """The official schedule at `step` (model/optimization.py:35-44), run by TF's own ops."""
  decayed = tf.compat.v1.train.polynomial_decay(learning_rate, step, num_train_steps,
                                                end_learning_rate=0.0, power=power,
                                                cycle=False)
  decayed = decayed() if callable(decayed) else decayed
  return float(decayed * tf.minimum(1.0, tf.cast(step, tf.float32) / warmup_steps))


def released_style_model_dir(tmp_path, data, hparams) -> str:
  """A model at step 4e6 -> `convert to-official` (no slots) -> `convert to-tf2`."""
  config = resolve_pretraining_config("electra_small", data, hparams)
  ours = str(tmp_path / "trained")
  convert.write_model_dir(ElectraPretrainer.from_pretraining_config(config), config, ours,
                          global_step=RELEASED_STEP)
  official = str(tmp_path / "released")
  assert convert.main(["to-official", "--model-dir", ours, "--output-dir", official]) == 0
  names = [name for name, _ in tf.train.list_variables(official)]
  assert "global_step" in names and not any(n.endswith(("adam_m", "adam_v")) for n in names)
  assert convert.main(["to-tf2", "--checkpoint", official, "--model-name", "electra_small",
                       "--hparams", json.dumps(hparams), "--data-dir", data]) == 0
  return config.model_dir


def train_recording_rates(config):
  """Trains as run_pretraining does; returns (summary, the rate each compiled loop started at)."""
  run = pretraining.PretrainingRun(config)
  rates = []
  build = run._build_train_loop  # pylint: disable=protected-access

  def recording_build():
    loop = build()

    def recording_loop(iterator, num_steps):
      rates.append(float(run.base_optimizer.learning_rate))
      return loop(iterator, num_steps)
    return recording_loop
  run._build_train_loop = recording_build  # pylint: disable=protected-access
  return run.train(), rates


def first_batch_loss(config, model_dir, step) -> dict:
  """The converted model's losses on the first training batch with the seed of `step`."""
  run = pretraining.PretrainingRun(config)
  model = model_directory.restore_pretrainer(model_dir)
  batch = next(run._worker_iterator(is_training=True))  # pylint: disable=protected-access
  seed = tf.constant([step, config.seed * 65536], tf.int32)
  denominators = objectives.loss_denominators(config, batch)
  outputs = model(batch, training=False, seed=seed, denominators=denominators)
  return {k: float(outputs[k]) for k in ("total_loss", "mlm_loss", "disc_loss")}


def test_the_official_recipe_goes_on_from_the_released_step(tmp_path, capsys):
  """README recipe: num_train_steps 4e6 + N, the rate scaled by (4e6 + N) / N."""
  data = tiny_data(tmp_path)
  n, lr, warmup = 3, 2e-3, 10000
  architecture = dict(TINY, model_hparam_overrides=NO_DROPOUT)
  model_dir = released_style_model_dir(tmp_path, data, architecture)
  total = RELEASED_STEP + n
  hparams = dict(architecture, num_train_steps=total, learning_rate=lr * total / n,
                 num_warmup_steps=warmup, iterations_per_loop=1, model_dir=model_dir)
  config = resolve_pretraining_config("electra_small", data, hparams)
  expected_loss = first_batch_loss(config, model_dir, RELEASED_STEP)
  capsys.readouterr()
  result, rates = train_recording_rates(config)
  out = capsys.readouterr().out
  checkpoint = os.path.join(model_dir, f"ckpt-{RELEASED_STEP}")
  assert f"resumed from {checkpoint} at step {RELEASED_STEP}" in out
  fresh = [line for line in out.splitlines() if "holds no optimizer state" in line]
  assert fresh == [f"{checkpoint} holds no optimizer state: Adam starts with fresh slots and "
                   f"the learning-rate schedule goes on from step {RELEASED_STEP}"]
  assert result["history"][0]["step"] == RELEASED_STEP + 1 and result["step"] == total
  for i, rate in enumerate(rates):
    assert np.isclose(rate, official_rate(lr * total / n, RELEASED_STEP + i, total, warmup),
                      rtol=1e-6, atol=0), (i, rate)
  # The README's point: the rate goes on at about lr (float32's 1 - 4e6/T is off by a few
  # per cent for a small N, in the official schedule too).
  assert np.isclose(rates[0], lr, rtol=0.05)
  first = result["history"][0]
  assert all(np.isclose(first[k], v, rtol=1e-5) for k, v in expected_loss.items()), (
      first, expected_loss)
  # A later resume (now with slots, and after a changed batch size: a partial restore)
  # follows global_step too, and says nothing about fresh slots.
  more = dict(hparams, num_train_steps=total + 2, train_batch_size=16)
  capsys.readouterr()
  _, rates = train_recording_rates(resolve_pretraining_config("electra_small", data, more))
  out = capsys.readouterr().out
  assert "holds no optimizer state" not in out and "starts afresh" in out
  assert np.isclose(rates[0], official_rate(lr * total / n, total, total + 2, warmup), rtol=1e-6)


def test_init_checkpoint_starts_at_step_zero_from_either_layout(tmp_path, capsys):
  """"init_checkpoint": our model directory or an official checkpoint; step 0, fresh schedule."""
  data = tiny_data(tmp_path)
  architecture = dict(TINY, model_hparam_overrides=NO_DROPOUT)
  source = resolve_pretraining_config("electra_small", data,
                                      dict(architecture, model_dir=str(tmp_path / "source")))
  convert.write_model_dir(ElectraPretrainer.from_pretraining_config(source), source,
                          source.model_dir, global_step=RELEASED_STEP)
  official = convert.export_official_checkpoint(source.model_dir, str(tmp_path / "official"))
  lr, steps, warmup = 2e-3, 3, 2
  for name, path in (("ours", source.model_dir), ("official", official)):
    config = resolve_pretraining_config("electra_small", data, dict(
        architecture, init_checkpoint=path, model_dir=str(tmp_path / f"from_{name}"),
        learning_rate=lr,
        num_train_steps=steps, num_warmup_steps=warmup, iterations_per_loop=1))
    expected = first_batch_loss(config, source.model_dir, 0)
    capsys.readouterr()
    result, rates = train_recording_rates(config)
    out = capsys.readouterr().out
    assert "resumed" not in out and "holds no optimizer state" not in out
    read = os.path.join(source.model_dir, f"ckpt-{RELEASED_STEP}") if name == "ours" else official
    assert f"initialised the model from {read} (init_checkpoint): training starts at step 0" in out
    assert [h["step"] for h in result["history"]] == [1, 2, 3]
    assert rates == [official_rate(lr, step, steps, warmup) for step in range(steps)]
    first = result["history"][0]
    assert all(np.isclose(first[k], v, rtol=1e-5) for k, v in expected.items()), (first, expected)


def released_small_shapes(directory) -> str:
  """The shapes that tell a released ELECTRA-Small++ checkpoint apart (electra#105)."""
  tensors = {"electra/embeddings/word_embeddings": np.zeros((30522, 128), np.float32)}
  for scope in ("electra", "generator"):
    for layer in range(12):
      tensors[f"{scope}/encoder/layer_{layer}/attention/self/query/kernel"] = np.zeros(
          (256, 256), np.float32)
  return convert.write_official_checkpoint(directory, tensors, RELEASED_STEP)


def test_a_released_model_with_a_paper_preset_names_the_released_preset(tmp_path, capsys):
  released = released_small_shapes(str(tmp_path / "electra_small"))
  assert convert.main(["to-tf2", "--checkpoint", str(tmp_path / "electra_small"), "--model-name",
                       "electra_small", "--output-dir", str(tmp_path / "out")]) == 2
  err = capsys.readouterr().err.strip()
  assert err.count("\n") == 0, err
  assert err == (f"error: {released} holds a released model with the shapes of the "
                 "electra_small_released preset (generator hidden 256 there, 64 in electra_small): "
                 "use --model-name electra_small_released")
  config = resolve_pretraining_config("electra_small", None, {"init_checkpoint": released})
  with pytest.raises(convert.ConversionError, match="use --model-name electra_small_released$"):
    convert.load_pretrainer_weights(None, config, released)  # before any model is touched
  convert.check_released_preset(released, resolve_pretraining_config("electra_small_released"))


def test_a_model_directory_saved_before_init_checkpoint_existed_still_loads(tmp_path):
  config = resolve_pretraining_config("electra_small", None, dict(
      TINY, model_dir=str(tmp_path / "old")))
  convert.write_model_dir(ElectraPretrainer.from_pretraining_config(config), config,
                          config.model_dir)
  path = os.path.join(config.model_dir, "pretrain_config.json")
  with open(path, encoding="utf-8") as f:
    values = json.load(f)
  del values["init_checkpoint"]
  with open(path, "w", encoding="utf-8") as f:
    json.dump(values, f)
  assert model_directory.load_pretraining_config(config.model_dir).init_checkpoint is None
