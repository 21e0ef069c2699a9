"""The fine-tuning model: official names, loss, optimizer rules, save and rebuild (run_finetuning.py:37-114)."""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.models import optimization
from electra_tf2.networks import variable_names
from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError
from electra_tf2.config.encoder import BertConfig
from electra_tf2.models import finetuning as model_lib
from electra_tf2.models import heads

BERT = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=16)
HEADS = [{"kind": "classification", "task": "sst", "label_list": ["0", "1"]},
         {"kind": "regression", "task": "sts", "min_value": 0.0, "max_value": 5.0},
         {"kind": "qa", "task": "squad", "beam_size": 3, "joint_prediction": True,
          "answerable_classifier": True, "answerable_uses_start_logits": True,
          "answerable_weight": 0.5},
         {"kind": "tagging", "task": "chunk", "label_list": ["B-NP", "E-NP", "O"]}]


def build(embedding_size=8):
  tf.keras.utils.set_random_seed(0)
  return model_lib.FinetuningModel(BERT, embedding_size, HEADS)


def features(batch=4, length=12, seed=0):
  rng = np.random.default_rng(seed)
  f = {"input_ids": rng.integers(5, 50, (batch, length)), "input_mask": np.ones((batch, length)),
       "segment_ids": np.concatenate([np.zeros((batch, 4)), np.ones((batch, length - 4))], 1),
       "task_id": np.arange(batch) % 5,  # 4 = n_tasks: a padding row
       "sst_label_ids": rng.integers(0, 2, batch), "sts_targets": rng.random(batch),
       "squad_start_positions": rng.integers(4, length, batch),
       "squad_end_positions": rng.integers(4, length, batch),
       "squad_is_impossible": rng.integers(0, 2, batch),
       "chunk_labels": rng.integers(0, 3, (batch, length)),
       "chunk_labels_mask": (np.arange(length) < 5).astype(np.float32)[None].repeat(batch, 0),
       "chunk_labeled_positions": np.tile(np.arange(length), (batch, 1))}
  return {k: tf.constant(v, tf.float32 if k in ("sts_targets", "chunk_labels_mask") else tf.int32)
          for k, v in f.items()}


def test_every_trainable_variable_has_an_official_name():
  model = build()
  names = model.variable_map()
  assert {id(v) for v in names.values()} == {id(v) for v in model.trainable_variables}
  assert len(names) == len(model.trainable_variables)
  heads = {n: tuple(v.shape) for n, v in names.items() if n.startswith("task_specific/")}
  assert heads == {
      "task_specific/sst/dense/kernel": (16, 2), "task_specific/sst/dense/bias": (2,),
      "task_specific/sts/dense/kernel": (16, 1), "task_specific/sts/dense/bias": (1,),
      "task_specific/squad/dense/kernel": (16, 1), "task_specific/squad/dense/bias": (1,),
      "task_specific/squad/qa_hidden/kernel": (32, 512),
      "task_specific/squad/qa_hidden/bias": (512,),
      "task_specific/squad/dense_1/kernel": (512, 1), "task_specific/squad/dense_1/bias": (1,),
      "task_specific/squad/dense_2/kernel": (32, 512),
      "task_specific/squad/dense_2/bias": (512,),
      "task_specific/squad/dense_3/kernel": (512, 1), "task_specific/squad/dense_3/bias": (1,),
      "task_specific/chunk/dense/kernel": (16, 3), "task_specific/chunk/dense/bias": (3,)}
  assert "electra/embeddings_project/kernel" in names
  assert "electra/encoder/layer_1/output/LayerNorm/gamma" in names
  assert names.keys() - heads.keys() == set(
      variable_names.encoder_variable_map(model.encoder, "electra"))


def test_layerwise_learning_rates_follow_the_official_depths():
  model = build()
  names = list(model.variable_map())
  official = optimization.layerwise_lr_multipliers(names, 0.8, 2)
  assert official["task_specific/sst/dense/kernel"] == 1.0
  assert official["electra/encoder/layer_1/output/dense/kernel"] == pytest.approx(0.8 ** 2)
  assert official["electra/embeddings/word_embeddings"] == pytest.approx(0.8 ** 4)
  fixed = optimization.layerwise_lr_multipliers(names, 0.8, 2, fix_off_by_one=True)
  assert fixed["electra/encoder/layer_1/output/dense/kernel"] == pytest.approx(0.8)


