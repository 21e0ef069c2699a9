"""Fine-tuning config resolution follows configure_finetuning.py."""

import json
import os

import pytest

from electra_tf2.config.hparams import ConfigError
from electra_tf2.tasks.config import resolve_finetuning_config, schema


def resolve(tmp_path, hparams=None, tasks=None, model="m"):
  return resolve_finetuning_config(model, str(tmp_path), hparams, tasks)


def test_every_official_attribute_has_its_default(tmp_path):
  c = resolve(tmp_path)
  official = {
      "debug": False, "log_examples": False, "num_trials": 1, "do_train": True,
      "do_eval": True, "keep_all_models": True, "model_size": "small", "task_names": ["chunk"],
      "model_hparam_overrides": {}, "vocab_size": 30522, "do_lower_case": True,
      "learning_rate": 1e-4, "weight_decay_rate": 0.01, "layerwise_lr_decay": 0.8,
      "warmup_proportion": 0.1, "save_checkpoints_steps": 1000000,
      "iterations_per_loop": 1000, "use_tfrecords_if_existing": True,
      "write_test_outputs": False, "n_writes_test": 5, "train_batch_size": 32,
      "eval_batch_size": 32, "predict_batch_size": 32, "double_unordered": True,
      "max_query_length": 64, "doc_stride": 128, "n_best_size": 20, "max_answer_length": 30,
      "answerable_classifier": True, "answerable_uses_start_logits": True,
      "answerable_weight": 0.5, "joint_prediction": True, "beam_size": 20,
      "qa_na_threshold": -2.75, "use_tpu": False, "num_tpu_cores": 1}
  for key, value in official.items():
    assert getattr(c, key) == value, key
  # chunk (the default task) gets 256 tokens; small gets E = 128
  assert (c.max_seq_length, c.num_train_epochs, c.embedding_size) == (256, 3.0, 128)
  assert set(official) <= set(schema())


@pytest.mark.parametrize("task,length,epochs", [
    ("rte", 128, 10.0), ("sts", 128, 10.0), ("squad", 512, 2.0), ("squadv1", 512, 2.0),
    ("newsqa", 512, 2.0), ("triviaqa", 512, 2.0), ("searchqa", 512, 2.0),
    ("naturalqs", 128, 3.0),  # official quirk: neither "squad" nor "qa" in the name
    ("chunk", 256, 3.0), ("sst", 128, 3.0), ("mnli", 128, 3.0), ("wnli", 128, 3.0)])
def test_single_task_defaults(tmp_path, task, length, epochs):
  c = resolve(tmp_path, tasks=task)
  assert (c.max_seq_length, c.num_train_epochs) == (length, epochs)


def test_rules_override_user_values_then_user_values_win_again(tmp_path):
  # The rules come after the first update, so only the second update keeps the user's value.
  c = resolve(tmp_path, {"task_names": ["squad"], "write_test_outputs": True,
                         "max_seq_length": 384})
  assert (c.write_test_outputs, c.max_seq_length, c.num_train_epochs) == (True, 384, 2.0)


def test_multi_task_gets_no_single_task_defaults(tmp_path):
  c = resolve(tmp_path, tasks="rte,squad")
  assert (c.task_names, c.max_seq_length, c.num_train_epochs) == (["rte", "squad"], 128, 3.0)


def test_size_defaults(tmp_path):
  large = resolve(tmp_path, {"model_size": "large", "task_names": ["sst"]})
  assert (large.learning_rate, large.layerwise_lr_decay, large.embedding_size) == (5e-5, 0.9,
                                                                                   None)
  assert large.encoder_config.hidden_size == 1024
  user = resolve(tmp_path, {"model_size": "large", "learning_rate": 2e-5})
  assert user.learning_rate == 2e-5
  base = resolve(tmp_path, {"model_size": "base"})
  assert (base.learning_rate, base.embedding_size) == (1e-4, None)


