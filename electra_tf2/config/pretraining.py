"""Pre-training configuration: configs/*.json resolved the official way.

The single place where a model name and user hparams become the final
`PretrainingConfig` and the encoder `BertConfig`s (discriminator, generator).
Resolution follows configure_pretraining.py:28-137:

  1. defaults (configs/pretraining_defaults.json), then the model preset
     (configs/<model_name>.json);
  2. user hparams;
  3. derived values: max_predictions_per_seq = int((mask_prob + 0.005) * max_seq_length);
  4. debug overrides (configs/debug.json, "training");
  5. small models get embedding_size 128;
  6. the ELECTRIC objective forces two_tower_generator;
  7. user hparams again, so user values win;
  8. checks: unknown keys, wrong types and inconsistent values raise ConfigError
     with a message that names the key.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from typing import Any, Dict, Mapping, Optional, Union

from electra_tf2.text import vocab as vocab_lib
from electra_tf2.config.encoder import BertConfig, get_bert_config, get_generator_config
from electra_tf2.config.hparams import (
    ConfigError, ResolvedConfig, check_hparams, check_optimizer_hparams, check_seed,
    check_tpu_hparams, load_preset, parse_hparams, read_config)

# The saved hparams that define the discriminator encoder's shape (`get_bert_config`).
ENCODER_HPARAMS = ("model_size", "model_hparam_overrides", "debug", "vocab_size",
                   "embedding_size")
# Hparams added after model directories were first saved: a saved config without one
# means its default (the PretrainingConfig field's).
ADDED_HPARAMS = ("init_checkpoint", "vocab_pad_multiple")
# vocab_pad_multiple: off, or the multiples whose output matmul fills tensor-core tiles.
VOCAB_PAD_MULTIPLES = (1, 64, 128)
_DERIVED = {"max_predictions_per_seq":
                "derived as int((mask_prob + 0.005) * max_seq_length); "
                "set mask_prob or max_seq_length instead"}


@dataclasses.dataclass(frozen=True)
class ObjectiveConfig:
  """What the pre-training forward pass needs besides the encoders' shapes.

  The masking, sampling and loss settings of run_pretraining.py:37-162; it is
  the `config` of `pretrain_helpers.mask` and `objectives.get_fake_data`.
  """
  vocab_size: int
  special_ids: vocab_lib.SpecialTokenIds
  mask_prob: float = 0.15
  max_predictions_per_seq: int = 19
  electra_objective: bool = True
  electric_objective: bool = False
  two_tower_generator: bool = False
  uniform_generator: bool = False
  untied_generator_embeddings: bool = False
  gen_weight: float = 1.0
  disc_weight: float = 50.0
  temperature: float = 1.0
  disallow_correct: bool = False
  vocab_pad_multiple: int = 1

  @property
  def has_discriminator(self) -> bool:
    return self.electra_objective or self.electric_objective

  def to_dict(self) -> Dict[str, Any]:
    return dict(dataclasses.asdict(self), special_ids=self.special_ids._asdict())

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "ObjectiveConfig":
    return cls(**dict(values, special_ids=vocab_lib.SpecialTokenIds(**values["special_ids"])))


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(ResolvedConfig):
  """The resolved pre-training configuration, frozen.

  Every hparam of configs/pretraining_defaults.json (the official
  configure_pretraining.py attributes plus the port's), `model_name`,
  `data_dir`, the derived `max_predictions_per_seq`, and what is resolved from
  files once, when the config is built: the discriminator encoder
  `bert_config`, the `generator_bert_config` (None without a generator encoder) and
  the vocab's `special_ids`. `to_dict` is what pretrain_config.json holds, so a
  saved model is rebuilt from it alone. Build one with `from_preset` (or
  `resolve_pretraining_config`).

  >>> config = PretrainingConfig.from_preset("electra_small", debug=True, learning_rate=1e-3)
  >>> config.bert_config.num_hidden_layers, config.generator_bert_config.hidden_size
  (3, 36)
  >>> config.max_predictions_per_seq  # derived: int((0.15 + 0.005) * 128)
  19
  """
  # configure_pretraining.py:29-101
  debug: bool
  do_train: bool
  do_eval: bool
  electra_objective: bool
  electric_objective: bool
  gen_weight: float
  disc_weight: float
  mask_prob: float
  learning_rate: float
  lr_decay_power: float
  weight_decay_rate: float
  num_warmup_steps: int
  iterations_per_loop: int
  save_checkpoints_steps: int
  num_train_steps: int
  num_eval_steps: int
  keep_checkpoint_max: Optional[int]
  model_size: str
  model_hparam_overrides: Dict[str, Any]
  embedding_size: Optional[int]
  vocab_size: int
  do_lower_case: bool
  uniform_generator: bool
  two_tower_generator: bool
  untied_generator_embeddings: bool
  untied_generator: bool
  generator_layers: float
  generator_hidden_size: float
  disallow_correct: bool
  temperature: float
  max_seq_length: int
  train_batch_size: int
  eval_batch_size: int
  pretrain_tfrecords: Optional[str]
  vocab_file: Optional[str]
  model_dir: Optional[str]
  # port
  gradient_accumulation_steps: int
  deterministic: bool
  seed: int
  # derived and resolved
  model_name: str
  data_dir: Optional[str]
  max_predictions_per_seq: int
  bert_config: BertConfig
  generator_bert_config: Optional[BertConfig]
  special_ids: vocab_lib.SpecialTokenIds
  # port; last, with defaults: older saved configs lack them
  init_checkpoint: Optional[str] = None
  vocab_pad_multiple: int = 1

  @property
  def uses_generator_encoder(self) -> bool:
    """Whether a separate generator encoder (one or two towers) is built."""
    return self.generator_bert_config is not None

  @property
  def resolved_embedding_size(self) -> int:
    """E: embedding_size, or the discriminator hidden size when it is null."""
    return self.embedding_size or self.bert_config.hidden_size

  @property
  def objective(self) -> ObjectiveConfig:
    return ObjectiveConfig(**{f.name: getattr(self, f.name)
                              for f in dataclasses.fields(ObjectiveConfig)})

  @classmethod
  def from_preset(cls, model_name: str, data_dir: Optional[str] = None, **hparams
                  ) -> "PretrainingConfig":
    """The preset `model_name` (configs/<name>.json or a .json path) with `hparams` on top,
    resolved as `resolve_pretraining_config` does; `data_dir` sets the default paths."""
    return resolve_pretraining_config(model_name, data_dir, hparams)

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "PretrainingConfig":
    """Rebuilds a saved config. Files written before the resolved parts were saved
    (no `bert_config`) get them derived, from configs/ and the vocab, once."""
    values = dict(values)
    if "bert_config" not in values:
      values.update(_resolved_parts(values))
    values["bert_config"] = BertConfig(**values["bert_config"])
    if values["generator_bert_config"] is not None:
      values["generator_bert_config"] = BertConfig(**values["generator_bert_config"])
    values["special_ids"] = vocab_lib.SpecialTokenIds(**values["special_ids"])
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def saved_bert_config(values: Mapping[str, Any]) -> BertConfig:
  """The discriminator encoder of saved hparams: as saved, or derived from the
  ENCODER_HPARAMS of a file written before encoders were saved."""
  if "bert_config" in values:
    return BertConfig(**values["bert_config"])
  return get_bert_config(values)


def uses_generator_encoder(values: Mapping[str, Any]) -> bool:
  """Whether hparams build a separate generator encoder (run_pretraining.py:62-93)."""
  return (not values["uniform_generator"] and values["untied_generator"]
          and (values["electra_objective"] or values["electric_objective"]))


def _resolved_parts(values: Mapping[str, Any]) -> Dict[str, Any]:
  """The encoder configs and special ids of resolved hparams, read from files once."""
  bert = saved_bert_config(values)
  generator = get_generator_config(values, bert) if uses_generator_encoder(values) else None
  special = vocab_lib.BERT_UNCASED_SPECIAL_IDS
  if values["vocab_file"] and os.path.exists(values["vocab_file"]):
    # The size is checked with the data (validate_inputs), after the data dir.
    special = vocab_lib.special_token_ids(vocab_lib.load_vocab(values["vocab_file"]))
  return {"bert_config": bert.to_dict(),
          "generator_bert_config": generator and generator.to_dict(),
          "special_ids": special._asdict()}


def schema() -> Dict[str, Dict[str, Any]]:
  """Every pre-training hyperparameter: default, type, nullable, doc."""
  return read_config("pretraining_defaults.json")


def _check_types(values: Mapping[str, Any], schema: Mapping[str, Dict[str, Any]],
                 source: str) -> None:
  check_hparams(values, schema, source, _DERIVED, "pretraining_defaults")


def resolve_pretraining_config(model_name: str, data_dir: Optional[str] = None,
                               hparams: Union[None, str, Mapping[str, Any]] = None
                               ) -> PretrainingConfig:
  """Builds the final pre-training config the way configure_pretraining.py does.

  Args:
    model_name: a preset in configs/ (e.g. "electra_small") or a .json path.
    data_dir: the data directory; sets the default tfrecord, vocab and model paths.
    hparams: user values (dict, JSON string or .json path); they win over everything.

  Raises:
    ConfigError: unknown model name or hparam, wrong type, inconsistent values.
  """
  spec = schema()
  user = parse_hparams(hparams)
  preset = load_preset(model_name)
  preset_source = f"configs/{model_name}.json" if not model_name.endswith(".json") else model_name
  _check_types(preset, spec, preset_source)
  _check_types(user, spec, "--hparams")

  values = {k: copy.deepcopy(v["default"]) for k, v in spec.items()}
  values.update(preset)
  values.update(user)
  if not 0.0 < values["mask_prob"] < 1.0:  # (before it scales max_seq_length: 1e308 overflows)
    raise ConfigError(f"mask_prob must be in (0, 1), got {values['mask_prob']}")
  values["max_predictions_per_seq"] = int((values["mask_prob"] + 0.005) * values["max_seq_length"])
  if values["debug"]:
    values.update(read_config("debug.json")["training"])
  if values["model_size"] == "small":
    values["embedding_size"] = 128
  if values["electric_objective"]:
    values["two_tower_generator"] = True
  values.update(user)

  model_name_only = os.path.splitext(os.path.basename(model_name))[0]
  values["model_name"] = model_name_only
  values["data_dir"] = data_dir
  if data_dir is not None:
    if values["pretrain_tfrecords"] is None:
      values["pretrain_tfrecords"] = os.path.join(
          data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*")
    if values["vocab_file"] is None:
      values["vocab_file"] = vocab_lib.default_vocab_file(data_dir)
    if values["model_dir"] is None:
      values["model_dir"] = os.path.join(data_dir, "models", model_name_only)
  _check_consistency(values)
  check_tpu_hparams(values, spec, "--hparams")
  config = PretrainingConfig.from_dict(dict(values, **_resolved_parts(values)))
  _check_encoders(config)
  return config


def _check_consistency(values: Mapping[str, Any]) -> None:
  """Rejects hparams that the official code would silently misuse."""
  sizes = read_config("model_sizes.json")["sizes"]
  if values["model_size"] not in sizes:
    raise ConfigError(f"model_size {values['model_size']!r} is unknown: use one of "
                      f"{', '.join(sizes)} (and model_hparam_overrides for other shapes)")
  if values["do_train"] == values["do_eval"]:
    raise ConfigError("do_train and do_eval: exactly one must be true (as in the official code)")
  if values["temperature"] <= 0:
    raise ConfigError(f"temperature must be > 0, got {values['temperature']}")
  if values["num_warmup_steps"] < 0:
    raise ConfigError(f"num_warmup_steps must be >= 0, got {values['num_warmup_steps']}")
  check_optimizer_hparams(values)
  check_seed(values["seed"])
  if values["vocab_pad_multiple"] not in VOCAB_PAD_MULTIPLES:
    raise ConfigError(f"vocab_pad_multiple must be 1 (off), 64 or 128, got "
                      f"{values['vocab_pad_multiple']}")
  for key in ("train_batch_size", "eval_batch_size", "max_seq_length", "num_train_steps",
              "gradient_accumulation_steps", "iterations_per_loop", "save_checkpoints_steps",
              "num_eval_steps"):
    if values[key] < 1:
      raise ConfigError(f"{key} must be >= 1, got {values[key]}")
  if values["train_batch_size"] % values["gradient_accumulation_steps"]:
    raise ConfigError(f"train_batch_size {values['train_batch_size']} is not divisible by "
                      f"gradient_accumulation_steps {values['gradient_accumulation_steps']}")
  for key in ("generator_hidden_size", "generator_layers"):
    if not 0.0 < values[key] <= 1.0:
      raise ConfigError(f"{key} is a fraction of the discriminator and must be in (0, 1], "
                        f"got {values[key]}")
  if values["embedding_size"] is not None and values["embedding_size"] < 1:
    raise ConfigError(f"embedding_size must be >= 1 or null, got {values['embedding_size']}")
  if not values["untied_generator"]:
    if values["generator_hidden_size"] != 1.0 or values["generator_layers"] != 1.0:
      raise ConfigError(
          "untied_generator=false makes the generator the discriminator itself, so "
          f"generator_hidden_size ({values['generator_hidden_size']}) and generator_layers "
          f"({values['generator_layers']}) must be 1.0")
    if values["untied_generator_embeddings"]:
      raise ConfigError("untied_generator_embeddings=true needs untied_generator=true: a tied "
                        "generator shares every weight, embeddings included")
    if values["two_tower_generator"]:
      raise ConfigError("two_tower_generator (ELECTRIC) needs untied_generator=true")
  if values["uniform_generator"] and values["two_tower_generator"]:
    raise ConfigError("uniform_generator and two_tower_generator/electric_objective exclude "
                      "each other: pick one generator")
  if not (values["electra_objective"] or values["electric_objective"]) \
      and values["two_tower_generator"]:
    raise ConfigError("two_tower_generator needs electra_objective or electric_objective")


def _check_encoders(config: PretrainingConfig) -> None:
  """The resolved encoder configs are buildable and long enough."""
  bert = config.bert_config
  bert.validate("discriminator config (model_size/model_hparam_overrides)")
  if config.max_seq_length > bert.max_position_embeddings:
    raise ConfigError(f"max_seq_length {config.max_seq_length} exceeds max_position_embeddings "
                      f"{bert.max_position_embeddings}")
  if config.generator_bert_config is not None:
    config.generator_bert_config.validate("generator config (generator_hidden_size)")


