"""The common interface of a side, and the table of sides by name.

A side is one way to get logits from raw text: built once from a `ModelFixture`
(models.py), then `predict(texts)` per batch. `texts` is a list of columns of
raw strings: `[texts]` for single texts, `[texts_a, texts_b]` for pairs, each
column `batch` long. `predict` returns float32 logits `[batch, num_labels]`
(for a token scorer, `[batch, tokens]` with NaN past each text's tokens),
tokenisation included.

To add a side, write `build(fixture) -> Side` in a module of this package,
decorate it with `@register("name")` and import the module in `__init__.py`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional

import numpy as np

Texts = List[List[str]]
Predict = Callable[[Texts], np.ndarray]


@dataclasses.dataclass
class Side:
  """One row of the table.

  name: the row label.
  predict: texts (columns) -> logits, see the module docstring.
  reference: the PyTorch function whose outputs `predict`'s are compared with;
    None: the fixture's PyTorch classifier (the `pytorch` side).
  note: what the row runs, one line (the model format, options).
  predict_all: `(texts, batch_size) -> logits` of a whole text set in one call, for a
    library that batches itself (Keras predict, TextScorer: sorted by length); None:
    the timer calls `predict` batch by batch, in the set's (shuffled) order.
  """
  name: str
  predict: Predict
  reference: Optional[Predict] = None
  note: str = ""
  predict_all: Optional[Callable[[Texts, int], np.ndarray]] = None


Builder = Callable[..., Optional[Side]]
SIDES: Dict[str, Builder] = {}


def register(name: str) -> Callable[[Builder], Builder]:
  """Adds `build(fixture) -> Side` (None when it does not apply to the fixture) as `name`."""
  def add(build: Builder) -> Builder:
    SIDES[name] = build
    return build
  return add
