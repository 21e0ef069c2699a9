"""Pre-training configuration: configs/*.json resolved the official way.

The single place where a model name and user hparams become the final
`PretrainingConfig` and the encoder `BertConfig`s (discriminator, generator).
Resolution follows configure_pretraining.py (spec section 2.1):

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
import json
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from electra_tf2 import atomic_io, vocab as vocab_lib

CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")
# The resolved pre-training config, saved next to the checkpoints of every model.
PRETRAIN_CONFIG_FILE = "pretrain_config.json"
# Seeds become int32 stateless-op seeds as `seed * 65536 + shard` (training/pretraining_loop.py).
MAX_SEED = 32768
_NON_PRESETS = ("pretraining_defaults", "model_sizes", "debug", "finetuning_defaults",
                "finetuning_rules")
_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
          "dict": (dict,), "list": (list,)}


class ConfigError(ValueError):
  """An unknown, mistyped or inconsistent hyperparameter; the message names it."""


def _read_json(path: str) -> Dict[str, Any]:
  try:
    if atomic_io.is_remote(path):  # gs://... model directories: TensorFlow's file system
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      with tf.io.gfile.GFile(path) as f:
        data = json.loads(f.read())
    else:
      with open(path, encoding="utf-8") as f:
        data = json.load(f)
  except OSError as e:
    raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
  except json.JSONDecodeError as e:
    raise ConfigError(f"config file {path} is not valid JSON (line {e.lineno} column {e.colno}): "
                      f"{e.msg}") from None
  except UnicodeDecodeError as e:
    raise ConfigError(f"config file {path} is not UTF-8 text (byte {e.start})") from None
  if not isinstance(data, dict):
    raise ConfigError(f"config file {path} must hold a JSON object")
  data.pop("_doc", None)
  return data


def available_models() -> list[str]:
  """Names accepted as --model-name: the presets in configs/."""
  return sorted(f[:-5] for f in os.listdir(CONFIG_DIR)
                if f.endswith(".json") and f[:-5] not in _NON_PRESETS)


def load_preset(model_name: str) -> Dict[str, Any]:
  """The preset values of configs/<model_name>.json (or of a JSON file path)."""
  if model_name.endswith(".json"):
    return _read_json(model_name)
  path = os.path.join(CONFIG_DIR, model_name + ".json")
  if model_name in _NON_PRESETS or not os.path.isfile(path):
    raise ConfigError(f"unknown model name {model_name!r}: use one of "
                      f"{', '.join(available_models())} or a path to a preset .json file")
  return _read_json(path)


def parse_hparams(hparams: Union[None, str, Mapping[str, Any]]) -> Dict[str, Any]:
  """--hparams as given by a user: a JSON string, a .json file path, or a dict."""
  if hparams is None or hparams == "":
    return {}
  if isinstance(hparams, Mapping):
    return dict(hparams)
  if hparams.strip().endswith(".json") and not hparams.strip().startswith("{"):
    return _read_json(hparams.strip())
  try:
    value = json.loads(hparams)
  except json.JSONDecodeError as e:
    raise ConfigError(f"--hparams is neither a JSON object nor a .json file path: {e.msg} "
                      f"at character {e.pos}") from None
  if not isinstance(value, dict):
    raise ConfigError("--hparams must be a JSON object such as '{\"num_train_steps\": 1000}'")
  return value


# ---------------------------------------------------------------------------
# Encoder configuration
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class BertConfig:
  """Shapes and regularisation of one BERT-style encoder (model/modeling.py)."""
  vocab_size: int
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"  # gelu (exact erf), relu, tanh, linear; "" or null: linear
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  def replace(self, **kwargs) -> "BertConfig":
    return dataclasses.replace(self, **kwargs)

  def validate(self, where: str) -> None:
    for field in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "vocab_size"):
      if getattr(self, field) < 1:
        raise ConfigError(f"{where}: {field} must be >= 1, got {getattr(self, field)}")
    if self.hidden_size % self.num_attention_heads:
      raise ConfigError(f"{where}: hidden_size {self.hidden_size} is not a multiple of "
                        f"num_attention_heads {self.num_attention_heads}")
    from electra_tf2.layers.activations import get_activation  # imports TensorFlow
    try:
      get_activation(self.hidden_act)
    except ValueError as e:
      raise ConfigError(f"{where}: hidden_act: {e}") from None


# ---------------------------------------------------------------------------
# Pre-training configuration
# ---------------------------------------------------------------------------


class ResolvedConfig:
  """Attribute access over a resolved dict of hyperparameters (JSON-serialisable)."""

  def __init__(self, values: Mapping[str, Any]):
    self._values = dict(values)

  def __getattr__(self, name: str) -> Any:
    values = self.__dict__.get("_values", {})
    if name in values:
      return values[name]
    raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

  def to_dict(self) -> Dict[str, Any]:
    return copy.deepcopy(self._values)

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]):
    return cls(values)

  def __repr__(self) -> str:
    return f"{type(self).__name__}({json.dumps(self._values, sort_keys=True)})"


class PretrainingConfig(ResolvedConfig):
  """The resolved pre-training hyperparameters (attributes as in the official code).

  Build it with `resolve_pretraining_config`; `from_dict` rebuilds a saved one.
  Besides the official attributes it carries `model_name`, `data_dir` and the
  derived `max_predictions_per_seq`.
  """

  @property
  def special_ids(self) -> vocab_lib.SpecialTokenIds:
    """Ids of [PAD] [UNK] [CLS] [SEP] [MASK]: from vocab_file, else BERT uncased's."""
    if self.vocab_file and os.path.exists(self.vocab_file):
      return vocab_lib.special_token_ids(vocab_lib.load_vocab(self.vocab_file, self.vocab_size))
    return vocab_lib.BERT_UNCASED_SPECIAL_IDS

  @property
  def bert_config(self) -> BertConfig:
    """The discriminator (or full-size model) encoder config."""
    return get_bert_config(self)

  @property
  def generator_bert_config(self) -> BertConfig:
    """The generator encoder config (run_pretraining.get_generator_config)."""
    return get_generator_config(self, self.bert_config)

  @property
  def uses_generator_encoder(self) -> bool:
    """Whether a separate generator encoder (one or two towers) is built."""
    return (not self.uniform_generator and self.untied_generator
            and (self.electra_objective or self.electric_objective))

  @property
  def resolved_embedding_size(self) -> int:
    """E: embedding_size, or the discriminator hidden size when it is null."""
    return self.embedding_size or self.bert_config.hidden_size