def test_summed_loss_ignores_padding_rows():
  model = build()
  f = features()
  outputs = model(f, training=False)
  per_example = model.losses_per_example(f, outputs).numpy()
  manual = [model.head(t).loss(outputs[t], f).numpy()[row]
            for row, t in enumerate(["sst", "sts", "squad", "chunk"])]
  np.testing.assert_allclose(per_example, manual, rtol=1e-6)
  padded = dict(f, task_id=tf.constant([0, 1, 4, 4]))
  per_example = model.losses_per_example(padded, outputs).numpy()
  assert per_example[2] == per_example[3] == 0.0


def test_outputs_and_dropout():
  model = build()
  f = features()
  out = model(f, training=False)
  assert out["sst"]["logits"].shape == (4, 2) and out["sts"]["predictions"].shape == (4,)
  assert out["chunk"]["logits"].shape == (4, 12, 3)
  assert out["squad"]["end_top_log_probs"].shape == (4, 3, 3)
  again = model(f, training=False)
  np.testing.assert_array_equal(out["sst"]["logits"], again["sst"]["logits"])
  trained = model(f, training=True)
  assert not np.allclose(out["sst"]["logits"], trained["sst"]["logits"])


def test_config_round_trip_and_saved_model_directory(tmp_path):
  from tests.fixtures import make_config
  model = build()
  rebuilt = model_lib.FinetuningModel.from_config(model.get_config())
  assert rebuilt.get_config() == model.get_config()
  assert list(rebuilt.variable_map()) == list(model.variable_map())
  directory = str(tmp_path / "sst_model_1")
  config = make_config(str(tmp_path / "data"), ["sst", "sts", "squad", "chunk"], seed=3,
                       max_seq_length=128, max_query_length=16)
  model_lib.save_model_files(model, config, directory)
  tf.train.Checkpoint(model=model).write(os.path.join(directory, "ckpt-5"))
  with open(os.path.join(directory, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "ckpt-5"\n')
  loaded, loaded_config = model_lib.load_finetuned_model(directory)
  assert loaded_config.seed == 3
  f = features()
  np.testing.assert_allclose(loaded(f)["squad"]["start_logits"], model(f)["squad"]["start_logits"],
                             rtol=1e-6)
  with pytest.raises(FileNotFoundError, match="not a fine-tuned model directory"):
    model_lib.load_finetuned_model(str(tmp_path))
  # Damaged files: one ModelDirectoryError naming the file, never a traceback.
  model_file = os.path.join(directory, model_lib.MODEL_CONFIG_FILE)
  good = open(model_file).read()
  with open(model_file, "w") as f:
    f.write(good[:40])
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{model_file} is not valid JSON (line ")):
    model_lib.load_finetuned_model(directory)
  values = json.loads(good)
  del values["heads"]
  with open(model_file, "w") as f:
    json.dump(values, f)
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{model_file} does not describe a model (")):
    model_lib.load_finetuned_model(directory)
  values = json.loads(good)
  values["heads"] = values["heads"][:1]  # a checkpoint with more heads than the model
  with open(model_file, "w") as f:
    json.dump(values, f)
  loaded, _ = model_lib.load_finetuned_model(directory)  # extra saved heads are not needed
  assert loaded.task_names == ["sst"]
  values["bert_config"]["hidden_size"] = 64
  values["bert_config"]["intermediate_size"] = 128
  with open(model_file, "w") as f:
    json.dump(values, f)
  with pytest.raises(ModelDirectoryError, match=r"ckpt-5 does not fit this model \(.*\): it is "
                     "not the model that model_config.json describes"):
    model_lib.load_finetuned_model(directory)
  with open(model_file, "w") as f:
    f.write(good)
  config_file = os.path.join(directory, model_lib.FINETUNING_CONFIG_FILE)
  values = json.load(open(config_file))
  del values["beam_size"]
  with open(config_file, "w") as f:
    json.dump(values, f)
  with pytest.raises(ModelDirectoryError, match=re.escape(f"{config_file} lacks beam_size: ")):
    model_lib.load_finetuned_model(directory)


def test_unknown_head_kind():
  with pytest.raises(ValueError, match="unknown head kind 'ner'"):
    heads.build_head({"kind": "ner", "task": "x"})
