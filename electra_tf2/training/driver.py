"""The outer training loop shared by pre-training and fine-tuning.

Pre-training and fine-tuning supply what differs (the model, the optimizer,
a compiled `train_loop(num_steps)` and its data); `run_training_loop` owns what
is the same: running the steps in compiled chunks that end on logging and
checkpoint boundaries, stopping cleanly on SIGTERM/SIGINT, the NaN check,
progress lines and TensorBoard, and checkpoints. Model Garden's task + Orbit
split is the model; docs/design.md has the notes.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Mapping, Optional

import keras
import tensorflow as tf

from electra_tf2.checkpoints import tf_checkpoint
# RunOptions and StopRequested live in training/options.py (no TensorFlow); importable here too.
from electra_tf2.training.options import StopRequested
from electra_tf2.training.progress import ProgressLogger


def with_loss_scaling(optimizer: keras.optimizers.Optimizer, mixed_precision: str
                      ) -> keras.optimizers.Optimizer:
  """`optimizer`, wrapped in a LossScaleOptimizer for mixed_float16."""
  if mixed_precision == "mixed_float16":
    return keras.optimizers.LossScaleOptimizer(optimizer)
  return optimizer


def scaled_loss(optimizer: keras.optimizers.Optimizer, loss: tf.Tensor) -> tf.Tensor:
  """The loss to differentiate: scaled when the optimizer scales losses."""
  if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
    return optimizer.scale_loss(loss)
  return loss


@dataclasses.dataclass
class LoopResult:
  step: int
  losses: Dict[str, float]
  history: List[Dict[str, float]]
  throughput: Dict[str, float]
  stopped_early: bool
  saved_step: int


def run_training_loop(train_loop: Callable[[tf.Tensor], Mapping[str, tf.Tensor]], *,
                      start_step: int, num_steps: int, steps_per_loop: int, log_every: int,
                      save_every: int, manager: tf.train.CheckpointManager,
                      progress: ProgressLogger, batch_size: int,
                      learning_rate: Callable[[], float],
                      on_results: Optional[Callable[[Mapping[str, tf.Tensor]], None]] = None,
                      on_log: Optional[Callable[[int], None]] = None) -> LoopResult:
  """Trains from `start_step` to `num_steps`.

  Args:
    train_loop: runs `n` steps (a scalar int tensor) and returns mean losses
      (`[]` float tensors) and, under "metric/" keys, anything else for
      `on_results`. It advances the checkpointed step counter itself.
    steps_per_loop: the longest compiled chunk; chunks also end where a
      progress line (every `log_every` steps) or a checkpoint (every
      `save_every` steps, and at the end) is due.
    manager: saves `checkpoint_number=step`.
    learning_rate: the current rate, for progress lines.
    on_results: sees every chunk's results (metric statistics, say).
    on_log: called after each progress line with the step.

  Raises:
    CheckpointWriteError: a checkpoint could not be written; the previous one stays the
      latest.
    FloatingPointError: a loss became NaN or infinite; nothing is saved then,
      so the last checkpoint is the last good one.
  """
  step = saved_step = start_step
  losses: Dict[str, float] = {}
  history: List[Dict[str, float]] = []
  throughput: Dict[str, float] = {}
  stopped_early = False
  with StopRequested() as stop:
    while step < num_steps:
      next_save = (step // save_every + 1) * save_every
      next_log = (step // log_every + 1) * log_every
      n = min(steps_per_loop, next_save - step, next_log - step, num_steps - step)
      results = train_loop(tf.constant(n))
      step += n
      losses = {k: float(v) for k, v in results.items() if not k.startswith("metric/")}
      if on_results is not None:
        on_results(results)
      history.append({"step": step, **losses})
      for name, value in losses.items():
        if not tf.math.is_finite(value):
          raise FloatingPointError(
              f"{name} became {value} at step {step}; the last checkpoint (step {saved_step}) "
              f"is in {manager.directory}")
      if step % log_every == 0 or step == num_steps:
        throughput = progress.log(step, losses, learning_rate(), batch_size)
        if on_log is not None:
          on_log(step)
      stopping = stop.requested  # read once: a signal between two reads would skip the save
      if step % save_every == 0 or step == num_steps or stopping:
        tf_checkpoint.save(manager, step)
        saved_step = step
      if stopping:
        stopped_early = True
        break
  return LoopResult(step, losses, history, throughput, stopped_early, saved_step)
