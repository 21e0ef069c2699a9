"""Pre-training on JAX: the official recipe as one jit-compiled step, without TensorFlow.

`electra pretrain --backend jax` (or `KERAS_BACKEND=jax`) runs this instead of
electra_tf2/training/tf_pretraining.py. The same `PretrainingConfig`, the same model
(electra_tf2/models/pretrainer.py, in keras.ops) and the same semantics:

- one optimizer step (every micro-batch of gradient accumulation: masking, the
  generator, sampling, the discriminator, the losses with the global batch's
  denominators, gradients; then clipping and the AdamWeightDecay update) is one
  `jax.jit` program over `stateless_call`, its state donated;
- seeds as the TensorFlow trainer's: micro-batch i of step s draws from
  `[s, i + 65536 * seed]` (JAX's own generator: other draws than TensorFlow's,
  with the same distributions);
- data from the pre-training TFRecords through electra_tf2/data_io (numpy, the
  tf.data pipeline's structure), read by a worker process ahead of the step and put
  on the devices two batches ahead; the host waits for the devices only to log and
  save (and a step behind: `JaxPretrainingRun.step`); the input position of the last
  batch taken is saved with each checkpoint;
- all devices with `keras.distribution.DataParallel`: the batch is sharded and the
  program is the single-device one, so the losses are a single device's;
- several processes (hosts: electra_tf2/training/multihost.py): each reads its shard and
  puts its rows of the global batch on its devices; process 0 writes the files, its
  checkpoints holding every process's input position;
- portable checkpoints (electra_tf2/checkpoints/portable.py) that every
  TensorFlow tool reads; resume after SIGTERM or kill -9 continues bit for bit;
- progress lines, `train_metrics.jsonl` and TensorBoard event files
  (electra_tf2/training/summaries.py);
- `--attention-kernel cudnn` (an NVIDIA GPU, bfloat16): each layer's attention and its
  dropout in cuDNN's fused kernel (electra_tf2/layers/fused_attention.py: other masks,
  so that option's resume is not bit-identical).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import keras
import numpy as np

from electra_tf2.models import optimization
from electra_tf2.utils import run_lock
from electra_tf2.checkpoints import directories, portable
from electra_tf2.pretraining import objectives, state as pretraining_state
from electra_tf2.config.pretraining import PretrainingConfig
from electra_tf2.data_io.background import BackgroundReader, put_ahead
from electra_tf2.data_io.pretraining import PretrainingDataReader
from electra_tf2.layers.transformer import TransformerLayer
from electra_tf2.utils.errors import ElectraError
from electra_tf2.config.hparams import ConfigError
from electra_tf2.checkpoints.directories import (PRETRAIN_CONFIG_FILE,
                                                 read_saved_pretraining_config)
from electra_tf2.models.model_directory import check_same_architecture
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.training import loop as loop_lib, multihost
from electra_tf2.training.options import RunOptions
from electra_tf2.training.progress import ProgressLogger

METRICS_FILE = "train_metrics.jsonl"


class JaxTrainingError(ElectraError, ValueError):
  """A JAX pre-training run that cannot start as asked; the message says what to do."""


def check_backend() -> None:
  if keras.backend.backend() != "jax":
    raise JaxTrainingError(f"the JAX trainer needs the Keras JAX backend, but Keras runs on "
                           f"{keras.backend.backend()!r}: set KERAS_BACKEND=jax before Python "
                           "starts (electra pretrain --backend jax does)")


class JaxPretrainingRun:
  """The model, optimizer, compiled step and data of one JAX pre-training run."""

  def __init__(self, config: PretrainingConfig, options: RunOptions = RunOptions(backend="jax")):
    check_backend()
    import jax  # pylint: disable=g-import-not-at-top
    self.config = config
    self.options = options
    self.accumulation = config.gradient_accumulation_steps
    if options.mixed_precision not in ("float32", "mixed_bfloat16"):
      raise JaxTrainingError(f"--mixed-precision {options.mixed_precision}: the JAX trainer "
                             "takes float32 or mixed_bfloat16 (bfloat16 needs no loss scaling)")
    if options.attention_kernel == "cudnn":
      check_cudnn_attention(options)
    devices = jax.devices()  # every process's
    # The micro-batch of all devices: the sharded batch runs as one program.
    self.micro_batch = len(devices) * loop_lib.micro_batch_size(
        config.train_batch_size, len(devices), self.accumulation, "train_batch_size")
    self.distribution = (keras.distribution.DataParallel(devices=devices)
                         if len(devices) > 1 else None)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(options.mixed_precision)
    try:
      with self._scope():
        keras.utils.set_random_seed(config.seed)
        self.model = ElectraPretrainer.from_pretraining_config(config)
        self.optimizer = optimization.pretraining_optimizer(config, self.model)
        self.optimizer.build(self.model.trainable_variables)
    finally:
      keras.mixed_precision.set_global_policy(previous)
    if options.attention_kernel == "cudnn":
      use_cudnn_attention(self.model)
    # Where each carried value lives (replicated over the devices under DataParallel). The
    # step's new state is pinned to the same places: left to the compiler, its output
    # shardings differ from the variables', and the second step compiles the program again.
    self.state_shardings = (jax.tree_util.tree_map(lambda x: x.sharding, self.state())
                            if self.distribution else None)
    self.step_function = jax.jit(self._train_step, donate_argnums=(0,))
    self._donated = None  # the state the last `step` took (see there)

  def learning_rate(self, step: int) -> float:
    """The schedule's rate at `step` (the Keras counter is carried in the step's state)."""
    return float(self.optimizer._learning_rate(step))  # pylint: disable=protected-access

  def _scope(self):
    import contextlib  # pylint: disable=g-import-not-at-top
    return self.distribution.scope() if self.distribution else contextlib.nullcontext()

  # -- the step -----------------------------------------------------------------

  def state(self):
    """(trainable, non-trainable, optimizer) variable values, the step's carried state."""
    return ([v.value for v in self.model.trainable_variables],
            [v.value for v in self.model.non_trainable_variables],
            [v.value for v in self.optimizer.variables])

  def assign_state(self, state) -> None:
    """Writes the step's state back into the Keras variables (before saving)."""
    for variables, values in zip((self.model.trainable_variables,
                                  self.model.non_trainable_variables, self.optimizer.variables),
                                 state):
      for variable, value in zip(variables, values):
        variable.assign(value)

  def _train_step(self, state, batch: Dict[str, Any], step):
    """One optimizer step over the accumulation micro-batches of `batch` ([global, len])."""
    import jax  # pylint: disable=g-import-not-at-top
    trainable, non_trainable, optimizer_values = state
    size = self.micro_batch
    micro = [{k: v[i * size:(i + 1) * size] for k, v in batch.items()}
             for i in range(self.accumulation)]
    local = [objectives.loss_denominators(self.config, f) for f in micro]
    denominators = {k: sum(d[k] for d in local) for k in local[0]}

    def loss(trainable, non_trainable, features, seed):
      outputs, non_trainable = self.model.stateless_call(
          trainable, non_trainable, features, training=True, seed=seed,
          denominators=denominators)
      stats = objectives.metric_statistics(outputs)
      losses = {k: outputs[k] for k in loop_lib.LOSS_NAMES if k in outputs}
      return outputs["total_loss"], (losses, stats, non_trainable)

    grads_sum, losses_sum, stats_sum = None, {}, {}
    for i, features in enumerate(micro):
      seed = loop_lib.step_seed(step, i, self.config.seed)
      grads, (losses, stats, non_trainable) = jax.grad(loss, has_aux=True)(
          trainable, non_trainable, features, seed)
      grads_sum = grads if grads_sum is None else [a + b for a, b in zip(grads_sum, grads)]
      losses_sum = {k: losses_sum.get(k, 0.0) + v for k, v in losses.items()}
      stats_sum = {k: stats_sum.get(k, 0.0) + v for k, v in stats.items()}
    trainable, optimizer_values = self.optimizer.stateless_apply(
        optimizer_values, grads_sum, trainable)
    state = (trainable, non_trainable, optimizer_values)
    if self.state_shardings is not None:
      state = jax.lax.with_sharding_constraint(state, self.state_shardings)
    return state, losses_sum, stats_sum

  def step(self, state, batch: Dict[str, Any], step: int):
    """`step_function` on `state`, which it donates: (the new state, losses, statistics).
    `state`'s arrays are dropped at the next call, not here: dropping an array that a
    running step took waits for that step to end, so dropping them at once would hold the
    host until every step ends, the devices idle while it takes the next batch; one step
    later, the next step is already queued behind it."""
    result = self.step_function(state, batch, np.int32(step))
    self._donated = state  # the previous call's state goes: its step ends before this one
    return result

  def put(self, batch: Dict[str, np.ndarray]):
    """This process's rows of the global batch (`[global / processes, len]` each) on its
    devices, as the global batch sharded over every device with DataParallel (in the order
    of the devices: process 0's rows first where its devices come first); the copy runs
    while the host goes on."""
    import jax  # pylint: disable=g-import-not-at-top
    if self.distribution is None:
      return jax.device_put(batch)
    return {k: jax.make_array_from_process_local_data(
        self.distribution.get_data_layout(v.shape).backend_layout, v) for k, v in batch.items()}

  # -- checkpoints ----------------------------------------------------------------

  def save(self, state, step: int, reader_state: Dict[str, Any]) -> Optional[str]:
    """Writes a portable checkpoint with the input position after the last batch taken
    (`PretrainingDataReader.state()`): process 0's as `reader`; with several processes,
    every one's as `readers` (by process index; gathered, so every process calls this),
    and process 0 writes."""
    import jax  # pylint: disable=g-import-not-at-top
    self.assign_state(state)
    readers = multihost.gather_json(reader_state) if jax.process_count() > 1 else None
    if jax.process_index() != 0:
      return None
    arrays, extra = pretraining_state.arrays_of(self.model, self.optimizer, step)
    extra.update(reader=reader_state, backend="jax")
    if readers is not None:
      extra.update(readers=readers)
    return portable.save(self.config.model_dir, step, arrays, extra,
                         keep=self.config.keep_checkpoint_max or None)

  def restore(self, path: str, reader: Optional[PretrainingDataReader]) -> int:
    """Loads a portable checkpoint (weights, Adam slots, step, this process's input
    position)."""
    import jax  # pylint: disable=g-import-not-at-top
    step, extra = loop_lib.restore_portable(self.model, self.optimizer, path)
    if reader is None:
      return step
    own, afresh = multihost.own_reader_state(extra, jax.process_index(), jax.process_count(),
                                             portable.state_path(path))
    if own is None:
      print(afresh, flush=True)
      return step
    try:
      reader.restore(own)
    except ElectraError as e:
      print(f"the input stream starts afresh ({e})", flush=True)
    return step


