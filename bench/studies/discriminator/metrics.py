"""Calibration, ranking and threshold metrics in numpy (checked against sklearn in tests)."""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

import numpy as np


def reliability(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10
                ) -> Dict[str, Any]:
  """Equal-width bins over [0, 1]: count, mean probability and replaced fraction per bin,
  and ECE = sum over bins of count/N * |replaced fraction - mean probability|."""
  probabilities = np.asarray(probabilities, np.float64)
  labels = np.asarray(labels, np.float64)
  index = np.minimum((probabilities * bins).astype(int), bins - 1)
  count = np.bincount(index, minlength=bins)
  total_p = np.bincount(index, probabilities, minlength=bins)
  total_y = np.bincount(index, labels, minlength=bins)
  safe = np.maximum(count, 1)
  confidence, frequency = total_p / safe, total_y / safe
  ece = float(np.sum(count / max(len(labels), 1) * np.abs(frequency - confidence)))
  return {"bins": bins, "count": count.tolist(), "mean_probability": confidence.tolist(),
          "replaced_fraction": frequency.tolist(), "ece": ece}


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
  """P(score of a random positive > score of a random negative), ties counting 1/2."""
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels, bool)
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores))
  sorted_scores = scores[order]
  # average ranks (1-based) over ties
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
  ends = np.r_[starts[1:], len(scores)]
  for a, b in zip(starts, ends):
    ranks[order[a:b]] = (a + b + 1) / 2
  positives, negatives = labels.sum(), (~labels).sum()
  if positives == 0 or negatives == 0:
    return float("nan")
  return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def best_threshold_mcc(scores: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
  """The largest MCC of `predict positive iff score >= t` over every t, and that t."""
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels, bool)
  order = np.argsort(-scores, kind="mergesort")
  s, y = scores[order], labels[order]
  last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # last index of each distinct score
  tp = np.cumsum(y)[last].astype(np.float64)
  fp = np.cumsum(~y)[last].astype(np.float64)
  positives, negatives = y.sum(), (~y).sum()
  fn, tn = positives - tp, negatives - fp
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  mcc = np.where(denominator > 0, (tp * tn - fp * fn) / np.maximum(denominator, 1e-300), 0.0)
  best = int(np.argmax(mcc))
  return float(mcc[best]), float(s[last[best]])


def top1_accuracy(scores: Sequence[Sequence[float]], higher_is_better: bool) -> float:
  """Fraction of groups whose first entry (the original) is strictly better than the rest."""
  hits = 0
  for group in scores:
    group = np.asarray(group, np.float64) * (1 if higher_is_better else -1)
    hits += bool(np.all(group[0] > group[1:]))
  return hits / max(len(scores), 1)
