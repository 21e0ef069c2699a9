"""What a task can read from a pre-trained encoder before fine-tuning: frozen-feature probes.

  python -m bench.studies.frozen_probe --model NAME=MODEL_DIR [--model ...] \\
      [--task-dir ../shared/data/glue/SST-2] [--train-examples 2000] [--max-seq-length 64]

For every model directory (and a randomly initialised encoder of the first one's
shape, `random`), encodes the task's sentences with the discriminator (for
`electra_objective: false`, the MLM encoder) and reports, on the dev set:
  - cls_spread: the mean over hidden units of the standard deviation across
    sentences of the last layer's [CLS] state (a collapsed [CLS] is near 0);
  - cls_cosine: the mean cosine similarity between two sentences' [CLS] states;
  - probe_cls / probe_mean: dev accuracy of a logistic regression trained on the
    first --train-examples training sentences' frozen [CLS] / mean-pooled states;
    the same probe on word counts (`bag of words`) is the anchor.
Single-sentence tasks with a header line (SST-2). Used by docs/pretraining_study.md.
"""

from __future__ import annotations

import csv
import os
import sys
from typing import Dict, List, Tuple

from bench.common import SHARED_DATA, script_parser, text_inputs


def read_task(path: str, limit: int) -> Tuple[List[str], List[int]]:
  with open(path, encoding="utf-8") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:limit + 1]
  return [r[0] for r in rows], [int(r[1]) for r in rows]


def encode(encoder, tokenizer, texts: List[str], max_seq_length: int):
  """[n, hidden] last-layer [CLS] states and mean-pooled token states."""
  import numpy as np
  import tensorflow as tf
  cls_states, mean_states = [], []
  for start in range(0, len(texts), 64):
    ids, mask = text_inputs(tokenizer, texts[start:start + 64], max_seq_length)
    hidden = encoder(tf.constant(ids), tf.constant(mask), tf.zeros_like(mask), training=False)
    weights = tf.cast(mask, hidden.dtype)[:, :, None]
    cls_states.append(hidden[:, 0].numpy())
    mean_states.append((tf.reduce_sum(hidden * weights, 1) / tf.reduce_sum(weights, 1)).numpy())
  return np.concatenate(cls_states), np.concatenate(mean_states)


def probe_accuracy(train_x, train_y, dev_x, dev_y, steps: int = 500, l2: float = 1e-3) -> float:
  """Logistic regression on standardised features by full-batch gradient descent."""
  import numpy as np
  mean, std = train_x.mean(0), train_x.std(0) + 1e-6
  train_x, dev_x = (train_x - mean) / std, (dev_x - mean) / std
  y = np.asarray(train_y, np.float64)
  w, b = np.zeros(train_x.shape[1]), 0.0
  for _ in range(steps):
    p = 1.0 / (1.0 + np.exp(-(train_x @ w + b)))
    w -= 0.5 * (train_x.T @ (p - y) / len(y) + l2 * w)
    b -= 0.5 * float(np.mean(p - y))
  return float(np.mean(((dev_x @ w + b) > 0) == np.asarray(dev_y, bool)))


def bag_of_words_accuracy(data) -> float:
  """The probe on whitespace-word counts of the training sentences' words: what a linear
  model reads from the words alone."""
  import numpy as np
  (train_texts, train_y), (dev_texts, dev_y) = data
  words: Dict[str, int] = {}
  for text in train_texts:
    for word in text.split():
      words.setdefault(word, len(words))

  def counts(texts):
    x = np.zeros((len(texts), len(words)))
    for i, text in enumerate(texts):
      for word in text.split():
        if word in words:
          x[i, words[word]] += 1
    return x
  return probe_accuracy(counts(train_texts), train_y, counts(dev_texts), dev_y)


def measure(encoder, tokenizer, data, max_seq_length: int) -> Dict[str, float]:
  import numpy as np
  (train_texts, train_y), (dev_texts, dev_y) = data
  train_cls, train_mean = encode(encoder, tokenizer, train_texts, max_seq_length)
  dev_cls, dev_mean = encode(encoder, tokenizer, dev_texts, max_seq_length)
  unit = dev_cls / np.linalg.norm(dev_cls, axis=1, keepdims=True)
  n = len(unit)
  cosine = (float((unit @ unit.T).sum()) - n) / (n * (n - 1))
  return {"cls_spread": float(dev_cls.std(0).mean()), "cls_cosine": cosine,
          "probe_cls": probe_accuracy(train_cls, train_y, dev_cls, dev_y),
          "probe_mean": probe_accuracy(train_mean, train_y, dev_mean, dev_y)}


def main(argv=None) -> int:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--model", action="append", required=True, metavar="NAME=MODEL_DIR")
  parser.add_argument("--task-dir", default=os.path.join(SHARED_DATA, "glue", "SST-2"))
  parser.add_argument("--train-examples", type=int, default=2000)
  parser.add_argument("--max-seq-length", type=int, default=64)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)
  import keras
  from electra_tf2.models import model_directory
  from electra_tf2.models.pretrainer import ElectraPretrainer
  from electra_tf2.text.tokenizer import FullTokenizer
  data = (read_task(os.path.join(args.task_dir, "train.tsv"), args.train_examples),
          read_task(os.path.join(args.task_dir, "dev.tsv"), 10 ** 9))
  models = dict(m.split("=", 1) for m in args.model)
  print(f"{'model':<14} {'cls_spread':>10} {'cls_cosine':>10} {'probe_cls':>9} "
        f"{'probe_mean':>10}   ({os.path.basename(args.task_dir)} dev, "
        f"{len(data[1][0])} sentences; probes trained on {len(data[0][0])})")
  print(f"{'bag of words':<14} {'':>10} {'':>10} {'':>9} {bag_of_words_accuracy(data):>10.3f}")
  first_config = None
  for name, model_dir in list(models.items()) + [("random", None)]:
    if model_dir is None:  # the first model's shape, fresh weights
      keras.utils.set_random_seed(args.seed)
      config = first_config
      model = ElectraPretrainer.from_pretraining_config(config)
      model.build()
    else:
      config = model_directory.load_pretraining_config(model_dir)
      first_config = first_config or config
      model = model_directory.restore_pretrainer(model_dir, config=config)
    tokenizer = FullTokenizer(config.vocab_file, config.do_lower_case)
    row = measure(model.discriminator, tokenizer, data, args.max_seq_length)
    print(f"{name:<14} {row['cls_spread']:>10.4f} {row['cls_cosine']:>10.3f} "
          f"{row['probe_cls']:>9.3f} {row['probe_mean']:>10.3f}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
