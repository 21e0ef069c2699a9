"""Finding and reading checkpoints: every failure is one ModelDirectoryError saying what to do."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.checkpoints.tf_checkpoint import ModelDirectoryError


def save_steps(model_dir, steps, shape=(64, 64)):
  """Checkpoints ckpt-<step> of one variable whose value is the step."""
  variable = tf.Variable(tf.zeros(shape))
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=variable), model_dir,
                                       max_to_keep=None, checkpoint_name="ckpt")
  for step in steps:
    variable.assign(tf.fill(shape, float(step)))
    manager.save(checkpoint_number=step)
  return [os.path.join(model_dir, f"ckpt-{step}") for step in steps]


def test_latest_checkpoint(tmp_path):
  model_dir = str(tmp_path / "m")
  assert tf_checkpoint.latest_checkpoint(model_dir) is None  # no directory
  os.makedirs(model_dir)
  assert tf_checkpoint.latest_checkpoint(model_dir) is None  # no state file
  paths = save_steps(model_dir, [1, 2, 10])
  assert tf_checkpoint.latest_checkpoint(model_dir) == paths[-1]
  for name in os.listdir(model_dir):
    if name.startswith("ckpt-10."):
      os.remove(os.path.join(model_dir, name))
  # tf.train.latest_checkpoint says None here, which would restart training.
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{model_dir}/checkpoint names ckpt-10, whose files are missing: name an existing one "
      "(ckpt-1, ckpt-2) as model_checkpoint_path there")):
    tf_checkpoint.latest_checkpoint(model_dir)
  state = os.path.join(model_dir, "checkpoint")
  # A directory moved from another machine: the absolute path is followed to
  # the checkpoint of the same name here.
  with open(state, "w") as f:
    f.write('model_checkpoint_path: "/elsewhere/run/ckpt-2"\n')
  assert tf_checkpoint.latest_checkpoint(model_dir) == paths[1]
  # An empty state file, and none at all next to checkpoint files.
  open(state, "w").close()
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{model_dir}/checkpoint cannot be read (")):
    tf_checkpoint.latest_checkpoint(model_dir)
  os.remove(state)
  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"{model_dir} holds checkpoints but no usable `checkpoint` state file naming the latest: "
      "name an existing one (ckpt-1, ckpt-2) as model_checkpoint_path in one")):
    tf_checkpoint.latest_checkpoint(model_dir)
  assert tf_checkpoint.latest_checkpoint(model_dir, strict=False) is None
  # A lone checkpoint without a state file is what a run killed right after its
  # first save leaves (TensorFlow writes the state file last): it is the latest.
  for suffix in (".index", ".data-00000-of-00001"):
    os.remove(paths[1] + suffix)
  assert tf_checkpoint.latest_checkpoint(model_dir) == paths[0]


def test_restore_reads_and_explains_failures(tmp_path):
  model_dir = str(tmp_path / "m")
  path, = save_steps(model_dir, [3])
  variable = tf.Variable(tf.zeros((64, 64)))
  tf_checkpoint.restore(tf.train.Checkpoint(v=variable), path)
  np.testing.assert_array_equal(variable.numpy(), np.full((64, 64), 3.0))

  with pytest.raises(ModelDirectoryError, match=re.escape(
      f"checkpoint {path}-x does not exist (no {path}-x.index)")):
    tf_checkpoint.restore(tf.train.Checkpoint(v=variable), path + "-x")
  with pytest.raises(ModelDirectoryError, match=re.escape(f"{path} does not fit this model (")
                     + r".*\(64, 64\).*\): try again"):
    tf_checkpoint.restore(tf.train.Checkpoint(v=tf.Variable(tf.zeros((3, 3)))), path,
                        mismatch_hint=": try again")
  with pytest.raises(ModelDirectoryError, match="does not fit this model"):
    tf_checkpoint.restore(tf.train.Checkpoint(w=tf.Variable(1.0)), path, match_existing=True)

  data_file, = [os.path.join(model_dir, f) for f in os.listdir(model_dir) if ".data" in f]
  original = open(data_file, "rb").read()
  damaged = (f"checkpoint {path} is damaged or incomplete (", "restore its files, or use an "
             f"earlier one (for the latest, name it as model_checkpoint_path in "
             f"{model_dir}/checkpoint)")
  with open(data_file, "r+b") as f:  # flip bytes: the checksum no longer matches
    f.seek(len(original) // 2)
    f.write(b"\xff" * 64)
  with pytest.raises(ModelDirectoryError) as error:
    tf_checkpoint.restore(tf.train.Checkpoint(v=variable), path)
  message = str(error.value)
  assert message.startswith(damaged[0]) and message.endswith(damaged[1])
  assert "function_node" not in message and "[Op:" not in message
  with open(data_file, "wb") as f:  # truncated
    f.write(original[:len(original) // 2])
  with pytest.raises(ModelDirectoryError, match=re.escape(damaged[0])):
    tf_checkpoint.restore(tf.train.Checkpoint(v=variable), path)


def test_first_line_drops_tensorflow_decoration():
  error = tf.errors.DataLossError(None, None, "{{function_node __wrapped__RestoreV2_dtypes_1}} "
                                  "Checksum does not match: stored 1 vs. calculated 2\n\tmore "
                                  "[Op:RestoreV2]")
  assert tf_checkpoint.first_line(error) == "Checksum does not match: stored 1 vs. calculated 2"
  assert tf_checkpoint.first_line(ValueError("a\nb")) == "a"
  assert tf_checkpoint.first_line(tf.errors.NotFoundError(None, None, "gone [Op:RestoreV2]")) == "gone"
  assert tf_checkpoint.first_line(ValueError("")) == "no detail"


def test_convert_finds_a_released_or_moved_checkpoint(tmp_path):
  """Official zips hold one `model.ckpt-N` and maybe a state file from the machine
  that wrote it: conversion takes the only checkpoint there is."""
  from electra_tf2.conversion import convert
  model_dir = str(tmp_path / "released")
  os.makedirs(model_dir)
  prefix = tf.train.Checkpoint(v=tf.Variable(1.0)).write(os.path.join(model_dir, "model.ckpt-7"))
  assert convert.resolve_checkpoint_path(model_dir) == prefix  # no state file
  with open(os.path.join(model_dir, "checkpoint"), "w") as f:
    f.write('model_checkpoint_path: "/home/someone/run/model.ckpt-7"\n')
  assert convert.resolve_checkpoint_path(model_dir) == prefix
  tf.train.Checkpoint(v=tf.Variable(2.0)).write(os.path.join(model_dir, "model.ckpt-8"))
  os.remove(os.path.join(model_dir, "checkpoint"))
  with pytest.raises(convert.ConversionError, match="expected one checkpoint"):
    convert.resolve_checkpoint_path(model_dir)
