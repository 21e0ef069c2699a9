"""The shape of one BERT-style encoder (`BertConfig`) and how hparams give it.

`get_bert_config` is the official size table plus overrides
(util/training_utils.py:96-112); `get_generator_config` the generator as
fractions of the discriminator (run_pretraining.py:338-348).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional

from electra_tf2.config.hparams import HPARAM_TYPES, ConfigError, read_config


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Shapes and regularisation of one BERT-style encoder (model/modeling.py:36-70).

  >>> config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
  ...                     num_attention_heads=1, intermediate_size=256)
  >>> config.replace(hidden_dropout_prob=0.0).hidden_dropout_prob
  0.0
  """
  vocab_size: int
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"  # gelu (exact erf), relu, tanh, linear, gelu_tanh; "" or null: linear
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
    try:
      check_activation(self.hidden_act)
    except ValueError as e:
      raise ConfigError(f"{where}: hidden_act: {e}") from None


# The names the official `modeling.get_activation` accepts (`hidden_act`, model/modeling.py:
# 329-348), and gelu_tanh (GELU's tanh approximation: keras-hub's ELECTRA, transformers'
# gelu_new); "", None and "linear" mean no activation. layers/activations.py defines them.
ACTIVATION_NAMES = ("gelu", "relu", "tanh", "linear", "gelu_tanh")


def check_activation(name: Optional[str]) -> None:
  """Refuses (ValueError) a `hidden_act` that is none of ACTIVATION_NAMES."""
  if name and name.lower() not in ACTIVATION_NAMES:
    raise ValueError(f"unsupported activation {name!r}: use one of "
                     f"{', '.join(ACTIVATION_NAMES)} (or null)")


def check_model_overrides(overrides: Mapping[str, Any]) -> None:
  """Rejects unknown keys and mistyped values in model_hparam_overrides (BertConfig fields)."""
  types = {f.name: f.type for f in dataclasses.fields(BertConfig)}
  for key, value in overrides.items():
    if key == "hidden_act" and value is None:  # official get_activation(None): linear
      continue
    if key not in types:
      raise ConfigError(f"model_hparam_overrides: unknown key {key!r}; known keys: "
                        f"{', '.join(sorted(types))}")
    allowed = HPARAM_TYPES[types[key]]
    if isinstance(value, bool) or not isinstance(value, allowed):
      raise ConfigError(f"model_hparam_overrides: {key} must be of type {types[key]}, "
                        f"got {value!r}")


def get_bert_config(values: Mapping[str, Any]) -> BertConfig:
  """Discriminator encoder config from hparams (model_size, model_hparam_overrides,
  debug, vocab_size): size table, overrides, then the debug shrink.

  Mirrors util/training_utils.py:96-112 (get_bert_config) plus run_pretraining.py:45-49.
  """
  sizes = read_config("model_sizes.json")
  shape: Dict[str, Any] = dict(sizes["bert_defaults"], vocab_size=values["vocab_size"])
  overrides = dict(values["model_hparam_overrides"])
  check_model_overrides(overrides)
  shape.update(sizes["sizes"][values["model_size"]])
  shape.update(overrides)
  shape["num_attention_heads"] = max(1, shape["hidden_size"] // 64)
  shape["intermediate_size"] = 4 * shape["hidden_size"]
  shape.update(overrides)
  if values["debug"]:
    shape.update(read_config("debug.json")["model"])
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
