"""A pre-trained model directory's model: restored, written, and checked on resume.

The directory's files (`pretrain_config.json`, `ckpt-<step>`) and `locate` are
electra_tf2/checkpoints/directories.py's; here `restore_encoder` reads only the discriminator encoder
(fine-tuning), `restore_pretrainer` the whole `ElectraPretrainer` (export,
scoring, conversion), `write_model_dir` writes one, and `check_same_architecture`
guards a resumed run. Portable checkpoints are read on every backend; TensorFlow
checkpoints, and writing one, need TensorFlow (imported on use).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.networks import variable_names
from electra_tf2.data_io import tfrecord
from electra_tf2.pretraining import state as pretraining_state
from electra_tf2.text import description as tokenizer_description
from electra_tf2.utils.atomic_io import makedirs
from electra_tf2.utils.errors import import_tensorflow
from electra_tf2.checkpoints import directories, portable
from electra_tf2.checkpoints.directories import (
    PRETRAIN_CONFIG_FILE, ModelDirectory, PretrainedModelError, checkpoint_of,
    load_pretraining_config)
from electra_tf2.config.pretraining import PretrainingConfig
from electra_tf2.config.hparams import ConfigError
from electra_tf2.models.pretrainer import ElectraPretrainer

_SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size")


def restore_pretrainer(model_dir: str, checkpoint_path: Optional[str] = None,
                       config: Optional[PretrainingConfig] = None):
  """Builds the `ElectraPretrainer` of `model_dir` and restores its weights.

  Args:
    model_dir: a directory with pretrain_config.json and checkpoints.
    checkpoint_path: a specific `ckpt-N` prefix; default the latest one.
    config: the directory's config, if the caller has read it already.
  """
  config = config or load_pretraining_config(model_dir)
  checkpoint_path = checkpoint_of(model_dir, checkpoint_path)
  try:
    model = ElectraPretrainer.from_pretraining_config(config)
  except ConfigError as e:
    raise PretrainedModelError(f"{os.path.join(model_dir, PRETRAIN_CONFIG_FILE)}: {e}") from None
  restore_weights(model, checkpoint_path,
                  f": it is not the model that {PRETRAIN_CONFIG_FILE} describes")
  return model


def restore_encoder(encoder, source: ModelDirectory) -> str:
  """Reads the pre-trained discriminator encoder of `source` into `encoder` (built, of
  the same shape); the generator and the heads are not built. Returns the checkpoint."""
  checkpoint_path = checkpoint_of(source.model_dir, source.checkpoint_path)
  if portable.is_portable(checkpoint_path):
    arrays, _ = portable.load(checkpoint_path)
    for name, variable in variable_names.encoder_variable_map(encoder, "electra").items():
      if name not in arrays or tuple(variable.shape) != arrays[name].shape:
        raise PretrainedModelError(f"{checkpoint_path}: {name} does not fit this encoder: the "
                                   "fine-tuning model size must match the pre-trained one "
                                   f"({source.config_file})")
      variable.assign(arrays[name])
    return checkpoint_path
  # The pre-trainer's checkpoint reaches its discriminator as model/discriminator.
  tf = import_tensorflow(f"reading the TensorFlow checkpoint {checkpoint_path}")
  checkpoint = tf.train.Checkpoint(model=tf.train.Checkpoint(discriminator=encoder))
  tf_checkpoint.restore(checkpoint, checkpoint_path, partial=True, match_existing=True,
                           mismatch_hint=": the fine-tuning model size must match the "
                                         f"pre-trained one ({source.config_file})")
  return checkpoint_path


def restore_weights(model, checkpoint_path: str, mismatch_hint: str) -> None:
  """Reads a pre-trainer's weights from a `ckpt-N` prefix or a portable checkpoint (no
  step, no optimizer slots); one line naming `mismatch_hint` where they do not fit."""
  if portable.is_portable(checkpoint_path):
    arrays, _ = portable.load(checkpoint_path)
    try:
      pretraining_state.assign(model, arrays, where=checkpoint_path)
    except portable.PortableCheckpointError as e:
      raise PretrainedModelError(f"{e}{mismatch_hint}") from None
    return
  tf = import_tensorflow(f"reading the TensorFlow checkpoint {checkpoint_path}")
  tf_checkpoint.restore(tf.train.Checkpoint(model=model), checkpoint_path, partial=True,
                           match_existing=True, mismatch_hint=mismatch_hint)


def write_model_dir(model, config: PretrainingConfig, output_dir: str,
                    global_step: int = 0, strip_accents: Optional[bool] = None) -> str:
  """Saves an `ElectraPretrainer` as a model directory; returns the `ckpt-N` prefix.

  The layout is run_pretraining.py's: `pretrain_config.json` and `ckpt-<step>`
  of `tf.train.Checkpoint(model=..., global_step=...)`, so
  `restore_pretrainer` and fine-tuning load it as is. strip_accents: the converted
  checkpoint's accent stripping (a Hugging Face tokenizer_config.json's), None the
  official rule.
  """
  tf = import_tensorflow(f"writing the model directory {output_dir}")
  makedirs(output_dir)
  directories.write_config(output_dir, PRETRAIN_CONFIG_FILE,
                           config.replace(model_dir=output_dir).to_dict(),
                           directories.PRETRAIN_PATH_KEYS)
  write_tokenizer_description(config, output_dir, strip_accents)
  step = tf.Variable(global_step, dtype=tf.int64, trainable=False, name="global_step")
  checkpoint = tf.train.Checkpoint(model=model, global_step=step)
  manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=None,
                                       checkpoint_name="ckpt")
  return manager.save(checkpoint_number=global_step)


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


def write_tokenizer_description(config: PretrainingConfig, model_dir: str,
                                strip_accents: Optional[bool] = None) -> None:
  """`model_dir/tokenizer_description.json`: the config's vocabulary with the casing of
  the TFRecords (text/description.py `pretraining_description`), or `strip_accents` where
  given, if there is a vocabulary."""
  if strip_accents is not None and config.vocab_file:
    description = tokenizer_description.describe_vocab(config.vocab_file, config.do_lower_case,
                                                       strip_accents)
  else:
    description = tokenizer_description.pretraining_description(
        config.vocab_file, config.do_lower_case,
        tfrecord.tfrecord_files(config.pretrain_tfrecords or ""))
  if description is not None:
    tokenizer_description.write_description(model_dir, description)
