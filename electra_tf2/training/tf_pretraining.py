"""The pre-training driver: strategy, model, optimizer, checkpoints, train and eval loops.

`run_pretraining(config, options)` is what `run_pretraining.py` calls:

- builds the strategy and the precision policy, then, inside the strategy
  scope, the `ElectraPretrainer` and the official optimizer (built before
  the first step, which Keras 3 needs under MirroredStrategy);
- restores the latest checkpoint of `model_dir` (model, optimizer, step, the
  dropout RNG states and the input iterator), so a resumed run continues the
  same data stream;
- runs `iterations_per_loop` steps per compiled loop, each step over
  `gradient_accumulation_steps` micro-batches whose losses share the global
  batch's denominators, so accumulation and replicas give the gradient of one
  device running the whole batch;
- logs progress, writes TensorBoard summaries and checkpoints every
  `save_checkpoints_steps`, and on SIGTERM/SIGINT saves and returns cleanly;
- `do_eval` runs `num_eval_steps` batches and writes every official metric.

Randomness: masking and sampling use stateless seeds made of (step, shard,
config.seed), where the shard is `replica * accumulation_steps + micro_batch`.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional, Tuple

import keras
import tensorflow as tf

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.models import optimization
from electra_tf2.utils import run_lock
from electra_tf2.networks import variable_names
from electra_tf2.conversion import convert
from electra_tf2.data_io import input_pipeline, tfrecord
from electra_tf2.pretraining import objectives
from electra_tf2.text import description as tokenizer_description
from electra_tf2.utils.atomic_io import is_remote, write_json_atomic, write_text_atomic
from electra_tf2.checkpoints import directories
from electra_tf2.config.pretraining import PretrainingConfig
from electra_tf2.config.hparams import ConfigError
from electra_tf2.checkpoints.directories import (PRETRAIN_CONFIG_FILE,
                                                 read_saved_pretraining_config)
from electra_tf2.models.model_directory import check_same_architecture
from electra_tf2.models.pretrainer import ElectraPretrainer
from electra_tf2.training import distribution
from electra_tf2.training.options import RunOptions
from electra_tf2.training import loop as loop_lib
from electra_tf2.training.loss_scale import scaled_loss, with_loss_scaling
from electra_tf2.training.progress import ProgressLogger

# The hparams the saved input-pipeline position depends on: when one of them
# changes, a resumed run restores everything else and starts the stream afresh
# (the official Estimator kept no input position at all).
INPUT_HPARAMS = ("train_batch_size", "gradient_accumulation_steps", "max_seq_length",
                 "pretrain_tfrecords")


def _comparable(value: Any) -> Any:
  """An INPUT_HPARAMS value as compared on resume: a local path made absolute (a moved
  run names its data by another relative path)."""
  if isinstance(value, str) and not is_remote(value):
    return os.path.abspath(value)
  return value


class PretrainingRun:
  """Everything one pre-training (or pre-training eval) run holds."""

  def __init__(self, config: PretrainingConfig, options: RunOptions = RunOptions(),
               strategy: Optional[tf.distribute.Strategy] = None):
    self.config = config
    self.options = options
    self.strategy = strategy or distribution.strategy_for(config, options)
    self.is_chief = distribution.is_chief(self.strategy)
    self.accumulation = config.gradient_accumulation_steps
    self.num_replicas = self.strategy.num_replicas_in_sync
    what = "train_batch_size" if config.do_train else "eval_batch_size"
    self.micro_batch = loop_lib.micro_batch_size(getattr(config, what), self.num_replicas,
                                                 self.accumulation, what)
    resolver = getattr(self.strategy, "cluster_resolver", None)
    self.num_workers, self.worker_id = 1, 0
    if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy) and resolver:
      self.num_workers = self.strategy.extended._num_workers  # pylint: disable=protected-access
      self.worker_id = resolver.task_id if resolver.task_type != "chief" else 0
    self.local_replicas = self.num_replicas // self.num_workers

    with self.strategy.scope(), distribution.precision_policy(options.mixed_precision):
      keras.utils.set_random_seed(config.seed)
      self.model = ElectraPretrainer.from_pretraining_config(config)
      self.variable_names = variable_names.pretrainer_variable_map(self.model)
      self.optimizer = optimization.pretraining_optimizer(config, self.model)
      self.base_optimizer = self.optimizer
      self.optimizer = with_loss_scaling(self.optimizer, options.mixed_precision)
      self.optimizer.build(self.model.trainable_variables)
      self.global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step",
                                     aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self._compute_gradients = tf.function(self._forward_backward,
                                          jit_compile=options.jit_compile)
    self._rng_states = tf.Module()
    self._rng_states.states = {f"s{i}": v for i, v in enumerate(self.model.non_trainable_variables)
                               if "seed_generator" in v.path}

  # -------------------------------------------------------------------------
  # Data
  # -------------------------------------------------------------------------

  def _worker_iterator(self, is_training: bool) -> tf.data.Iterator:
    """A plain (checkpointable) iterator over this worker's batches.

    Each batch holds `micro_batch` rows for every local replica; `_distribute`
    hands replica r rows [r * micro_batch, (r + 1) * micro_batch). So replicas
    see the same rows that one device would see over consecutive micro-batches.
    """
    context = tf.distribute.InputContext(num_input_pipelines=self.num_workers,
                                         input_pipeline_id=self.worker_id,
                                         num_replicas_in_sync=self.num_replicas)
    dataset = input_pipeline.input_fn(self.config, is_training,
                                     self.micro_batch * self.local_replicas, context,
                                     deterministic=self.config.deterministic)
    return iter(dataset)

  def _distribute(self, batch: Dict[str, tf.Tensor]):
    """Splits a worker batch into per-replica values (see `_worker_iterator`)."""
    size = self.micro_batch

    def replica_rows(context: tf.distribute.ValueContext) -> Dict[str, tf.Tensor]:
      local = context.replica_id_in_sync_group % self.local_replicas
      return {k: v[local * size:(local + 1) * size] for k, v in batch.items()}
    return self.strategy.experimental_distribute_values_from_function(replica_rows)

  # -------------------------------------------------------------------------
  # Steps
  # -------------------------------------------------------------------------

  def _seed(self, shard: tf.Tensor, draw: Optional[tf.Tensor] = None) -> tf.Tensor:
    """The `[2]` masking/sampling seed of one shard of a training step or eval batch.

    draw: the step (default: the global step); eval batch i passes -1 - i, a
    stream of its own, so every eval batch gets fresh masks and samples (the
    official code draws anew for each batch) and evaluation stays reproducible.
    """
    return loop_lib.step_seed(self.global_step if draw is None else draw, shard,
                              self.config.seed)

  def _replica_train_step(self, micro_batches: List[Dict[str, tf.Tensor]]) -> Dict[str, tf.Tensor]:
    """One optimizer step on this replica: accumulate the micro-batches' gradients."""
    context = tf.distribute.get_replica_context()
    replica = tf.cast(context.replica_id_in_sync_group, tf.int32)
    local = [objectives.loss_denominators(self.config, f) for f in micro_batches]
    denominators = {k: context.all_reduce(tf.distribute.ReduceOp.SUM,
                                          tf.add_n([d[k] for d in local])) for k in local[0]}
    variables = self.model.trainable_variables
    grads_sum, losses_sum = None, {}
    for i, features in enumerate(micro_batches):
      grads, losses = self._compute_gradients(
          features, self._seed(replica * self.accumulation + i), denominators)
      grads_sum = grads if grads_sum is None else [
          optimization.add_gradients(a, b) for a, b in zip(grads_sum, grads)]
      losses_sum = {k: losses_sum.get(k, 0.0) + v for k, v in losses.items()}
    self.optimizer.apply(grads_sum, variables)
    return losses_sum

  def _forward_backward(self, features, seed, denominators):
    with tf.GradientTape() as tape:
      outputs = self.model(features, training=True, seed=seed, denominators=denominators)
      loss = scaled_loss(self.optimizer, outputs["total_loss"])
    # Sparse (IndexedSlices) gradients stay sparse: see optimization.py on clipping.
    grads = tape.gradient(loss, self.model.trainable_variables)
    stats = {f"metric/{k}": v for k, v in objectives.metric_statistics(outputs).items()}
    return grads, {**{k: outputs[k] for k in loop_lib.LOSS_NAMES if k in outputs}, **stats}

  def train_step(self, micro_batches: List[Dict[str, Any]]) -> Dict[str, tf.Tensor]:
    """One optimizer step over `gradient_accumulation_steps` micro-batches.

    Each micro-batch is a features dict of per-replica values (or plain
    tensors on one device). Returns the global-batch losses; call it inside a
    `tf.function`.
    """
    per_replica = self.strategy.run(self._replica_train_step, args=(micro_batches,))
    self.global_step.assign_add(1)
    return {k: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, None)
            for k, v in per_replica.items()}

  def _build_train_loop(self):
    @tf.function
    def train_loop(iterator, num_steps: tf.Tensor) -> Dict[str, tf.Tensor]:
      """Runs num_steps steps; returns mean losses and summed metric statistics."""
      def step():
        return self.train_step(
            [self._distribute(next(iterator)) for _ in range(self.accumulation)])
      totals = step()
      for _ in tf.range(num_steps - 1):
        totals = {k: v + w for (k, v), w in zip(totals.items(), step().values())}
      return {k: v if k.startswith("metric/") else v / tf.cast(num_steps, tf.float32)
              for k, v in totals.items()}
    return train_loop

  # -------------------------------------------------------------------------
  # Checkpoints
  # -------------------------------------------------------------------------

  def _checkpoint(self, iterator=None) -> tf.train.Checkpoint:
    """Model, optimizer, step and dropout RNG, plus the input position if given."""
    extra = {"iterator": iterator} if iterator is not None else {}
    return tf.train.Checkpoint(model=self.model, optimizer=self.optimizer,
                               global_step=self.global_step, rng=self._rng_states, **extra)

  def _checkpoint_manager(self, iterator) -> tf.train.CheckpointManager:
    checkpoint = self._checkpoint(iterator)
    directory = distribution.checkpoint_dir(self.strategy, self.config.model_dir)
    return tf.train.CheckpointManager(checkpoint, directory,
                                      max_to_keep=self.config.keep_checkpoint_max or None,
                                      step_counter=self.global_step, checkpoint_name="ckpt")

  def _check_saved_config(self) -> List[str]:
    """Compares the config of the run that wrote model_dir (if it left one) with this one.

    Raises ConfigError for another model shape; returns the INPUT_HPARAMS that
    changed (the saved input position then no longer fits).
    """
    config = self.config
    if not tf.io.gfile.exists(os.path.join(config.model_dir, PRETRAIN_CONFIG_FILE)):
      return []
    saved = read_saved_pretraining_config(config.model_dir, INPUT_HPARAMS)
    check_same_architecture(config, saved)
    return [f"{key} {saved[key]} -> {getattr(config, key)}" for key in INPUT_HPARAMS
            if _comparable(saved[key]) != _comparable(getattr(config, key))]

  def _restore(self, checkpoint: tf.train.Checkpoint, path: str, partial: bool = False) -> None:
    """Restores `path` into `checkpoint`; one ModelDirectoryError if it does not fit or is
    damaged."""
    tf_checkpoint.restore(
        checkpoint, path, partial=partial,
        mismatch_hint=f": pass the hparams it was written with (see {PRETRAIN_CONFIG_FILE}), or "
        "set \"model_dir\" in --hparams to start a new model elsewhere")

  def _restore_input_position(self, iterator, path: str) -> bool:
    """Restores the input position saved in `path` into `iterator`. False if the files it
    names are gone (the data moved with its run, or the run goes on from another working
    directory): the input stream then starts afresh, said in one line."""
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    try:
      checkpoint.read(path).expect_partial()
    except tf.errors.NotFoundError as e:
      print("the input stream starts afresh (the saved input position names files that are "
            f"gone: {tf_checkpoint.first_line(e.message)})", flush=True)
      return False
    except tf.errors.OpError:
      self._restore(checkpoint, path, partial=True)  # a damaged file, named in one line
      raise
    return True

  def _schedule_from_global_step(self, restored: str) -> None:
    """Sets the optimizer's step counter, which the learning-rate schedule reads, to global_step.

    port: the official schedule reads `global_step` (model/optimization.py:35-44).
    A checkpoint without optimizer state (one converted by `convert to-tf2`,
    such as a released model) leaves Keras' counter at 0 while global_step is,
    say, 4,000,000: without this the schedule would warm up again.
    """
    step = int(self.global_step.numpy())
    if not tf_checkpoint.holds_optimizer_state(restored):
      print(loop_lib.fresh_slots_message(restored, step), flush=True)
    self.base_optimizer.iterations.assign(step)

  def _restore_portable(self, path: str) -> None:
    """Continues a run from a portable checkpoint (a JAX run's, newer than any `ckpt-N`):
    weights, Adam slots, step and schedule; the input stream starts afresh."""
    step, _ = loop_lib.restore_portable(self.model, self.base_optimizer, path)
    self.global_step.assign(step)
    print(f"resumed from {path} (a portable checkpoint) at step {step}; the input stream "
          "starts afresh", flush=True)

  # -------------------------------------------------------------------------
  # Train
  # -------------------------------------------------------------------------

  def train(self) -> Dict[str, Any]:
    """Trains to num_train_steps (resuming if model_dir holds a checkpoint), holding the
    run lock of this process's checkpoint directory."""
    own_dir = distribution.checkpoint_dir(self.strategy, self.config.model_dir)
    with run_lock.hold(own_dir), distribution.op_determinism(self.config.deterministic):
      return self._train()

  def _train(self) -> Dict[str, Any]:
    config = self.config
    start_step, iterator, manager = self._start()
    if self.is_chief:
      loop_lib.write_run_files(config)
    summary_dir = os.path.join(config.model_dir, "train") if self.is_chief else None
    progress = ProgressLogger(config.num_train_steps, start_step, summary_dir,
                              config.max_seq_length)
    result = loop_lib.run_training_loop(self._loop(iterator, manager, progress),
                                        self._schedule(start_step), progress)
    summary = loop_lib.run_summary(config, result, progress.elapsed, manager.latest_checkpoint,
                                   num_replicas=self.num_replicas)
    if self.is_chief:
      loop_lib.write_summary(config, summary)
    return {**summary, "history": result.history}

  def _start(self) -> Tuple[int, Any, tf.train.CheckpointManager]:
    """Restores the newest checkpoint: this process's latest `ckpt-N` (with the input
    position where it still fits), or a portable one of a higher step (a JAX run's), else
    `init_checkpoint`; `(start step, iterator, manager)`."""
    config = self.config
    iterator = self._worker_iterator(is_training=True)
    # This process's own checkpoints (other workers keep theirs apart: their
    # iterator states differ). A worker without any (one added to the cluster)
    # takes the chief's, but not its input position, so all replicas agree.
    own_dir = distribution.checkpoint_dir(self.strategy, config.model_dir)
    restored = tf_checkpoint.latest_checkpoint(own_dir)
    changes: List[str] = []
    if restored is None and own_dir != config.model_dir:
      restored = tf_checkpoint.latest_checkpoint(config.model_dir)
      changes = ["this worker has no checkpoint of its own"] if restored else []
    newer = self._newer_portable(restored)
    manager = self._checkpoint_manager(iterator)
    if newer:
      self._check_saved_config()
      self._restore_portable(newer)
    elif restored:
      iterator, manager = self._resume(restored, changes, iterator, manager)
    elif config.init_checkpoint:
      path = convert.load_pretrainer_weights(self.model, config, config.init_checkpoint)
      print(loop_lib.init_message(path), flush=True)
    start_step = int(self.global_step.numpy())
    if restored and not newer:
      print(f"resumed from {restored} at step {start_step}", flush=True)
      self._schedule_from_global_step(restored)
    if start_step >= config.num_train_steps:
      print(f"nothing to train: the model is at step {start_step} and num_train_steps is "
            f"{config.num_train_steps}; raise num_train_steps to train on", flush=True)
    return start_step, iterator, manager

  def _newer_portable(self, restored: Optional[str]) -> Optional[str]:
    """The model directory's newest checkpoint where it is a portable one of a higher step
    than `restored` (a JAX run that went on), else None; names what is taken where the
    directory holds both formats."""
    newest = directories.newest_checkpoint(self.config.model_dir)
    if newest is None:
      return None
    newest.announce()
    if newest.format != directories.PORTABLE:
      return None
    if restored and directories.checkpoint_step(restored) >= newest.step:
      return None
    return newest.path

  def _resume(self, restored: str, changes: List[str], iterator, manager):
    """Restores `restored` (a `ckpt-N`) with the input position where it still fits;
    `(iterator, manager)`, fresh ones where the position could not be restored."""
    changes = self._check_saved_config() + changes
    if changes:  # the saved input position no longer fits: restore everything else
      print(f"the input stream starts afresh ({', '.join(changes)})", flush=True)
      self._restore(self._checkpoint(), restored, partial=True)
      return iterator, manager
    self._restore(self._checkpoint(), restored, partial=True)
    if not self._restore_input_position(iterator, restored):
      iterator = self._worker_iterator(is_training=True)  # the failed one is spent
      manager = self._checkpoint_manager(iterator)
    return iterator, manager

  def _schedule(self, start_step: int) -> loop_lib.Schedule:
    config = self.config
    return loop_lib.Schedule(start_step, config.num_train_steps, config.iterations_per_loop,
                             self.options.log_every or config.iterations_per_loop,
                             config.save_checkpoints_steps, config.train_batch_size)

  def _loop(self, iterator, manager: tf.train.CheckpointManager,
            progress: ProgressLogger) -> loop_lib.Loop:
    """The compiled chunks of steps on `iterator`; their training metrics written at each
    progress line."""
    train_loop = self._build_train_loop()
    metrics = objectives.MetricAccumulator()  # the training batches since the last line

    def accumulate(step, pending, losses):
      metrics.update({k[len("metric/"):]: v for k, v in pending[-1].items()
                      if k.startswith("metric/")})

    def write_metrics(step):
      nonlocal metrics
      progress.write_summaries(step, metrics.result(), prefix="train_metrics/")
      metrics = objectives.MetricAccumulator()

    return loop_lib.Loop(
        run_steps=lambda n: train_loop(iterator, tf.constant(n)),
        losses_of=lambda pending: loop_lib.ordered_losses(
            {k: float(v) for k, v in pending[-1].items() if not k.startswith("metric/")}),
        save=lambda step: tf_checkpoint.save(manager, step),
        learning_rate=lambda step: float(self.base_optimizer.learning_rate),
        where=manager.directory, on_results=accumulate, on_log=write_metrics)

  # -------------------------------------------------------------------------
  # Eval
  # -------------------------------------------------------------------------

  def evaluate(self, checkpoint_path: Optional[str] = None) -> Dict[str, float]:
    """The official eval metrics over num_eval_steps batches.

    checkpoint_path: a `ckpt-N` prefix; default the latest checkpoint of model_dir.
    """
    with distribution.op_determinism(self.config.deterministic):
      return self._evaluate(checkpoint_path)

  def _evaluate(self, checkpoint_path: Optional[str]) -> Dict[str, float]:
    config = self.config
    checkpoint = tf.train.Checkpoint(model=self.model, global_step=self.global_step)
    latest = checkpoint_path or tf_checkpoint.latest_checkpoint(config.model_dir)
    if latest is None:
      raise FileNotFoundError(f"no checkpoint in {config.model_dir} to evaluate; train first")
    self._check_saved_config()
    self._restore(checkpoint, latest, partial=True)

    def replica_eval(features, index):
      replica = tf.distribute.get_replica_context().replica_id_in_sync_group
      outputs = self.model(features, training=False, seed=self._seed(replica, -1 - index))
      stats = objectives.metric_statistics(outputs)
      stats.update(objectives.baseline_statistics(outputs, config.vocab_size))
      stats["loss"] = tf.reshape(outputs["total_loss"], [1])
      return stats

    @tf.function
    def eval_step(iterator, index):
      per_replica = self.strategy.run(replica_eval,
                                      args=(self._distribute(next(iterator)), index))
      return {k: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, None)
              for k, v in per_replica.items()}

    iterator = self._worker_iterator(is_training=False)
    accumulator = objectives.MetricAccumulator()
    loss_total = 0.0
    for index in range(config.num_eval_steps):
      stats = eval_step(iterator, tf.constant(index))
      loss_total += float(stats.pop("loss")[0]) / self.num_replicas
      accumulator.update(stats)
    results = accumulator.result()
    results["loss"] = loss_total / config.num_eval_steps
    results["global_step"] = int(self.global_step.numpy())
    if self.is_chief:
      baselines = objectives.trivial_baselines(accumulator.totals)
      results_dir = os.path.join(config.model_dir, "results")
      write_json_atomic(os.path.join(results_dir, "unsup_results.json"),
                        dict(results, trivial_baselines=baselines))
      text = "\n".join(f"{k} = {v}" for k, v in sorted(results.items())) + "\n"
      write_text_atomic(os.path.join(results_dir, "unsup_results.txt"), text)
      ProgressLogger(1, 0, os.path.join(config.model_dir, "eval"), config.max_seq_length
                     ).write_summaries(results["global_step"], results)
      print(objectives.describe_results(results, baselines), flush=True)
    return results


