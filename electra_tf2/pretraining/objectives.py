"""ELECTRA, ELECTRIC and MLM objectives (run_pretraining.py:164-285) and eval metrics.

Losses are normalised the official way: weighted sums over the batch divided
by the sum of weights + 1e-6. A caller may pass the denominators instead
(`loss_denominators` of the whole global batch, summed over replicas and
accumulation steps): each replica's or micro-batch's loss is then its exact
share of the global-batch loss, and summed gradients equal one device running
the whole batch. (The official TPU code averaged per-core means instead; the
two differ only in how rows with unequal mask counts are weighted.)
"""

from __future__ import annotations

import collections
import math
from typing import Dict, Mapping

import numpy as np
from keras import ops

from electra_tf2.utils import backend_ops
from electra_tf2.pretraining import pretrain_helpers
from electra_tf2.utils.inputs import features_to_inputs, get_updated_inputs, Inputs

FakedData = collections.namedtuple("FakedData", ["inputs", "is_fake_tokens", "sampled_tokids"])
FakedData.__doc__ = """Discriminator inputs: fake ids, labels `[batch, seq_len]` int32, samples `[batch, n]`."""


def _normalised(weighted_sum, weight_sum, denominator):
  if denominator is None:
    denominator = weight_sum
  return weighted_sum / (ops.cast(denominator, "float32") + 1e-6)


def loss_denominators(config, features: Mapping) -> Dict:
  """The loss denominators of a batch, known before masking (scalars, float32).

  mlm: the number of weighted prediction slots (`num_to_predict` per row with
  a candidate); disc: real tokens; cloze: candidate tokens. They add up across
  micro-batches and replicas, giving the denominators of the global batch.
  """
  inputs = features_to_inputs(features)
  candidates = pretrain_helpers.get_candidates_mask(config, inputs)
  has_candidate = ops.any(candidates, -1)
  slots = pretrain_helpers.num_to_predict(config, inputs.input_mask, config.mask_prob)
  return dict(
      mlm=ops.sum(ops.cast(slots * ops.cast(has_candidate, "int32"), "float32")),
      disc=ops.sum(ops.cast(inputs.input_mask, "float32")),
      cloze=ops.sum(ops.cast(candidates, "float32")))


# ---------------------------------------------------------------------------
# Generator side
# ---------------------------------------------------------------------------


def softmax_output(logits, targets, weights, denominator=None) -> Dict:
  """The official `get_softmax_output`.

  Args:
    logits: `[batch, n, vocab]` float32.
    targets: `[batch, n]` int ids.
    weights: `[batch, n]` float, 1 for real slots.
    denominator: the global sum of weights, or None for this batch's own.

  Returns:
    loss (scalar), per_example_loss `[batch, n]` (the NLL of each slot),
    preds `[batch, n]` int32 (argmax), log_probs `[batch, n, vocab]`.
  """
  log_probs = ops.log_softmax(logits)
  # -log_probs[target], fused (TensorFlow's sparse softmax cross-entropy kernel): its
  # gradient (softmax - one_hot) comes from the forward kernel instead of a scatter into
  # a [batch, n, vocab] zero tensor.
  nll = ops.sparse_categorical_crossentropy(ops.cast(targets, "int32"), logits,
                                            from_logits=True)
  weights = ops.cast(weights, "float32")
  return dict(
      loss=_normalised(ops.sum(weights * nll), ops.sum(weights), denominator),
      per_example_loss=nll,
      preds=backend_ops.argmax(logits, -1),
      log_probs=log_probs)


