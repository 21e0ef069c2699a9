"""Official TF1 checkpoints: found, read and written by official variable name.

A checkpoint is a prefix (`model.ckpt-N`, with `.index` and data files) or a
directory holding one; its variables carry the official names
(model/modeling.py scopes, run_pretraining.py and run_finetuning.py heads:
`electra/...`, `generator/...`, `task_specific/<task>/...`). Everything here
works on `{official name: variable or array}` maps; which model the names
belong to is the caller's (variable_names.py).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.utils.atomic_io import write_text_atomic
from electra_tf2.checkpoints.report import (DEFAULT_IGNORE, ConversionReport, Shape,
                                            match_shapes)
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError

GLOBAL_STEP = "global_step"
# Key of the step in our checkpoints (run_pretraining.py and to-tf2 both save it).
OUR_GLOBAL_STEP_KEY = "global_step/.ATTRIBUTES/VARIABLE_VALUE"
WORD_EMBEDDINGS = "electra/embeddings/word_embeddings"


class ConversionError(ElectraError, ValueError):
  """A checkpoint that does not fit the model; the message holds the report."""


def resolve_checkpoint_path(path: str) -> str:
  """A checkpoint prefix from a prefix or a directory.

  A directory gives its latest checkpoint (the `checkpoint` state file), or
  its only `*.index` file (the released zips hold one checkpoint).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if tf.io.gfile.isdir(path):
    latest = tf_checkpoint.latest_checkpoint(path, strict=False)
    if latest:
      return latest
    found = tf_checkpoint.existing_checkpoints(path)
    if len(found) != 1:
      raise ConversionError(f"{path}: expected one checkpoint (*.index), found {len(found)}; "
                            "pass the checkpoint prefix, e.g. DIR/model.ckpt-1000000")
    return found[0]
  if not tf.io.gfile.exists(path + ".index"):
    raise ConversionError(f"{path} is neither a directory nor a checkpoint prefix "
                          f"({path}.index does not exist)")
  return path


def checkpoint_shapes(checkpoint_path: str) -> Dict[str, Shape]:
  """`{name: shape}` of every variable of a (TF1 or TF2) checkpoint."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(checkpoint_path)
  return {name: tuple(shape) for name, shape in reader.get_variable_to_shape_map().items()}


def match_variables(variable_map: Mapping[str, Any], checkpoint_path: str,
                    ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Compares a `{official name: variable}` map with a checkpoint's names and shapes."""
  return match_shapes(variable_map, checkpoint_shapes(checkpoint_path), checkpoint_path, ignore)


def assign_from_checkpoint(variable_map: Mapping[str, Any], checkpoint_path: str,
                           strict: bool = True, allow_unused: bool = False,
                           ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Assigns every matching checkpoint value to its model variable.

  Args:
    variable_map: `{official name: keras.Variable}`.
    checkpoint_path: a checkpoint prefix (TF1 official names).
    strict: raise `ConversionError` (nothing assigned) unless every model
      variable is found with its shape and, unless `allow_unused`, every other
      checkpoint variable is ignored. Not strict: assign what matches.
    allow_unused: other checkpoint variables are expected (loading one part,
      such as the encoder, of a larger checkpoint).
    ignore: regexes (`re.search`) of checkpoint names that are not weights.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  report = match_variables(variable_map, checkpoint_path, ignore)
  if strict and not (report.complete if allow_unused else report.ok):
    raise ConversionError("the checkpoint does not fit the model (strict conversion):\n"
                          + report.summary())
  reader = tf.train.load_checkpoint(checkpoint_path)
  for name in report.loaded:
    variable = variable_map[name]
    variable.assign(np.asarray(reader.get_tensor(name), dtype=variable.dtype))
  return report


def read_global_step(checkpoint_path: str) -> int:
  """A checkpoint's step: its `global_step` (official, or ours), else the N of `ckpt-N`, else 0."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(checkpoint_path)
  for key in (GLOBAL_STEP, OUR_GLOBAL_STEP_KEY):
    if reader.has_tensor(key):
      return int(reader.get_tensor(key))
  suffix = checkpoint_path.rsplit("-", 1)[-1]
  return int(suffix) if suffix.isdigit() else 0


def official_tensors(variable_map: Mapping[str, Any]) -> Dict[str, np.ndarray]:
  """`{official name: value}` of a variable map."""
  return {name: np.asarray(variable.numpy()) for name, variable in variable_map.items()}


def write_official_checkpoint(output_dir: str, tensors: Mapping[str, np.ndarray],
                              global_step: int = 0) -> str:
  """Writes `output_dir/model.ckpt-<global_step>` under the given names.

  Adds `global_step` (int64) and the `checkpoint` state file, so that
  `tf.train.latest_checkpoint(output_dir)` (the official fine-tuning's
  `init_from_checkpoint(model_dir)`) finds it. Returns the prefix.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if GLOBAL_STEP in tensors:
    raise ValueError("global_step is written from the global_step argument")
  tf.io.gfile.makedirs(output_dir)
  basename = f"model.ckpt-{global_step}"
  prefix = os.path.join(output_dir, basename)
  names = sorted(tensors) + [GLOBAL_STEP]
  values = [tf.constant(tensors[name]) for name in names[:-1]]
  values.append(tf.constant(global_step, tf.int64))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=values)
  write_text_atomic(os.path.join(output_dir, "checkpoint"),
                    f'model_checkpoint_path: "{basename}"\n'
                    f'all_model_checkpoint_paths: "{basename}"\n')
  return prefix


