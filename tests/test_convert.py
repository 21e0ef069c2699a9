"""Official TF1 checkpoints in and out: strict matching, reports, and byte-exact round trips.

The "official" checkpoints here are written the TF1 way (`tf.compat.v1.train.Saver`
in a graph) from the spec-4.2 name/shape oracle of tests/test_variable_names.py,
independently of electra_tf2/networks/variable_names.py and of our writer.
"""

import json
import os
from typing import Dict

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.conversion import convert
from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.config.encoder import BertConfig
from electra_tf2.tasks import config as finetune_config
from electra_tf2.models import finetuning as finetune_model
from electra_tf2.networks.encoder import Encoder
from fixtures import write_vocab
from test_variable_names import (official_electra_checkpoint, official_embeddings,
                                   official_encoder, official_mlm_head)

V = 99  # a small vocabulary keeps the files tiny
TINY = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
        "embedding_size": 16, "generator_hidden_size": 0.5, "vocab_size": V}
E, H, L, h = 16, 32, 2, 16
STEP = 1234


def tiny_config(**hparams):
  return resolve_pretraining_config("electra_small", None, dict(TINY, **hparams))


def discriminator_head(H):
  return {"discriminator_predictions/dense/kernel": (H, H),
          "discriminator_predictions/dense/bias": (H,),
          "discriminator_predictions/dense_1/kernel": (H, 1),
          "discriminator_predictions/dense_1/bias": (1,)}


def electra_layout():
  return official_electra_checkpoint(V, E, H, L, h, L)


def electric_layout():
  names = official_embeddings("electra", V, E)
  names.update(official_encoder("electra", E, H, 4 * H, L))
  names.update(discriminator_head(H))
  names.update(official_encoder("generator_ltr", E, h, 4 * h, L))
  names.update(official_encoder("generator_rtl", E, h, 4 * h, L))
  names.update(official_mlm_head("cloze_predictions", 2 * h, E, V))
  return names


UNTIED_H = 8  # generator_hidden_size 0.25: a generator narrower than E


def untied_embeddings_layout():
  """The generator's own embeddings are h wide: no embeddings_project, an h x h MLM dense."""
  names = {n: s for n, s in electra_layout().items()
           if not n.startswith(("generator/", "generator_predictions/"))}
  names.update(official_embeddings("generator", V, UNTIED_H))
  names.update(official_encoder("generator", UNTIED_H, UNTIED_H, 4 * UNTIED_H, L))
  names.update(official_mlm_head("generator_predictions", UNTIED_H, UNTIED_H, V))
  return names


def electric_untied_layout():
  names = {n: s for n, s in electric_layout().items()
           if not n.startswith(("generator_", "cloze_predictions/"))}
  for tower in ("generator_ltr", "generator_rtl"):
    names.update(official_embeddings(tower, V, UNTIED_H))
    names.update(official_encoder(tower, UNTIED_H, UNTIED_H, 4 * UNTIED_H, L))
  names.update(official_mlm_head("cloze_predictions", 2 * UNTIED_H, UNTIED_H, V))
  return names


LAYOUTS = {
    "electra": ({}, electra_layout),
    "electric": ({"electric_objective": True}, electric_layout),
    "untied_embeddings": ({"untied_generator_embeddings": True, "generator_hidden_size": 0.25},
                          untied_embeddings_layout),
    "electric_untied_embeddings": ({"electric_objective": True, "generator_hidden_size": 0.25,
                                    "untied_generator_embeddings": True},
                                   electric_untied_layout),
}


def random_values(shapes, seed=0) -> Dict[str, np.ndarray]:
  rng = np.random.default_rng(seed)
  return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


def write_tf1_checkpoint(directory, values, global_step=STEP, adam=True) -> str:
  """A checkpoint as the official TF1 code writes it (Saver, name-based), with Adam slots."""
  os.makedirs(directory, exist_ok=True)
  with tf.Graph().as_default():
    variables = {}
    for name, value in values.items():
      variables[name] = tf.compat.v1.get_variable(name, initializer=value)
      if adam:
        for slot in ("adam_m", "adam_v"):
          variables[f"{name}/{slot}"] = tf.compat.v1.get_variable(
              f"{name}/{slot}", initializer=np.ones_like(value))
    variables["global_step"] = tf.compat.v1.get_variable(
        "global_step", initializer=np.int64(global_step))
    saver = tf.compat.v1.train.Saver(variables)
    with tf.compat.v1.Session() as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=global_step,
                        write_meta_graph=False)


