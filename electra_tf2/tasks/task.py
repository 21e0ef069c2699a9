"""The task API (official finetune/task.py and feature_spec.py) and its shared pieces.

A `Task` reads raw examples of a split, turns each into one or more feature
dicts (`featurize`), names the TFRecord features it adds (`get_feature_specs`),
describes its Keras head (`head_spec`, built by electra_tf2/models/finetuning.py)
and scores predictions (`get_scorer`). Every feature dict holds the shared
`input_ids`, `input_mask`, `segment_ids` (`[max_seq_length]`) and `task_id`,
plus `<task>_...` features of its own.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence

import numpy as np

from electra_tf2.utils.errors import ElectraError
from electra_tf2.tasks.config import FinetuningConfig


class FinetuningDataError(ElectraError, ValueError):
  """Missing or malformed task data; the message names the file and line or question id."""


@dataclasses.dataclass(eq=False)  # examples compare by identity
class Example:
  """One raw example of a task."""
  task_name: str
  eid: int


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
  """One fixed-length TFRecord feature (official feature_spec.FeatureSpec)."""
  name: str
  shape: Sequence[int]
  is_int_feature: bool = True

  def default_values(self) -> np.ndarray:
    return np.zeros(self.shape, np.int64 if self.is_int_feature else np.float32)


def shared_feature_specs(config: FinetuningConfig) -> List[FeatureSpec]:
  """Inputs every task has: ids, mask and segments `[max_seq_length]`, and the task id."""
  return [FeatureSpec("input_ids", [config.max_seq_length]),
          FeatureSpec("input_mask", [config.max_seq_length]),
          FeatureSpec("segment_ids", [config.max_seq_length]),
          FeatureSpec("task_id", [])]


class CachedTokenizer:
  """A FullTokenizer whose `tokenize` results are memoised and can be computed in batches.

  The official code tokenizes word by word in Python. Our tokenizer runs in
  TensorFlow, where one call per word would dominate featurisation, so tasks
  `warm` the cache with every text of a dataset in a few batched calls first.
  """

  def __init__(self, tokenizer):
    self.tokenizer = tokenizer
    self.vocab = tokenizer.vocab
    self.special_ids = tokenizer.special_ids  # found by role ([CLS] or <s>, ...)
    self._cache: Dict[str, List[str]] = {}

  def warm(self, texts: Iterable[str]) -> None:
    """Tokenizes every text not seen yet, in batches."""
    new = list(dict.fromkeys(t for t in texts if t not in self._cache))
    if not new:
      return
    for text, ids in zip(new, self.tokenizer.encode_batch(new)):
      self._cache[text] = self.tokenizer.convert_ids_to_tokens(ids)

  def clear(self) -> None:
    """Forgets the cached tokenizations (after a dataset is written)."""
    self._cache.clear()

  def tokenize(self, text: str) -> List[str]:
    tokens = self._cache.get(text)
    if tokens is None:
      tokens = self._cache[text] = self.tokenizer.tokenize(text)
    return list(tokens)

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    return self.tokenizer.convert_tokens_to_ids(tokens)


class Task(abc.ABC):
  """Override this class to add a fine-tuning task."""

  text_pairs = False  # whether an example is a pair of texts (text_a, text_b)

  def __init__(self, config: FinetuningConfig, name: str):
    self.config = config
    self.name = name

  @property
  def task_id(self) -> int:
    return self.config.task_names.index(self.name)

  def get_test_splits(self) -> List[str]:
    return ["test"]

  def data_path(self, split: str, extension: str) -> str:
    """The raw file of a split; a clear error when it is missing."""
    directory = self.config.task_data_dir(self.name)
    path = os.path.join(directory, split + extension)
    if not os.path.isfile(path):
      where = (f"the task directory {directory} does not exist" if not os.path.isdir(directory)
               else f"{path} is missing")
      raise FinetuningDataError(f"task {self.name}: {where}. {self.data_hint()}")
    return path

  def data_hint(self) -> str:
    """What the task's directory should hold (used in error messages)."""
    return ""

  def limit(self, examples: List[Example]) -> List[Example]:
    """Applies max_examples_per_split."""
    cap = self.config.max_examples_per_split
    return examples[:cap] if cap else examples

  @abc.abstractmethod
  def split_path(self, split: str) -> str:
    """The raw file of a split (FinetuningDataError when it is missing)."""

  @abc.abstractmethod
  def get_examples(self, split: str) -> List[Example]:
    """The raw examples of a split ("train", "dev", "test", ...)."""

  def check_labels(self, examples: Sequence[Example]) -> None:
    """FinetuningDataError on a label `featurize` would reject, before any training.

    Only tasks whose labels are checked at featurisation time (GLUE) override
    this; the others check theirs in `get_examples`, or have none to check.
    """

  def prepare(self, examples: Sequence[Example]) -> None:
    """Batch work before featurising `examples` (tokenizer warm-up); optional."""

  def release(self) -> None:
    """Frees what `prepare` cached, once the examples are featurised; optional."""

  @abc.abstractmethod
  def get_feature_specs(self) -> List[FeatureSpec]:
    """The `<task>_...` features this task adds to every record."""

  @abc.abstractmethod
  def featurize(self, example: Example, is_training: bool, log: bool = False
                ) -> List[Dict[str, Any]]:
    """Feature dicts of one example (several for QA windows)."""

  @abc.abstractmethod
  def head_spec(self) -> Dict[str, Any]:
    """The head's constructor arguments: {"kind": ..., "task": name, ...}."""

  @abc.abstractmethod
  def get_scorer(self, split: str = "dev"):
    """A fresh `scorers.Scorer` for the predictions on `split`."""

  def __repr__(self) -> str:
    return f"Task({self.name})"


def read_lines(path: str) -> List[str]:
  """The lines of a UTF-8 text file; FinetuningDataError naming the file if it is not UTF-8."""
  try:
    with open(path, encoding="utf-8") as f:
      return f.readlines()
  except UnicodeDecodeError as e:
    raise FinetuningDataError(f"{path} is not UTF-8 text ({e.reason} at byte {e.start})"
                              ) from None


def log_features(task: str, features: Dict[str, Any], tokens: Optional[List[str]] = None
                 ) -> None:
  """Prints one featurised example (log_examples)."""
  print(f"*** {task} example ***")
  if tokens is not None:
    print("  tokens: " + " ".join(tokens))
  for name, value in features.items():
    if isinstance(value, (list, tuple)):
      value = " ".join(str(v) for v in value)
    print(f"  {name}: {value}")
