"""Evaluation metrics as the official code computes them
(finetune/*/*_metrics.py).

- `AccuracyScorer` (classification_metrics.AccuracyScorer): 100 * correct / n;
- `MCCScorer`: 100 * sklearn's Matthews correlation (CoLA);
- `RegressionScorer`: 100 * Pearson and Spearman (scipy), and the MSE in the
  normalised label space (STS);
- `EntityLevelF1Scorer` (tagging_metrics): span precision, recall and F1 over
  the spans of BIO/BIOES tags (chunking).

Each reports the mean per-example `loss` too. The official `F1Scorer` for
classification counts gold labels from the predictions and is unused; it is not
ported. The official tagging scorer adds every loss twice; ours reports it once.

Scorers take batches: `update(outputs)` receives numpy arrays for this task's
rows of one batch (the head's outputs plus its label features with the
`<task>_` prefix removed).
"""

from __future__ import annotations

import abc
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import scipy.stats
import sklearn.metrics

Results = Dict[str, float]
Span = Tuple[int, int, str]


class Scorer(abc.ABC):
  """Accumulates predictions and computes metrics (official finetune/scorer.py)."""

  def __init__(self):
    self._total_loss = 0.0
    self._count = 0

  def update(self, outputs: Mapping[str, np.ndarray]) -> None:
    losses = np.asarray(outputs["loss"], np.float64)
    self._total_loss += float(losses.sum())
    self._count += int(losses.shape[0])

  def get_loss(self) -> float:
    return self._total_loss / max(1, self._count)

  @abc.abstractmethod
  def get_results(self) -> Results:
    """Metric name -> value, in the official order."""

  def results_str(self) -> str:
    return " - ".join(f"{k}: {v:.2f}" for k, v in self.get_results().items())


# ---------------------------------------------------------------------------
# Sentence-level (GLUE)
# ---------------------------------------------------------------------------


class SentenceLevelScorer(Scorer):
  """Collects one label and one prediction per example."""

  def __init__(self):
    super().__init__()
    self._labels: List[np.ndarray] = []
    self._preds: List[np.ndarray] = []

  def update(self, outputs: Mapping[str, np.ndarray]) -> None:
    super().update(outputs)
    labels = outputs["label_ids"] if "label_ids" in outputs else outputs["targets"]
    self._labels.append(np.asarray(labels).reshape(-1))
    self._preds.append(np.asarray(outputs["predictions"]).reshape(-1))

  @property
  def labels(self) -> np.ndarray:
    return np.concatenate(self._labels) if self._labels else np.zeros(0)

  @property
  def predictions(self) -> np.ndarray:
    return np.concatenate(self._preds) if self._preds else np.zeros(0)


class AccuracyScorer(SentenceLevelScorer):

  def get_results(self) -> Results:
    labels, preds = self.labels, self.predictions
    return {"accuracy": 100.0 * float(np.sum(labels == preds)) / max(1, len(labels)),
            "loss": self.get_loss()}


class MCCScorer(SentenceLevelScorer):

  def get_results(self) -> Results:
    return {"mcc": 100.0 * float(sklearn.metrics.matthews_corrcoef(self.labels,
                                                                   self.predictions)),
            "loss": self.get_loss()}


class RegressionScorer(SentenceLevelScorer):

  def get_results(self) -> Results:
    labels, preds = self.labels.astype(np.float64), self.predictions.astype(np.float64)
    return {"pearson": 100.0 * float(scipy.stats.pearsonr(labels, preds)[0]),
            "spearman": 100.0 * float(scipy.stats.spearmanr(labels, preds)[0]),
            "mse": float(np.mean(np.square(labels - preds))),
            "loss": self.get_loss()}


# ---------------------------------------------------------------------------
# Spans of tag sequences (official tagging_utils)
# ---------------------------------------------------------------------------


def get_span_labels(sentence_tags: Sequence, inv_label_mapping: Optional[Mapping] = None
                    ) -> List[Span]:
  """Tags (BIO/BIOES strings, or ids with `inv_label_mapping`) -> [(start, end, type)].

  Exactly the official rule: a span ends before a B-, S- or O tag that follows
  a non-O tag, and a new one starts at B-, S-, or any tag after an O. So an
  I- or E- after O opens a span, and a type change without a B- does not
  close one (its type is the last tag's).
  """
  if inv_label_mapping:
    sentence_tags = [inv_label_mapping[int(i)] for i in sentence_tags]
  spans: List[Span] = []
  last = "O"
  start = -1
  for i, tag in enumerate(sentence_tags):
    pos = None if tag == "O" else tag.split("-")[0]
    if (pos in ("S", "B") or tag == "O") and last != "O":
      spans.append((start, i - 1, last.split("-")[-1]))
    if pos in ("B", "S") or last == "O":
      start = i
    last = tag
  if sentence_tags and sentence_tags[-1] != "O":
    spans.append((start, len(sentence_tags) - 1, sentence_tags[-1].split("-")[-1]))
  return spans


def get_tags(span_labels: Sequence[Span], length: int, encoding: str = "BIOES") -> List[str]:
  """Spans -> tags in `encoding` ("BIOES" or "BIO")."""
  tags = ["O"] * length
  for start, end, label in span_labels:
    for i in range(start, end + 1):
      tags[i] = "I-" + label
    if "E" in encoding:
      tags[end] = "E-" + label
    if "B" in encoding:
      tags[start] = "B-" + label
    if "S" in encoding and start == end:
      tags[start] = "S-" + label
  return tags


# ---------------------------------------------------------------------------
# Word-level (chunking)
# ---------------------------------------------------------------------------


class EntityLevelF1Scorer(Scorer):
  """Span precision/recall/F1 (x100) over the first `sum(labels_mask)` words of each row.

  Args:
    label_mapping: tag string -> id, as used for the labels.
  """

  def __init__(self, label_mapping: Mapping[str, int]):
    super().__init__()
    self._inv_label_mapping = {v: k for k, v in label_mapping.items()}
    self._labels: List[np.ndarray] = []
    self._preds: List[np.ndarray] = []
    self._words = 0

  def update(self, outputs: Mapping[str, np.ndarray]) -> None:
    self._total_loss += float(np.sum(outputs["loss"]))
    for labels, preds, mask in zip(outputs["labels"], outputs["predictions"],
                                   outputs["labels_mask"]):
      n_words = int(round(float(np.sum(mask))))
      self._labels.append(np.asarray(labels)[:n_words])
      self._preds.append(np.asarray(preds)[:n_words])
      self._words += n_words

  def get_loss(self) -> float:
    """Loss per word (the official scorer reports twice this)."""
    return self._total_loss / max(1, self._words)

  def get_results(self) -> Results:
    n_correct = n_predicted = n_gold = 0
    for labels, preds in zip(self._labels, self._preds):
      gold = set(get_span_labels(labels, self._inv_label_mapping))
      predicted = set(get_span_labels(preds, self._inv_label_mapping))
      n_correct += len(gold & predicted)
      n_gold += len(gold)
      n_predicted += len(predicted)
    if n_correct == 0:
      precision = recall = f1 = 0.0
    else:
      precision = 100.0 * n_correct / n_predicted
      recall = 100.0 * n_correct / n_gold
      f1 = 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1, "loss": self.get_loss()}
