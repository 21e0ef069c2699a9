"""`electra predict`: a text file through an exported model, one JSON object per line.

  electra predict --model model.tflite --input texts.txt --output predictions.jsonl
  electra predict --model export/squad --input questions.jsonl --output answers.jsonl

`--model` is a `.tflite` file (`electra export --format litert`, `export_litert`)
or a SavedModel directory (`electra export`, `export_saved_model`).

`--input` is UTF-8 text, one row per line, its columns tab-separated in the order
of the model's inputs (the first line printed names them):

  text                  a single-text model (classifiers, taggers, the discriminator)
  text<TAB>text_b       a pair model (`--text-pairs`, `text_pairs=True`)
  question<TAB>context  question answering

or JSON lines (a `.jsonl` / `.json` file, or `--input-format jsonl`), one object per
line with a string field per input name, e.g. {"id": "q1", "question": "...",
"context": "..."}; its "id" (else the line number) starts the output line. A line
with another number of columns, or without the fields, is refused with its number.

Each output line holds the model's outputs for its input line (per-token outputs
padded with zeros to the longest batch). A progress bar shows the rows done; the
output file is written once, at the end, atomically.
"""

from __future__ import annotations

import argparse
import os
import zipfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.utils import errors, predictions
from electra_tf2.utils.errors import ElectraError, command

INPUT_FORMATS = ("auto", "text", "jsonl")


class PredictError(ElectraError, ValueError):
  """A model or input that `electra predict` cannot use."""


def check_model_path(path: str) -> None:
  """Refuses, in one line, a --model that is no exported model: missing, a Keras file,
  or a directory of another kind (a model directory, a checkpoint)."""
  if os.path.isfile(path):
    if path.endswith(".keras") or zipfile.is_zipfile(path):
      raise PredictError(f"--model {path} is a Keras file (.keras): load it with "
                         "keras.saving.load_model and write model.export_saved_model(DIR) or "
                         "model.export_litert(PATH) for electra predict")
    return
  if not os.path.isdir(path):
    raise PredictError(f"--model {path} does not exist: give a .tflite file or a SavedModel "
                       "directory")
  if os.path.isfile(os.path.join(path, "saved_model.pb")):
    return
  from electra_tf2.checkpoints import describe  # pylint: disable=g-import-not-at-top
  try:
    kind = describe.kind_of(path)
  except describe.UnknownCheckpointError:
    raise PredictError(f"--model {path} is neither a .tflite file nor a SavedModel "
                       "directory") from None
  how = (f"electra export --model-dir {path} --output-dir DIR (or --format litert --output "
         "MODEL.tflite) writes one" if kind in ("pretrained", "finetuned") else
         "convert it to a model directory (electra convert), then electra export it")
  raise PredictError(f"--model {path} is {describe.KIND_NAMES[kind]}, not an exported model: "
                     f"{how}")


def load_runner(path: str, signature: Optional[str] = None, num_threads: Optional[int] = None
                ) -> Tuple[Callable[..., Dict[str, np.ndarray]], List[str]]:
  """(batch function: texts per input -> numpy outputs, input names in their documented
  order: `predictions.column_order`) of a model path."""
  check_model_path(path)
  if os.path.isfile(path):
    from electra_tf2.litert.model import LiteRTModel  # pylint: disable=g-import-not-at-top
    if signature not in (None, "serving_default"):
      raise PredictError(f"--signature {signature}: a .tflite has serving_default only")
    model = LiteRTModel(path, num_threads=num_threads)
    return model.run_batch, model.input_names
  errors.require_tensorflow(f"{path} (a SavedModel: a .tflite runs without TensorFlow)")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  function = tf.saved_model.load(path).signatures.get(signature or "serving_default")
  if function is None:
    raise PredictError(f"{path} has no signature {signature}")
  specs = function.structured_input_signature[1]
  if any(spec.dtype != tf.string for spec in specs.values()):
    raise PredictError(f"{path}'s {signature or 'serving_default'} signature does not take "
                       "text: give --signature text (or text_pair)")
  names = predictions.column_order(specs)

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
                      help="UTF-8 text file, a row per line, its columns tab-separated in the "
                           "model's input order: text | text<TAB>text_b | "
                           "question<TAB>context; or JSON lines with those fields")
  parser.add_argument("--input-format", choices=INPUT_FORMATS, default="auto",
                      help="auto: JSON lines for a .jsonl/.json input, else text")
  parser.add_argument("--output", required=True, help="JSON lines file to write")
  parser.add_argument("--batch-size", type=int, default=32, help="texts per model call")
  parser.add_argument("--signature", default=None,
                      help="SavedModel signature (default serving_default; text_pair for "
                           "the pairs of an `electra export` SavedModel)")
  parser.add_argument("--num-threads", type=int, default=None,
                      help=".tflite: interpreter threads (default: one per core up to 2, "
                           "docs/benchmarks.md#litert-tflite)")
  args = parser.parse_args(argv)
  if args.batch_size < 1:
    raise PredictError(f"--batch-size must be >= 1, got {args.batch_size}")
  if not os.path.isfile(args.input):
    what = "is a directory" if os.path.isdir(args.input) else "does not exist"
    raise PredictError(f"--input {args.input} {what}: give a UTF-8 text or JSON-lines file")
  lines = predictions.read_lines(args.input, error=PredictError)  # before any model loads
  run, names = load_runner(args.model, args.signature, args.num_threads)
  jsonl = {"auto": None, "text": False, "jsonl": True}[args.input_format]
  jsonl = predictions.is_jsonl(args.input) if jsonl is None else jsonl
  print(f"{args.model} takes {', '.join(names)}: reading {args.input} as "
        + (f"JSON lines with fields {', '.join(names)}" if jsonl
           else f"{predictions.describe_columns(names)} per line"), flush=True)
  rows, keys = predictions.parse_rows(lines, args.input, names, jsonl, error=PredictError)
  outputs = predictions.predict_rows(run, rows, args.batch_size)
  predictions.write_jsonl(args.output, outputs, keys)
  print(f"wrote {args.output} ({len(rows)} predictions; inputs: {', '.join(names)})")
  return 0
