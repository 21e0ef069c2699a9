"""The trainers' shared skeleton, written once and backend-neutral.

The TensorFlow pre-training trainer (tf_pretraining.py: tf.distribute, tf.data), the JAX
one (jax_pretraining.py: one jit-compiled step) and fine-tuning (finetuning.py) keep only
their step and their distribution; what they share is here:

- `run_training_loop`: steps in chunks that end where a progress line or a checkpoint is
  due, the host reading results only then (or after every chunk, where the trainer's
  chunks already end synchronised), SIGTERM/SIGINT saving and stopping, the NaN check,
  progress lines and TensorBoard;
- the pre-training run's rules: the loss names and their order, the split of the global
  batch over replicas and accumulation steps, the seed of each micro-batch, resuming from
  a portable checkpoint or starting from `init_checkpoint`, and the files a run writes
  (its config, tokenizer description and summary).

Model Garden's task + Orbit split is the model; docs/design.md has the notes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from keras import ops

from electra_tf2.checkpoints import directories, portable
from electra_tf2.checkpoints.file_names import PRETRAIN_CONFIG_FILE
from electra_tf2.config.hparams import ConfigError
from electra_tf2.config.pretraining import PretrainingConfig
from electra_tf2.models.model_directory import write_tokenizer_description
from electra_tf2.pretraining import state as pretraining_state
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.training.options import StopRequested
from electra_tf2.training.progress import ProgressLogger
from electra_tf2.utils.atomic_io import makedirs, write_json_atomic

# The pre-training losses, in the order of every progress line and summary.
LOSS_NAMES = ("total_loss", "mlm_loss", "cloze_loss", "disc_loss")
SUMMARY_FILE = "pretrain_summary.json"
# Micro-batch i of step s draws its masks and samples from [s, i + SEED_STRIDE * seed].
SEED_STRIDE = 65536


# -- the loop ------------------------------------------------------------------------


@dataclasses.dataclass
class LoopResult:
  step: int
  losses: Dict[str, float]
  history: List[Dict[str, float]]
  throughput: Dict[str, float]
  stopped_early: bool
  saved_step: int


@dataclasses.dataclass
class Loop:
  """What a trainer hands `run_training_loop`.

  run_steps: runs `n` steps (a Python int) and returns that chunk's results as the
    trainer keeps them (device values: nothing is read yet).
  losses_of: the results of the chunks since the last read -> their mean losses as
    floats (this reads the devices).
  save: writes the checkpoint of `step`.
  learning_rate: the rate at `step`, for progress lines.
  where: where the checkpoints are, for the NaN message.
  sync_every_chunk: read results after every chunk (a trainer whose chunks are compiled
    loops that end synchronised anyway), else only when a line or a save is due.
  on_results: sees `(step, chunk results, their mean losses)` after each read (metrics).
  on_log: called after each progress line with the step.
  stop_requested: whether to save and stop after `step` (called after every chunk), where
    the processes of a run must agree on the step (several JAX hosts: multihost.py);
    None: SIGTERM/SIGINT to this process (`StopRequested`).
  """
  run_steps: Callable[[int], Any]
  losses_of: Callable[[List[Any]], Dict[str, float]]
  save: Callable[[int], None]
  learning_rate: Callable[[int], float]
  where: str
  sync_every_chunk: bool = True
  on_results: Optional[Callable[[int, List[Any], Dict[str, float]], None]] = None
  on_log: Optional[Callable[[int], None]] = None
  stop_requested: Optional[Callable[[int], bool]] = None


@dataclasses.dataclass
class Schedule:
  """When a run steps, logs and saves: from `start_step` to `num_steps`, chunks of at most
  `steps_per_loop` steps, a progress line every `log_every` steps and a checkpoint every
  `save_every` (and at the end, and on a stop signal); with `log_first_step`, a line after
  the run's first step too (a compiled step's: how long compiling took)."""
  start_step: int
  num_steps: int
  steps_per_loop: int
  log_every: int
  save_every: int
  batch_size: int  # sequences per step, for throughput
  log_first_step: bool = False

  def chunk(self, step: int) -> int:
    """The steps of the chunk that starts at `step`: up to the next line or save."""
    if self.log_first_step and step == self.start_step:
      return 1
    next_save = (step // self.save_every + 1) * self.save_every
    next_log = (step // self.log_every + 1) * self.log_every
    return min(self.steps_per_loop, next_save - step, next_log - step, self.num_steps - step)


def check_finite(losses: Mapping[str, float], step: int, saved_step: int, where: str) -> None:
  """FloatingPointError on a NaN or infinite loss (nothing is saved then, so the last
  checkpoint is the last good one)."""
  for name, value in losses.items():
    if not math.isfinite(value):
      raise FloatingPointError(f"{name} became {value} at step {step}; the last checkpoint "
                               f"(step {saved_step}) is in {where}")


def run_training_loop(loop: Loop, schedule: Schedule, progress: ProgressLogger) -> LoopResult:
  """Trains from `schedule.start_step` to `schedule.num_steps`.

  Raises:
    CheckpointWriteError: a checkpoint could not be written; the previous one stays the
      latest.
    FloatingPointError: a loss became NaN or infinite (`check_finite`).
  """
  step = saved_step = schedule.start_step
  losses: Dict[str, float] = {}
  history: List[Dict[str, float]] = []
  throughput: Dict[str, float] = {}
  pending: List[Any] = []  # the chunks' results since the last read
  stopped_early = False
  signals = StopRequested() if loop.stop_requested is None else contextlib.nullcontext()
  with signals as stop:
    while step < schedule.num_steps:
      n = schedule.chunk(step)
      pending.append(loop.run_steps(n))
      step += n
      # Read once: a signal between two reads would skip the save.
      stopping = stop.requested if stop is not None else loop.stop_requested(step)
      first = schedule.log_first_step and step - n == schedule.start_step
      due_log = first or step % schedule.log_every == 0 or step == schedule.num_steps
      due_save = step % schedule.save_every == 0 or step == schedule.num_steps or stopping
      if loop.sync_every_chunk or due_log or due_save:
        losses = loop.losses_of(pending)
        history.append({"step": step, **losses})
        check_finite(losses, step, saved_step, loop.where)
        if loop.on_results is not None:
          loop.on_results(step, pending, losses)
        pending = []
        if due_log:
          throughput = progress.log(step, losses, loop.learning_rate(step), schedule.batch_size,
                                    first_step=first)
          if loop.on_log is not None:
            loop.on_log(step)
      if due_save:
        loop.save(step)
        saved_step = step
      if stopping:
        stopped_early = True
        break
  return LoopResult(step, losses, history, throughput, stopped_early, saved_step)


# -- the pre-training run's rules ------------------------------------------------------


def ordered_losses(losses: Mapping[str, float]) -> Dict[str, float]:
  """`losses` in LOSS_NAMES order (one column order on every backend)."""
  return {name: losses[name] for name in LOSS_NAMES if name in losses}


def micro_batch_size(global_batch: int, replicas: int, accumulation: int, what: str) -> int:
  """Rows per replica and micro-batch; ConfigError where `global_batch` does not split."""
  if global_batch % (replicas * accumulation):
    raise ConfigError(f"{what} {global_batch} is not divisible by {replicas} replicas x "
                      f"{accumulation} gradient_accumulation_steps")
  return global_batch // (replicas * accumulation)


def step_seed(draw, shard, seed: int):
  """The `[2]` int32 masking and sampling seed of micro-batch (or replica shard) `shard` of
  step `draw` (an eval batch i draws -1 - i): `[draw, shard + SEED_STRIDE * seed]`."""
  return ops.stack([ops.cast(draw, "int32"), ops.cast(shard, "int32") + seed * SEED_STRIDE])


def fresh_slots_message(path: str, step: int) -> str:
  return (f"{path} holds no optimizer state: Adam starts with fresh slots and the "
          f"learning-rate schedule goes on from step {step}")


def init_message(path: str) -> str:
  return (f"initialised the model from {path} (init_checkpoint): training starts at step 0 "
          "with a fresh learning-rate schedule and fresh Adam slots")


def restore_portable(model, optimizer, path: str) -> Tuple[int, Dict[str, Any]]:
  """Weights, Adam slots and step of a portable checkpoint into `model` and `optimizer`
  (whose step counter, which the schedule reads, is set); `(step, its extra fields)`."""
  arrays, extra = portable.load(path)
  slots = pretraining_state.assign(model, arrays, optimizer, extra, where=path)
  step = pretraining_state.global_step_of(arrays)
  if not slots:
    print(fresh_slots_message(path, step), flush=True)
  optimizer.iterations.assign(step)
  return step, extra


def start_from_init_checkpoint(model, init_checkpoint: str) -> str:
  """The portable checkpoint of `init_checkpoint` (a `portable-N.npz`, or a directory
  holding one) read into `model`; its path. ConfigError where there is none."""
  init = (init_checkpoint if portable.is_portable(init_checkpoint)
          else portable.latest(init_checkpoint))
  if init is None:
    raise ConfigError(f"init_checkpoint {init_checkpoint}: the JAX trainer starts from a "
                      "portable checkpoint (portable-N.npz, or a model directory holding one): "
                      "write one with `electra convert to-portable`")
  arrays, _ = portable.load(init)
  pretraining_state.assign(model, arrays, where=init)
  return init


def check_vocabulary(config: PretrainingConfig) -> None:
  """The vocabulary has `vocab_size` tokens and the special-token ids the config was
  resolved with (one line if not: before any model is built or data read)."""
  if config.vocab_file is None:
    return
  vocab = vocab_lib.load_vocab(config.vocab_file, expected_size=config.vocab_size)
  if vocab_lib.special_token_ids(vocab) != config.special_ids:
    raise ConfigError(f"{config.vocab_file} has other special-token ids than the config was "
                      f"resolved with ({config.special_ids}); resolve the config again")


def write_run_files(config: PretrainingConfig) -> None:
  """The run's `pretrain_config.json` (the vocabulary copied in, paths relative to the
  directory, so that it can move to another machine) and tokenizer description."""
  makedirs(config.model_dir)
  directories.write_config(config.model_dir, PRETRAIN_CONFIG_FILE, config.to_dict(),
                           directories.PRETRAIN_PATH_KEYS)
  write_tokenizer_description(config, config.model_dir)


def run_summary(config: PretrainingConfig, result: LoopResult, seconds: float,
                latest_checkpoint: Optional[str], **extra: Any) -> Dict[str, Any]:
  """What `pretrain_summary.json` holds; `extra`: the trainer's own fields."""
  return {"model_name": config.model_name, "step": result.step,
          "num_train_steps": config.num_train_steps, "stopped_early": result.stopped_early,
          "final_losses": result.losses, "last_throughput": result.throughput,
          "train_seconds_this_run": seconds,
          "gradient_accumulation_steps": config.gradient_accumulation_steps,
          "latest_checkpoint": latest_checkpoint, "saved_step": result.saved_step, **extra}


def write_summary(config: PretrainingConfig, summary: Mapping[str, Any]) -> None:
  write_json_atomic(os.path.join(config.model_dir, SUMMARY_FILE), dict(summary))


def mean_losses(pending: Sequence[Mapping[str, Any]]) -> Dict[str, float]:
  """The mean of each loss over one result dict per step (read from the devices)."""
  return ordered_losses({k: float(np.mean([float(p[k]) for p in pending]))
                         for k in pending[0]})
