"""Timing sides against each other in one process, alternating (A B A B ...).

Each round runs every side once, in an order rotated from round to round, with a
short pause between sides (so that one runtime's spinning threads are idle before
the next one is timed). A side's turn is its batch-1 pass (`latency_texts` calls of
one text each, each call timed) and its batch pass (`throughput_texts` in batches of
`batch_size`, or one `predict_all` call, timed whole). Figures pool the rounds: latency percentiles over every
call, throughput as the median of the rounds' sequences per second.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Dict, List, Sequence

import numpy as np

from bench.serving.inference.side import Side, Texts

PAUSE_S = 0.3


@dataclasses.dataclass
class Timings:
  latencies_s: List[float] = dataclasses.field(default_factory=list)
  rates: List[float] = dataclasses.field(default_factory=list)

  def p(self, q: float) -> float:
    """The q-th percentile of batch-1 latency, in milliseconds."""
    return float(np.percentile(self.latencies_s, q)) * 1e3

  @property
  def rate(self) -> float:
    """Sequences/s at the batch size: the median over rounds."""
    return float(np.median(self.rates))


def batches(texts: Texts, batch_size: int) -> List[Texts]:
  n = len(texts[0])
  return [[column[i:i + batch_size] for column in texts] for i in range(0, n, batch_size)]


def run_turn(side: Side, single: List[Texts], texts: Texts, batch_size: int,
             timings: Timings) -> None:
  for one in single:
    start = time.perf_counter()
    side.predict(one)
    timings.latencies_s.append(time.perf_counter() - start)
  start = time.perf_counter()
  if side.predict_all is not None:
    side.predict_all(texts, batch_size)
  else:
    for batch in batches(texts, batch_size):
      side.predict(batch)
  timings.rates.append(len(texts[0]) / (time.perf_counter() - start))


def alternate(sides: Dict[str, Side], latency_texts: Texts, throughput_texts: Texts,
              batch_size: int, rounds: int, log=print) -> Dict[str, Timings]:
  """Times every side `rounds` times, alternating; the first (warm-up) turn is not counted."""
  single = batches(latency_texts, 1)
  names: Sequence[str] = list(sides)
  for name in names:  # warm-up: every shape once
    run_turn(sides[name], single, throughput_texts, batch_size, Timings())
  timings = {name: Timings() for name in names}
  for r in range(rounds):
    order = names[r % len(names):] + names[:r % len(names)]
    for name in order:
      time.sleep(PAUSE_S)
      run_turn(sides[name], single, throughput_texts, batch_size, timings[name])
    log(f"round {r + 1}/{rounds}: " + ", ".join(
        f"{n} {timings[n].rates[-1]:.1f}/s" for n in names))
  return timings
