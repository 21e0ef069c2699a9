"""`TokenClassifier`: raw texts -> one label per whitespace-separated word (as chunking).

The official tagging task (finetune/tagging/tagging_tasks.py, electra_tf2/
tasks/tagging.py): every word is tokenised alone and tagged at its first
WordPiece, through one dense (`task_specific/<task>/dense`). An
`ElectraForTokenClassification` directory loads with its `classifier`, the
same function.

Outputs are `[batch, max_seq_length, num_classes]` logits, word i at slot i;
`fit` pads lists of tags (one per word) to max_seq_length with -1, which the
loss ignores:

  model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                ignore_class=-1))
  model.fit(["the cat sat", "a dog"], [[0, 1, 2], [0, 1]], batch_size=2)
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import keras
import numpy as np

from electra_tf2.layers.task_heads import TaggingHead
from electra_tf2.models import sources
from electra_tf2.models import heads, keras_data, text_model
from electra_tf2.models.text_model import TextModel, VariableMap

HF_ARCHITECTURE = "ElectraForTokenClassification"


@keras.saving.register_keras_serializable(package="electra_tf2")
class TokenClassifier(TextModel):
  """Texts `[batch]` -> per-word logits `[batch, max_seq_length, num_classes]`.

  Args (besides TextModel's):
    num_classes: the number of tags.
    label_list: tag names (default "0", "1", ...), for `serve`'s `labels`.
    task: the head's name (its variables: task_specific/<task>/dense).

  Load one with `TokenClassifier.from_pretrained(path, num_classes=...)`; a random one:

  >>> from electra_tf2 import BertConfig, TokenClassifier
  >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "."]
  >>> bert = BertConfig(len(vocab), hidden_size=16, num_hidden_layers=1,
  ...                   num_attention_heads=2, intermediate_size=32)
  >>> model = TokenClassifier(bert, None, vocab, max_seq_length=8, num_classes=4)
  >>> model.predict(["a fine film."], verbose=0).shape  # 3 words in 8 slots
  (1, 8, 4)
  """

  def __init__(self, bert_config, embedding_size, vocab, do_lower_case: bool = True,
               max_seq_length: int = 128, num_classes: int = 2,
               label_list: Optional[Sequence[str]] = None, task: str = "tagger", **kwargs):
    kwargs.setdefault("name", "token_classifier")
    super().__init__(bert_config, embedding_size, vocab, do_lower_case, max_seq_length,
                     **kwargs)
    self.num_classes = num_classes
    self.label_list = list(label_list or [str(i) for i in range(num_classes)])
    self.head = TaggingHead(task, self.label_list, dtype=self.dtype_policy)
    self.build()

  def call_features(self, features, training: bool = False):
    """`call` on TextInputs' word features."""
    positions = {f"{self.head.task}_labeled_positions": features["labeled_positions"]}
    return self.head(self.encode(features, training), positions, training=training)["logits"]

  def feature_names(self) -> Tuple[str, ...]:
    return (*text_model.FEATURE_NAMES, "labeled_positions")

  def featurize(self, texts, texts_b=None, pad_to_max_length: bool = False):
    """Tagging features of Python strings (TextInputs' `featurize_words`): also
    `labeled_positions` and `words_mask` `[batch, max_seq_length]`."""
    if texts_b is not None:
      raise keras_data.InputDataError("a TokenClassifier takes one text per row, not pairs")
    return self.text_inputs.featurize_words(texts, pad_to_max_length)

  def text_features(self, text):
    return self.text_inputs.call_words(text)

  def litert_features(self, featurizer, text):
    return featurizer.word_features(text)

  def prepare_labels(self, y, name: str, x):
    """Tags per word (lists of any length, or an array) padded (or cut) to max_seq_length
    with -1; tf.data datasets and tensors as they are."""
    del x
    if isinstance(y, (list, tuple)) and y and all(isinstance(row, (list, tuple, np.ndarray))
                                                 for row in y):
      y = [keras_data.numbers(row, f"{name}[{i}]", np.int64)[:self.max_seq_length]
           if len(row) else np.zeros(0, np.int64) for i, row in enumerate(y)]
      y = keras.utils.pad_sequences(y, self.max_seq_length, padding="post", value=-1)
    y = keras_data.numbers(y, name)
    if isinstance(y, np.ndarray) and y.ndim == 2 and y.shape[1] != self.max_seq_length:
      y = keras.utils.pad_sequences(y, self.max_seq_length, padding="post",
                                    truncating="post", value=-1)
    return y

  def serve_features(self, features):
    """`logits`, the `labels` strings and `words_mask` `[batch, max_seq_length]`."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    logits = self.call_features(features)
    mask = features["words_mask"]
    return {"logits": logits, "words_mask": mask,
            "labels": tf.gather(tf.constant(self.label_list), tf.argmax(logits, -1))}

  @classmethod
  def from_source(cls, source: sources.Source, **options) -> "TokenClassifier":
    """The number of tags defaults to the source's tagging head, if it has one."""
    options = text_model.head_options(source, _source_head(source, options.get("task")),
                                      options, "tagging")
    return super().from_source(source, **options)

  def source_head(self, source: sources.Source) -> Tuple[VariableMap, Dict[str, str]]:
    return text_model.head_to_load(self, source, _source_head(source, self.head.task))

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.update(num_classes=self.num_classes, label_list=self.label_list,
                  task=self.head.task)
    return config


def _source_head(source: sources.Source, task: Optional[str] = None):
  """`(task, [bias name, kernel name])` of the source's tagging head (that of `task`,
  else the only one), or None."""
  if source.architecture == HF_ARCHITECTURE:
    return "classifier", ["classifier/bias", "classifier/kernel"]
  kinds = heads.kinds_of(HF_ARCHITECTURE)  # a head of unknown kind may be one of them
  tasks = [t for t in source.task_names() if source.head_kinds.get(t, kinds[0]) in kinds
           and f"task_specific/{t}/dense_1/kernel" not in source.tensors]
  tasks = [task] if task in tasks else tasks
  if len(tasks) != 1:
    return None
  return tasks[0], [f"task_specific/{tasks[0]}/dense/bias",
                    f"task_specific/{tasks[0]}/dense/kernel"]