def get_fake_data(config, inputs: Inputs, mlm_logits, *, seed=None) -> FakedData:
  """Replaces every selected slot with a generator sample (run_pretraining.py:220-241).

  Args:
    config: needs `temperature`, `disallow_correct`, `electric_objective`.
    inputs: masked inputs (positions, ids and weights set).
    mlm_logits: `[batch, n, vocab]` generator logits at the masked positions.
    seed: `[2]` int seed of the Gumbel draw, or None.

  Labels: ELECTRA marks a position fake only if its (floor-averaged, when slots
  collide) sample differs from the original; ELECTRIC marks every sampled
  position fake.
  """
  inputs = pretrain_helpers.unmask(inputs)
  disallow = None
  if config.disallow_correct:
    disallow = ops.one_hot(inputs.masked_lm_ids, mlm_logits.shape[-1], dtype=mlm_logits.dtype)
  sampled = ops.stop_gradient(pretrain_helpers.sample_ids_from_softmax(
      mlm_logits / config.temperature, disallow, seed=seed))
  updated_ids, masked = pretrain_helpers.scatter_update(
      inputs.input_ids, sampled, inputs.masked_lm_positions)
  if config.electric_objective:
    labels = masked
  else:
    labels = masked * ops.cast(ops.not_equal(updated_ids, inputs.input_ids), masked.dtype)
  return FakedData(get_updated_inputs(inputs, input_ids=updated_ids), labels, sampled)


# ---------------------------------------------------------------------------
# Discriminator side
# ---------------------------------------------------------------------------


def electric_logit_offset(cloze_log_probs, fake_input_ids, mask_prob: float):
  """ELECTRIC's noise-contrastive term log q(x_t) + log(k / (1 - k)), `[batch, seq_len]`.

  cloze_log_probs: `[batch, seq_len, vocab]`; fake_input_ids: `[batch, seq_len]`.
  """
  ids = ops.expand_dims(ops.cast(fake_input_ids, "int32"), -1)
  log_q = ops.squeeze(ops.take_along_axis(cloze_log_probs, ids, axis=-1), -1)
  return ops.stop_gradient(log_q) + math.log(mask_prob / (1.0 - mask_prob))


def discriminator_output(logits, labels, input_mask, denominator=None) -> Dict:
  """The official `_get_discriminator_output` losses from logits `[batch, seq_len]`.

  denominator: the global number of real tokens, or None for this batch's own.

  Returns loss (token mean over the batch, [CLS]/[SEP] included),
  per_example_loss `[batch]`, probs, preds (int32) and labels `[batch, seq_len]`.
  """
  mask = ops.cast(input_mask, "float32")
  labels_f = ops.cast(labels, "float32")
  losses = ops.binary_crossentropy(labels_f, logits, from_logits=True) * mask
  return dict(
      loss=_normalised(ops.sum(losses), ops.sum(mask), denominator),
      per_example_loss=ops.sum(losses, -1) / (ops.sum(mask, -1) + 1e-6),
      probs=ops.sigmoid(logits),
      preds=ops.cast(ops.round((ops.sign(logits) + 1) / 2), "int32"),
      labels=ops.cast(labels, "int32"))


# ---------------------------------------------------------------------------
# Eval metrics (metric_fn, run_pretraining.py:131-161)
# ---------------------------------------------------------------------------

AUC_THRESHOLDS = 200
_KEPSILON = 1e-7


def auc_thresholds(num_thresholds: int = AUC_THRESHOLDS) -> np.ndarray:
  """The thresholds of TF1 `tf.metrics.auc`: just below 0, (i+1)/(n-1), just above 1."""
  inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
  return np.array([0.0 - _KEPSILON] + inner + [1.0 + _KEPSILON], np.float32)


def _weighted(values, weights):
  weights = ops.cast(weights, "float32")
  return ops.stack([ops.sum(ops.cast(values, "float32") * weights), ops.sum(weights)])


