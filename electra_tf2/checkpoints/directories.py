"""Our model directories on disk: which files say what, read without building a model.

- a pre-trained model directory `DIR/models/<name>` (what run_pretraining.py,
  `convert to-tf2` and `convert from-hf` write): `pretrain_config.json` (the
  resolved config) and `ckpt-<step>` checkpoints of
  `tf.train.Checkpoint(model=ElectraPretrainer, ...)`;
- a fine-tuned model directory `finetuning_models/<tasks>_model_<trial>` (what
  run_finetuning.py writes): `model_config.json` (the `FinetuningModel`'s
  config: encoder shape and heads), `finetuning_config.json` and `ckpt-<step>`.

Every such directory travels: it holds its `vocab.txt`, and the paths in its configs
are absolute or relative to the directory itself (`write_config`). A directory written
before that, with paths relative to the working directory of its run, still loads:
`resolve_saved_paths` tries the directory first, then the working directory, and says
when it used the latter.

Building and restoring the models: electra_tf2/models/model_directory.py and
electra_tf2/models/finetuning.py. Which kind a path is: checkpoints/describe.py.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import sys
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.utils.atomic_io import copy_file_atomic, exists, is_remote, write_json_atomic
from electra_tf2.checkpoints import portable
from electra_tf2.config.pretraining import ADDED_HPARAMS, PretrainingConfig, schema
from electra_tf2.config.hparams import ConfigError, read_config, read_json
from electra_tf2.checkpoints.file_names import (
    FINETUNING_CONFIG_FILE, MODEL_CONFIG_FILE, PRETRAIN_CONFIG_FILE, VOCAB_FILE)
# The paths a saved pre-training config holds.
PRETRAIN_PATH_KEYS = ("vocab_file", "model_dir", "data_dir", "pretrain_tfrecords",
                      "init_checkpoint")


def finetuning_path_keys() -> Tuple[str, ...]:
  """The paths a saved fine-tuning config holds (configs/finetuning_defaults.json's "path"
  entries, and the derived data and pre-trained model directories)."""
  return tuple(key for key, entry in read_config("finetuning_defaults.json").items()
               if isinstance(entry, dict) and entry.get("path")) + (
                   "data_dir", "pretrained_model_dir")


def _relative_to_dir(path: str, model_dir: str) -> str:
  """`path` as a model directory's config saves it: absolute or remote as given, a
  relative one (to the working directory) made relative to `model_dir`."""
  if os.path.isabs(path) or is_remote(path) or is_remote(model_dir):
    return path
  return os.path.relpath(os.path.abspath(path), os.path.abspath(model_dir))


def write_config(model_dir: str, file_name: str, values: Mapping[str, Any],
                 path_keys: Sequence[str]) -> None:
  """Writes `values` as `model_dir/file_name`, the directory self-contained.

  `values["vocab_file"]` (if it exists) is copied into `model_dir` under its own name
  (vocab.txt, as a rule) and saved as that name; every other relative path of
  `path_keys` is saved relative to `model_dir`, so the directory can be moved, archived
  or shared (with what its paths name, for the ones outside it).
  """
  vocab = values.get("vocab_file")
  values = {key: _relative_to_dir(value, model_dir) if key in path_keys
            and isinstance(value, str) and value else value for key, value in values.items()}
  if vocab and exists(vocab):
    name = os.path.basename(vocab)
    target = os.path.join(model_dir, name)
    if is_remote(vocab) or is_remote(target) or not os.path.exists(target) \
        or not os.path.samefile(vocab, target):
      copy_file_atomic(vocab, target)
    values["vocab_file"] = name
  write_json_atomic(os.path.join(model_dir, file_name), values)


def _exists(path: str) -> bool:
  """Whether `path` (a file, a glob, or a template with "{...}" fields) names something:
  for a template, the directory that holds its first field."""
  if "{" in path:
    path = os.path.dirname(path.split("{")[0]) or "."
  if any(c in path for c in "*?["):
    if is_remote(path):
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      return bool(tf.io.gfile.glob(path))
    return bool(glob.glob(path))
  return exists(path)


def resolve_saved_paths(values: Mapping[str, Any], model_dir: str, path_keys: Sequence[str],
                        source: str) -> Dict[str, Any]:
  """`values` (read from `source`, a config file in `model_dir`) with its relative paths
  resolved: against `model_dir` (how we write them); else, for a directory written by an
  older version, against the working directory when the path exists there only (said in
  one line on stderr); else against `model_dir`."""
  values = dict(values)
  for key in path_keys:
    path = values.get(key)
    if not isinstance(path, str) or not path or os.path.isabs(path) or is_remote(path):
      continue
    in_dir = os.path.normpath(os.path.join(model_dir, path))
    if not _exists(in_dir) and _exists(path):
      print(f"{source}: {key} {path} is not under {model_dir}: resolved against the working "
            f"directory {os.getcwd()}", file=sys.stderr, flush=True)
      continue
    values[key] = in_dir
  return values


class PretrainedModelError(tf_checkpoint.ModelDirectoryError):
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
  """A model directory (its newest checkpoint) or a `ckpt-N` prefix inside one."""
  if model_dir_of(path) != path:
    return ModelDirectory(os.path.dirname(path), path)
  _require_config(path)
  return ModelDirectory(path, latest_checkpoint(path))


def _require_config(model_dir: str) -> None:
  if not exists(os.path.join(model_dir, PRETRAIN_CONFIG_FILE)):
    raise PretrainedModelError(f"{os.path.join(model_dir, PRETRAIN_CONFIG_FILE)} is missing: "
                               f"{model_dir} is not a pre-trained model directory (pre-train "
                               "with run_pretraining.py or convert an official checkpoint with "
                               "electra convert to-tf2)")


TENSORFLOW, PORTABLE = "TensorFlow", "portable"


@dataclasses.dataclass(frozen=True)
class Checkpoint:
  """The checkpoint a model directory's readers take: the highest step of either format.

  path: a `ckpt-N` prefix or a `portable-N.npz`; format: TENSORFLOW or PORTABLE.
  passed_over: the newest checkpoint of the other format, older (None: one format only).
  """
  path: str
  format: str
  step: int
  passed_over: Optional[str] = None

  def line(self) -> str:
    """What was taken, in one line (for directories holding both formats)."""
    other = "TensorFlow" if self.format == PORTABLE else "portable"
    return (f"{os.path.dirname(self.path)} holds both checkpoint formats: reading "
            f"{os.path.basename(self.path)} ({self.format}, step {self.step}), the newest; "
            f"{os.path.basename(self.passed_over)} ({other}, step "
            f"{checkpoint_step(self.passed_over)}) is older")

  def announce(self) -> None:
    """Prints `line()` on stderr where a format was passed over."""
    if self.passed_over is not None:
      print(self.line(), file=sys.stderr, flush=True)


def checkpoint_step(path: str) -> int:
  """The step of a `ckpt-N` prefix or a `portable-N.npz` (both are named by their step)."""
  if portable.is_portable(path):
    return portable.step_of(path)
  return int(re.search(r"-(\d+)$", path).group(1))


def _tensorflow_latest(model_dir: str) -> Optional[str]:
  """The latest `ckpt-N` of `model_dir` (TensorFlow's state file where TensorFlow is loaded;
  without it, the highest step of a local directory's `.index` files), else None."""
  if is_remote(model_dir) or sys.modules.get("tensorflow") is not None:
    return tf_checkpoint.latest_checkpoint(model_dir)
  if not os.path.isdir(model_dir):
    return None
  existing = tf_checkpoint.existing_checkpoints(model_dir)
  return max(existing, key=checkpoint_step) if existing else None


def newest_checkpoint(model_dir: str, prefer: str = TENSORFLOW) -> Optional[Checkpoint]:
  """The checkpoint of the highest step in `model_dir`, TensorFlow or portable (`prefer`
  takes a tie: a converted checkpoint holds the same weights), else None."""
  found = [(path, kind) for path, kind in ((_tensorflow_latest(model_dir), TENSORFLOW),
                                           (portable.latest(model_dir), PORTABLE)) if path]
  if not found:
    return None
  found.sort(key=lambda pair: (checkpoint_step(pair[0]), pair[1] == prefer), reverse=True)
  (path, kind), others = found[0], found[1:]
  return Checkpoint(path, kind, checkpoint_step(path), others[0][0] if others else None)


def latest_checkpoint(model_dir: str) -> Optional[str]:
  """The newest checkpoint of `model_dir`, TensorFlow or portable (`newest_checkpoint`)."""
  newest = newest_checkpoint(model_dir)
  return newest.path if newest else None


def read_saved_pretraining_config(model_dir: str, required: Optional[Sequence[str]] = None
                                  ) -> Dict[str, Any]:
  """The resolved hparams in `model_dir`/pretrain_config.json.

  Args:
    model_dir: a pre-trained model directory.
    required: the hparams that must be present; default all of them.
  """
  path = os.path.join(model_dir, PRETRAIN_CONFIG_FILE)
  values = resolve_saved_paths(read_json(path), model_dir, PRETRAIN_PATH_KEYS, path)
  missing = [key for key in (required or schema()) if key not in values
             and key not in ADDED_HPARAMS]
  if missing:
    raise ConfigError(f"{path} lacks {', '.join(missing)}: it was edited or written by another "
                      "tool; re-create it with run_pretraining.py or electra convert to-tf2")
  return values


def load_pretraining_config(model_dir: str) -> PretrainingConfig:
  """The resolved pre-training config saved in `model_dir`."""
  _require_config(model_dir)
  try:
    return PretrainingConfig.from_dict(read_saved_pretraining_config(model_dir))
  except ConfigError as e:
    raise PretrainedModelError(str(e)) from None


def find_vocab(model_dir: str, config: PretrainingConfig) -> Optional[str]:
  """`model_dir/vocab.txt`, else the config's `vocab_file`, if either exists."""
  for path in (os.path.join(model_dir, VOCAB_FILE), config.vocab_file):
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
  values = resolve_saved_paths(_read_model_file(paths[1]), model_dir, finetuning_path_keys(),
                               paths[1])
  return _read_model_file(paths[0]), values


def _read_model_file(path: str) -> Dict[str, Any]:
  """A JSON object of a fine-tuned model directory; ModelDirectoryError if unreadable."""
  try:
    return read_json(path)
  except ConfigError as e:
    raise tf_checkpoint.ModelDirectoryError(f"{e}; fine-tune again to re-create it") from None
