"""The fine-tuning task heads, one per task, under the official scope `task_specific/<task>`.

Every head maps the encoder's states `[batch, seq_len, hidden]` (and the
task's features) to a dict of outputs, and `loss` maps those to a per-example
loss `[batch]`. Their denses are glorot-initialised, as TF1's default for the
official `tf.layers.dense` without an initializer.

- `ClassificationHead`, `RegressionHead` (finetune/classification/
  classification_tasks.py:218-235, 267-290): dropout on the `[CLS]` state, one
  `dense`;
- `TaggingHead` (finetune/tagging/tagging_tasks.py:201-220): one `dense` on the
  first word piece of every word;
- `QAHead` (finetune/qa/qa_tasks.py:419-533): the XLNet-style span head with an
  answerability classifier.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

import keras
from keras import ops

from electra_tf2.layers import initializers
from electra_tf2.utils import backend_ops
from electra_tf2.utils.backend_ops import gather_positions
from electra_tf2.layers.activations import gelu

Outputs = Dict[str, Any]
# (label strings, label ids `[...]`) -> label strings `[...]` (a string gather: TensorFlow).
LabelNames = Callable[[Sequence[str], Any], Any]


class TaskHead(keras.layers.Layer):
  """A task's head, named after the task.

  Subclasses list their official denses in an `official_layers` property (in
  the order of the official names `dense`, `dense_1`, ...), and add their
  constructor arguments to `get_config`. What a SavedModel asks of a head is
  here too: `reads_first_token_only` (the [CLS] state alone: the encoder may skip
  the padding's rows), `serving_features` (the features it reads besides the
  token ids) and `serving_outputs` (its outputs under electra_tf2/utils/output_names.py's
  names).
  """

  reads_first_token_only = False

  def __init__(self, task: str, **kwargs):
    kwargs.setdefault("name", task)
    super().__init__(**kwargs)
    self.task = task

  def make_dense(self, units: int, name: str, activation=None) -> keras.layers.Dense:
    """A glorot-initialised dense of this head."""
    return keras.layers.Dense(units, activation=activation, name=name,
                              kernel_initializer=initializers.glorot_uniform(),
                              dtype=self.dtype_policy)

  @staticmethod
  def _squeezed(logits):
    """`[..., 1]` dense outputs -> `[...]` float32 logits."""
    return ops.cast(ops.squeeze(logits, -1), "float32")

  def serving_features(self, input_ids) -> Outputs:
    """The features besides input ids, mask and segments this head reads at serving time."""
    del input_ids
    return {}

  def serving_outputs(self, outputs: Outputs, label_names: LabelNames) -> Outputs:
    """The head's outputs under their rule names; label_names maps label ids to strings."""
    del label_names
    return dict(outputs)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(task=self.task)
    return config


class DenseHead(TaskHead):
  """Dropout, then one `dense` of `units` on the states `select` picks (`[CLS]` here)."""

  reads_first_token_only = True  # False where `select` reads other states

  def __init__(self, task: str, units: int, dropout_rate: float = 0.0, **kwargs):
    super().__init__(task, **kwargs)
    self.dropout_rate = dropout_rate
    self.dropout = (keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)
                    if dropout_rate else None)
    self.dense = self.make_dense(units, "dense")

  def build(self, input_shape):
    self.dense.build((None, None, input_shape[-1]))
    super().build(input_shape)

  @property
  def official_layers(self) -> List[keras.layers.Dense]:
    return [self.dense]

  def select(self, hidden, features: Outputs):
    """The states the dense reads: the `[CLS]` state `[batch, hidden]`."""
    del features
    return hidden[:, 0]

  def logits(self, hidden, features: Outputs, training: bool):
    reprs = self.select(hidden, features)
    if self.dropout is not None:
      reprs = self.dropout(reprs, training=training)
    return ops.cast(self.dense(reprs), "float32")


def _softmax_cross_entropy(logits, labels):
  """-log softmax(logits)[label], over the last axis."""
  one_hot = ops.one_hot(ops.cast(labels, "int32"), ops.shape(logits)[-1])
  return -ops.sum(one_hot * ops.log_softmax(logits, axis=-1), axis=-1)


