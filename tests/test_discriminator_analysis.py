"""bench/studies/discriminator_analysis.py: its metrics against hand values and sklearn, its model
passes against direct calls, and a whole run on a tiny model and tiny data written here."""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import matthews_corrcoef, roc_auc_score

from electra_tf2.conversion import convert
from electra_tf2.config.pretraining import resolve_pretraining_config
from fixtures import noisy_pretrainer

from bench.studies import discriminator_analysis as analysis
from bench.studies.discriminator import metrics
from bench.studies.discriminator.passes import Passes, corrupt, pseudo_log_likelihood, sample

WORDS = ("the a cat dog sat ran on in was is big small red old house tree park city river "
         "man woman boy girl saw had made went").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", ".", ",", "##s"] + WORDS
TINY = {"model_hparam_overrides": {"hidden_size": 32, "num_hidden_layers": 2},
        "embedding_size": 16, "generator_hidden_size": 0.5, "max_seq_length": 16,
        "vocab_size": len(VOCAB)}


def test_reliability_and_ece_by_hand():
  stats = metrics.reliability([0.05, 0.15, 0.15, 0.95, 1.0], [0, 1, 0, 1, 1], bins=10)
  assert stats["count"] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
  np.testing.assert_allclose(stats["mean_probability"][:2], [0.05, 0.15])
  np.testing.assert_allclose(stats["replaced_fraction"][:2] + stats["replaced_fraction"][9:],
                             [0.0, 0.5, 1.0])
  # 1/5 * 0.05 + 2/5 * 0.35 + 2/5 * |1 - 0.975|
  np.testing.assert_allclose(stats["ece"], 0.01 + 0.14 + 0.01)


def test_auc_and_best_mcc_against_sklearn():
  rng = np.random.default_rng(0)
  for _ in range(20):
    n = int(rng.integers(5, 60))
    labels = rng.uniform(size=n) < 0.4
    labels[:2] = [True, False]
    scores = np.round(rng.normal(size=n) + labels, 1)  # rounded: many ties
    np.testing.assert_allclose(metrics.auc(scores, labels), roc_auc_score(labels, scores))
    best = max((matthews_corrcoef(labels, scores >= t), -t) for t in np.unique(scores))
    mcc, threshold = metrics.best_threshold_mcc(scores, labels)
    np.testing.assert_allclose(mcc, best[0], atol=1e-12)
    np.testing.assert_allclose(matthews_corrcoef(labels, scores >= threshold), best[0],
                               atol=1e-12)
  assert np.isnan(metrics.auc([1.0, 2.0], [True, True]))


def test_top1_needs_the_original_strictly_best():
  groups = [[1.0, 2.0, 3.0], [2.0, 2.0, 3.0], [3.0, 1.0, 2.0]]
  assert metrics.top1_accuracy(groups, higher_is_better=False) == pytest.approx(1 / 3)
  assert metrics.top1_accuracy(groups, higher_is_better=True) == pytest.approx(1 / 3)


def test_sampling_follows_the_restricted_softmax():
  log_probs = np.log(np.array([[0.5, 0.2, 0.2, 0.1]] * 20000))
  allowed = np.array([True, True, False, True])
  draws = sample(log_probs, allowed, np.random.default_rng(1))
  frequency = np.bincount(draws, minlength=4) / len(draws)
  np.testing.assert_allclose(frequency, [0.625, 0.25, 0.0, 0.125], atol=0.012)  # > 4 sigma


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  model = noisy_pretrainer(TINY, seed=7, scale=0.3)
  model_dir = str(tmp_path_factory.mktemp("analysis") / "model")
  convert.write_model_dir(model, resolve_pretraining_config("electra_small", None, TINY),
                          model_dir)
  with open(os.path.join(model_dir, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(VOCAB) + "\n")
  return model, model_dir


def test_pseudo_log_likelihood_masks_one_token_at_a_time(tiny):
  model, _ = tiny
  passes = Passes(model, batch_size=3)
  rows = [[2, 9, 10, 11, 3], [2, 12, 6, 3], [2, 3]]
  got = pseudo_log_likelihood(passes, rows, mask_id=4)
  for row, value in zip(rows, got):
    expected = 0.0
    for p in range(1, len(row) - 1):
      masked = tf.constant([row[:p] + [4] + row[p + 1:]], tf.int32)
      hidden = model.generator(masked, tf.ones_like(masked), tf.zeros_like(masked))
      logits = model.mlm_head(hidden, model.generator.embedding_table)[0, p].numpy()
      expected += logits[row[p]] - np.log(np.sum(np.exp(logits - logits.max()))) - logits.max()
    np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-4)


