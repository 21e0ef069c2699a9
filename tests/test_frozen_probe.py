"""bench/studies/frozen_probe.py: the logistic-regression probe and its bag-of-words anchor."""

import numpy as np

from bench.studies import frozen_probe


def test_probe_separates_separable_classes_and_not_random_labels():
  rng = np.random.default_rng(0)
  x = rng.normal(size=(600, 20))
  y = (x[:, 3] - 0.5 * x[:, 7] > 0).astype(int)  # linearly separable by construction
  assert frozen_probe.probe_accuracy(x[:400], y[:400], x[400:], y[400:]) >= 0.95
  noise = rng.integers(0, 2, size=600)  # labels independent of x: chance, 0.5 +- 0.1
  assert abs(frozen_probe.probe_accuracy(x[:400], noise[:400], x[400:], noise[400:]) - 0.5) < 0.1


def test_bag_of_words_reads_a_planted_sentiment_word():
  rng = np.random.default_rng(1)
  filler = ["the", "film", "was", "a", "plot", "of", "it"]

  def sentences(n):
    labels = rng.integers(0, 2, size=n).tolist()
    texts = [" ".join(rng.choice(filler, size=6).tolist() + ["great" if y else "awful"])
             for y in labels]
    return texts, labels
  assert frozen_probe.bag_of_words_accuracy((sentences(200), sentences(100))) == 1.0
