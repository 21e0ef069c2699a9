"""Finding and reading checkpoints, with one-line errors instead of TensorFlow tracebacks.

Every reader of a model directory (resuming pre-training, fine-tuning from a
pre-trained model, evaluating or exporting a fine-tuned one, conversion) goes
through `latest_checkpoint` and `restore`, so a missing, damaged or mismatched
checkpoint is reported the same way everywhere: which checkpoint, what is
wrong, what to do.
"""

from __future__ import annotations

import os
import re
from typing import Optional

import tensorflow as tf


class ModelDirectoryError(ValueError):
  """A model directory whose config or checkpoint is missing, damaged or does not fit."""


def latest_checkpoint(model_dir: str) -> Optional[str]:
  """The checkpoint that `model_dir/checkpoint` names, or None if there is none.

  Unlike `tf.train.latest_checkpoint`, a state file that names a checkpoint
  whose files are gone is an error naming the checkpoints that do exist, not
  a silent None (which would start training over).
  """
  state = tf.train.get_checkpoint_state(model_dir)
  if state is None or not state.model_checkpoint_path:
    return None
  path = state.model_checkpoint_path
  if not os.path.isabs(path) and "://" not in path:
    path = os.path.join(model_dir, path)
  if tf.io.gfile.exists(path + ".index"):
    return path
  existing = sorted((p[:-len(".index")] for p in
                     tf.io.gfile.glob(os.path.join(model_dir, "*.index"))),
                    key=lambda p: (len(p), p))
  hint = (f"name an existing one ({', '.join(os.path.basename(p) for p in existing[-3:])}) as "
          "model_checkpoint_path there" if existing else "the directory holds no checkpoint")
  raise ModelDirectoryError(f"{model_dir}/checkpoint names {os.path.basename(path)}, whose "
                            f"files are missing: {hint}")


def restore(checkpoint: tf.train.Checkpoint, path: str, *, partial: bool = False,
            match_existing: bool = False, mismatch_hint: str = "") -> None:
  """`checkpoint.read(path)`, with TensorFlow's errors as one ModelDirectoryError.

  Args:
    checkpoint: what to restore into.
    path: a `ckpt-N` prefix.
    partial: the file may hold objects that `checkpoint` lacks (optimizer
      slots when only the model is wanted).
    match_existing: every variable of `checkpoint` must be in the file.
    mismatch_hint: appended to the message when the file does not fit the model.
  """
  if not tf.io.gfile.exists(path + ".index"):
    raise ModelDirectoryError(f"checkpoint {path} does not exist (no {path}.index)")
  try:
    status = checkpoint.read(path)
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
        f"name an earlier ckpt-N as model_checkpoint_path in {os.path.dirname(path)}/checkpoint "
        "to use that one") from None


def first_line(error: Exception) -> str:
  """An exception's first line, without TensorFlow's `{{function_node ...}}` and `[Op:...]`."""
  text = error.message if isinstance(error, tf.errors.OpError) else str(error)
  text = (text.strip().splitlines() or ["no detail"])[0]
  text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
  return re.sub(r"\s*\[Op:\w+\]$", "", text) or "no detail"
