"""Batch prediction on text files, shared by Keras models, SavedModels and `.tflite` files.

`predict_rows(run, rows, batch_size)` runs a batch function over rows of text
columns, in batches of similar length, with a progress bar, and joins the batches
in row order (per-token outputs padded with zeros to the longest batch);
`write_jsonl` writes one JSON object per row, atomically. `read_rows` reads a UTF-8
text file: one row per line, pairs tab-separated.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterator, List, Sequence

import numpy as np

from electra_tf2 import batching
from electra_tf2.atomic_io import write_text_atomic

Outputs = Dict[str, np.ndarray]


def read_rows(path: str, columns: int) -> List[List[str]]:
  """The lines of a UTF-8 text file split into `columns` tab-separated texts (missing
  columns empty)."""
  with open(path, encoding="utf-8") as f:
    lines = [line.rstrip("\n") for line in f]
  return [(line.split("\t", columns - 1) + [""] * (columns - 1))[:columns] for line in lines]


def predict_rows(run: Callable[..., Outputs], rows: Sequence[Sequence[str]], batch_size: int,
                 progress: bool = True) -> Outputs:
  """`run(column_0_texts, column_1_texts, ...)` on batches of rows of similar length
  (electra_tf2/batching.py); the outputs in row order, per-token ones padded."""
  import keras  # pylint: disable=g-import-not-at-top
  if not rows:
    return {}
  columns = [[row[i] for row in rows] for i in range(len(rows[0]))]
  order, chunks = batching.length_batches(batching.text_lengths(columns), batch_size)
  bar = keras.utils.Progbar(len(rows), unit_name="row") if progress else None
  batches = []
  for chunk in chunks:
    batches.append(run(*([column[i] for i in chunk] for column in columns)))
    if bar is not None:
      bar.add(len(chunk))
  return {k: batching.restore_order(concatenate_padded([b[k] for b in batches]), order)
          for k in batches[0]}


def concatenate_padded(arrays: List[np.ndarray]) -> np.ndarray:
  """Batches concatenated; per-token outputs padded to the longest batch (0, or b"" for
  strings)."""
  if arrays[0].ndim > 1:
    length = max(a.shape[1] for a in arrays)
    arrays = [np.pad(a, [(0, 0), (0, length - a.shape[1])] + [(0, 0)] * (a.ndim - 2),
                     constant_values=b"" if a.dtype == object else 0) for a in arrays]
  return np.concatenate(arrays)


def json_rows(outputs: Outputs, n: int) -> Iterator[Dict[str, Any]]:
  """One JSON-ready dict per input row."""
  for i in range(n):
    yield {k: _jsonable(v[i]) for k, v in outputs.items()}


def _jsonable(value):
  """A numpy value as JSON: numbers and lists, label bytes decoded."""
  if isinstance(value, bytes):
    return value.decode("utf-8", "replace")
  if isinstance(value, np.ndarray):
    return [_jsonable(v) for v in value] if value.dtype == object else value.tolist()
  return value.item() if isinstance(value, np.generic) else value


def write_jsonl(path: str, outputs: Outputs, keys: Sequence[Dict[str, Any]]) -> None:
  """One JSON line per row, `keys[i]` (what row i's line starts with: {} for nothing)
  followed by row i of `outputs`; written atomically."""
  write_text_atomic(path, "".join(json.dumps(dict(key, **row)) + "\n"
                                  for key, row in zip(keys, json_rows(outputs, len(keys)))))
