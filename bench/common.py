"""What the bench scripts share: the repository's place, logging, model inputs, figures."""

from __future__ import annotations

import os
import time
from typing import Sequence, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The project's shared data beside the checkout (../shared/data), the scripts' default.
SHARED_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")


def log(message: str, tag: str = "") -> None:
  """Prints one line at once, after `[tag HH:MM:SS] ` when a tag is given."""
  prefix = f"[{tag} {time.strftime('%H:%M:%S')}] " if tag else ""
  print(prefix + message, flush=True)


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
