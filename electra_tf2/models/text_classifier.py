"""`TextClassifier`: raw texts (or pairs) -> class logits, or a score (regression).

The official head (finetune/classification/classification_tasks.py:218-235,
267-290, electra_tf2/layers/task_heads.py): dropout on the `[CLS]` state, one
dense. `head="hf"` is Hugging Face's `ElectraClassificationHead` instead
(dropout, dense + GELU, dropout, `out_proj`), so an
`ElectraForSequenceClassification` loads with its head; it is the default for
such a directory (with num_labels 1, regression: its one logit is the score).

  model = TextClassifier.from_pretrained("electra-small-discriminator", num_classes=2)
  model.compile(optimizer=model.official_optimizer(1e-4, 1000),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  model.fit(texts, labels, batch_size=32)
  model.predict(["a fine film"])  # [1, 2] logits
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import keras
import numpy as np
from keras import ops

from electra_tf2.utils import backend_ops
from electra_tf2.layers.task_heads import ClassificationHead, RegressionHead, TaskHead
from electra_tf2.layers.activations import gelu
from electra_tf2.models import sources
from electra_tf2.models import heads, keras_data, text_model
from electra_tf2.models.text_model import TextModel, VariableMap

HEADS = ("official", "hf")
HF_ARCHITECTURE = "ElectraForSequenceClassification"


@keras.saving.register_keras_serializable(package="electra_tf2")
class HuggingFaceClassificationHead(TaskHead):
  """`ElectraClassificationHead`: `[CLS]` -> dropout -> dense(H) + GELU -> dropout -> out_proj."""

  def __init__(self, task: str, units: int, hidden_size: int, dropout_rate: float = 0.1,
               **kwargs):
    super().__init__(task, **kwargs)
    self.units, self.hidden_size, self.dropout_rate = units, hidden_size, dropout_rate
    self.dropout = (keras.layers.Dropout(dropout_rate, dtype=self.dtype_policy)
                    if dropout_rate else None)
    self.dense = self.make_dense(hidden_size, "dense", gelu)
    self.out_proj = self.make_dense(units, "out_proj")

  def build(self, input_shape):
    self.dense.build((None, self.hidden_size))
    self.out_proj.build((None, self.hidden_size))
    super().build(input_shape)

  @property
  def official_layers(self) -> List[keras.layers.Dense]:
    return [self.dense, self.out_proj]

  def call(self, hidden, features, training: bool = False) -> Dict[str, Any]:
    """hidden `[batch, seq_len, H]` -> logits `[batch, units]`, predictions `[batch]`."""
    del features
    reprs = hidden[:, 0]
    for layer in (self.dense, self.out_proj):
      if self.dropout is not None:
        reprs = self.dropout(reprs, training=training)
      reprs = layer(reprs)
    logits = ops.cast(reprs, "float32")
    if self.units == 1:  # regression (num_labels 1): the score, as transformers' MSE reads it
      return {"logits": logits, "predictions": logits[:, 0]}
    return {"logits": logits, "predictions": backend_ops.argmax(logits, -1)}

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(units=self.units, hidden_size=self.hidden_size,
                  dropout_rate=self.dropout_rate)
    return config


@keras.saving.register_keras_serializable(package="electra_tf2")
class TextClassifier(TextModel):
  """Texts `[batch]` (or a pair `(a, b)`) -> logits `[batch, num_classes]`, or for
  num_classes=1 (regression, as STS-B) the score `[batch]`.

  Args (besides TextModel's):
    num_classes: classes; 1 for regression.
    head: "official" or "hf" (see the module docstring).
    label_list: class names (default "0", "1", ...), for `serve`'s `label`.
    dropout_rate: the head's dropout (official 0.1).
    task: the head's name (its variables: task_specific/<task>/...).
    text_pairs: the SavedModel and predict_file take pairs (`call` takes both always).

  Load one with `TextClassifier.from_pretrained(path, num_classes=...)`; a random one:

  >>> from electra_tf2 import BertConfig, TextClassifier
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "."]
  >>> bert = BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
  ...                   num_attention_heads=2, intermediate_size=32)
  >>> model = TextClassifier(bert, None, vocab, num_classes=3)
  >>> model.predict(["a fine film", "film ."], verbose=0).shape
  (2, 3)
  >>> model.predict((["a fine film"], ["a film"]), verbose=0).shape  # pairs
  (1, 3)
  """

  def __init__(self, bert_config, embedding_size, vocab, do_lower_case: bool = True,
               max_seq_length: int = 128, num_classes: int = 2, head: str = "official",
               label_list: Optional[Sequence[str]] = None, dropout_rate: float = 0.1,
               task: str = "classifier", text_pairs: bool = False, **kwargs):
    kwargs.setdefault("name", "text_classifier")
    super().__init__(bert_config, embedding_size, vocab, do_lower_case, max_seq_length,
                     **kwargs)
    if head not in HEADS:
      raise ValueError(f"head must be one of {', '.join(HEADS)}, got {head!r}")
    if num_classes < 1:
      raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    self.num_classes, self.head_kind, self.dropout_rate = num_classes, head, dropout_rate
    self.text_pairs = text_pairs
    self.label_list = list(label_list or [str(i) for i in range(num_classes)])
    if head == "hf":
      self.head = HuggingFaceClassificationHead(task, num_classes, self.bert_config.hidden_size,
                                                dropout_rate, dtype=self.dtype_policy)
    elif num_classes == 1:
      self.head = RegressionHead(task, dropout_rate=dropout_rate, dtype=self.dtype_policy)
    else:
      self.head = ClassificationHead(task, self.label_list, dropout_rate,
                                     dtype=self.dtype_policy)
    self.build()

  def call_features(self, features, training: bool = False, skip_padding: bool = False):
    """`call` on TextInputs' features (skip_padding: `Encoder.call`'s; the head reads
    [CLS] alone, so the outputs are the same)."""
    outputs = self.head(self.encode(features, training, skip_padding), features,
                        training=training)
    return outputs["predictions"] if self.num_classes == 1 else outputs["logits"]

  def serve_features(self, features, skip_padding: bool = False):
    """`score` for regression; else `logits`, `probabilities` and the `label` string."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    outputs = self.call_features(features, skip_padding=skip_padding)
    if self.num_classes == 1:
      return {"score": outputs}
    return {"logits": outputs, "probabilities": tf.nn.softmax(outputs),
            "label": tf.gather(tf.constant(self.label_list), tf.argmax(outputs, -1))}

  def serve(self, *texts):
    """The SavedModel's outputs: `serve_features` with the encoder skipping the padding's
    rows (faster on batches of mixed lengths, docs/benchmarks.md; the `.tflite` export
    keeps the padded graph)."""
    return self.serve_features(self.text_features(*texts), skip_padding=True)

  def text_columns(self) -> Tuple[int, ...]:
    return (1, 2)

  def prepare_labels(self, y, name: str, x):
    """Class ids in 0..num_classes-1 (any number for regression); one line naming a label
    out of range, which Keras would stop on deep inside the loss."""
    labels = super().prepare_labels(y, name, x)
    if self.num_classes > 1 and isinstance(labels, np.ndarray):
      bad = labels[(labels < 0) | (labels >= self.num_classes) | (labels != np.round(labels))]
      if bad.size:
        raise keras_data.InputDataError(
            f"{name}: label {bad.flat[0]} is no class id of this model's {self.num_classes} "
            f"classes (0..{self.num_classes - 1}): give ids in that range, or build the model "
            "with num_classes set to the number of classes")
    return labels

  def _export_for_target(self, target: str, path: str, quantize: str,
                         calibration_texts: Optional[List[str]]) -> str:
    """`export_litert(target="mediapipe")`: a file for MediaPipe's TextClassifier."""
    from electra_tf2.litert import mediapipe  # pylint: disable=g-import-not-at-top
    mediapipe.check_target(target)
    return mediapipe.export_classifier(self, path, quantize, calibration_texts)

  def serving_inputs(self) -> Tuple[str, ...]:
    return ("text", "text_b") if self.text_pairs else ("text",)

  @classmethod
  def from_source(cls, source: sources.Source, **options) -> "TextClassifier":
    """Head and classes default to the source's fine-tuned head, if it has one."""
    if options.get("head") is None:
      options["head"] = "hf" if source.architecture == HF_ARCHITECTURE else "official"
    found = _source_head(source, options["head"], options.get("task"))
    options = text_model.head_options(source, found, options, "classification")
    return super().from_source(source, **options)

  def source_head(self, source: sources.Source) -> Tuple[VariableMap, Dict[str, str]]:
    return text_model.head_to_load(self, source,
                                   _source_head(source, self.head_kind, self.head.task))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_classes=self.num_classes, head=self.head_kind,
                  label_list=self.label_list, dropout_rate=self.dropout_rate,
                  task=self.head.task, text_pairs=self.text_pairs)
    return config


def _source_head(source: sources.Source, head: str, task: Optional[str] = None
                 ) -> Optional[Tuple[str, List[str]]]:
  """`(task, its tensor names sorted, out layer last)` of the source's head of this kind:
  the head of `task`, else the only one."""
  if head == "hf":
    names = [f"classifier/{layer}/{v}" for layer in ("dense", "out_proj")
             for v in ("bias", "kernel")]
    return ("classifier", names) if all(n in source.tensors for n in names) else None
  kinds = heads.kinds_of(HF_ARCHITECTURE)  # a head of unknown kind may be one of them
  tasks = [t for t in source.task_names() if source.head_kinds.get(t, kinds[0]) in kinds
           and f"task_specific/{t}/dense/kernel" in source.tensors
           and f"task_specific/{t}/dense_1/kernel" not in source.tensors]
  tasks = [task] if task in tasks else tasks
  if len(tasks) != 1:
    return None
  return tasks[0], [f"task_specific/{tasks[0]}/dense/bias", f"task_specific/{tasks[0]}/dense/kernel"]
