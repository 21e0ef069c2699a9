"""Batch-1 latency of a dynamic-int8 `.tflite` with the word embeddings at one scale (the
converter's) and at a scale per row (electra_tf2/litert/embedding_rows.py), alternating.

An electra_small-shaped TextClassifier (random weights, the BERT vocabulary of ../shared)
exported twice; `LiteRTModel.predict` on one CoLA dev sentence at a time (tokenization
included), the median of `--texts` calls per round, `--rounds` rounds alternating the two
files (run-to-run spread shows in the rounds):

  python -m bench.serving.embedding_rows_speed [--rounds 3] [--texts 100]
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from bench.common import SHARED_DATA, script_parser


def main() -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--texts", type=int, default=100)
  args = parser.parse_args()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import electra_tf2  # pylint: disable=g-import-not-at-top
  from electra_tf2.litert import embedding_rows  # pylint: disable=g-import-not-at-top
  with open(os.path.join(SHARED_DATA, "vocab", "vocab.txt"), encoding="utf-8") as f:
    vocab = [line.rstrip("\n") for line in f]
  with open(os.path.join(SHARED_DATA, "glue", "CoLA", "dev.tsv"), encoding="utf-8") as f:
    texts = [line.split("\t")[3] for line in f.read().splitlines()[:args.texts]]
  tf.keras.utils.set_random_seed(0)
  bert = electra_tf2.BertConfig(len(vocab), hidden_size=256, num_hidden_layers=12,
                                num_attention_heads=4, intermediate_size=1024)
  model = electra_tf2.TextClassifier(bert, 128, vocab, label_list=["0", "1"],
                                     max_seq_length=128)
  rescale, work, models = embedding_rows.rescale_rows, tempfile.mkdtemp(), {}
  try:
    for name, rows in (("one scale", lambda m, v: m), ("a scale per row", rescale)):
      embedding_rows.rescale_rows = rows
      models[name] = electra_tf2.LiteRTModel(model.export_litert(
          os.path.join(work, f"{len(models)}.tflite"), "dynamic-int8"))
  finally:
    embedding_rows.rescale_rows = rescale
  for round_ in range(args.rounds):
    for name, lite in models.items():
      lite.predict(texts[:5])  # warm-up
      seconds = []
      for text in texts:
        start = time.perf_counter()
        lite.predict([text])
        seconds.append(time.perf_counter() - start)
      print(f"round {round_ + 1}: {name:16s} batch-1 p50 {1000 * np.median(seconds):.3f} ms",
            flush=True)


if __name__ == "__main__":
  main()
