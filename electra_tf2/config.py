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
import json
import math
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from electra_tf2 import atomic_io, vocab as vocab_lib
from electra_tf2.errors import ElectraError

CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "configs")
# The resolved pre-training config, saved next to the checkpoints of every model.
PRETRAIN_CONFIG_FILE = "pretrain_config.json"
# Seeds become int32 stateless-op seeds as `seed * 65536 + shard` (training/pretraining.py).
MAX_SEED = 32768
_NON_PRESETS = ("pretraining_defaults", "model_sizes", "debug", "finetuning_defaults",
                "finetuning_rules")
_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
          "dict": (dict,), "list": (list,)}


class ConfigError(ElectraError, ValueError):
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


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Shapes and regularisation of one BERT-style encoder (model/modeling.py:36-70)."""
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

  @property
  def has_discriminator(self) -> bool:
    return self.electra_objective or self.electric_objective

  def to_dict(self) -> Dict[str, Any]:
    return dict(dataclasses.asdict(self), special_ids=self.special_ids._asdict())

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "ObjectiveConfig":
    return cls(**dict(values, special_ids=vocab_lib.SpecialTokenIds(**values["special_ids"])))


@dataclasses.dataclass(frozen=True)
class ResolvedConfig:
  """What both resolved configs share: the official TPU settings (configure_pretraining.py
  :87-92, configure_finetuning.py:95-100), kept for parity, and the dict form."""
  use_tpu: bool
  num_tpu_cores: int
  tpu_job_name: Optional[str]
  tpu_name: Optional[str]
  tpu_zone: Optional[str]
  gcp_project: Optional[str]

  def replace(self, **kwargs):
    """A copy with some values changed; resolved parts are not recomputed."""
    return dataclasses.replace(self, **kwargs)

  def to_dict(self) -> Dict[str, Any]:
    """Every field as JSON-ready values (nested configs and named tuples as dicts)."""
    values = {}
    for field in dataclasses.fields(self):
      value = getattr(self, field.name)
      if dataclasses.is_dataclass(value):
        value = value.to_dict()
      elif isinstance(value, tuple) and hasattr(value, "_asdict"):
        value = value._asdict()
      values[field.name] = copy.deepcopy(value)
    return values


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(ResolvedConfig):
  """The resolved pre-training configuration, frozen.

  Every hparam of configs/pretraining_defaults.json (the official
  configure_pretraining.py attributes plus the port's), `model_name`,
  `data_dir`, the derived `max_predictions_per_seq`, and what is resolved from
  files once, when the config is built: the discriminator encoder
  `bert_config`, the `generator_bert_config` (None without a generator encoder) and
  the vocab's `special_ids`. `to_dict` is what pretrain_config.json holds, so a
  saved model is rebuilt from it alone. Build one with
  `resolve_pretraining_config`.
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
    arch["generator embeddings"] = (f"untied, {generator.hidden_size} wide"
                                    if config.untied_generator_embeddings else "shared")
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
    if isinstance(value, float) and not math.isfinite(value):
      raise ConfigError(f"{source}: {key} must be a finite number, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**31:
      # Steps, sizes and seeds reach TensorFlow as int32.
      raise ConfigError(f"{source}: {key} must be below 2**31 in magnitude, got {value}")


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
  _check_consistency(values)
  config = PretrainingConfig.from_dict(dict(values, **_resolved_parts(values)))
  _check_encoders(config)
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


def _check_consistency(values: Mapping[str, Any]) -> None:
  """Rejects hparams that the official code would silently misuse."""
  sizes = _read_json(os.path.join(CONFIG_DIR, "model_sizes.json"))["sizes"]
  if values["model_size"] not in sizes:
    raise ConfigError(f"model_size {values['model_size']!r} is unknown: use one of "
                      f"{', '.join(sizes)} (and model_hparam_overrides for other shapes)")
  if values["do_train"] == values["do_eval"]:
    raise ConfigError("do_train and do_eval: exactly one must be true (as in the official code)")
  if values["train_batch_size"] % values["gradient_accumulation_steps"]:
    raise ConfigError(f"train_batch_size {values['train_batch_size']} is not divisible by "
                      f"gradient_accumulation_steps {values['gradient_accumulation_steps']}")
  if not 0.0 < values["mask_prob"] < 1.0:
    raise ConfigError(f"mask_prob must be in (0, 1), got {values['mask_prob']}")
  if values["temperature"] <= 0:
    raise ConfigError(f"temperature must be > 0, got {values['temperature']}")
  if values["num_warmup_steps"] < 0:
    raise ConfigError(f"num_warmup_steps must be >= 0, got {values['num_warmup_steps']}")
  check_optimizer_hparams(values)
  check_seed(values["seed"])
  for key in ("train_batch_size", "eval_batch_size", "max_seq_length", "num_train_steps",
              "gradient_accumulation_steps", "iterations_per_loop", "save_checkpoints_steps",
              "num_eval_steps"):
    if values[key] < 1:
      raise ConfigError(f"{key} must be >= 1, got {values[key]}")
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


def get_bert_config(values: Mapping[str, Any]) -> BertConfig:
  """Discriminator encoder config from hparams (model_size, model_hparam_overrides,
  debug, vocab_size): size table, overrides, then the debug shrink.

  Mirrors util/training_utils.py:96-112 (get_bert_config) plus run_pretraining.py:45-49.
  """
  sizes = _read_json(os.path.join(CONFIG_DIR, "model_sizes.json"))
  shape: Dict[str, Any] = dict(sizes["bert_defaults"], vocab_size=values["vocab_size"])
  overrides = dict(values["model_hparam_overrides"])
  check_model_overrides(overrides)
  shape.update(sizes["sizes"][values["model_size"]])
  shape.update(overrides)
  shape["num_attention_heads"] = max(1, shape["hidden_size"] // 64)
  shape["intermediate_size"] = 4 * shape["hidden_size"]
  shape.update(overrides)
  if values["debug"]:
    shape.update(_read_json(os.path.join(CONFIG_DIR, "debug.json"))["model"])
  return BertConfig(**shape)


def get_generator_config(values: Mapping[str, Any], bert_config: BertConfig) -> BertConfig:
  """The generator: width and depth as fractions of the discriminator
  (run_pretraining.py:338-348)."""
  hidden = int(round(bert_config.hidden_size * values["generator_hidden_size"]))
  return bert_config.replace(
      hidden_size=hidden,
      num_attention_heads=max(1, hidden // 64),
      intermediate_size=4 * hidden,
      num_hidden_layers=int(round(bert_config.num_hidden_layers * values["generator_layers"])))