def test_debug_overrides_and_debug_encoder(tmp_path):
  c = resolve(tmp_path, {"debug": True, "num_train_epochs": 1.0})
  assert (c.use_tfrecords_if_existing, c.iterations_per_loop, c.log_examples) == (False, 1, True)
  assert c.num_train_epochs == 1.0  # user wins over debug
  b = c.encoder_config
  assert (b.num_hidden_layers, b.hidden_size, b.intermediate_size, b.num_attention_heads) == \
      (3, 144, 576, 4)
  assert c.preprocessed_data_dir.endswith("chunk_tfrecords-debug")


def test_paths_follow_the_official_layout(tmp_path):
  c = resolve(tmp_path, tasks="cola,mrpc", model="electra_small")
  pretrained = os.path.join(str(tmp_path), "models", "electra_small")
  assert c.init_checkpoint == pretrained
  assert c.model_dir == os.path.join(pretrained, "finetuning_models", "cola,mrpc_model")
  assert c.trial_model_dir(3) == c.model_dir + "_3"
  assert c.results_txt == os.path.join(pretrained, "results", "cola,mrpc_results.txt")
  assert c.qa_preds_path("squad") == os.path.join(pretrained, "results", "cola,mrpc_qa",
                                                  "squad_preds.json")
  assert c.task_data_dir("cola") == os.path.join(str(tmp_path), "finetuning_data", "cola")
  assert c.test_predictions_path("mnli", "diagnostic", 2).endswith(
      os.path.join("test_predictions", "mnli_diagnostic_2_predictions"))
  assert c.vocab_file == os.path.join(str(tmp_path), "vocab.txt")  # no <pretrained>/vocab.txt
  os.makedirs(pretrained)
  open(os.path.join(pretrained, "vocab.txt"), "w").close()
  assert resolve(tmp_path, model="electra_small").vocab_file == os.path.join(pretrained,
                                                                             "vocab.txt")


def test_trial_seeds(tmp_path):
  c = resolve(tmp_path, {"seed": 7})
  assert [c.trial_seed(t) for t in (1, 2, 3)] == [7, 8, 9]


def write_pretrained(tmp_path, **values):
  config = {"model_size": "small", "embedding_size": 128, "vocab_size": 30522, "debug": True,
            "model_hparam_overrides": {}}
  config.update(values)
  directory = os.path.join(str(tmp_path), "models", "m")
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, "pretrain_config.json"), "w") as f:
    json.dump(config, f)


def test_incomplete_pretrained_config_names_the_file(tmp_path):
  write_pretrained(tmp_path)
  path = os.path.join(str(tmp_path), "models", "m", "pretrain_config.json")
  values = json.load(open(path))
  del values["vocab_size"]
  json.dump(values, open(path, "w"))
  with pytest.raises(ConfigError, match=f"{path} lacks vocab_size"):
    resolve(tmp_path, tasks="sst")


def test_encoder_shape_comes_from_the_pretrained_model(tmp_path):
  write_pretrained(tmp_path, model_size="base", embedding_size=None, debug=True)
  c = resolve(tmp_path, {"model_hparam_overrides": {"hidden_dropout_prob": 0.2}}, tasks="sst")
  b = c.encoder_config
  # the debug pre-trained encoder, even though fine-tuning is not in debug mode
  assert (b.num_hidden_layers, b.hidden_size, b.hidden_dropout_prob) == (3, 144, 0.2)
  assert (c.model_size, c.embedding_size, c.pretrained_model_dir) == (
      "base", None, os.path.join(str(tmp_path), "models", "m"))
  with pytest.raises(ConfigError, match="model_size='small' differs from the pre-trained"):
    resolve(tmp_path, {"model_size": "small"})
  with pytest.raises(ConfigError, match="hidden_size=256 differs"):
    resolve(tmp_path, {"model_hparam_overrides": {"hidden_size": 256}})
  # random initialisation ignores the pre-trained model
  c = resolve(tmp_path, {"init_checkpoint": None})
  assert (c.model_size, c.pretrained_model_dir, c.encoder_config.hidden_size) == ("small", None,
                                                                                  256)