@keras.saving.register_keras_serializable(package="electra_tf2")
class ClassificationHead(DenseHead):
  """`[CLS]` -> dropout (0.1, training only) -> `dense` logits `[batch, n_labels]`."""

  def __init__(self, task: str, label_list: Sequence[str], dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(task, len(label_list), dropout_rate, **kwargs)
    self.label_list = list(label_list)

  def call(self, hidden, features: Outputs, training: bool = False) -> Outputs:
    """hidden `[batch, seq_len, H]` -> logits `[batch, n_labels]`, predictions `[batch]`."""
    logits = self.logits(hidden, features, training)
    return {"logits": logits, "predictions": backend_ops.argmax(logits, axis=-1)}

  def serving_outputs(self, outputs: Outputs, label_names: LabelNames) -> Outputs:
    """`logits`, `probabilities` (their softmax) and the `label` string."""
    return {"logits": outputs["logits"], "probabilities": ops.softmax(outputs["logits"], -1),
            "label": label_names(self.label_list, outputs["predictions"])}

  def loss(self, outputs: Outputs, features: Outputs):
    """Softmax cross-entropy `[batch]`."""
    return _softmax_cross_entropy(outputs["logits"], features[self.task + "_label_ids"])

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(label_list=self.label_list, dropout_rate=self.dropout_rate)
    return config


@keras.saving.register_keras_serializable(package="electra_tf2")
class RegressionHead(DenseHead):
  """`[CLS]` -> dropout -> `dense(1)`; predictions in the normalised space
  (y - min_value) / max_value."""

  def __init__(self, task: str, min_value: float = 0.0, max_value: float = 1.0,
               dropout_rate: float = 0.1, **kwargs):
    super().__init__(task, 1, dropout_rate, **kwargs)
    self.min_value = min_value
    self.max_value = max_value

  def call(self, hidden, features: Outputs, training: bool = False) -> Outputs:
    """hidden `[batch, seq_len, H]` -> predictions `[batch]` (normalised)."""
    return {"predictions": ops.squeeze(self.logits(hidden, features, training), -1)}

  def serving_outputs(self, outputs: Outputs, label_names: LabelNames) -> Outputs:
    """The normalised prediction as `score`."""
    del label_names
    return {"score": outputs["predictions"]}

  def loss(self, outputs: Outputs, features: Outputs):
    """Squared error `[batch]`."""
    return ops.square(outputs["predictions"] - ops.cast(features[self.task + "_targets"],
                                                        "float32"))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(min_value=self.min_value, max_value=self.max_value,
                  dropout_rate=self.dropout_rate)
    return config


@keras.saving.register_keras_serializable(package="electra_tf2")
class TaggingHead(DenseHead):
  """First-wordpiece states -> `dense(n_labels)` logits, no dropout."""

  reads_first_token_only = False

  def __init__(self, task: str, label_list: Sequence[str], **kwargs):
    super().__init__(task, len(label_list), **kwargs)
    self.label_list = list(label_list)

  def serving_features(self, input_ids) -> Outputs:
    """Every position labeled: a SavedModel's tagging predictions are per WordPiece."""
    shape = ops.shape(input_ids)
    return {self.task + "_labeled_positions": ops.broadcast_to(ops.arange(shape[1]), shape)}

  def serving_outputs(self, outputs: Outputs, label_names: LabelNames) -> Outputs:
    """`logits` and the `labels` strings."""
    return {"logits": outputs["logits"],
            "labels": label_names(self.label_list, outputs["predictions"])}

  def select(self, hidden, features: Outputs):
    """The state of each word's first word piece: `[batch, seq_len, H]`."""
    positions = ops.cast(features[self.task + "_labeled_positions"], "int32")
    return gather_positions(hidden, positions)

  def call(self, hidden, features: Outputs, training: bool = False) -> Outputs:
    """hidden `[batch, seq_len, H]`, `<task>_labeled_positions` `[batch, seq_len]` ->
    logits `[batch, seq_len, n_labels]`, predictions `[batch, seq_len]` (per word)."""
    logits = self.logits(hidden, features, training)
    return {"logits": logits, "predictions": backend_ops.argmax(logits, axis=-1)}

  def loss(self, outputs: Outputs, features: Outputs):
    """Masked cross-entropy summed over words `[batch]`."""
    losses = _softmax_cross_entropy(outputs["logits"], features[self.task + "_labels"])
    return ops.sum(losses * ops.cast(features[self.task + "_labels_mask"], "float32"), axis=-1)

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(label_list=self.label_list)
    return config


@keras.saving.register_keras_serializable(package="electra_tf2")
class QAHead(TaskHead):
  """ELECTRA's XLNet-style span head with an answerability classifier.

  Official variables under task_specific/<task>: `dense` (start logits),
  with joint_prediction `qa_hidden` (512, gelu) and `dense_1` (end logits),
  without it `dense_1` (end logits); with answerable_classifier `dense_2`
  (512, gelu) and `dense_3` (logit), or just `dense_2` without
  answerable_uses_start_logits.

  The answer mask is `input_mask * segment_ids + one_hot(0)`: document tokens,
  the final `[SEP]` and `[CLS]`; masked logits get -1000.
  - Joint, training: the end logits see `[H(gold start); H]` (teacher forcing).
  - Joint, inference: the top `beam_size` starts, and for each the top
    `beam_size` ends of its end log-softmax; `end_logits` are zeros.
  - The answerability logit sees `[H(CLS); sum softmax(start_logits) H]`.
  `qa_hidden` on the concatenation is computed as two matmuls with the halves
  of its kernel (the same function, without tiling the states per beam).
  """

  def __init__(self, task: str, beam_size: int = 20, joint_prediction: bool = True,
               answerable_classifier: bool = True, answerable_uses_start_logits: bool = True,
               answerable_weight: float = 0.5, **kwargs):
    super().__init__(task, **kwargs)
    self.beam_size = beam_size
    self.joint_prediction = joint_prediction
    self.answerable_classifier = answerable_classifier
    self.answerable_uses_start_logits = answerable_uses_start_logits
    self.answerable_weight = answerable_weight
    self.start_dense = self.make_dense(1, "dense")
    self.qa_hidden = self.make_dense(512, "qa_hidden", gelu) if joint_prediction else None
    self.end_dense = self.make_dense(1, "dense_1")
    self.answerable_hidden: Optional[keras.layers.Dense] = None
    self.answerable_dense: Optional[keras.layers.Dense] = None
    if answerable_classifier:
      if answerable_uses_start_logits:
        self.answerable_hidden = self.make_dense(512, "dense_2", gelu)
        self.answerable_dense = self.make_dense(1, "dense_3")
      else:
        self.answerable_dense = self.make_dense(1, "dense_2")

  def build(self, input_shape):
    hidden = input_shape[-1]
    self.start_dense.build((None, None, hidden))
    if self.qa_hidden is not None:
      self.qa_hidden.build((None, None, 2 * hidden))
      self.end_dense.build((None, None, 512))
    else:
      self.end_dense.build((None, None, hidden))
    if self.answerable_hidden is not None:
      self.answerable_hidden.build((None, 2 * hidden))
      self.answerable_dense.build((None, 512))
    elif self.answerable_dense is not None:
      self.answerable_dense.build((None, hidden))
    super().build(input_shape)

  @property
  def official_layers(self) -> List[keras.layers.Dense]:
    return [layer for layer in (self.start_dense, self.qa_hidden, self.end_dense,
                                self.answerable_hidden, self.answerable_dense)
            if layer is not None]

  def _end_hidden(self, start_states, hidden):
    """gelu(qa_hidden([start; H])): start `[B, S, h]`, hidden `[B, L, h]` -> `[B, S, L, 512]`."""
    size = hidden.shape[-1]
    kernel = ops.cast(self.qa_hidden.kernel, hidden.dtype)
    bias = ops.cast(self.qa_hidden.bias, hidden.dtype)
    from_start = backend_ops.einsum("bsh,hk->bsk", start_states, kernel[:size])
    from_end = backend_ops.einsum("blh,hk->blk", hidden, kernel[size:])
    return gelu(ops.expand_dims(from_start, 2) + ops.expand_dims(from_end, 1) + bias)

  def call(self, hidden, features: Outputs, training: bool = False) -> Outputs:
    """hidden `[B, L, h]` -> start/end logits `[B, L]`, answerable_logit `[B]`,
    start_top_log_probs/index `[B, k]`, end_top_log_probs/index `[B, k, k]` (k = beam_size)."""
    batch_size, seq_length = ops.shape(hidden)[0], ops.shape(hidden)[1]
    k = self.beam_size
    is_cls = ops.cast(ops.equal(ops.arange(seq_length), 0), "float32")
    answer_mask = (ops.cast(features["input_mask"], "float32")
                   * ops.cast(features["segment_ids"], "float32") + is_cls)
    penalty = 1000.0 * (answer_mask - 1.0)
    start_logits = self._squeezed(self.start_dense(hidden)) + penalty
    start_top_log_probs = ops.zeros((batch_size, k))
    start_top_index = ops.zeros((batch_size, k), "int32")
    end_top_log_probs = ops.zeros((batch_size, k, k))
    end_top_index = ops.zeros((batch_size, k, k), "int32")
    if self.joint_prediction:
      start_top_log_probs, start_top_index = ops.top_k(ops.log_softmax(start_logits), k=k)
      if training:
        positions = ops.cast(features[self.task + "_start_positions"], "int32")
        start_states = gather_positions(hidden, ops.expand_dims(positions, 1))
        end_hidden = self._end_hidden(start_states, hidden)[:, 0]
        end_logits = self._squeezed(self.end_dense(end_hidden)) + penalty
      else:
        start_states = gather_positions(hidden, start_top_index)
        end_hidden = self._end_hidden(start_states, hidden)
        beam_end_logits = self._squeezed(self.end_dense(end_hidden)) + ops.expand_dims(penalty, 1)
        end_top_log_probs, end_top_index = ops.top_k(ops.log_softmax(beam_end_logits), k=k)
        end_logits = ops.zeros((batch_size, seq_length))
    else:
      end_logits = self._squeezed(self.end_dense(hidden)) + penalty

    answerable_logit = ops.zeros((batch_size,))
    if self.answerable_classifier:
      reprs = hidden[:, 0]
      if self.answerable_uses_start_logits:
        start_p = ops.cast(ops.softmax(start_logits), hidden.dtype)
        start_feature = backend_ops.einsum("bl,blh->bh", start_p, hidden)
        reprs = self.answerable_hidden(ops.concatenate([reprs, start_feature], -1))
      answerable_logit = self._squeezed(self.answerable_dense(reprs))
    return {"start_logits": start_logits, "end_logits": end_logits,
            "answerable_logit": answerable_logit,
            "start_top_log_probs": start_top_log_probs, "start_top_index": start_top_index,
            "end_top_log_probs": end_top_log_probs, "end_top_index": end_top_index}

  def loss(self, outputs: Outputs, features: Outputs):
    """(start CE + end CE) / 2 + answerable_weight * answerability BCE, `[batch]`."""
    losses = (_softmax_cross_entropy(outputs["start_logits"],
                                     features[self.task + "_start_positions"])
              + _softmax_cross_entropy(outputs["end_logits"],
                                       features[self.task + "_end_positions"])) / 2.0
    if self.answerable_classifier:
      losses += self.answerable_weight * ops.binary_crossentropy(
          ops.cast(features[self.task + "_is_impossible"], "float32"),
          outputs["answerable_logit"], from_logits=True)
    return losses

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(beam_size=self.beam_size, joint_prediction=self.joint_prediction,
                  answerable_classifier=self.answerable_classifier,
                  answerable_uses_start_logits=self.answerable_uses_start_logits,
                  answerable_weight=self.answerable_weight)
    return config