def check_cudnn_attention(options: RunOptions) -> None:
  """One line where `--attention-kernel cudnn` cannot run: no GPU, or not bfloat16."""
  import jax  # pylint: disable=g-import-not-at-top
  if jax.default_backend() != "gpu":
    raise JaxTrainingError(f"--attention-kernel cudnn needs an NVIDIA GPU, but JAX runs on "
                           f"{jax.default_backend()}: leave the flag out")
  if options.mixed_precision != "mixed_bfloat16":
    raise JaxTrainingError(f"--attention-kernel cudnn runs in bfloat16: add --mixed-precision "
                           f"mixed_bfloat16 (not {options.mixed_precision})")


def use_cudnn_attention(model: keras.Model) -> int:
  """Runs every `TransformerLayer` of `model` by cuDNN's fused attention, each layer with
  its own dropout seed (0, 1, ... in layer order: one seed at two layers would drop the
  same positions in both); the number of layers."""
  layers = [layer for layer in model._flatten_layers()  # pylint: disable=protected-access
            if isinstance(layer, TransformerLayer)]
  for seed, layer in enumerate(layers):
    layer.cudnn_seed = seed
  return len(layers)


def _start(run: JaxPretrainingRun, reader: PretrainingDataReader) -> int:
  """Restores the newest checkpoint (a portable one; a newer TensorFlow one is refused in
  one line) or `init_checkpoint`; the step to start at."""
  config = run.config
  newest = directories.newest_checkpoint(config.model_dir, prefer=directories.PORTABLE)
  if newest is not None and newest.format == directories.TENSORFLOW:
    older = f", newer than {os.path.basename(newest.passed_over)}" if newest.passed_over else ""
    raise JaxTrainingError(
        f"{config.model_dir}'s newest checkpoint is the TensorFlow {newest.path} (step "
        f"{newest.step}{older}): run `electra convert to-portable --model-dir "
        f"{config.model_dir}` where TensorFlow is installed, then resume on JAX")
  if newest is not None:
    if os.path.exists(os.path.join(config.model_dir, PRETRAIN_CONFIG_FILE)):  # each size named
      saved = read_saved_pretraining_config(config.model_dir, ("model_size",))
      check_same_architecture(config, saved)
    newest.announce()
    step = run.restore(newest.path, reader)
    print(f"resumed from {newest.path} at step {step}", flush=True)
    return step
  if config.init_checkpoint:
    init = loop_lib.start_from_init_checkpoint(run.model, config.init_checkpoint)
    print(loop_lib.init_message(init), flush=True)
  return 0