@pytest.mark.parametrize("hparams,message", [
    ({"learning_rte": 1e-4}, "unknown hparam 'learning_rte'"),
    ({"num_trials": "3"}, "num_trials must be of type int"),
    ({"do_train": 1}, "do_train must be of type bool"),
    ({"task_names": ["sst", "glue"]}, "unknown task 'glue'"),
    ({"task_names": ["sst", "sst"]}, "names a task twice"),
    ({"bert_config": {}}, "bert_config is derived"),
    ({"model_dir": None}, "model_dir may not be null"),
    ({"loss_reduction": "avg"}, "loss_reduction must be one of"),
    ({"num_trials": 0}, "num_trials must be non-zero"),
    ({"do_train": False, "do_eval": False}, "nothing to do"),
    ({"task_names": ["squad"], "max_seq_length": 600}, "exceeds the encoder"),
    ({"task_names": ["squad"], "max_seq_length": 16, "max_query_length": 8},
     "beam_size 20 exceeds"),
    ({"task_names": ["squad"], "max_seq_length": 16}, "leaves no room for the document"),
    ({"model_hparam_overrides": {"hiden_size": 3}}, "unknown key 'hiden_size'"),
    ({"model_hparam_overrides": {"hidden_size": "256"}}, "hidden_size must be of type int"),
    ({"model_hparam_overrides": {"num_attention_heads": 5}},
     "hidden_size 256 is not a multiple of num_attention_heads 5"),
    ({"seed": 40000}, r"seed must be in \[0, 32768\)"),
    ({"learning_rate": -1.0}, "learning_rate must be > 0, got -1.0"),
    ({"weight_decay_rate": -0.5}, "weight_decay_rate must be >= 0, got -0.5"),
    ({"test_predictions": "/p/{task}_{split}"}, r"test_predictions must contain the "
     r"placeholder \{trial\}"),
    ({"test_predictions": "/p/{task}_{split}_{trial}_{x}"},
     r"may only use the placeholders \{task\}, \{split\}, \{trial\}"),
    ({"qa_eval_file": "/p/{task}_{tasks}.json"}, r"qa_eval_file .* may only use"),
])
def test_bad_values_name_the_key(tmp_path, hparams, message):
  with pytest.raises(ConfigError, match=message):
    resolve(tmp_path, hparams)


def test_task_flag_and_hparams_must_agree(tmp_path):
  assert resolve(tmp_path, {"task_names": ["sst"]}, tasks="sst").task_names == ["sst"]
  with pytest.raises(ConfigError, match="disagrees"):
    resolve(tmp_path, {"task_names": ["sst"]}, tasks="cola")
  with pytest.raises(ConfigError, match="--task is empty"):
    resolve(tmp_path, tasks=" , ")


def test_hparams_json_file_and_round_trip(tmp_path):
  path = tmp_path / "h.json"
  path.write_text(json.dumps({"task_names": ["mrpc"], "num_trials": 3}))
  c = resolve(tmp_path, str(path))
  assert (c.task_names, c.num_trials) == (["mrpc"], 3)
  again = type(c).from_dict(json.loads(json.dumps(c.to_dict())))
  assert again.to_dict() == c.to_dict()


def test_the_config_knows_the_registered_tasks():
  """Config resolution accepts the registered tasks (electra_tf2/tasks/registry.py), the
  built-in ones first, in the official task_builder's order (a test module may have
  registered more after them)."""
  from electra_tf2.tasks import registry  # pylint: disable=g-import-not-at-top
  from electra_tf2.tasks.config import known_tasks  # pylint: disable=g-import-not-at-top
  assert known_tasks() == registry.task_names()
  assert known_tasks()[:16] == ["cola", "mrpc", "mnli", "sst", "rte", "qnli", "qqp", "sts", "wnli",
                           "squad", "squadv1", "newsqa", "naturalqs", "triviaqa", "searchqa",
                           "chunk"]
