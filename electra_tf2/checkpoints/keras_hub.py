"""keras-hub ELECTRA presets, read: config, weights by official name, tokenizer.

A preset (what `ElectraBackbone.save_to_preset` and `ElectraTokenizer.save_to_preset` write)
holds `config.json` (the backbone's Keras config), `metadata.json`, `model.weights.h5`,
`tokenizer.json` and `assets/tokenizer/vocabulary.txt`. keras-hub's `ElectraBackbone` is
the official encoder with one difference: its feed-forward activation is GELU's tanh
approximation (our `gelu_tanh`), where the official code runs the exact erf form. Its
`pooled_dense` (a tanh dense on `[CLS]`) is not ELECTRA's: ELECTRA trains no pooler.

Weights are read by building the backbone with keras-hub (the `keras-hub` extra) and taking
its variables by path (`BACKBONE_NAMES`); the same table writes them
(electra_tf2/conversion/keras_hub.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError

CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
VOCABULARY_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")
BACKBONE = "keras_hub>ElectraBackbone"
TOKENIZER = "keras_hub>ElectraTokenizer"
POOLER = ("pooled_dense/kernel", "pooled_dense/bias")
# keras-hub variable path -> official name (layer i: `{i}`), for the encoder under "electra".
BACKBONE_NAMES = {
    "token_embedding/embeddings": "electra/embeddings/word_embeddings",
    "position_embedding/embeddings": "electra/embeddings/position_embeddings",
    "segment_embedding/embeddings": "electra/embeddings/token_type_embeddings",
    "embeddings_layer_norm/gamma": "electra/embeddings/LayerNorm/gamma",
    "embeddings_layer_norm/beta": "electra/embeddings/LayerNorm/beta",
    "embeddings_projection/kernel": "electra/embeddings_project/kernel",
    "embeddings_projection/bias": "electra/embeddings_project/bias",
    **{f"transformer_layer_{{i}}/self_attention_layer/{part}/{kind}":
       f"electra/encoder/layer_{{i}}/attention/self/{part}/{kind}"
       for part in ("query", "key", "value") for kind in ("kernel", "bias")},
    **{f"transformer_layer_{{i}}/{keras}/{kind}": f"electra/encoder/layer_{{i}}/{official}/{kind}"
       for keras, official in (("self_attention_layer/attention_output", "attention/output/dense"),
                               ("feedforward_intermediate_dense", "intermediate/dense"),
                               ("feedforward_output_dense", "output/dense"))
       for kind in ("kernel", "bias")},
    **{f"transformer_layer_{{i}}/{keras}/{kind}": f"electra/encoder/layer_{{i}}/{official}/{kind}"
       for keras, official in (("self_attention_layer_norm", "attention/output/LayerNorm"),
                               ("feedforward_layer_norm", "output/LayerNorm"))
       for kind in ("gamma", "beta")},
}
# What keras-hub's WordPiece must be for its ids to be ours (BERT's basic tokenizer).
_WORDPIECE = {"split": True, "split_on_cjk": True, "suffix_indicator": "##",
              "oov_token": "[UNK]", "special_tokens_in_strings": False}


class KerasHubError(ElectraError, ValueError):
  """A keras-hub preset that cannot be read as ELECTRA, or keras-hub missing."""


def import_keras_hub(what: str):
  """The keras_hub module; one line naming the extra when it is not installed."""
  try:
    import keras_hub  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise KerasHubError(f"{what} needs keras-hub: pip install 'electra-tf2[keras-hub]' "
                        "-c constraints.txt") from None
  return keras_hub


def official_name(path: str) -> Optional[str]:
  """The official name of a backbone variable path (None: the pooler, not ELECTRA's)."""
  layer = re.match(r"transformer_layer_(\d+)/", path)
  key = path if layer is None else path.replace(layer.group(0), "transformer_layer_{i}/", 1)
  name = BACKBONE_NAMES.get(key)
  return None if name is None else name.replace("{i}", layer.group(1) if layer else "")


def _read_json(path: str) -> Dict[str, Any]:
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except (OSError, ValueError) as e:
    raise KerasHubError(f"{path} is not readable JSON ({e})") from None
  if not isinstance(values, dict):
    raise KerasHubError(f"{path} is not a JSON object")
  return values


def is_preset(path: str) -> bool:
  """Whether `path` is a directory holding a keras-hub backbone's config.json."""
  config = os.path.join(path, CONFIG_FILE)
  if not (os.path.isdir(path) and os.path.exists(config)):
    return False
  try:
    with open(config, encoding="utf-8") as f:
      values = json.load(f)
  except (OSError, ValueError):
    return False
  return isinstance(values, dict) and str(values.get("module", "")).startswith("keras_hub")


def encoder_shape(path: str) -> Tuple[BertConfig, int]:
  """`(BertConfig, embedding_size)` of the preset's ElectraBackbone config (gelu_tanh)."""
  config_path = os.path.join(path, CONFIG_FILE)
  values = _read_json(config_path)
  if values.get("registered_name") != BACKBONE:
    raise KerasHubError(f"{config_path}: registered_name is {values.get('registered_name')!r}, "
                        f"not {BACKBONE!r}: only ELECTRA presets load here")
  config = values.get("config") or {}
  try:
    bert = BertConfig(vocab_size=int(config["vocab_size"]), hidden_size=int(config["hidden_dim"]),
                      num_hidden_layers=int(config["num_layers"]),
                      num_attention_heads=int(config["num_heads"]),
                      intermediate_size=int(config["intermediate_dim"]), hidden_act="gelu_tanh",
                      hidden_dropout_prob=float(config.get("dropout", 0.1)),
                      attention_probs_dropout_prob=float(config.get("dropout", 0.1)),
                      max_position_embeddings=int(config.get("max_sequence_length", 512)),
                      type_vocab_size=int(config.get("num_segments", 2)))
    return bert, int(config["embedding_dim"])
  except (KeyError, TypeError, ValueError) as e:
    raise KerasHubError(f"{config_path}: the backbone config lacks or mistypes {e}") from None


@dataclasses.dataclass(frozen=True)
class PresetTokenizer:
  """The preset's WordPiece: its vocabulary file and casing."""
  vocab_file: Optional[str]
  do_lower_case: bool
  strip_accents: bool


def read_tokenizer(path: str) -> PresetTokenizer:
  """tokenizer.json's ElectraTokenizer, checked to give BERT's WordPiece ids."""
  json_path = os.path.join(path, TOKENIZER_FILE)
  vocab = os.path.join(path, VOCABULARY_FILE)
  if not os.path.exists(json_path):
    return PresetTokenizer(vocab if os.path.exists(vocab) else None, False, False)
  values = _read_json(json_path)
  config = values.get("config") or {}
  if values.get("registered_name") != TOKENIZER:
    raise KerasHubError(f"{json_path}: registered_name is {values.get('registered_name')!r}, "
                        f"not {TOKENIZER!r}")
  for key, expected in _WORDPIECE.items():
    if config.get(key, expected) != expected:
      raise KerasHubError(f"{json_path}: {key} is {config[key]!r}; BERT's WordPiece, which "
                          f"our models build in, has {expected!r}")
  return PresetTokenizer(vocab if os.path.exists(vocab) else None,
                         bool(config.get("lowercase", False)),
                         bool(config.get("strip_accents", False)))


def backbone_tensors(backbone) -> Dict[str, np.ndarray]:
  """`{official name: array}` of an ElectraBackbone's encoder (our layout: `[in, out]`
  kernels; the attention's per-head kernels and biases merged), without the pooler."""
  from keras import ops  # pylint: disable=g-import-not-at-top
  tensors = {}
  hidden = backbone.hidden_dim
  for variable in backbone.weights:
    name = official_name(variable.path)
    if name is None:
      continue
    value = np.asarray(ops.convert_to_numpy(variable))
    if "/attention/self/" in name:
      value = value.reshape((hidden, -1) if name.endswith("kernel") else (-1,))
    elif "/attention/output/dense/kernel" in name:
      value = value.reshape(-1, hidden)
    tensors[name] = value
  return tensors


def assign_backbone(backbone, tensors: Mapping[str, np.ndarray]) -> None:
  """Assigns `backbone_tensors`' layout back to an ElectraBackbone (the pooler untouched);
  a KerasHubError when one of its encoder variables has no tensor."""
  for variable in backbone.weights:
    name = official_name(variable.path)
    if name is None:
      continue
    if name not in tensors:
      raise KerasHubError(f"the model has no {name} for keras-hub's {variable.path}")
    variable.assign(np.reshape(tensors[name], tuple(variable.shape)))


def read_weights(path: str) -> Dict[str, np.ndarray]:
  """The preset's encoder tensors by official name (keras-hub builds the backbone)."""
  keras_hub = import_keras_hub(f"reading the keras-hub preset {path}")
  backbone = keras_hub.models.ElectraBackbone.from_preset(path)
  return backbone_tensors(backbone)