def _schema() -> Dict[str, Dict[str, Any]]:
  return _read_json(os.path.join(CONFIG_DIR, "pretraining_defaults.json"))


# The saved hparams that define the discriminator encoder's shape (`get_bert_config`).
ENCODER_HPARAMS = ("model_size", "model_hparam_overrides", "debug", "vocab_size",
                   "embedding_size")


_SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size")


def architecture(config: "PretrainingConfig") -> Dict[str, Any]:
  """What the variables of a pre-training checkpoint and their shapes depend on.

  Flat {description: value}; two configs with equal architectures can resume
  each other's checkpoints (dropout, initializers, the schedule may differ).
  """
  bert = config.bert_config
  arch: Dict[str, Any] = {f"encoder {field}": getattr(bert, field) for field in _SHAPE_FIELDS}
  arch["embedding_size"] = config.resolved_embedding_size
  arch["discriminator head"] = bool(config.electra_objective or config.electric_objective)
  arch["MLM head"] = ("cloze" if config.two_tower_generator
                      else "none" if config.uniform_generator else "masked LM")
  if config.uses_generator_encoder:
    generator = config.generator_bert_config
    arch["generator"] = "two towers" if config.two_tower_generator else "one encoder"
    arch["generator embeddings"] = "untied" if config.untied_generator_embeddings else "shared"
    arch.update({f"generator {field}": getattr(generator, field) for field in
                 ("hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size")})
  else:
    arch["generator"] = "uniform" if config.uniform_generator else "the encoder itself"
  return arch


def check_same_architecture(config: "PretrainingConfig", saved_values: Mapping[str, Any]
                            ) -> None:
  """Raises ConfigError if config.model_dir holds a checkpoint of another architecture.

  Call it only when the directory holds a checkpoint. Compares `architecture`
  with that of `saved_values` (the directory's pretrain_config.json), naming
  every difference, so that resuming does not fail deep inside checkpoint
  restoring.
  """
  try:
    saved = architecture(PretrainingConfig.from_dict(saved_values))
  except (AttributeError, KeyError, TypeError):
    return  # not a complete config of this version: restoring will tell
  current = architecture(config)
  differ = [key for key in current if saved.get(key) != current[key]]
  if differ:
    details = ", ".join(f"{key} {saved.get(key)} there, {current[key]} now" for key in differ)
    raise ConfigError(f"{config.model_dir} holds a model of another shape ({details}): pass the "
                      f"hparams it was pre-trained with (see its {PRETRAIN_CONFIG_FILE}), or set "
                      "\"model_dir\" in --hparams to start a new model elsewhere")