def metric_statistics(outputs: Dict) -> Dict:
  """Per-batch sufficient statistics of every official eval metric.

  Each metric becomes a `[2]` tensor (weighted sum, weight), except
  `disc_auc_counts`, `[4, thresholds]` (tp, fn, tn, fp). Statistics add up
  across batches and replicas; `MetricAccumulator` turns them into values.
  """
  stats = {}
  weights = outputs["masked_lm_weights"]
  ids = outputs["masked_lm_ids"]
  stats["masked_lm_accuracy"] = _weighted(ops.equal(outputs["mlm_preds"], ids), weights)
  stats["masked_lm_loss"] = _weighted(outputs["mlm_per_example_loss"], weights)
  if "sampled_tokids" in outputs:
    stats["sampled_masked_lm_accuracy"] = _weighted(
        ops.equal(outputs["sampled_tokids"], ids), weights)
  if "disc_probs" in outputs:
    mask = ops.cast(outputs["input_mask"], "int32")
    labels, preds = outputs["disc_labels"], outputs["disc_preds"]
    correct = ops.equal(labels, preds)
    per_example = outputs["disc_per_example_loss"]
    stats["disc_loss"] = _weighted(per_example, ops.ones_like(per_example))
    stats["disc_accuracy"] = _weighted(correct, mask)
    stats["disc_precision"] = _weighted(correct, preds * mask)
    stats["disc_recall"] = _weighted(correct, labels * mask)
    stats["disc_auc_counts"] = _auc_counts(
        ops.reshape(ops.cast(labels * mask, "float32"), (-1,)),
        ops.reshape(outputs["disc_probs"] * ops.cast(mask, "float32"), (-1,)))
  return stats


def _auc_counts(labels, probs):
  """TF1 `tf.metrics.auc` confusion counts `[4, thresholds]` (tp, fn, tn, fp).

  labels, probs: `[n]` float (labels 0/1). A prediction is positive at
  threshold j when `prob > thresholds[j]`. Instead of comparing every prob with
  every threshold, each prob is binned by how many thresholds lie below it
  (`searchsorted`, side left); the counts at threshold j are then the numbers of
  positives/negatives in bins above j (a reversed cumulative sum).
  """
  thresholds = ops.convert_to_tensor(auc_thresholds())
  num = thresholds.shape[0]
  below = ops.searchsorted(thresholds, probs, side="left")  # [n] in 0..num
  def above(weights):  # [num]: the weight of probs above each threshold
    histogram = ops.segment_sum(weights, below, num + 1)
    return ops.flip(ops.cumsum(ops.flip(histogram, 0), 0), 0)[1:]
  tp, fp = above(labels), above(1.0 - labels)
  positives, negatives = ops.sum(labels), ops.sum(1.0 - labels)
  return ops.stack([tp, positives - tp, negatives - fp, fp])


def auc_from_counts(counts: np.ndarray) -> float:
  """TF1 ROC AUC ('trapezoidal') from `[4, thresholds]` tp, fn, tn, fp counts."""
  tp, fn, tn, fp = (counts[i].astype(np.float64) for i in range(4))
  epsilon = 1e-6
  tp_rate = (tp + epsilon) / (tp + fn + epsilon)
  fp_rate = fp / (fp + tn + epsilon)
  return float(np.sum((fp_rate[:-1] - fp_rate[1:]) * (tp_rate[:-1] + tp_rate[1:]) / 2.0))


# ---------------------------------------------------------------------------
# Trivial baselines of the eval metrics (printed beside them, never replacing them)
# ---------------------------------------------------------------------------


def baseline_statistics(outputs: Dict, vocab_size: int) -> Dict:
  """Per-batch sufficient statistics of the trivial baselines (they add up like
  `metric_statistics`): `masked_lm_target_counts` `[vocab]`, the weighted count of
  each target id."""
  ids = ops.reshape(ops.cast(outputs["masked_lm_ids"], "int32"), (-1,))
  weights = ops.reshape(ops.cast(outputs["masked_lm_weights"], "float32"), (-1,))
  return {"masked_lm_target_counts": ops.segment_sum(weights, ids, vocab_size)}