def test_corruption_touches_only_the_chosen_positions(tiny):
  model, _ = tiny
  passes = Passes(model)
  rows = [[2] + list(range(9, 21)) + [3]] * 30
  chosen = [[1, 5, 9]] * 30
  allowed = np.array([i >= 9 for i in range(len(VOCAB))])
  for source in ("generator", "uniform"):
    out = corrupt(passes, rows, chosen, source, allowed, 4, np.random.default_rng(2))
    for new, row in zip(out, rows):
      assert [i for i in range(len(row)) if new[i] != row[i]] == [
          p for p in (1, 5, 9) if new[p] != row[p]]
      assert all(allowed[new[p]] for p in (1, 5, 9))
    changed = np.mean([new[p] != row[p] for new, row in zip(out, rows) for p in (1, 5, 9)])
    assert changed > 0.5, source  # 27 allowed ids: a sample rarely equals the original


def fake_shared_data(root):
  """corpus/wikitext-2-raw/wiki.valid.raw, corpus/a.txt, conll2000/test.txt, glue/CoLA/dev.tsv."""
  rng = random.Random(0)

  def sentence(n):
    return " ".join(rng.choices(WORDS, k=n)) + " ."

  os.makedirs(os.path.join(root, "corpus", "wikitext-2-raw"))
  with open(os.path.join(root, "corpus", "wikitext-2-raw", "wiki.valid.raw"), "w") as f:
    f.write(" = Heading = \n\n")
    for _ in range(12):
      f.write(" " + " ".join(sentence(rng.randint(8, 14)) for _ in range(3)) + " \n\n")
  with open(os.path.join(root, "corpus", "a.txt"), "w") as f:
    f.write("\n".join(sentence(10) for _ in range(50)) + "\n")
  os.makedirs(os.path.join(root, "conll2000"))
  tags = {w: ("NN" if i % 3 == 0 else "VB" if i % 3 == 1 else "DT") for i, w in enumerate(WORDS)}
  with open(os.path.join(root, "conll2000", "test.txt"), "w") as f:
    for _ in range(40):
      words = rng.choices(WORDS, k=rng.randint(4, 20))
      f.write("".join(f"{w} {tags[w]} O\n" for w in words) + ". . O\n\n")
  os.makedirs(os.path.join(root, "glue", "CoLA"))
  with open(os.path.join(root, "glue", "CoLA", "dev.tsv"), "w") as f:
    f.write("\n".join(f"src\t{i % 2}\t\t{sentence(rng.randint(3, 8))}" for i in range(30)))
  return root


def test_whole_analysis_on_a_tiny_model(tiny, tmp_path):
  _, model_dir = tiny
  shared = fake_shared_data(str(tmp_path / "shared"))
  out = str(tmp_path / "docs")
  assert analysis.main(["--model-dir", model_dir, "--shared-data", shared, "--output-dir", out,
                        "--calibration-rows", "10", "--rerank-sentences", "4", "--k", "3",
                        "--min-pos-replaced", "1"]) == 0
  assert sorted(os.listdir(out)) == [
      "discriminator_analysis.json", "discriminator_analysis.md", "discriminator_cola.png",
      "discriminator_pos.png", "discriminator_reliability.png"]
  with open(os.path.join(out, "discriminator_analysis.json")) as f:
    results = json.load(f)
  assert set(results) == {"meta", "calibration", "pos", "cola", "rerank"}
  calibration = results["calibration"]["generator"]
  assert sum(calibration["count"]) == calibration["tokens"] > 0
  assert set(results["pos"]["generator"]) == {"NN", "VB", "DT", "."}
  assert results["cola"]["sentences"] == 30
  rerank = results["rerank"]
  assert rerank["groups"] == 4
  for source in ("generator", "uniform"):
    assert {"pseudo_log_likelihood", "unigram", "discriminator_mean_log_odds"} <= set(
        rerank[source]["methods"])
    original, *substitutes = [e["text"] for e in rerank[source]["example"]]
    assert len(substitutes) == 3 and len(set(substitutes)) == 3
    for text in substitutes:  # one word differs, and it is a whole word of the vocabulary
      diff = [(a, b) for a, b in zip(original.split(), text.split()) if a != b]
      assert len(diff) == 1 and diff[0][1] in WORDS
      assert len(text.split()) == len(original.split())
  with open(os.path.join(out, "discriminator_analysis.md")) as f:
    text = f.read()
  assert "| pseudo_log_likelihood |" in text and "ECE" in text
  assert analysis.main(["--model-dir", model_dir, "--stages", "calibration,nope"]) == 2
