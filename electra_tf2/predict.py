"""`electra predict`: a text file through an exported model, one JSON object per line.

  electra predict --model model.tflite --input texts.txt --output predictions.jsonl
  electra predict --model export/sst2 --input texts.txt --output predictions.jsonl

`--model` is a `.tflite` file (`electra export --format litert`, `export_litert`)
or a SavedModel directory (`electra export`, `export_saved_model`). Each line
of `--input` is a text; for a model that takes pairs (`text` and `text_b`), two
tab-separated texts. Each output line holds the model's outputs for its input
line (per-token outputs padded with zeros to the longest batch). A progress bar
shows the texts done; the output file is written once, at the end, atomically.
"""

from __future__ import annotations

import argparse
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from electra_tf2 import predictions
from electra_tf2.errors import ElectraError, command


class PredictError(ElectraError, ValueError):
  """A model or input that `electra predict` cannot use."""


def load_runner(path: str, signature: Optional[str] = None, num_threads: Optional[int] = None
                ) -> Tuple[Callable[..., Dict[str, np.ndarray]], List[str]]:
  """(batch function: texts per input -> numpy outputs, input names) of a model path."""
  if os.path.isfile(path):
    from electra_tf2.litert.model import LiteRTModel  # pylint: disable=g-import-not-at-top
    if signature not in (None, "serving_default"):
      raise PredictError(f"--signature {signature}: a .tflite has serving_default only")
    model = LiteRTModel(path, num_threads=num_threads)
    return model.run_batch, model.input_names
  if not os.path.isfile(os.path.join(path, "saved_model.pb")):
    raise PredictError(f"--model {path} is neither a .tflite file nor a SavedModel directory")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  function = tf.saved_model.load(path).signatures.get(signature or "serving_default")
  if function is None:
    raise PredictError(f"{path} has no signature {signature}")
  names = sorted(function.structured_input_signature[1])
  if any(spec.dtype != tf.string for spec in function.structured_input_signature[1].values()):
    raise PredictError(f"{path}'s {signature or 'serving_default'} signature does not take "
                       "text: give --signature text (or text_pair)")

  def run(*columns: Sequence[str]) -> Dict[str, np.ndarray]:
    inputs = {name: tf.constant(texts, tf.string) for name, texts in zip(names, columns)}
    return {k: v.numpy() for k, v in function(**inputs).items()}
  return run, names


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model", required=True, help="a .tflite file or a SavedModel directory")
  parser.add_argument("--input", required=True,
                      help="UTF-8 text file: one text per line (pairs tab-separated)")
  parser.add_argument("--output", required=True, help="JSON lines file to write")
  parser.add_argument("--batch-size", type=int, default=32, help="texts per model call")
  parser.add_argument("--signature", default=None,
                      help="SavedModel signature (default serving_default; text_pair for "
                           "the pairs of an `electra export` SavedModel)")
  parser.add_argument("--num-threads", type=int, default=None,
                      help=".tflite: interpreter threads (default: LiteRT's)")
  args = parser.parse_args(argv)
  if args.batch_size < 1:
    raise PredictError(f"--batch-size must be >= 1, got {args.batch_size}")
  run, names = load_runner(args.model, args.signature, args.num_threads)
  rows = predictions.read_rows(args.input, len(names))
  outputs = predictions.predict_rows(run, rows, args.batch_size) if rows else {}
  predictions.write_jsonl(args.output, outputs, [{}] * len(rows))
  print(f"wrote {args.output} ({len(rows)} predictions; inputs: {', '.join(names)})")
  return 0
