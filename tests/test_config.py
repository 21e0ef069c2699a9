"""Config resolution follows configure_pretraining.py."""

import json
import re

import pytest

from electra_tf2.config.pretraining import resolve_pretraining_config

from electra_tf2.config.hparams import available_models, ConfigError


def test_presets_have_the_paper_settings():
  """Spec 2.2 table (layers, hidden, heads, intermediate, E, generator, mask, length, lr, batch, steps)."""
  table = {
      "electra_small": (12, 256, 4, 1024, 128, 64, 0.15, 128, 5e-4, 128, 1_000_000),
      "electra_base": (12, 768, 12, 3072, 768, 256, 0.15, 512, 2e-4, 256, 766_000),
      "electra_large": (24, 1024, 16, 4096, 1024, 256, 0.25, 512, 2e-4, 2048, 400_000),
      "electra_small_released": (12, 256, 4, 1024, 128, 256, 0.15, 512, 5e-4, 128, 4_000_000),
      "electra_base_released": (12, 768, 12, 3072, 768, 256, 0.15, 512, 2e-4, 256, 4_000_000),
      "electra_large_released": (24, 1024, 16, 4096, 1024, 256, 0.25, 512, 2e-4, 2048, 1_750_000),
  }
  assert set(table) <= set(available_models())
  for name, want in table.items():
    c = resolve_pretraining_config(name)
    b, g = c.bert_config, c.generator_bert_config
    got = (b.num_hidden_layers, b.hidden_size, b.num_attention_heads, b.intermediate_size,
           c.resolved_embedding_size, g.hidden_size, c.mask_prob, c.max_seq_length,
           c.learning_rate, c.train_batch_size, c.num_train_steps)
    assert got == want, name
    assert g.num_attention_heads == max(1, g.hidden_size // 64)
    assert g.intermediate_size == 4 * g.hidden_size
    assert g.num_hidden_layers == b.num_hidden_layers


@pytest.mark.parametrize("mask_prob,length,want", [(0.15, 128, 19), (0.15, 512, 79),
                                                   (0.25, 512, 130), (0.15, 20, 3)])
def test_max_predictions_is_derived(mask_prob, length, want):
  c = resolve_pretraining_config("electra_small", None,
                                 {"mask_prob": mask_prob, "max_seq_length": length})
  assert c.max_predictions_per_seq == want == int((mask_prob + 0.005) * length)


def test_debug_overrides_then_user_values_win():
  c = resolve_pretraining_config("electra_small", None, {"debug": True})
  assert (c.train_batch_size, c.num_train_steps, c.eval_batch_size, c.iterations_per_loop,
          c.num_eval_steps) == (8, 20, 4, 1, 2)
  b = c.bert_config
  assert (b.num_hidden_layers, b.hidden_size, b.intermediate_size, b.num_attention_heads) == \
      (3, 144, 576, 4)
  assert c.generator_bert_config.hidden_size == 36  # round(144 * 0.25)
  c = resolve_pretraining_config("electra_small", None, {"debug": True, "train_batch_size": 3})
  assert c.train_batch_size == 3


def test_small_gets_embedding_128_unless_user_sets_it():
  assert resolve_pretraining_config("electra_small", None, {"embedding_size": None}
                                    ).resolved_embedding_size == 256
  assert resolve_pretraining_config("electra_base", None, {"model_size": "small"}
                                    ).embedding_size == 128


def test_electric_forces_two_towers_and_overrides_apply_twice():
  c = resolve_pretraining_config("electra_small", None, {"electric_objective": True})
  assert c.two_tower_generator
  c = resolve_pretraining_config("electra_small", None,
                                 {"model_hparam_overrides": {"hidden_size": 512}})
  # Heads and intermediate are derived from the overridden hidden size.
  assert (c.bert_config.num_attention_heads, c.bert_config.intermediate_size) == (8, 2048)
  c = resolve_pretraining_config("electra_small", None, {"model_hparam_overrides": {
      "hidden_size": 512, "num_attention_heads": 2}})
  assert c.bert_config.num_attention_heads == 2


def test_paths_from_data_dir(tmp_path):
  c = resolve_pretraining_config("electra_small", str(tmp_path))
  assert c.model_dir == str(tmp_path / "models" / "electra_small")
  assert c.vocab_file == str(tmp_path / "vocab.txt")
  assert c.pretrain_tfrecords == str(tmp_path / "pretrain_tfrecords" / "pretrain_data.tfrecord*")


def test_hparams_from_file_and_round_trip(tmp_path):
  path = tmp_path / "h.json"
  path.write_text(json.dumps({"num_train_steps": 7}))
  c = resolve_pretraining_config("electra_small", None, str(path))
  assert c.num_train_steps == 7
  again = type(c).from_dict(json.loads(json.dumps(c.to_dict())))
  assert again.to_dict() == c.to_dict()
  path.write_text('{"num_train_steps": 7,')
  with pytest.raises(ConfigError, match=re.escape(
      f"config file {path} is not valid JSON (line 1 column 23): Expecting property name")):
    resolve_pretraining_config("electra_small", None, str(path))
  path.write_bytes(b'{"a": "\xff"}')
  with pytest.raises(ConfigError, match=re.escape(f"config file {path} is not UTF-8 text (byte 7)")):
    resolve_pretraining_config("electra_small", None, str(path))


@pytest.mark.parametrize("hparams,message", [
    ({"num_train_step": 1}, "unknown hparam 'num_train_step'"),
    ({"max_predictions_per_seq": 20}, "max_predictions_per_seq is derived"),
    ({"mask_prob": "0.15"}, "mask_prob must be of type float"),
    ({"debug": 1}, "debug must be of type bool"),
    ({"mask_prob": 1.5}, "mask_prob must be in"),
    ({"do_eval": True}, "do_train and do_eval"),
    ({"untied_generator": False}, "generator_hidden_size"),
    ({"untied_generator": False, "generator_hidden_size": 1.0,
      "untied_generator_embeddings": True}, "untied_generator_embeddings"),
    ({"model_size": "huge"}, "model_size 'huge' is unknown"),
    ({"model_hparam_overrides": {"hidden": 3}}, "model_hparam_overrides: unknown key 'hidden'"),
    ({"model_hparam_overrides": {"hidden_size": 100, "num_attention_heads": 3}},
     "not a multiple of num_attention_heads"),
    ({"max_seq_length": 1024}, "exceeds max_position_embeddings"),
    ({"uniform_generator": True, "electric_objective": True}, "exclude each other"),
    ({"embedding_size": 0}, "embedding_size must be"),
    ({"num_warmup_steps": -1}, "num_warmup_steps must be >= 0"),
    ({"learning_rate": -1.0}, "learning_rate must be > 0, got -1.0"),
    ({"learning_rate": 0.0}, "learning_rate must be > 0, got 0.0"),
    ({"weight_decay_rate": -0.01}, "weight_decay_rate must be >= 0, got -0.01"),
    ({"lr_decay_power": -1.0}, "lr_decay_power must be >= 0, got -1.0"),
    ({"seed": -1}, r"seed must be in \[0, 32768\), got -1"),
    ({"seed": 32768}, r"seed must be in \[0, 32768\)"),
    ({"model_hparam_overrides": {"hidden_size": "256"}},
     "model_hparam_overrides: hidden_size must be of type int, got '256'"),
    ({"model_hparam_overrides": {"hidden_dropout_prob": True}},
     "hidden_dropout_prob must be of type float"),
    ({"model_hparam_overrides": {"hidden_act": "swish"}},
     "hidden_act: unsupported activation 'swish': use one of gelu, relu, tanh, linear"),
])
def test_bad_hparams_name_the_key(hparams, message):
  with pytest.raises(ConfigError, match=message):
    resolve_pretraining_config("electra_small", None, hparams)


def test_bad_model_name_and_hparams_string():
  with pytest.raises(ConfigError, match="unknown model name 'electra_tiny'.*electra_small"):
    resolve_pretraining_config("electra_tiny")
  with pytest.raises(ConfigError, match="--hparams is neither a JSON object"):
    resolve_pretraining_config("electra_small", None, "{num_train_steps: 3}")


@pytest.mark.parametrize("activation", ["gelu", "relu", "tanh", "linear", "TANH", "", None])
def test_every_official_activation_is_accepted(activation):
  """Official modeling.get_activation: gelu, relu, tanh, linear (any case), "" or None."""
  config = resolve_pretraining_config("electra_small", None, {
      "debug": True, "model_hparam_overrides": {"hidden_act": activation}})
  assert config.bert_config.hidden_act == activation
  assert config.generator_bert_config.hidden_act == activation


def test_typed_configs_cover_exactly_the_json_hparams():
  """The frozen dataclasses have one typed field per hparam of the JSON defaults (plus the
  derived ones), so the two cannot drift apart."""
  import dataclasses
  import json
  from electra_tf2.config.pretraining import PretrainingConfig
  from electra_tf2.config.hparams import config_path
  from electra_tf2.tasks.config import FinetuningConfig
  for cls, name, derived in (
      (PretrainingConfig, "pretraining_defaults.json",
       {"model_name", "data_dir", "max_predictions_per_seq", "bert_config",
        "generator_bert_config", "special_ids"}),
      (FinetuningConfig, "finetuning_defaults.json",
       {"model_name", "data_dir", "pretrained_model_dir", "encoder_config"})):
    with open(config_path(name)) as f:
      hparams = set(json.load(f)) - {"_doc"}
    assert {field.name for field in dataclasses.fields(cls)} == hparams | derived, name
  config = resolve_pretraining_config("electra_small", None, {"debug": True})
  with pytest.raises(dataclasses.FrozenInstanceError):
    config.learning_rate = 1.0
  assert type(config).from_dict(config.to_dict()) == config  # the saved form round-trips


@pytest.mark.parametrize("key, value", [("tpu_name", "my-tpu"), ("tpu_zone", "us-central1-a"),
                                        ("gcp_project", "p"), ("num_tpu_cores", 8),
                                        ("tpu_job_name", "tpu_worker")])
def test_official_tpu_hparams_are_refused_without_use_tpu(key, value):
  """The official code reads these only with use_tpu (configure_pretraining.py:87-92); a user
  bringing an official hparams file without it would train on the wrong device unwarned."""
  from electra_tf2.tasks.config import resolve_finetuning_config
  with pytest.raises(ConfigError, match=f"--hparams: {key} set but use_tpu is false: set "
                                        "\"use_tpu\": true"):
    resolve_pretraining_config("electra_small", None, {"debug": True, key: value})
  with pytest.raises(ConfigError, match=f"{key} set but use_tpu is false"):
    resolve_finetuning_config("electra_small", "/nonexistent", {key: value}, "rte")


def test_use_tpu_selects_the_tpu_strategy_and_conflicts_are_one_line(monkeypatch):
  """use_tpu picks the TPU named by tpu_name, with its zone and project (the official
  TPUClusterResolver arguments); a contradicting flag is refused before any connection."""
  from electra_tf2.training import distribution
  from electra_tf2.training.options import RunOptions
  config = resolve_pretraining_config("electra_small", None, {
      "debug": True, "use_tpu": True, "tpu_name": "my-tpu", "num_tpu_cores": 8})
  with pytest.raises(distribution.DistributionError, match="--distribution-strategy is mirrored"):
    distribution.strategy_for(config, RunOptions(distribution_strategy="mirrored"))
  with pytest.raises(distribution.DistributionError, match="--tpu other and \"tpu_name\": my-tpu"):
    distribution.strategy_for(config, RunOptions(tpu="other"))
  calls = []
  monkeypatch.setattr(distribution, "get_strategy",
                      lambda *args, **kwargs: calls.append((args, kwargs)))
  distribution.strategy_for(config, RunOptions())
  assert calls == [(("tpu", "my-tpu"), {"zone": None, "project": None, "job_name": None,
                                        "num_cores": 8})]
