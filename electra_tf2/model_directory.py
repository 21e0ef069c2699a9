"""Loading a pre-trained model directory (what run_pretraining.py writes).

A model directory `DIR/models/<name>` holds `pretrain_config.json` (the
resolved config) and `ckpt-<step>` checkpoints of `tf.train.Checkpoint(model=
ElectraPretrainer, ...)`. Fine-tuning and export take the discriminator
encoder from it; variables are matched by their official checkpoint names.
"""

from __future__ import annotations

import os
from typing import Optional

import tensorflow as tf

from electra_tf2 import checkpoint_files, variable_names
from electra_tf2.config import (PRETRAIN_CONFIG_FILE, ConfigError, PretrainingConfig,
                                read_saved_pretraining_config)
from electra_tf2.networks.encoder import Encoder


class PretrainedModelError(checkpoint_files.ModelDirectoryError):
  """A pre-trained model directory without a usable config or checkpoint."""


def load_pretraining_config(model_dir: str) -> PretrainingConfig:
  """The resolved pre-training config saved in `model_dir`."""
  path = os.path.join(model_dir, PRETRAIN_CONFIG_FILE)
  if not tf.io.gfile.exists(path):
    raise PretrainedModelError(f"{path} is missing: {model_dir} is not a pre-trained model "
                               "directory (pre-train with run_pretraining.py or convert an "
                               "official checkpoint with python -m electra_tf2.convert)")
  try:
    return PretrainingConfig.from_dict(read_saved_pretraining_config(model_dir))
  except ConfigError as e:
    raise PretrainedModelError(str(e)) from None


def restore_pretrainer(model_dir: str, checkpoint_path: Optional[str] = None,
                       config: Optional[PretrainingConfig] = None):
  """Builds the `ElectraPretrainer` of `model_dir` and restores its weights.

  Args:
    model_dir: a directory with pretrain_config.json and checkpoints.
    checkpoint_path: a specific `ckpt-N` prefix; default the latest one.
    config: the directory's config, if the caller has read it already.
  """
  from electra_tf2.models.pretrainer import ElectraPretrainer  # avoid an import cycle
  config = config or load_pretraining_config(model_dir)
  checkpoint_path = checkpoint_path or checkpoint_files.latest_checkpoint(model_dir)
  if checkpoint_path is None:
    raise PretrainedModelError(f"{model_dir} holds no checkpoint (ckpt-N.index files)")
  try:
    model = ElectraPretrainer.from_pretraining_config(config)
  except ConfigError as e:
    raise PretrainedModelError(f"{os.path.join(model_dir, PRETRAIN_CONFIG_FILE)}: {e}") from None
  checkpoint_files.restore(tf.train.Checkpoint(model=model), checkpoint_path, partial=True,
                      match_existing=True,
                      mismatch_hint=f": it is not the model that {PRETRAIN_CONFIG_FILE} describes")
  return model


def copy_encoder_weights(source: Encoder, target: Encoder) -> None:
  """Copies every `electra/...` variable by official name; shapes must agree."""
  src = variable_names.encoder_variable_map(source, "electra")
  dst = variable_names.encoder_variable_map(target, "electra")
  if set(src) != set(dst):
    missing = sorted(set(dst) - set(src))[:3]
    extra = sorted(set(src) - set(dst))[:3]
    raise PretrainedModelError(f"encoder layouts differ (missing {missing}, unexpected {extra}): "
                               "the fine-tuning model size must match the pre-trained one")
  for name, variable in dst.items():
    if tuple(variable.shape) != tuple(src[name].shape):
      raise PretrainedModelError(f"{name}: pre-trained shape {tuple(src[name].shape)} != "
                                 f"model shape {tuple(variable.shape)}")
    variable.assign(src[name])
