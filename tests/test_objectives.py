"""Fake-data labels, losses and eval metrics against the spec's definitions.

Oracles: hand-built cases for the labels, numpy re-implementations of the
official loss formulas (run_pretraining.py:37-162) and of TF1 `tf.metrics.auc`, and
scikit-learn's exact ROC AUC for a sanity bound. Runs on every Keras backend
(tests/test_backends.py).
"""

import types

import numpy as np
import pytest
from keras import ops
from sklearn.metrics import roc_auc_score

from backend_marks import numpy, tensor
from electra_tf2.pretraining import objectives
from electra_tf2.utils.inputs import Inputs
from electra_tf2.text.vocab import BERT_UNCASED_SPECIAL_IDS


def cfg(**kw):
  base = dict(temperature=1.0, disallow_correct=False, electric_objective=False,
              max_predictions_per_seq=3, special_ids=BERT_UNCASED_SPECIAL_IDS)
  base.update(kw)
  return types.SimpleNamespace(**base)


def masked_inputs():
  """One row [CLS] 7 8 9 [SEP]; slots at positions 1, 3 and a padded slot."""
  return Inputs(
      input_ids=tensor([[101, 103, 8, 103, 102]], "int32"),
      input_mask=ops.ones([1, 5], "int32"), segment_ids=ops.zeros([1, 5], "int32"),
      masked_lm_positions=tensor([[1, 3, 0]], "int32"),
      masked_lm_ids=tensor([[7, 9, 0]], "int32"),
      masked_lm_weights=tensor([[1.0, 1.0, 0.0]], "float32"))


def peaked_logits(ids, vocab=12, scale=100.0):
  """Logits that make the Gumbel draw return `ids` (Gumbel noise stays far below 100)."""
  return tensor(np.eye(vocab, dtype=np.float32)[ids][None] * scale)


def test_fake_data_labels_electra():
  # Slot 1 samples the original (7) -> real; slot 3 samples 5 != 9 -> fake.
  fake = objectives.get_fake_data(cfg(), masked_inputs(), peaked_logits([7, 5, 0]),
                                  seed=[1, 2])
  np.testing.assert_array_equal(numpy(fake.inputs.input_ids), [[101, 7, 8, 5, 102]])
  np.testing.assert_array_equal(numpy(fake.is_fake_tokens), [[0, 0, 0, 1, 0]])
  np.testing.assert_array_equal(numpy(fake.sampled_tokids), [[7, 5, 0]])


def test_fake_data_labels_electric_marks_every_sampled_slot():
  fake = objectives.get_fake_data(cfg(electric_objective=True), masked_inputs(),
                                  peaked_logits([7, 5, 0]), seed=[1, 2])
  np.testing.assert_array_equal(numpy(fake.is_fake_tokens), [[0, 1, 0, 1, 0]])


def test_fake_data_duplicate_slots_floor_average():
  """Two slots on position 2 sampling 4 and 7 insert floor(11/2) = 5 (pretrain/pretrain_helpers.py:62-115)."""
  inputs = masked_inputs()._replace(masked_lm_positions=tensor([[2, 2, 0]], "int32"),
                                    masked_lm_ids=tensor([[8, 8, 0]], "int32"))
  fake = objectives.get_fake_data(cfg(), inputs, peaked_logits([4, 7, 0]), seed=[3, 4])
  assert numpy(fake.inputs.input_ids)[0, 2] == 5
  assert numpy(fake.is_fake_tokens)[0, 2] == 1


def test_disallow_correct_never_samples_the_original():
  logits = peaked_logits([7, 9, 0])  # the originals are the most likely tokens (by 100)
  for s in range(5):
    fake = objectives.get_fake_data(cfg(disallow_correct=True), masked_inputs(), logits,
                                    seed=[s, 0])
    sampled = numpy(fake.sampled_tokids)[0]
    assert sampled[0] != 7 and sampled[1] != 9


def np_log_softmax(x):
  x = x - x.max(-1, keepdims=True)
  return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_softmax_output_matches_numpy():
  rng = np.random.default_rng(0)
  logits = rng.normal(size=(2, 4, 9)).astype(np.float32)
  targets = rng.integers(0, 9, (2, 4))
  weights = np.array([[1, 1, 0, 0], [1, 1, 1, 0]], np.float32)
  out = objectives.softmax_output(tensor(logits), tensor(targets), tensor(weights))
  log_probs = np_log_softmax(logits.astype(np.float64))
  nll = -np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
  np.testing.assert_allclose(numpy(out["per_example_loss"]), nll, rtol=1e-5)
  np.testing.assert_allclose(numpy(out["loss"]), (nll * weights).sum() / (weights.sum() + 1e-6),
                             rtol=1e-5)
  np.testing.assert_array_equal(numpy(out["preds"]), logits.argmax(-1))
  np.testing.assert_allclose(numpy(out["log_probs"]), log_probs, rtol=1e-5, atol=1e-6)