def read_saved_pretraining_config(model_dir: str, required: Optional[Sequence[str]] = None
                                  ) -> Dict[str, Any]:
  """The resolved hparams in `model_dir`/pretrain_config.json.

  Args:
    model_dir: a pre-trained model directory.
    required: the hparams that must be present; default all of them.
  """
  path = os.path.join(model_dir, PRETRAIN_CONFIG_FILE)
  values = _read_json(path)
  missing = [key for key in (required or _schema()) if key not in values]
  if missing:
    raise ConfigError(f"{path} lacks {', '.join(missing)}: it was edited or written by another "
                      "tool; re-create it with run_pretraining.py or python -m electra_tf2.convert")
  return values


_DERIVED = {"max_predictions_per_seq":
                "derived as int((mask_prob + 0.005) * max_seq_length); "
                "set mask_prob or max_seq_length instead"}


def check_hparams(values: Mapping[str, Any], schema: Mapping[str, Dict[str, Any]],
                  source: str, derived: Mapping[str, str], schema_file: str) -> None:
  """Rejects derived, unknown, null-but-not-nullable and mistyped values, naming the key.

  derived: keys that cannot be set, with why; schema_file: where the known keys are listed.
  """
  for key, value in values.items():
    if key in derived:
      raise ConfigError(f"{source}: {key} is {derived[key]}")
    if key not in schema:
      raise ConfigError(f"{source}: unknown hparam {key!r}; known hparams are listed in "
                        f"{schema_file}")
    entry = schema[key]
    if value is None:
      if not entry.get("nullable"):
        raise ConfigError(f"{source}: {key} may not be null")
      continue
    allowed = _TYPES[entry["type"]]
    if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
      raise ConfigError(f"{source}: {key} must be of type {entry['type']}, got {value!r}")


def _check_types(values: Mapping[str, Any], schema: Mapping[str, Dict[str, Any]],
                 source: str) -> None:
  check_hparams(values, schema, source, _DERIVED, "configs/pretraining_defaults.json")


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
  schema = _schema()
  user = parse_hparams(hparams)
  preset = load_preset(model_name)
  preset_source = f"configs/{model_name}.json" if not model_name.endswith(".json") else model_name
  _check_types(preset, schema, preset_source)
  _check_types(user, schema, "--hparams")

  values = {k: copy.deepcopy(v["default"]) for k, v in schema.items()}
  values.update(preset)
  values.update(user)
  values["max_predictions_per_seq"] = int((values["mask_prob"] + 0.005) * values["max_seq_length"])
  if values["debug"]:
    values.update(_read_json(os.path.join(CONFIG_DIR, "debug.json"))["training"])
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
      values["vocab_file"] = os.path.join(data_dir, "vocab.txt")
    if values["model_dir"] is None:
      values["model_dir"] = os.path.join(data_dir, "models", model_name_only)
  config = PretrainingConfig(values)
  _check_consistency(config)
  return config


def check_optimizer_hparams(values: Mapping[str, Any]) -> None:
  """learning_rate > 0; weight_decay_rate and (if present) lr_decay_power >= 0."""
  if values["learning_rate"] <= 0:
    raise ConfigError(f"learning_rate must be > 0, got {values['learning_rate']}")
  for key in ("weight_decay_rate", "lr_decay_power"):
    if key in values and values[key] < 0:
      raise ConfigError(f"{key} must be >= 0, got {values[key]}")


def check_seed(seed: int) -> None:
  """Seeds feed int32 stateless-op seeds (`seed * 65536 + shard`) and Keras' global seed."""
  if not 0 <= seed < MAX_SEED:
    raise ConfigError(f"seed must be in [0, {MAX_SEED}), got {seed}")