def read_all(prefix) -> Dict[str, np.ndarray]:
  reader = tf.train.load_checkpoint(prefix)
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_round_trip_is_byte_identical(tmp_path, layout, capsys):
  hparams, oracle = LAYOUTS[layout]
  values = random_values(oracle())
  # The released checkpoints also hold this scalar, which no model uses.
  temperature = {"generator_predictions/temperature": np.ones((), np.float32)}
  official = write_tf1_checkpoint(str(tmp_path / "official"), dict(values, **temperature))
  write_vocab(str(tmp_path / "official" / "vocab.txt"), V)
  model_dir = str(tmp_path / "models" / "tiny")

  assert convert.main(["to-tf2", "--checkpoint", str(tmp_path / "official"),
                       "--model-name", "electra_small", "--hparams",
                       json.dumps(dict(TINY, **hparams)), "--output-dir", model_dir]) == 0
  printed = capsys.readouterr().out
  assert f"model variables loaded: {len(values)} of {len(values)}" in printed
  assert f"ignored (step, optimizer slots, ...): {2 * len(values) + 4}" in printed
  report = json.load(open(os.path.join(model_dir, convert.REPORT_FILE)))
  assert report["checkpoint"] == official
  assert report["loaded"] == sorted(values)
  assert report["missing"] == report["shape_mismatches"] == report["unused"] == []
  assert sorted(report["ignored"]) == sorted(
      ["global_step"]
      + [f"generator_predictions/temperature{s}" for s in ("", "/adam_m", "/adam_v")]
      + [f"{n}/adam_{s}" for n in values for s in "mv"])

  # A normal model directory: the pre-trainer restores from it with no special case.
  assert os.path.basename(tf.train.latest_checkpoint(model_dir)) == f"ckpt-{STEP}"
  config = model_directory.load_pretraining_config(model_dir)
  assert config.vocab_file == os.path.join(model_dir, "vocab.txt")
  assert os.path.exists(config.vocab_file)
  model = model_directory.restore_pretrainer(model_dir)
  for name, variable in variable_names.pretrainer_variable_map(model).items():
    np.testing.assert_array_equal(variable.numpy(), values[name], err_msg=name)

  out = str(tmp_path / "again")
  assert convert.main(["to-official", "--model-dir", model_dir, "--output-dir", out]) == 0
  assert tf.train.latest_checkpoint(out) == os.path.join(out, f"model.ckpt-{STEP}")
  again = read_all(tf.train.latest_checkpoint(out))
  assert sorted(again) == sorted(list(values) + ["global_step"])
  assert int(again["global_step"]) == STEP and again["global_step"].dtype == np.int64
  for name, value in values.items():
    assert again[name].dtype == value.dtype and again[name].shape == value.shape, name
    assert again[name].tobytes() == value.tobytes(), name


