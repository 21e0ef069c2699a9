"""What a pre-trained model directory is, in one place.

A model directory `DIR/models/<name>` (what run_pretraining.py and
`convert to-tf2` write) holds `pretrain_config.json` (the resolved config) and
`ckpt-<step>` checkpoints of `tf.train.Checkpoint(model=ElectraPretrainer, ...)`.
`locate` resolves a directory or a `ckpt-N` prefix once; `restore_encoder`
reads only the discriminator encoder (fine-tuning), `restore_pretrainer` the
whole model (export, scoring, conversion).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Mapping, Optional, Sequence

import tensorflow as tf

from electra_tf2 import checkpoint_files
from electra_tf2.config import ADDED_HPARAMS, PretrainingConfig, schema
from electra_tf2.hparams import ConfigError, read_json
from electra_tf2.models.pretrainer import ElectraPretrainer

# The resolved pre-training config, saved next to the checkpoints of every model.
PRETRAIN_CONFIG_FILE = "pretrain_config.json"
_SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size")


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
  """The directory of a model directory or of a `ckpt-N` prefix inside one."""
  return os.path.dirname(path) if tf.io.gfile.exists(path + ".index") else path


def locate(path: str) -> ModelDirectory:
  """A model directory (its latest checkpoint) or a `ckpt-N` prefix inside one."""
  if model_dir_of(path) != path:
    return ModelDirectory(os.path.dirname(path), path)
  if not tf.io.gfile.exists(os.path.join(path, PRETRAIN_CONFIG_FILE)):
    raise PretrainedModelError(f"{os.path.join(path, PRETRAIN_CONFIG_FILE)} is missing: {path} "
                               "is not a pre-trained model directory (pre-train with "
                               "run_pretraining.py or convert an official checkpoint with "
                               "electra convert to-tf2)")
  return ModelDirectory(path, checkpoint_files.latest_checkpoint(path))


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
    if path and tf.io.gfile.exists(path):
      return path
  return None


def _checkpoint_of(model_dir: str, checkpoint_path: Optional[str]) -> str:
  checkpoint_path = checkpoint_path or checkpoint_files.latest_checkpoint(model_dir)
  if checkpoint_path is None:
    raise PretrainedModelError(f"{model_dir} holds no checkpoint (ckpt-N.index files)")
  return checkpoint_path


def restore_pretrainer(model_dir: str, checkpoint_path: Optional[str] = None,
                       config: Optional[PretrainingConfig] = None):
  """Builds the `ElectraPretrainer` of `model_dir` and restores its weights.

  Args:
    model_dir: a directory with pretrain_config.json and checkpoints.
    checkpoint_path: a specific `ckpt-N` prefix; default the latest one.
    config: the directory's config, if the caller has read it already.
  """
  config = config or load_pretraining_config(model_dir)
  checkpoint_path = _checkpoint_of(model_dir, checkpoint_path)
  try:
    model = ElectraPretrainer.from_pretraining_config(config)
  except ConfigError as e:
    raise PretrainedModelError(f"{os.path.join(model_dir, PRETRAIN_CONFIG_FILE)}: {e}") from None
  checkpoint_files.restore(tf.train.Checkpoint(model=model), checkpoint_path, partial=True,
                           match_existing=True,
                           mismatch_hint=f": it is not the model that {PRETRAIN_CONFIG_FILE} "
                                         "describes")
  return model


def restore_encoder(encoder, source: ModelDirectory) -> str:
  """Reads the pre-trained discriminator encoder of `source` into `encoder` (built, of
  the same shape); the generator and the heads are not built. Returns the checkpoint."""
  checkpoint_path = _checkpoint_of(source.model_dir, source.checkpoint_path)
  # The pre-trainer's checkpoint reaches its discriminator as model/discriminator.
  checkpoint = tf.train.Checkpoint(model=tf.train.Checkpoint(discriminator=encoder))
  checkpoint_files.restore(checkpoint, checkpoint_path, partial=True, match_existing=True,
                           mismatch_hint=": the fine-tuning model size must match the "
                                         f"pre-trained one ({source.config_file})")
  return checkpoint_path


def architecture(config: "PretrainingConfig") -> Dict[str, Any]:
  """What the variables of a pre-training checkpoint and their shapes depend on.

  Flat {description: value}; two configs with equal architectures can resume
  each other's checkpoints (dropout, initializers, the schedule may differ).
  """
  bert = config.bert_config
  arch: Dict[str, Any] = {f"encoder {field}": getattr(bert, field) for field in _SHAPE_FIELDS}
  arch["embedding_size"] = config.resolved_embedding_size
  arch["discriminator head"] = bool(config.electra_objective or config.electric_objective)
  arch["MLM head"] = ("cloze" if config.two_tower_generator
                      else "none" if config.uniform_generator else "masked LM")
  if config.uses_generator_encoder:
    generator = config.generator_bert_config
    arch["generator"] = "two towers" if config.two_tower_generator else "one encoder"
    arch["generator embeddings"] = (f"untied, {generator.hidden_size} wide"
                                    if config.untied_generator_embeddings else "shared")
    arch.update({f"generator {field}": getattr(generator, field) for field in
                 ("hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size")})
  else:
    arch["generator"] = "uniform" if config.uniform_generator else "the encoder itself"
  return arch


def check_same_architecture(config: "PretrainingConfig", saved_values: Mapping[str, Any]
                            ) -> None:
  """Raises ConfigError if config.model_dir holds a checkpoint of another architecture.

  Call it only when the directory holds a checkpoint. Compares `architecture`
  with that of `saved_values` (the directory's pretrain_config.json), naming
  every difference, so that resuming does not fail deep inside checkpoint
  restoring.
  """
  try:
    saved = architecture(PretrainingConfig.from_dict(saved_values))
  except (AttributeError, KeyError, TypeError):
    return  # not a complete config of this version: restoring will tell
  current = architecture(config)
  differ = [key for key in current if saved.get(key) != current[key]]
  if differ:
    details = ", ".join(f"{key} {saved.get(key)} there, {current[key]} now" for key in differ)
    raise ConfigError(f"{config.model_dir} holds a model of another shape ({details}): pass the "
                      f"hparams it was pre-trained with (see its {PRETRAIN_CONFIG_FILE}), or set "
                      "\"model_dir\" in --hparams to start a new model elsewhere")