def _check_consistency(config: PretrainingConfig) -> None:
  """Rejects values that the official code would silently misuse."""
  sizes = _read_json(os.path.join(CONFIG_DIR, "model_sizes.json"))["sizes"]
  if config.model_size not in sizes:
    raise ConfigError(f"model_size {config.model_size!r} is unknown: use one of "
                      f"{', '.join(sizes)} (and model_hparam_overrides for other shapes)")
  if config.do_train == config.do_eval:
    raise ConfigError("do_train and do_eval: exactly one must be true (as in the official code)")
  if config.train_batch_size % config.gradient_accumulation_steps:
    raise ConfigError(f"train_batch_size {config.train_batch_size} is not divisible by "
                      f"gradient_accumulation_steps {config.gradient_accumulation_steps}")
  if not 0.0 < config.mask_prob < 1.0:
    raise ConfigError(f"mask_prob must be in (0, 1), got {config.mask_prob}")
  if config.temperature <= 0:
    raise ConfigError(f"temperature must be > 0, got {config.temperature}")
  if config.num_warmup_steps < 0:
    raise ConfigError(f"num_warmup_steps must be >= 0, got {config.num_warmup_steps}")
  check_optimizer_hparams(config.to_dict())
  check_seed(config.seed)
  for key in ("train_batch_size", "eval_batch_size", "max_seq_length", "num_train_steps",
              "gradient_accumulation_steps", "iterations_per_loop", "save_checkpoints_steps",
              "num_eval_steps"):
    if getattr(config, key) < 1:
      raise ConfigError(f"{key} must be >= 1, got {getattr(config, key)}")
  for key in ("generator_hidden_size", "generator_layers"):
    if not 0.0 < getattr(config, key) <= 1.0:
      raise ConfigError(f"{key} is a fraction of the discriminator and must be in (0, 1], "
                        f"got {getattr(config, key)}")
  if config.embedding_size is not None and config.embedding_size < 1:
    raise ConfigError(f"embedding_size must be >= 1 or null, got {config.embedding_size}")
  if not config.untied_generator:
    if config.generator_hidden_size != 1.0 or config.generator_layers != 1.0:
      raise ConfigError(
          "untied_generator=false makes the generator the discriminator itself, so "
          f"generator_hidden_size ({config.generator_hidden_size}) and generator_layers "
          f"({config.generator_layers}) must be 1.0")
    if config.untied_generator_embeddings:
      raise ConfigError("untied_generator_embeddings=true needs untied_generator=true: a tied "
                        "generator shares every weight, embeddings included")
    if config.two_tower_generator:
      raise ConfigError("two_tower_generator (ELECTRIC) needs untied_generator=true")
  if config.uniform_generator and config.two_tower_generator:
    raise ConfigError("uniform_generator and two_tower_generator/electric_objective exclude "
                      "each other: pick one generator")
  if not (config.electra_objective or config.electric_objective) and config.two_tower_generator:
    raise ConfigError("two_tower_generator needs electra_objective or electric_objective")
  bert = config.bert_config
  bert.validate("discriminator config (model_size/model_hparam_overrides)")
  if config.max_seq_length > bert.max_position_embeddings:
    raise ConfigError(f"max_seq_length {config.max_seq_length} exceeds max_position_embeddings "
                      f"{bert.max_position_embeddings}")
  if config.uses_generator_encoder:
    config.generator_bert_config.validate("generator config (generator_hidden_size)")


def check_model_overrides(overrides: Mapping[str, Any]) -> None:
  """Rejects unknown keys and mistyped values in model_hparam_overrides (BertConfig fields)."""
  types = {f.name: f.type for f in dataclasses.fields(BertConfig)}
  for key, value in overrides.items():
    if key == "hidden_act" and value is None:  # official get_activation(None): linear
      continue
    if key not in types:
      raise ConfigError(f"model_hparam_overrides: unknown key {key!r}; known keys: "
                        f"{', '.join(sorted(types))}")
    allowed = _TYPES[types[key]]
    if isinstance(value, bool) or not isinstance(value, allowed):
      raise ConfigError(f"model_hparam_overrides: {key} must be of type {types[key]}, "
                        f"got {value!r}")


def get_bert_config(config: PretrainingConfig) -> BertConfig:
  """Discriminator encoder config: size table, overrides, then debug shrink.

  Mirrors util/training_utils.get_bert_config plus run_pretraining.py:45-49.
  """
  sizes = _read_json(os.path.join(CONFIG_DIR, "model_sizes.json"))
  values: Dict[str, Any] = dict(sizes["bert_defaults"], vocab_size=config.vocab_size)
  overrides = dict(config.model_hparam_overrides)
  check_model_overrides(overrides)
  values.update(sizes["sizes"][config.model_size])
  values.update(overrides)
  values["num_attention_heads"] = max(1, values["hidden_size"] // 64)
  values["intermediate_size"] = 4 * values["hidden_size"]
  values.update(overrides)
  if config.debug:
    values.update(_read_json(os.path.join(CONFIG_DIR, "debug.json"))["model"])
  return BertConfig(**values)


def get_generator_config(config: PretrainingConfig, bert_config: BertConfig) -> BertConfig:
  """The generator: width and depth as fractions of the discriminator."""
  hidden = int(round(bert_config.hidden_size * config.generator_hidden_size))
  return bert_config.replace(
      hidden_size=hidden,
      num_attention_heads=max(1, hidden // 64),
      intermediate_size=4 * hidden,
      num_hidden_layers=int(round(bert_config.num_hidden_layers * config.generator_layers)))
