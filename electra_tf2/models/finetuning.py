"""The fine-tuning model (official `FinetuningModel`, run_finetuning.py:37-73).

One shared encoder named `electra` and one head per task. A head's Keras name
is its task, and its Dense layers carry the official names, so
`variable_map()` gives every trainable variable its official checkpoint name:
`electra/...` for the encoder and `task_specific/<task>/<layer>/{kernel,bias}`
for the heads (the names the optimizer's weight-decay and layer-wise rules,
and the checkpoint converters, use).

The loss is `sum(stack(task_losses) * one_hot(task_id, n_tasks))` over the
batch (official), or its mean over the batch with loss_reduction "mean".
Padding rows have task_id = n_tasks and contribute nothing.

A fine-tuned model directory (finetuning_models/<tasks>_model_<trial>) holds
`ckpt-<step>` (tf.train.Checkpoint(model=...)), `model_config.json` (this
model's `get_config()`) and `finetuning_config.json`; `load_finetuned_model`
rebuilds the model from it.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import keras
from keras import ops

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.utils.atomic_io import makedirs, write_json_atomic
from electra_tf2.utils.errors import import_tensorflow
from electra_tf2.checkpoints import directories
from electra_tf2.checkpoints.directories import FINETUNING_CONFIG_FILE, MODEL_CONFIG_FILE
from electra_tf2.config.encoder import BertConfig
from electra_tf2.tasks import config as finetune_config
from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.models.heads import build_head
from electra_tf2.networks.encoder import Encoder
from electra_tf2.text.description import describe_vocab, write_description


@keras.saving.register_keras_serializable(package="electra_tf2")
class FinetuningModel(keras.Model):
  """Shared `electra` encoder plus task heads.

  Args:
    bert_config: the encoder `BertConfig` (or its dict).
    embedding_size: E; None means hidden_size.
    heads: one spec per task, in task-id order (`Task.head_spec()`).

  `call(features, training)` takes `input_ids`, `input_mask`, `segment_ids`
  (`[batch, seq_len]` int) plus what the heads read (QA training: the gold
  `<task>_start_positions`; tagging: `<task>_labeled_positions`) and returns
  {task: {output name: tensor}}.
  """

  def __init__(self, bert_config: BertConfig | Dict[str, Any], embedding_size: Optional[int],
               heads: Sequence[Mapping[str, Any]], **kwargs):
    kwargs.setdefault("name", "finetuning_model")
    super().__init__(**kwargs)
    if isinstance(bert_config, dict):
      bert_config = BertConfig(**bert_config)
    self.bert_config = bert_config
    self.embedding_size = embedding_size
    self.head_specs = [dict(spec) for spec in heads]
    self.task_names = [spec["task"] for spec in self.head_specs]
    if len(set(self.task_names)) != len(self.task_names):
      raise ValueError(f"one head per task, got {self.task_names}")
    self.encoder = Encoder(bert_config, embedding_size, name="electra", dtype=self.dtype_policy)
    # Attributes, not a list: tf.train.Checkpoint does not see lists of Keras 3 layers.
    for spec in self.head_specs:
      setattr(self, f"head_{spec['task']}", build_head(spec, self.dtype_policy))
    self.build()

  @property
  def heads(self) -> List[keras.layers.Layer]:
    return [getattr(self, f"head_{name}") for name in self.task_names]

  def head(self, task: str) -> keras.layers.Layer:
    return getattr(self, f"head_{task}")

  def build(self, input_shape=None):
    if self.built:
      return
    self.encoder.build()
    for head in self.heads:
      head.build((None, None, self.bert_config.hidden_size))
    super().build(input_shape)

  def call(self, features: Dict[str, Any], training: bool = False,
           skip_padding: bool = False) -> Dict[str, Dict[str, Any]]:
    """Every head's outputs; skip_padding: `Encoder.call`'s (for heads reading [CLS] only,
    `reads_first_token_only`)."""
    hidden = self.encoder(features["input_ids"], features["input_mask"],
                          features["segment_ids"], training=training, skip_padding=skip_padding)
    return {name: head(hidden, features, training=training)
            for name, head in zip(self.task_names, self.heads)}

  def reads_first_token_only(self) -> bool:
    """Whether every head reads the [CLS] state alone (classification, regression)."""
    return all(head.reads_first_token_only for head in self.heads)

  def losses_per_example(self, features: Dict[str, Any],
                         outputs: Dict[str, Dict[str, Any]]) -> Any:
    """`[batch]`: each row's loss under its own task (0 for padding rows)."""
    losses = ops.stack([head.loss(outputs[name], features)
                        for name, head in zip(self.task_names, self.heads)], -1)
    task_one_hot = ops.one_hot(features["task_id"], len(self.task_names), dtype=losses.dtype)
    return ops.sum(losses * task_one_hot, -1)

  def variable_map(self) -> Dict[str, keras.Variable]:
    """{official checkpoint name: variable} for every trainable variable."""
    names = variable_names.encoder_variable_map(self.encoder, "electra")
    for name, head in zip(self.task_names, self.heads):
      for layer in head.official_layers:
        prefix = f"task_specific/{name}/{layer.name}"
        names[f"{prefix}/kernel"] = layer.kernel
        names[f"{prefix}/bias"] = layer.bias
    return names

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(bert_config=self.bert_config.to_dict(), embedding_size=self.embedding_size,
                  heads=[dict(spec) for spec in self.head_specs])
    return config