def test_softmax_output_preds_take_the_first_of_equal_maxima():
  """-0.0 equals 0.0, as in numpy and tf.argmax: the first maximum wins. (Keras' argmax on
  JAX's CPU ranks -0.0 below 0.0 and took the later 0.0.)"""
  logits = np.array([[[-0.0, 0.0, -1.0], [0.0, -0.0, -2.0], [-3.0, 2.0, 2.0]]], np.float32)
  out = objectives.softmax_output(tensor(logits), tensor(np.zeros((1, 3), np.int32)),
                                  tensor(np.ones((1, 3), np.float32)))
  np.testing.assert_array_equal(numpy(out["preds"]), logits.argmax(-1))
  np.testing.assert_array_equal(logits.argmax(-1), [[0, 0, 1]])


def test_discriminator_output_matches_numpy():
  rng = np.random.default_rng(1)
  logits = rng.normal(size=(3, 6)).astype(np.float32)
  labels = rng.integers(0, 2, (3, 6))
  mask = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4])
  out = objectives.discriminator_output(tensor(logits), tensor(labels), tensor(mask))
  x = logits.astype(np.float64)
  bce = (np.maximum(x, 0) - x * labels + np.log1p(np.exp(-np.abs(x)))) * mask
  np.testing.assert_allclose(numpy(out["loss"]), bce.sum() / (mask.sum() + 1e-6), rtol=1e-5)
  np.testing.assert_allclose(numpy(out["per_example_loss"]),
                             bce.sum(-1) / (mask.sum(-1) + 1e-6), rtol=1e-5)
  np.testing.assert_array_equal(numpy(out["preds"]), (logits > 0).astype(int))
  np.testing.assert_allclose(numpy(out["probs"]), 1 / (1 + np.exp(-x)), rtol=1e-5)


def test_electric_logit_offset():
  log_probs = np.log(np.array([[[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]], np.float32))
  offset = objectives.electric_logit_offset(tensor(log_probs), tensor([[2, 0]], "int32"), 0.15)
  np.testing.assert_allclose(numpy(offset), np.log([[0.5, 0.6]]) + np.log(0.15 / 0.85),
                             rtol=1e-6)


def tf1_auc(labels, probs, n=200):
  """TF1 tf.metrics.auc (ROC, trapezoidal) written from its definition."""
  thresholds = [-1e-7] + [(i + 1) / (n - 1) for i in range(n - 2)] + [1 + 1e-7]
  tpr, fpr = [], []
  for t in thresholds:
    pos = probs > t
    tp = np.sum(pos & labels); fn = np.sum(~pos & labels)
    fp = np.sum(pos & ~labels); tn = np.sum(~pos & ~labels)
    tpr.append((tp + 1e-6) / (tp + fn + 1e-6))
    fpr.append(fp / (fp + tn + 1e-6))
  tpr, fpr = np.array(tpr), np.array(fpr)
  return np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2)