def train(config: PretrainingConfig, options: RunOptions = RunOptions(backend="jax")
          ) -> Dict[str, Any]:
  """Trains to num_train_steps on JAX, resuming from model_dir's latest portable checkpoint."""
  if not config.do_train:
    raise JaxTrainingError("the JAX trainer trains (do_train); evaluate on the TensorFlow "
                           "backend (electra pretrain without --backend jax, do_eval)")
  multihost.initialize(options.cluster)  # before JAX computes anything
  loop_lib.check_vocabulary(config)  # before anything is written or compiled
  import jax  # pylint: disable=g-import-not-at-top
  with multihost.failing_together(config.model_dir):
    # Process 0 writes the directory (a lock held by every process would refuse the others).
    with (run_lock.hold(config.model_dir) if jax.process_index() == 0
          else contextlib.nullcontext()):
      return _train(config, options)


def _train(config: PretrainingConfig, options: RunOptions) -> Dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  start_time = time.time()
  hosts, chief = jax.process_count(), jax.process_index() == 0
  if config.train_batch_size % hosts:
    raise ConfigError(f"train_batch_size {config.train_batch_size} does not split over {hosts} "
                      "hosts")
  reader = PretrainingDataReader(config.pretrain_tfrecords, config.max_seq_length,
                                 config.train_batch_size // hosts, seed=config.seed,
                                 process_index=jax.process_index(), process_count=hosts)
  run = JaxPretrainingRun(config, options)
  start_step = _start(run, reader)
  if chief:  # process 0 writes the files; every process prints its progress lines
    loop_lib.write_run_files(config)
  progress = ProgressLogger(config.num_train_steps, start_step,
                            os.path.join(config.model_dir, "train") if chief else None,
                            config.max_seq_length)
  schedule = loop_lib.Schedule(start_step, config.num_train_steps, 1,
                               options.log_every or config.iterations_per_loop,
                               config.save_checkpoints_steps, config.train_batch_size,
                               log_first_step=True)
  with BackgroundReader(reader) as background:
    result = loop_lib.run_training_loop(
        _loop(run, put_ahead(background, run.put), reader.state(), progress, start_step),
        schedule, progress)
  summary = loop_lib.run_summary(config, result, progress.elapsed,
                                 portable.latest(config.model_dir), backend="jax",
                                 devices=len(jax.devices()), processes=hosts)
  if chief:
    loop_lib.write_summary(config, summary)
  print(f"done in {time.time() - start_time:.1f}s", flush=True)
  return summary