def checkpoint_layout(names: Sequence[str]) -> str:
  """The layout of a checkpoint's names: "finetuning" (`task_specific/...`) or "pretraining"."""
  return "finetuning" if any(n.startswith("task_specific/") for n in names) else "pretraining"


def checkpoint_architecture(shapes: Mapping[str, Shape]) -> Dict[str, int]:
  """The encoder sizes that an official pre-training checkpoint's shapes imply."""
  arch = {}
  for scope in ("electra", "generator"):
    key = f"{scope}/encoder/layer_0/attention/self/query/kernel"
    if key in shapes:
      arch[f"{scope} hidden"] = shapes[key][-1]
      arch[f"{scope} layers"] = len({n.split("/")[2] for n in shapes
                                     if n.startswith(f"{scope}/encoder/layer_")})
  if "electra/embeddings/word_embeddings" in shapes:
    arch["vocab"], arch["embedding size"] = shapes["electra/embeddings/word_embeddings"]
  return arch


def encoder_shape(shapes: Mapping[str, tuple], model_name: Optional[str], prefix: str):
  """`(BertConfig, embedding_size, do_lower_case)` of an official checkpoint's `electra/`.

  The shapes give every size but the number of attention heads: `model_name` (a
  preset such as electra_base_released, or a preset .json) gives it and the
  lowercasing, else hidden_size // 64 as every official size
  (configs/model_sizes.json).
  """
  vocab_size, embedding_size = shapes[WORD_EMBEDDINGS]
  layer = "electra/encoder/layer_0/"
  needed = [layer + "attention/self/query/kernel", layer + "intermediate/dense/kernel",
            "electra/embeddings/position_embeddings", "electra/embeddings/token_type_embeddings"]
  missing = [name for name in needed if name not in shapes]
  if missing:
    raise ConversionError(f"{prefix} lacks {', '.join(missing)}: not a whole ELECTRA encoder")
  hidden = shapes[layer + "attention/self/query/kernel"][1]
  layers = len({name.split("/")[2] for name in shapes
                if name.startswith("electra/encoder/layer_")})
  base = BertConfig(vocab_size, num_attention_heads=max(1, hidden // 64))
  lower = True
  if model_name is not None:
    preset = resolve_pretraining_config(model_name)
    base, lower = preset.bert_config, preset.do_lower_case
  bert = base.replace(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                      intermediate_size=shapes[layer + "intermediate/dense/kernel"][1],
                      max_position_embeddings=shapes["electra/embeddings/position_embeddings"][0],
                      type_vocab_size=shapes["electra/embeddings/token_type_embeddings"][0])
  if hidden % bert.num_attention_heads:
    raise ConversionError(f"{prefix}: hidden size {hidden} is no multiple of "
                          f"{bert.num_attention_heads} heads: pass model_name (the preset it "
                          "was trained with)")
  return bert, embedding_size, lower