def test_metrics_match_definitions_over_batches():
  rng = np.random.default_rng(2)
  acc = objectives.MetricAccumulator()
  all_rows = []
  for _ in range(3):
    B, L, N = 4, 10, 3
    mask = (np.arange(L)[None] < rng.integers(3, L + 1, (B, 1))).astype(np.int32)
    labels = (rng.random((B, L)) < 0.3).astype(np.int32) * mask
    probs = np.clip(labels * 0.3 + rng.random((B, L)) * 0.7, 0, 1).astype(np.float32)
    outputs = dict(
        input_mask=mask, masked_lm_ids=rng.integers(0, 5, (B, N)),
        masked_lm_weights=(rng.random((B, N)) < 0.7).astype(np.float32),
        mlm_preds=rng.integers(0, 5, (B, N)), sampled_tokids=rng.integers(0, 5, (B, N)),
        mlm_per_example_loss=rng.random((B, N)).astype(np.float32),
        disc_labels=labels, disc_probs=probs, disc_preds=(probs > 0.5).astype(np.int32),
        disc_per_example_loss=rng.random(B).astype(np.float32))
    acc.update(objectives.metric_statistics({k: tensor(v) for k, v in outputs.items()}))
    all_rows.append(outputs)
  cat = {k: np.concatenate([r[k] for r in all_rows]) for k in all_rows[0]}
  w, m = cat["masked_lm_weights"], cat["input_mask"]
  lab, pred = cat["disc_labels"], cat["disc_preds"]
  want = {
      "masked_lm_accuracy": np.sum((cat["mlm_preds"] == cat["masked_lm_ids"]) * w) / w.sum(),
      "masked_lm_loss": np.sum(cat["mlm_per_example_loss"] * w) / w.sum(),
      "sampled_masked_lm_accuracy": np.sum((cat["sampled_tokids"] == cat["masked_lm_ids"]) * w)
                                    / w.sum(),
      "disc_loss": cat["disc_per_example_loss"].mean(),
      "disc_accuracy": np.sum((lab == pred) * m) / m.sum(),
      "disc_precision": np.sum(lab * pred * m) / np.sum(pred * m),
      "disc_recall": np.sum(lab * pred * m) / np.sum(lab * m),
      "disc_auc": tf1_auc((lab * m).astype(bool).ravel(), (cat["disc_probs"] * m).ravel()),
  }
  got = acc.result()
  assert set(got) == set(want)
  for name in want:
    assert got[name] == pytest.approx(want[name], rel=1e-5), name
  # 200 thresholds approximate the exact ROC AUC closely (padding included as negatives).
  exact = roc_auc_score((lab * m).ravel(), (cat["disc_probs"] * m).ravel())
  assert abs(got["disc_auc"] - exact) < 0.01


def test_auc_counts_equal_comparing_every_prob_with_every_threshold():
  """Binned counts == the TF1 definition `prob > threshold`, ties included."""
  thresholds = objectives.auc_thresholds()
  rng = np.random.default_rng(3)
  probs = np.concatenate([rng.random(500), thresholds[:50], [0.0, 1.0, 0.5]]).astype(np.float32)
  labels = (rng.random(probs.size) < 0.3).astype(np.float32)
  got = numpy(objectives._auc_counts(tensor(labels), tensor(probs)))
  above = probs[:, None] > thresholds[None]
  pos = labels[:, None] > 0
  want = np.stack([(pos & above).sum(0), (pos & ~above).sum(0),
                   (~pos & ~above).sum(0), (~pos & above).sum(0)])
  np.testing.assert_array_equal(got, want)


def test_trivial_baselines_by_hand():
  """Targets 5, 5, 7 | 5 (weights 0 elsewhere); 10 real tokens, 2 of them replaced."""
  outputs = {k: tensor(v) for k, v in dict(
      input_mask=np.array([[1] * 6, [1] * 4 + [0, 0]], np.int32),
      masked_lm_ids=np.array([[5, 5, 7], [5, 0, 0]], np.int32),
      masked_lm_weights=np.array([[1, 1, 1], [1, 0, 0]], np.float32),
      mlm_preds=np.zeros((2, 3), np.int32), sampled_tokids=np.zeros((2, 3), np.int32),
      mlm_per_example_loss=np.ones((2, 3), np.float32),
      disc_labels=np.array([[0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0]], np.int32),
      disc_probs=np.full((2, 6), 0.2, np.float32), disc_preds=np.zeros((2, 6), np.int32),
      disc_per_example_loss=np.ones(2, np.float32)).items()}
  acc = objectives.MetricAccumulator()
  acc.update({**objectives.metric_statistics(outputs),
              **objectives.baseline_statistics(outputs, vocab_size=10)})
  assert "masked_lm_target_counts" not in acc.result()  # not an official metric
  got = objectives.trivial_baselines(acc.totals)
  assert got["masked_lm_accuracy"] == pytest.approx(0.75)  # always token 5
  assert got["masked_lm_loss"] == pytest.approx(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
  assert got["disc_accuracy"] == pytest.approx(0.8)  # always "original": 8 of 10
  assert got["disc_loss"] == pytest.approx(-(0.2 * np.log(0.2) + 0.8 * np.log(0.8)))
  assert (got["disc_auc"], got["disc_precision"], got["disc_recall"]) == (0.5, 0.0, 0.0)
  text = objectives.describe_results(dict(acc.result(), disc_auc=0.73, disc_recall=0.02), got)
  assert "masked_lm_accuracy" in text and "(always the most frequent token)" in text
  assert "The generator fills in 0.0% of the masked tokens (always guessing the most " \
         "frequent token: 75.0%)." in text
  assert ('calls almost every token original (recall 2.0%), as a young discriminator does: '
          'only 20.0% of the tokens are replaced, so answering "original" everywhere scores '
          '80.0%.') in text