def test_missing_misshapen_and_unused_variables_are_reported(tmp_path):
  values = random_values(electra_layout())
  del values["electra/encoder/layer_1/output/dense/bias"]
  values["generator/encoder/layer_0/attention/self/query/kernel"] = np.zeros((8, 8), np.float32)
  values["generator_predictions/unknown"] = np.ones((), np.float32)
  official = write_tf1_checkpoint(str(tmp_path / "bad"), values, adam=False)

  with pytest.raises(convert.ConversionError) as error:
    convert.pretrainer_from_official(official, tiny_config())
  message = str(error.value)
  assert "MISSING from the checkpoint (1): electra/encoder/layer_1/output/dense/bias" in message
  assert ("SHAPE MISMATCH generator/encoder/layer_0/attention/self/query/kernel: "
          "checkpoint [8, 8], model [16, 16]") in message
  assert "UNUSED checkpoint variables (1): generator_predictions/unknown" in message
  assert "hint: the checkpoint has electra hidden 32 x 2 layers, generator hidden 8" in message

  model, report = convert.pretrainer_from_official(official, tiny_config(), strict=False)
  assert not report.ok and report.ignored == ["global_step"]
  names = variable_names.pretrainer_variable_map(model)
  np.testing.assert_array_equal(names["electra/encoder/layer_0/output/dense/bias"].numpy(),
                                values["electra/encoder/layer_0/output/dense/bias"])

  # Only the unused variable: an explicit ignore pattern makes a strict conversion pass.
  values = random_values(electra_layout())
  values["generator_predictions/unknown"] = np.ones((), np.float32)
  official = write_tf1_checkpoint(str(tmp_path / "extra"), values, adam=False)
  with pytest.raises(convert.ConversionError, match="UNUSED"):
    convert.pretrainer_from_official(official, tiny_config())
  _, report = convert.pretrainer_from_official(
      official, tiny_config(), ignore=convert.DEFAULT_IGNORE + ("/unknown$",))
  assert report.ok and report.ignored == ["generator_predictions/unknown", "global_step"]


def test_model_dir_that_disagrees_with_its_config_is_a_clear_error(tmp_path):
  from electra_tf2.models.pretrainer import ElectraPretrainer
  model_dir = str(tmp_path / "m")
  config = tiny_config()
  convert.write_model_dir(ElectraPretrainer.from_pretraining_config(config), config, model_dir)
  path = os.path.join(model_dir, model_directory.PRETRAIN_CONFIG_FILE)
  values = json.load(open(path))
  # one layer more than the checkpoint holds
  values["bert_config"] = dict(values["bert_config"], num_hidden_layers=3)
  json.dump(values, open(path, "w"))
  with pytest.raises(ModelDirectoryError, match=r"ckpt-\d+ does not fit this model \(.*\): it is "
                     "not the model that pretrain_config.json describes"):
    model_directory.restore_pretrainer(model_dir)
  del values["mask_prob"]
  json.dump(values, open(path, "w"))
  with pytest.raises(model_directory.PretrainedModelError, match=f"{path} lacks mask_prob"):
    model_directory.load_pretraining_config(model_dir)


def test_cli_reports_errors_without_a_traceback(tmp_path, capsys):
  official = write_tf1_checkpoint(str(tmp_path / "official"), random_values(electra_layout()),
                                  adam=False)
  code = convert.main(["to-tf2", "--checkpoint", official, "--model-name", "electra_small",
                       "--output-dir", str(tmp_path / "out")])
  err = capsys.readouterr().err
  assert code == 2 and err.startswith("error: the checkpoint does not fit the model")
  assert "--model-name electra_{small,base,large}_released" in err
  assert not os.path.exists(tmp_path / "out")
  assert convert.main(["to-tf2", "--checkpoint", str(tmp_path / "nowhere"),
                       "--model-name", "electra_small", "--output-dir", str(tmp_path)]) == 2
  assert "neither a directory nor a checkpoint prefix" in capsys.readouterr().err


def finetuning_layout(n_labels=3):
  shapes = official_embeddings("electra", V, E)
  shapes.update(official_encoder("electra", E, H, 4 * H, L))
  shapes.update({"task_specific/mnli/dense/kernel": (H, n_labels),
                 "task_specific/mnli/dense/bias": (n_labels,)})
  return shapes


def test_finetuning_layout_encoder_loads_into_encoder(tmp_path):
  values = random_values(finetuning_layout())
  official = write_tf1_checkpoint(str(tmp_path / "ft"), values)
  assert convert.checkpoint_layout(list(convert.checkpoint_shapes(official))) == "finetuning"

  encoder = Encoder(BertConfig(vocab_size=V, hidden_size=H, num_hidden_layers=L,
                               num_attention_heads=1, intermediate_size=4 * H), E,
                    name="electra")
  encoder.build()
  report = convert.assign_from_checkpoint(
      variable_names.encoder_variable_map(encoder, "electra"),
      convert.resolve_checkpoint_path(str(tmp_path / "ft")), allow_unused=True)
  assert report.complete and report.unused == ["task_specific/mnli/dense/bias",
                                               "task_specific/mnli/dense/kernel"]
  for name, variable in variable_names.encoder_variable_map(encoder, "electra").items():
    np.testing.assert_array_equal(variable.numpy(), values[name], err_msg=name)

  with pytest.raises(convert.ConversionError, match="this is a fine-tuning checkpoint"):
    convert.pretrainer_from_official(official, tiny_config())


