"""Finding and reading checkpoints, with one-line errors instead of TensorFlow tracebacks.

Every reader of a model directory (resuming pre-training, fine-tuning from a
pre-trained model, evaluating or exporting a fine-tuned one, conversion) goes
through `latest_checkpoint` and `restore`, so a missing, damaged or mismatched
checkpoint is reported the same way everywhere: which checkpoint, what is
wrong, what to do.
"""

from __future__ import annotations

import glob
import os
import re
from typing import List, Optional


from electra_tf2.utils.atomic_io import is_remote
from electra_tf2.utils.errors import ElectraError, import_tensorflow


class ModelDirectoryError(ElectraError, ValueError):
  """A model directory whose config or checkpoint is missing, damaged or does not fit."""


def latest_checkpoint(model_dir: str, strict: bool = True) -> Optional[str]:
  """The checkpoint that `model_dir/checkpoint` names, or None if the directory has none.

  Unlike `tf.train.latest_checkpoint`, whose None would start training over
  next to checkpoints it did not see, these are errors naming what exists:
  a state file that names a checkpoint whose files are gone, an unreadable
  state file, and (with `strict`) several checkpoints without a state file
  (a lone one is what a crash right after the first save leaves: it is the
  latest). A
  state file moved with its directory (an absolute path from another machine)
  is followed to the checkpoint of the same name in `model_dir`.
  """
  tf = import_tensorflow(f"reading the TensorFlow checkpoints of {model_dir}")
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except ValueError as e:  # an empty or garbled state file
    raise ModelDirectoryError(f"{model_dir}/checkpoint cannot be read ({first_line(e)}): "
                              f"{_name_existing(existing_checkpoints(model_dir))}") from None
  if state is None or not state.model_checkpoint_path:
    existing = existing_checkpoints(model_dir) if strict else []
    if len(existing) == 1 and state is None:
      # A run killed between its first checkpoint's index (written whole, by a rename)
      # and the state file: that checkpoint is complete and the latest.
      return existing[0]
    if existing:
      raise ModelDirectoryError(f"{model_dir} holds checkpoints but no usable `checkpoint` state "
                                f"file naming the latest: {_name_existing(existing)} in one")
    return None
  path = state.model_checkpoint_path  # get_checkpoint_state made a relative one absolute
  for candidate in (path, os.path.join(model_dir, os.path.basename(path))):
    if tf.io.gfile.exists(candidate + ".index"):
      return candidate
  raise ModelDirectoryError(f"{model_dir}/checkpoint names {os.path.basename(path)}, whose "
                            f"files are missing: {_name_existing(existing_checkpoints(model_dir))} "
                            "there")


def existing_checkpoints(model_dir: str) -> List[str]:
  """The checkpoint prefixes (`*.index` files) in model_dir, oldest step first (a local
  directory is listed without TensorFlow)."""
  pattern = os.path.join(model_dir, "*.index")
  if is_remote(model_dir):
    found = import_tensorflow(f"listing {model_dir}").io.gfile.glob(pattern)
  else:
    found = glob.glob(pattern)
  return sorted((p[:-len(".index")] for p in found), key=lambda p: (len(p), p))


def _name_existing(existing: List[str]) -> str:
  """What to do, naming up to three of the `existing` checkpoints."""
  if not existing:
    return "the directory holds no checkpoint"
  names = ", ".join(os.path.basename(p) for p in existing[-3:])
  return f"name an existing one ({names}) as model_checkpoint_path"


def restore(checkpoint: tf.train.Checkpoint, path: str, *, partial: bool = False,
            match_existing: bool = False, mismatch_hint: str = "") -> None:
  """`checkpoint.restore(path)`, with TensorFlow's errors as one ModelDirectoryError.

  Args:
    checkpoint: what to restore into.
    path: a `ckpt-N` prefix.
    partial: the file may hold objects that `checkpoint` lacks (optimizer
      slots when only the model is wanted).
    match_existing: every variable of `checkpoint` must be in the file.
    mismatch_hint: appended to the message when the file does not fit the model.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.io.gfile.exists(path + ".index"):
    raise ModelDirectoryError(f"checkpoint {path} does not exist (no {path}.index)")
  try:
    # `restore` also restores the save counter that manager-written files hold;
    # `read` leaves it out, as matching every existing object requires for
    # files written by `Checkpoint.write`.
    status = checkpoint.read(path) if match_existing else checkpoint.restore(path)
    if partial:
      status.expect_partial()
    if match_existing:
      status.assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.InvalidArgumentError) as e:
    raise ModelDirectoryError(f"{path} does not fit this model ({first_line(e)})"
                              f"{mismatch_hint}") from None
  except (tf.errors.OpError, IndexError) as e:
    raise ModelDirectoryError(
        f"checkpoint {path} is damaged or incomplete ({first_line(e)}): restore its files, or "
        f"use an earlier one (for the latest, name it as model_checkpoint_path in "
        f"{os.path.dirname(path)}/checkpoint)") from None


def holds_optimizer_state(path: str) -> bool:
  """Whether our `ckpt-N` at `path` holds optimizer state (Adam slots, the step counter).

  run_pretraining.py's checkpoints do; model directories written by `convert
  to-tf2` hold the model and global_step only.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return any(name.startswith("optimizer/") for name, _ in tf.train.list_variables(path))


def first_line(error: Exception) -> str:
  """An exception's first line, without TensorFlow's `{{function_node ...}}` and `[Op:...]`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  text = error.message if isinstance(error, tf.errors.OpError) else str(error)
  text = (text.strip().splitlines() or ["no detail"])[0]
  text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
  return re.sub(r"\s*\[Op:\w+\]$", "", text) or "no detail"


class CheckpointWriteError(ModelDirectoryError):
  """A checkpoint that could not be written (no space left, permission lost)."""


def save(manager: tf.train.CheckpointManager, step: int) -> str:
  """`manager.save(checkpoint_number=step)`; a failed write is one CheckpointWriteError.

  TensorFlow writes the data under `ckpt-<step>_temp`, then the index, then the
  `checkpoint` state file, so a write that fails leaves the previous checkpoint
  the latest; what the failed one left is removed.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    return manager.save(checkpoint_number=step)
  except (tf.errors.OpError, OSError) as e:
    prefix = os.path.join(manager.directory, f"ckpt-{step}")
    try:
      latest = latest_checkpoint(manager.directory, strict=False)
    except ModelDirectoryError:
      latest = None
    if latest is None or os.path.basename(latest) != os.path.basename(prefix):
      _remove_quietly(tf.io.gfile.glob(prefix + ".*") + tf.io.gfile.glob(prefix + "_temp*"))
    kept = f"{os.path.basename(latest)} is the latest" if latest else "no checkpoint is saved"
    raise CheckpointWriteError(
        f"writing checkpoint {prefix} failed ({first_line(e)}); {kept}: free space or restore "
        "write permission, then run the same command again to resume") from None


def _remove_quietly(paths: List[str]) -> None:
  """Removes files and directories, as far as the file system lets it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for path in paths:
    try:
      (tf.io.gfile.rmtree if tf.io.gfile.isdir(path) else tf.io.gfile.remove)(path)
    except (tf.errors.OpError, OSError):
      pass
