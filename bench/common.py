"""What the bench scripts share: the repository's place, logging, model inputs, figures."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Mapping, Optional, Sequence, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The project's shared data beside the checkout (../shared/data), the scripts' default.
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")


def log(message: str, tag: str = "") -> None:
  """Prints one line at once, after `[tag HH:MM:SS] ` when a tag is given."""
  prefix = f"[{tag} {time.strftime('%H:%M:%S')}] " if tag else ""
  print(prefix + message, flush=True)


def append_json(path: Optional[str], record: Mapping[str, Any]) -> None:
  """Appends `record` as one JSON line to `path` (nothing when path is None): a file of
  results that a run killed midway keeps whole up to its last line."""
  if path:
    with open(path, "a", encoding="utf-8") as f:
      f.write(json.dumps(record) + "\n")


def add_step_flags(parser, steps: int, rounds: Optional[int] = 3) -> None:
  """The flags the training-step benches share: hparams over the preset's, precision, XLA,
  steps (per round, with `rounds` rounds unless None) and a JSON output file."""
  parser.add_argument("--hparams", default="{}",
                      help="JSON object of hparams over the preset's, e.g. '{\"debug\": true}' "
                           "for the 3-layer debug encoder")
  parser.add_argument("--mixed-precision", default="float32")
  parser.add_argument("--jit-compile", action="store_true")
  parser.add_argument("--steps", type=int, default=steps)
  if rounds is not None:
    parser.add_argument("--rounds", type=int, default=rounds)
  parser.add_argument("--json", default=None, help="append the result as JSON here")


def pad_rows(rows: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  """int32 ids and input mask `[len(rows), longest]` of id rows, padded with 0."""
  length = max(len(r) for r in rows)
  ids = np.zeros((len(rows), length), np.int32)
  for i, row in enumerate(rows):
    ids[i, :len(row)] = row
  return ids, (np.arange(length)[None] < np.array([len(r) for r in rows])[:, None]
               ).astype(np.int32)


def text_inputs(tokenizer, texts: Sequence[str], max_seq_length: int
                ) -> Tuple[np.ndarray, np.ndarray]:
  """`[CLS] text [SEP]` ids and mask `[len(texts), longest]`, each text cut to
  max_seq_length - 2 WordPieces of `tokenizer` (an `electra_tf2` FullTokenizer)."""
  special = tokenizer.special_ids
  return pad_rows([[special.cls] + ids[:max_seq_length - 2] + [special.sep]
                   for ids in tokenizer.encode_batch(texts)])


def pyplot():
  """matplotlib.pyplot on the file-only Agg backend."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  return plt


def save_figure(figure, path: str, dpi: int) -> None:
  """Writes `figure` as a PNG at `path` (a temporary name, then renamed) and closes it."""
  from electra_tf2.atomic_io import atomic_path
  with atomic_path(path) as tmp:
    figure.savefig(tmp, dpi=dpi, format="png")
  pyplot().close(figure)
