"""Batches of texts of similar length, for prediction: fewer pad tokens, same results.

A batch is padded to its longest row, so texts taken in file order pad short texts
to the length of the long ones they happen to sit with. `length_batches` sorts by
length (bytes, a proxy for WordPieces that costs no tokenisation; ties keep input
order) and cuts the order into batches; `restore_order` puts outputs computed
batch by batch in that order back into input order.

  >>> order, batches = length_batches([10, 3, 7, 3], batch_size=2)
  >>> [list(b) for b in batches]
  [[1, 3], [2, 0]]
  >>> restore_order(np.array([30, 31, 70, 100]), order).tolist()
  [100, 30, 70, 31]
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np


def length_batches(lengths: Sequence[int], batch_size: int
                   ) -> Tuple[np.ndarray, List[np.ndarray]]:
  """`(order, batches)`: indices by ascending length (stable), and that order cut into
  consecutive batches of at most `batch_size` indices."""
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  order = np.argsort(np.asarray(lengths, np.int64), kind="stable")
  return order, [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def restore_order(values: np.ndarray, order: np.ndarray) -> np.ndarray:
  """Rows in the order `order` lists (row i is input `order[i]`) -> rows in input order."""
  inverse = np.empty_like(order)
  inverse[order] = np.arange(len(order))
  return values[inverse]


def text_lengths(columns: Sequence[Sequence]) -> List[int]:
  """Bytes per row over the columns (str or bytes items)."""
  def size(text) -> int:
    return len(text.encode("utf-8", "replace") if isinstance(text, str) else text)
  return [sum(size(column[i]) for column in columns) for i in range(len(columns[0]))]