def _loop(run: JaxPretrainingRun, batches: Iterator[Tuple[Any, Dict[str, Any]]],
          reader_state: Dict[str, Any], progress: ProgressLogger, start_step: int
          ) -> loop_lib.Loop:
  """One compiled step a chunk, its results left on the devices until a line or a save.
  `batches` gives (a batch on the devices, the input state after it), from `reader_state`
  on: a save records the state of the last batch taken. Several processes stop at a step
  they agree on, and process 0 writes the metrics."""
  import jax  # pylint: disable=g-import-not-at-top
  carried = {"state": run.state(), "step": start_step, "reader": reader_state}

  def run_steps(n: int):
    assert n == 1  # the schedule's steps_per_loop
    batch, carried["reader"] = next(batches)
    carried["state"], losses, stats = run.step(carried["state"], batch, carried["step"])
    carried["step"] += 1
    return losses, stats

  return loop_lib.Loop(
      run_steps=run_steps, losses_of=lambda pending: loop_lib.mean_losses(
          _fetch([p[0] for p in pending])),
      save=lambda step: run.save(carried["state"], step, carried["reader"]),
      learning_rate=run.learning_rate, where=run.config.model_dir, sync_every_chunk=False,
      on_results=(lambda step, pending, losses: _write_metrics(run, progress, step, pending,
                                                               losses))
      if jax.process_index() == 0 else None,
      stop_requested=multihost.stop_agreed if jax.process_count() > 1 else None)


def _fetch(results: List[Dict[str, Any]]) -> List[Dict[str, np.ndarray]]:
  """The steps' results from the devices in one transfer (`jax.device_get` of the whole
  list), not one per value: the device waits while the host reads them."""
  import jax  # pylint: disable=g-import-not-at-top
  return jax.device_get(results)


def _write_metrics(run: JaxPretrainingRun, progress: ProgressLogger, step: int, pending: List,
                   losses: Dict[str, float]) -> None:
  """The training metrics of the pending steps to `train_metrics.jsonl` and TensorBoard."""
  metrics = objectives.MetricAccumulator()
  for stats in _fetch([p[1] for p in pending]):
    metrics.update(stats)
  results = metrics.result()
  progress.write_summaries(step, results, prefix="train_metrics/")
  line = json.dumps({"step": step, **losses, **{f"train_metrics/{k}": v
                                               for k, v in results.items()}})
  with open(os.path.join(run.config.model_dir, METRICS_FILE), "a", encoding="utf-8") as f:
    f.write(line + "\n")
