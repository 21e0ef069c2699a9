"""Our model directories on disk: which files say what, read without building a model.

- a pre-trained model directory `DIR/models/<name>` (what run_pretraining.py,
  `convert to-tf2` and `convert from-hf` write): `pretrain_config.json` (the
  resolved config) and `ckpt-<step>` checkpoints of
  `tf.train.Checkpoint(model=ElectraPretrainer, ...)`;
- a fine-tuned model directory `finetuning_models/<tasks>_model_<trial>` (what
  run_finetuning.py writes): `model_config.json` (the `FinetuningModel`'s
  config: encoder shape and heads), `finetuning_config.json` and `ckpt-<step>`.

Building and restoring the models: electra_tf2/model_directory.py and
electra_tf2/finetune/model.py. Which kind a path is: checkpoints/describe.py.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from electra_tf2 import checkpoint_files
from electra_tf2.atomic_io import exists
from electra_tf2.checkpoints import portable
from electra_tf2.config import ADDED_HPARAMS, PretrainingConfig, schema
from electra_tf2.hparams import ConfigError, read_json
from electra_tf2.checkpoints.file_names import (  # noqa: F401  (their import path here too)
    FINETUNING_CONFIG_FILE, MODEL_CONFIG_FILE, PRETRAIN_CONFIG_FILE, VOCAB_FILE)


class PretrainedModelError(checkpoint_files.ModelDirectoryError):
  """A pre-trained model directory without a usable config or checkpoint."""


@dataclasses.dataclass(frozen=True)
class ModelDirectory:
  """A pre-trained model: its directory and the checkpoint to read (None: none yet)."""
  model_dir: str
  checkpoint_path: Optional[str]

  @property
  def config_file(self) -> str:
    return os.path.join(self.model_dir, PRETRAIN_CONFIG_FILE)


def model_dir_of(path: str) -> str:
  """The directory of a model directory or of a `ckpt-N` prefix (or portable-N.npz) in one."""
  if portable.is_portable(path) or exists(path + ".index"):
    return os.path.dirname(path)
  return path


def locate(path: str) -> ModelDirectory:
  """A model directory (its latest checkpoint) or a `ckpt-N` prefix inside one."""
  if model_dir_of(path) != path:
    return ModelDirectory(os.path.dirname(path), path)
  if not exists(os.path.join(path, PRETRAIN_CONFIG_FILE)):
    raise PretrainedModelError(f"{os.path.join(path, PRETRAIN_CONFIG_FILE)} is missing: {path} "
                               "is not a pre-trained model directory (pre-train with "
                               "run_pretraining.py or convert an official checkpoint with "
                               "electra convert to-tf2)")
  return ModelDirectory(path, latest_checkpoint(path))


def latest_checkpoint(model_dir: str) -> Optional[str]:
  """The latest TensorFlow `ckpt-N` of `model_dir`, else its latest portable checkpoint
  (a JAX run's, electra_tf2/checkpoints/portable.py), else None."""
  return checkpoint_files.latest_checkpoint(model_dir) or portable.latest(model_dir)


def read_saved_pretraining_config(model_dir: str, required: Optional[Sequence[str]] = None
                                  ) -> Dict[str, Any]:
  """The resolved hparams in `model_dir`/pretrain_config.json.

  Args:
    model_dir: a pre-trained model directory.
    required: the hparams that must be present; default all of them.
  """
  path = os.path.join(model_dir, PRETRAIN_CONFIG_FILE)
  values = read_json(path)
  missing = [key for key in (required or schema()) if key not in values
             and key not in ADDED_HPARAMS]
  if missing:
    raise ConfigError(f"{path} lacks {', '.join(missing)}: it was edited or written by another "
                      "tool; re-create it with run_pretraining.py or electra convert to-tf2")
  return values


def load_pretraining_config(model_dir: str) -> PretrainingConfig:
  """The resolved pre-training config saved in `model_dir`."""
  locate(model_dir)
  try:
    return PretrainingConfig.from_dict(read_saved_pretraining_config(model_dir))
  except ConfigError as e:
    raise PretrainedModelError(str(e)) from None


def find_vocab(model_dir: str, config: PretrainingConfig) -> Optional[str]:
  """`model_dir/vocab.txt`, else the config's `vocab_file`, if either exists."""
  for path in (os.path.join(model_dir, "vocab.txt"), config.vocab_file):
    if path and exists(path):
      return path
  return None


def checkpoint_of(model_dir: str, checkpoint_path: Optional[str]) -> str:
  """`checkpoint_path`, else the latest checkpoint of `model_dir`; one line if it has none."""
  checkpoint_path = checkpoint_path or latest_checkpoint(model_dir)
  if checkpoint_path is None:
    raise PretrainedModelError(f"{model_dir} holds no checkpoint (ckpt-N.index or "
                               "portable-N.npz files)")
  return checkpoint_path


def is_finetuned_model_dir(model_dir: str) -> bool:
  """Whether `model_dir` is a fine-tuned model directory (finetuning_models/<tasks>_model_<t>)."""
  return exists(os.path.join(model_dir, MODEL_CONFIG_FILE))


def read_finetuned_files(model_dir: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
  """`(model_config.json, finetuning_config.json)` of a fine-tuned model directory."""
  paths = [os.path.join(model_dir, name) for name in (MODEL_CONFIG_FILE, FINETUNING_CONFIG_FILE)]
  for path in paths:
    if not exists(path):
      raise FileNotFoundError(f"{path} is missing: {model_dir} is not a fine-tuned model "
                              "directory written by run_finetuning.py")
  return _read_model_file(paths[0]), _read_model_file(paths[1])


def _read_model_file(path: str) -> Dict[str, Any]:
  """A JSON object of a fine-tuned model directory; ModelDirectoryError if unreadable."""
  try:
    return read_json(path)
  except ConfigError as e:
    raise checkpoint_files.ModelDirectoryError(f"{e}; fine-tune again to re-create it") from None
