"""Hyperparameter machinery shared by pre-training and fine-tuning.

The presets and defaults in the package's `config/presets/` folder (package data,
read through importlib.resources), JSON files and `--hparams` values, the
typed check of values against a defaults schema, and the official TPU
hparams (use_tpu, tpu_name, ...) that both resolved configs carry.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import importlib.resources
import json
import math
import os
from typing import Any, Dict, Mapping, Optional, Union

from electra_tf2.utils import atomic_io
from electra_tf2.utils.errors import ElectraError

# Seeds become int32 stateless-op seeds as `seed * 65536 + shard` (training/pretraining.py).
MAX_SEED = 32768
# Files of config/presets/ that are not model presets.
_NON_PRESETS = ("pretraining_defaults", "model_sizes", "debug", "finetuning_defaults",
                "finetuning_rules")
HPARAM_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
          "dict": (dict,), "list": (list,)}
# The official TPU hparams (configure_pretraining.py:87-92, configure_finetuning.py:95-100),
# honoured when use_tpu is true and refused otherwise.
TPU_HPARAMS = ("num_tpu_cores", "tpu_job_name", "tpu_name", "tpu_zone", "gcp_project")


class ConfigError(ElectraError, ValueError):
  """An unknown, mistyped or inconsistent hyperparameter; the message names it."""



def config_path(name: str) -> str:
  """The path of `name` (e.g. "electra_small.json") in the package's config/presets/ folder."""
  return str(importlib.resources.files("electra_tf2").joinpath("config", "presets", name))


def read_config(name: str) -> Dict[str, Any]:
  """The JSON object of config/presets/`name` (e.g. "model_sizes.json")."""
  return read_json(config_path(name))


def read_json(path: str) -> Dict[str, Any]:
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
  """Names accepted as --model-name: the presets in config/presets/."""
  return sorted(f[:-5] for f in os.listdir(config_path(""))
                if f.endswith(".json") and f[:-5] not in _NON_PRESETS)


def load_preset(model_name: str) -> Dict[str, Any]:
  """The preset values of config/presets/<model_name>.json (or of a JSON file path)."""
  if model_name.endswith(".json"):
    return read_json(model_name)
  path = config_path(model_name + ".json")
  if model_name in _NON_PRESETS or not os.path.isfile(path):
    raise ConfigError(f"unknown model name {model_name!r}: use one of "
                      f"{', '.join(available_models())} or a path to a preset .json file")
  return read_json(path)


def parse_hparams(hparams: Union[None, str, Mapping[str, Any]]) -> Dict[str, Any]:
  """--hparams as given by a user: a JSON string, a .json file path, or a dict."""
  if hparams is None or hparams == "":
    return {}
  if isinstance(hparams, Mapping):
    return dict(hparams)
  if hparams.strip().endswith(".json") and not hparams.strip().startswith("{"):
    return read_json(hparams.strip())
  try:
    value = json.loads(hparams)
  except json.JSONDecodeError as e:
    raise ConfigError(f"--hparams is neither a JSON object nor a .json file path: {e.msg} "
                      f"at character {e.pos}") from None
  if not isinstance(value, dict):
    raise ConfigError("--hparams must be a JSON object such as '{\"num_train_steps\": 1000}'")
  return value


# ---------------------------------------------------------------------------


def hparams_hint(schema_name: str) -> str:
  """Where the hparams of packaged config `schema_name` (e.g. "finetuning_defaults") are
  listed, for messages: the command, and the file in the installed package."""
  return (f"`electra config show {schema_name}` lists every hparam "
          f"(electra_tf2/config/presets/{schema_name}.json)")


def check_hparams(values: Mapping[str, Any], schema: Mapping[str, Dict[str, Any]],
                  source: str, derived: Mapping[str, str], schema_name: str) -> None:
  """Rejects derived, unknown, null-but-not-nullable and mistyped values, naming the key.

  derived: keys that cannot be set, with why; schema_name: the packaged config that lists
  the known keys (e.g. "pretraining_defaults").
  """
  for key, value in values.items():
    if key in derived:
      raise ConfigError(f"{source}: {key} is {derived[key]}")
    if key not in schema:
      close = difflib.get_close_matches(key, [k for k in schema if not k.startswith("_")], n=1)
      guess = f" (did you mean {close[0]!r}?)" if close else ""
      raise ConfigError(f"{source}: unknown hparam {key!r}{guess}; "
                        f"{hparams_hint(schema_name)}")
    entry = schema[key]
    if value is None:
      if not entry.get("nullable"):
        raise ConfigError(f"{source}: {key} may not be null")
      continue
    allowed = HPARAM_TYPES[entry["type"]]
    if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
      raise ConfigError(f"{source}: {key} must be of type {entry['type']}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
      raise ConfigError(f"{source}: {key} must be a finite number, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**31:
      # Steps, sizes and seeds reach TensorFlow as int32.
      raise ConfigError(f"{source}: {key} must be below 2**31 in magnitude, got {value}")


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



def check_tpu_hparams(values: Mapping[str, Any], schema: Mapping[str, Dict[str, Any]],
                      source: str) -> None:
  """Refuses official TPU hparams that would be ignored: without use_tpu, the official
  code never reads them, and a user bringing an official hparams file means a TPU."""
  if values["use_tpu"]:
    return
  changed = [key for key in TPU_HPARAMS if values[key] != schema[key]["default"]]
  if changed:
    raise ConfigError(f"{source}: {', '.join(changed)} set but use_tpu is false: set "
                      "\"use_tpu\": true to train on that TPU, or pass "
                      "--distribution-strategy tpu --tpu NAME")


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
