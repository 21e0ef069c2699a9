"""Progress lines and TensorBoard summaries (the official ETAHook's information).

One line per logging interval:

  step 400/1000 (40.0%) | total_loss 21.503 mlm_loss 6.921 disc_loss 0.292 | lr 2.0e-04 |
  31.2 seq/s 3994 tok/s | elapsed 12m04s ETA 18m06s
"""

from __future__ import annotations

import sys
import time
from typing import Dict, Mapping, Optional, TextIO

import keras

from electra_tf2.training.summaries import EventWriter


def secs_to_str(seconds: float) -> str:
  """12345 -> '3h25m45s' (as util/training_utils.secs_to_str)."""
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  minutes, secs = divmod(rest, 60)
  if hours:
    return f"{hours}h{minutes:02d}m{secs:02d}s"
  if minutes:
    return f"{minutes}m{secs:02d}s"
  return f"{secs}s"


class ProgressLogger:
  """Prints progress and writes scalar summaries; a no-op writer on non-chief workers.

  Args:
    total_steps: the step the run ends at.
    start_step: the step the run (re)started from, so ETA uses this run's speed.
    summary_dir: TensorBoard directory, or None for no summaries (`tf.summary` on the
      TensorFlow backend, electra_tf2/training/summaries.py's writer on the others).
    sequence_length: tokens per sequence, for tokens/s.
    stream: where lines go (stdout by default).
  """

  def __init__(self, total_steps: int, start_step: int, summary_dir: Optional[str],
               sequence_length: int, stream: TextIO = sys.stdout):
    self.total_steps = total_steps
    self.sequence_length = sequence_length
    self.stream = stream
    self._writer = None
    if summary_dir and keras.backend.backend() == "tensorflow":
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      self._writer = tf.summary.create_file_writer(summary_dir)
    elif summary_dir:
      self._writer = EventWriter(summary_dir)
    self._start_time = time.time()
    self._start_step = start_step
    self._last_time = self._start_time
    self._last_step = start_step
    self._rate_from = (self._start_time, start_step)  # where the ETA's speed is measured from

  def log(self, step: int, scalars: Mapping[str, float], learning_rate: float,
          sequences_per_step: int, first_step: bool = False) -> Dict[str, float]:
    """Logs one interval ending at `step`; returns the throughput figures. `first_step`:
    the run's first step, which compiled the step; the line says how long that took, and
    the ETAs after it leave the compilation out."""
    now = time.time()
    interval_steps = max(step - self._last_step, 1)
    interval_time = max(now - self._last_time, 1e-9)
    seq_per_sec = interval_steps * sequences_per_step / interval_time
    run_steps = max(step - self._rate_from[1], 1)
    steps_per_sec = run_steps / max(now - self._rate_from[0], 1e-9)
    eta = (self.total_steps - step) / steps_per_sec
    throughput = {"sequences_per_sec": seq_per_sec,
                  "tokens_per_sec": seq_per_sec * self.sequence_length}
    losses = " ".join(f"{k} {v:.4g}" for k, v in scalars.items())
    print(f"step {step}/{self.total_steps} ({100.0 * step / self.total_steps:.1f}%) | {losses} | "
          f"lr {learning_rate:.2e} | {seq_per_sec:.1f} seq/s "
          f"{throughput['tokens_per_sec']:.0f} tok/s | "
          f"elapsed {secs_to_str(now - self._start_time)} ETA {secs_to_str(eta)}"
          + (f" | first step {interval_time:.1f}s, compiling included" if first_step else ""),
          file=self.stream, flush=True)
    self.write_summaries(step, {**scalars, "learning_rate": learning_rate, **throughput})
    self._last_time, self._last_step = now, step
    if first_step:
      self._rate_from = (now, step)
    return throughput

  def write_summaries(self, step: int, scalars: Mapping[str, float], prefix: str = "") -> None:
    if self._writer is None:
      return
    if isinstance(self._writer, EventWriter):
      self._writer.scalars(step, {prefix + name: value for name, value in scalars.items()})
      return
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    with self._writer.as_default():
      for name, value in scalars.items():
        tf.summary.scalar(prefix + name, value, step=step)
    self._writer.flush()

  @property
  def elapsed(self) -> float:
    return time.time() - self._start_time



