"""Batch prediction on text files, shared by Keras models, SavedModels and `.tflite` files.

`read_rows(path, names)` reads an input file as rows of texts, one per line: UTF-8
text whose columns are tab-separated in the order of `names` (`column_order`:
question, context; text, text_b), or JSON lines with those fields (and an optional
"id"). Every line is checked (UTF-8, its column count or fields); an empty file is
refused; each refusal is one line naming the file and line. `predict_rows(run, rows,
batch_size)` runs a batch function over the rows, in batches of similar length, with
a progress bar, and joins the batches in row order (per-token outputs padded with
zeros to the longest batch); `write_jsonl` writes one JSON object per row, atomically.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterator, List, Sequence, Tuple, Type

import numpy as np

from electra_tf2.utils import batching
from electra_tf2.utils.atomic_io import write_text_atomic
from electra_tf2.utils.errors import ElectraError

Outputs = Dict[str, np.ndarray]
Rows = Tuple[List[List[str]], List[Dict[str, Any]]]
# The documented order of the text inputs of every signature we write (the Keras
# models' call order): a row's columns come in this order, other names after, sorted.
COLUMN_ORDER = ("question", "context", "text", "text_b")
JSONL_SUFFIXES = (".jsonl", ".json")


class InputFileError(ElectraError, ValueError):
  """A text or JSON-lines input file that cannot be read as rows of texts."""


def column_order(names: Sequence[str]) -> List[str]:
  """Input names in their documented order (COLUMN_ORDER), not alphabetically: a row
  of a QA model is (question, context), one of a pair model (text, text_b)."""
  rank = {name: i for i, name in enumerate(COLUMN_ORDER)}
  return sorted(names, key=lambda name: (rank.get(name, len(rank)), name))


def describe_columns(names: Sequence[str]) -> str:
  """What one input line holds, e.g. "question<TAB>context"."""
  return "<TAB>".join(names)


def text_lines(path: str, flag: str = "--input", error: Type[ElectraError] = InputFileError
               ) -> Iterator[Tuple[int, str, int]]:
  """`(line number, text, bytes read)` per line of a UTF-8 text file ("\n" or "\r\n"
  ends a line); a missing file or bytes that are not UTF-8 raise `error`, one line
  naming the file (as `flag`) or the file and line."""
  try:
    handle = open(path, "rb")
  except OSError as e:
    raise error(f"{flag} {path}: {e.strerror}") from None
  with handle:
    for number, raw in enumerate(handle, 1):
      line = raw.rstrip(b"\n").rstrip(b"\r")
      try:
        text = line.decode("utf-8")
      except UnicodeDecodeError as e:
        raise error(f"{path}:{number}: not valid UTF-8 (byte 0x{line[e.start]:02x} at "
                    f"byte {e.start + 1} of the line): convert the file to UTF-8, e.g. "
                    "iconv -f latin1 -t utf-8") from None
      yield number, text, len(raw)


def is_jsonl(path: str) -> bool:
  """Whether an input file is read as JSON lines: its name ends in .jsonl or .json."""
  return path.endswith(JSONL_SUFFIXES)


def read_lines(path: str, flag: str = "--input", error: Type[ElectraError] = InputFileError
               ) -> List[Tuple[int, str]]:
  """`(line number, text)` of every line of a UTF-8 text file (`text_lines`)."""
  return [(number, text) for number, text, _ in text_lines(path, flag, error)]


def read_rows(path: str, names: Sequence[str], jsonl: bool | None = None,
              flag: str = "--input", error: Type[ElectraError] = InputFileError) -> Rows:
  """`(rows, keys)` of an input file (`parse_rows` of its `read_lines`)."""
  return parse_rows(read_lines(path, flag, error), path, names, jsonl, flag, error)


def parse_rows(lines: Sequence[Tuple[int, str]], path: str, names: Sequence[str],
               jsonl: bool | None = None, flag: str = "--input",
               error: Type[ElectraError] = InputFileError) -> Rows:
  """`(rows, keys)` of the lines of the file `path`: per line, its texts in the order of
  `names`, and what its output line starts with ({} for text; {"id": ...} for JSON
  lines, the line number when the object has no "id").

  Text (jsonl False; None: by the file name, `is_jsonl`): every line holds exactly
  len(names) tab-separated columns (a blank line is one empty text). JSON lines: one
  object per non-blank line with a string field per name. Anything else, and a file
  without rows, raises `error` in one line naming the file and line.
  """
  names = list(names)
  jsonl = is_jsonl(path) if jsonl is None else jsonl
  rows, keys = [], []
  for number, line in lines:
    if jsonl:
      if line.strip():
        row, key = _json_row(path, number, line, names, error)
        rows.append(row)
        keys.append(key)
      continue
    columns = line.split("\t")
    if len(columns) != len(names):
      hint = " (a JSON line? name the file .jsonl)" if line.lstrip().startswith("{") else ""
      raise error(f"{path}:{number}: {len(columns)} tab-separated column(s), expected "
                  f"{len(names)}: {describe_columns(names)}{hint}")
    rows.append(columns)
    keys.append({})
  if not rows:
    what = "JSON object" if jsonl else describe_columns(names)
    raise error(f"{flag} {path} is empty: give one {what} per line")
  return rows, keys


def _json_row(path: str, number: int, line: str, names: Sequence[str],
              error: Type[ElectraError]) -> Tuple[List[str], Dict[str, Any]]:
  """The texts of one JSON line, and its key: {"id": its "id", else the line number}."""
  try:
    record = json.loads(line)
  except json.JSONDecodeError as e:
    raise error(f"{path}:{number}: not valid JSON ({e.msg} at column {e.colno}): give one "
                "JSON object per line") from None
  fields = [record.get(k) if isinstance(record, dict) else None for k in names]
  if not all(isinstance(v, str) for v in fields):
    wanted = " and ".join(f'"{k}"' for k in names)
    raise error(f'{path}:{number}: needs string fields {wanted} (and may have an "id")')
  return fields, {"id": record.get("id", number)}


def predict_rows(run: Callable[..., Outputs], rows: Sequence[Sequence[str]], batch_size: int,
                 progress: bool = True) -> Outputs:
  """`run(column_0_texts, column_1_texts, ...)` on batches of rows of similar length
  (electra_tf2/utils/batching.py); the outputs in row order, per-token ones padded.

  Rows already in length order that fit one batch (one row, say) are one call, its
  outputs as `run` returns them, without the re-ordering copy. Keras (the progress
  bar) is imported only with `progress`.
  """
  if not rows:
    return {}
  columns = [[row[i] for row in rows] for i in range(len(rows[0]))]
  order, chunks = batching.length_batches(batching.text_lengths(columns), batch_size)
  if len(chunks) == 1 and not progress and np.all(order[1:] > order[:-1]):
    return dict(run(*columns))
  bar = None
  if progress:
    import keras  # pylint: disable=g-import-not-at-top
    bar = keras.utils.Progbar(len(rows), unit_name="row")
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
  if len(arrays) == 1:
    return arrays[0]
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