def validate_inputs(config: PretrainingConfig) -> None:
  """Fails before any heavy work on a missing data dir, vocab or mismatched TFRecords."""
  if config.data_dir is not None and not os.path.isdir(config.data_dir):
    raise input_pipeline.DataError(f"--data-dir {config.data_dir} does not exist")
  loop_lib.check_vocabulary(config)
  files = input_pipeline.check_tfrecords(config.pretrain_tfrecords or "", config.max_seq_length)
  for data_dir in sorted({os.path.dirname(f) for f in files}):
    data_tokenizer = tokenizer_description.read_description(data_dir, config.vocab_file,
                                                            config.do_lower_case)
    if data_tokenizer is not None and data_tokenizer.special_ids != config.special_ids:
      raise ConfigError(f"{data_dir}/{tokenizer_description.DESCRIPTION_FILE}: the TFRecords "
                        f"were built with {data_tokenizer.special_ids}, the config has "
                        f"{config.special_ids}: pass the vocab_file the data was built with")



def run_pretraining(config: PretrainingConfig, options: RunOptions = RunOptions()
                    ) -> Dict[str, Any]:
  """Trains or evaluates as the config says (exactly one of do_train / do_eval)."""
  start = time.time()
  # Multi-worker collectives must be set up before TensorFlow runs any op.
  strategy = distribution.strategy_for(config, options)
  validate_inputs(config)
  if config.do_train:
    warning = input_pipeline.mixing_warning(
        tfrecord.tfrecord_files(config.pretrain_tfrecords), config.train_batch_size)
    if warning and distribution.is_chief(strategy):
      print(warning, flush=True)
  run = PretrainingRun(config, options, strategy)
  try:
    result = run.train() if config.do_train else run.evaluate()
  except tf.errors.DataLossError as e:
    raise input_pipeline.corrupt_data_error(config.pretrain_tfrecords, e) from None
  print(f"done in {time.time() - start:.1f}s", flush=True)
  return result