def build_model(config: FinetuningConfig, head_specs: Sequence[Mapping[str, Any]]
                ) -> FinetuningModel:
  return FinetuningModel(config.encoder_config, config.embedding_size, head_specs)


# ---------------------------------------------------------------------------
# Pre-trained weights and saved fine-tuned models
# ---------------------------------------------------------------------------


def load_pretrained_encoder(model: FinetuningModel, init_checkpoint: str) -> str:
  """Reads the pre-trained discriminator of `init_checkpoint` into `model.encoder`.

  Args:
    init_checkpoint: a model directory written by run_pretraining.py (its
      latest checkpoint is used) or a `ckpt-N` prefix inside one.

  Returns:
    The checkpoint path that was read.
  """
  return model_directory.restore_encoder(model.encoder, directories.locate(init_checkpoint))


def save_model_files(model: FinetuningModel, config: FinetuningConfig, model_dir: str) -> None:
  """Writes model_config.json, finetuning_config.json and the tokenizer description
  next to the checkpoints."""
  makedirs(model_dir)
  write_json_atomic(os.path.join(model_dir, MODEL_CONFIG_FILE), model.get_config())
  directories.write_config(model_dir, FINETUNING_CONFIG_FILE, config.to_dict(),
                           directories.finetuning_path_keys())
  if config.vocab_file and os.path.exists(config.vocab_file):
    write_description(model_dir, describe_vocab(config.vocab_file, config.do_lower_case,
                                                config.strip_accents))


def load_finetuned_model(model_dir: str, checkpoint_path: Optional[str] = None
                         ) -> Tuple[FinetuningModel, FinetuningConfig]:
  """Rebuilds a fine-tuned model from its directory and restores its weights.

  Args:
    model_dir: finetuning_models/<tasks>_model_<trial> (model_config.json,
      finetuning_config.json, ckpt-N).
    checkpoint_path: a specific `ckpt-N` prefix; default the latest.

  Returns:
    The model (weights restored) and the fine-tuning config it was trained with.
  """
  model_config, config_values = directories.read_finetuned_files(model_dir)
  paths = {name: os.path.join(model_dir, name)
           for name in (MODEL_CONFIG_FILE, FINETUNING_CONFIG_FILE)}
  checkpoint_path = checkpoint_path or tf_checkpoint.latest_checkpoint(model_dir)
  if checkpoint_path is None:
    raise tf_checkpoint.ModelDirectoryError(f"{model_dir} holds no checkpoint (ckpt-N.index files)")
  try:
    model = FinetuningModel.from_config(model_config)
  except (TypeError, ValueError, KeyError) as e:
    raise tf_checkpoint.ModelDirectoryError(
        f"{paths[MODEL_CONFIG_FILE]} does not describe a model ({tf_checkpoint.first_line(e)}): "
        "it was edited or damaged; fine-tune again to re-create it") from None
  missing = sorted(set(finetune_config.schema()) - set(config_values)
                   - set(finetune_config.ADDED_HPARAMS))
  if missing:
    raise tf_checkpoint.ModelDirectoryError(
        f"{paths[FINETUNING_CONFIG_FILE]} lacks {', '.join(missing[:5])}: it was edited or "
        "written by another version; fine-tune again to re-create it")
  tf = import_tensorflow(f"reading the TensorFlow checkpoint {checkpoint_path}")
  tf_checkpoint.restore(tf.train.Checkpoint(model=model), checkpoint_path, partial=True,
                      match_existing=True,
                      mismatch_hint=f": it is not the model that {MODEL_CONFIG_FILE} describes")
  return model, FinetuningConfig.from_dict(config_values)