def trivial_baselines(totals: Mapping[str, np.ndarray]) -> Dict[str, float]:
  """What a model that learnt nothing scores on the same batches.

  masked_lm_accuracy / masked_lm_loss: always the most frequent target token /
  the targets' unigram distribution (its entropy); disc_accuracy: always
  "original" (the share of real tokens not replaced); disc_loss: a constant
  prediction of the replaced share (its binary entropy); disc_auc: 0.5;
  disc_precision, disc_recall: 0 (nothing is called replaced).

  totals: summed `metric_statistics` and `baseline_statistics`.
  """
  baselines: Dict[str, float] = {}
  counts = np.asarray(totals.get("masked_lm_target_counts", []), np.float64)
  if counts.sum() > 0:
    p = counts[counts > 0] / counts.sum()
    baselines["masked_lm_accuracy"] = float(p.max())
    baselines["masked_lm_loss"] = float(-(p * np.log(p)).sum())
  if "disc_accuracy" in totals:
    tokens, replaced = float(totals["disc_accuracy"][1]), float(totals["disc_recall"][1])
    share = replaced / tokens if tokens else 0.0
    baselines["disc_accuracy"] = 1.0 - share
    baselines["disc_loss"] = float(-sum(q * math.log(q) for q in (share, 1.0 - share) if q > 0))
    baselines.update(disc_auc=0.5, disc_precision=0.0, disc_recall=0.0)
  return baselines


_BASELINE_NAMES = {"masked_lm_accuracy": "always the most frequent token",
                   "masked_lm_loss": "the tokens' unigram frequencies",
                   "disc_loss": "the replaced share, everywhere",
                   "disc_auc": "chance", "disc_accuracy": 'always "original"',
                   "disc_precision": 'always "original"', "disc_recall": 'always "original"'}


def describe_results(results: Mapping[str, float], baselines: Mapping[str, float]) -> str:
  """The eval metrics beside their trivial baselines, and one sentence on what was learnt."""
  lines = [f"{'metric':<28}{'value':>10}{'trivial baseline':>18}"]
  for name in sorted(results):
    if name in baselines:
      lines.append(f"{name:<28}{results[name]:>10.4f}{baselines[name]:>18.4f}  "
                   f"({_BASELINE_NAMES[name]})")
    elif isinstance(results[name], float):
      lines.append(f"{name:<28}{results[name]:>10.4f}")
  sentences = []
  if "masked_lm_accuracy" in baselines:
    sentences.append(
        f"The generator fills in {results['masked_lm_accuracy']:.1%} of the masked tokens "
        f"(always guessing the most frequent token: {baselines['masked_lm_accuracy']:.1%}).")
  if "disc_auc" in results and "disc_accuracy" in baselines:
    auc, recall = results["disc_auc"], results["disc_recall"]
    sentence = (f"The discriminator ranks replaced tokens above original ones with AUC "
                f"{auc:.3f} (chance: 0.5)")
    if recall < 0.1:
      sentence += (f", but at the 0.5 threshold it calls almost every token original (recall "
                   f"{recall:.1%}), as a young discriminator does: only "
                   f"{1 - baselines['disc_accuracy']:.1%} of the tokens are replaced, so "
                   f"answering \"original\" everywhere scores {baselines['disc_accuracy']:.1%}.")
    else:
      sentence += f" and finds {recall:.1%} of them at the 0.5 threshold."
    sentences.append(sentence)
  return "\n".join(lines + ([""] + sentences if sentences else []))


class MetricAccumulator:
  """Streams `metric_statistics` over eval batches into the official metric values."""

  def __init__(self):
    self._totals: Dict[str, np.ndarray] = {}

  def update(self, stats: Dict) -> None:
    for name, value in stats.items():
      value = np.asarray(value, np.float64)
      self._totals[name] = self._totals.get(name, 0.0) + value

  @property
  def totals(self) -> Dict[str, np.ndarray]:
    """The summed statistics so far."""
    return dict(self._totals)

  def result(self) -> Dict[str, float]:
    results = {}
    for name, total in self._totals.items():
      if name == "masked_lm_target_counts":
        continue  # a baseline's statistic (trivial_baselines)
      if name == "disc_auc_counts":
        results["disc_auc"] = auc_from_counts(total)
      else:
        results[name] = float(total[0] / total[1]) if total[1] else 0.0
    return results