@pytest.fixture
def data_dir(tmp_path):
  """DATA/models/electra_small converted from an official pre-training checkpoint."""
  values = random_values(electra_layout())
  write_tf1_checkpoint(str(tmp_path / "official"), values, adam=False)
  write_vocab(str(tmp_path / "official" / "vocab.txt"), V)
  data = str(tmp_path / "data")
  assert convert.main(["to-tf2", "--checkpoint", str(tmp_path / "official"),
                       "--model-name", "electra_small", "--data-dir", data,
                       "--hparams", json.dumps(TINY)]) == 0
  return data, values


def test_converted_checkpoint_initialises_finetuning(data_dir):
  """run_finetuning.py's path: DATA/models/<name> as init_checkpoint, with no special case."""
  data, values = data_dir
  config = finetune_config.resolve_finetuning_config("electra_small", data, {}, "sst")
  assert config.vocab_file == os.path.join(data, "models", "electra_small", "vocab.txt")
  assert (config.embedding_size, config.encoder_config.hidden_size) == (E, H)
  model = finetune_model.build_model(
      config, [{"kind": "classification", "task": "sst", "label_list": ["0", "1"]}])
  finetune_model.load_pretrained_encoder(model, config.init_checkpoint)
  for name, variable in variable_names.encoder_variable_map(model.encoder, "electra").items():
    np.testing.assert_array_equal(variable.numpy(), values[name], err_msg=name)


def test_finetuning_layout_round_trip_is_byte_identical(data_dir, tmp_path):
  data, _ = data_dir
  values = random_values(finetuning_layout(), seed=5)
  official = write_tf1_checkpoint(str(tmp_path / "official_ft"), values)
  model_dir = str(tmp_path / "mnli_model_1")
  assert convert.main(["to-tf2-finetuned", "--checkpoint", official, "--data-dir", data,
                       "--model-name", "electra_small", "--task", "mnli",
                       "--output-dir", model_dir]) == 0
  model, config = finetune_model.load_finetuned_model(model_dir)
  assert config.task_names == ["mnli"] and model.task_names == ["mnli"]
  out = str(tmp_path / "again")
  assert convert.main(["to-official", "--model-dir", model_dir, "--output-dir", out]) == 0
  again = read_all(tf.train.latest_checkpoint(out))
  assert sorted(again) == sorted(list(values) + ["global_step"])
  assert int(again["global_step"]) == STEP
  for name, value in values.items():
    assert again[name].tobytes() == value.tobytes(), name


@pytest.mark.parametrize("model_name,E,H,L,gen_h", [
    # The released ++ models (and google/electra-*-{discriminator,generator} configs).
    ("electra_small_released", 128, 256, 12, 256),
    ("electra_base_released", 768, 768, 12, 256),
    ("electra_large_released", 1024, 1024, 24, 256),
])
def test_released_configs_match_the_released_checkpoints(model_name, E, H, L, gen_h):
  config = resolve_pretraining_config(model_name)
  disc, gen = config.bert_config, config.generator_bert_config
  assert config.resolved_embedding_size == E and config.vocab_size == 30522
  assert (disc.hidden_size, disc.num_hidden_layers, disc.intermediate_size) == (H, L, 4 * H)
  assert (gen.hidden_size, gen.num_hidden_layers, gen.intermediate_size) == (gen_h, L, 4 * gen_h)
  assert gen.num_attention_heads == gen_h // 64 and disc.num_attention_heads == H // 64
  assert not config.untied_generator_embeddings and config.uses_generator_encoder
