"""The fine-tuning driver: trials, training, evaluation, results and test outputs.

`run_finetuning(config, options)` is what run_finetuning.py calls
(official run_finetuning.py:230-301). For every trial t (1..num_trials, or
forever when negative):

1. `ModelRunner` builds the model with seed `seed + t - 1` (head
   initialisation, dropout, input shuffling) and copies the pre-trained
   discriminator from init_checkpoint into its `electra` encoder;
2. training (do_train) runs in a fresh `<model_dir>_<t>` with the official
   optimizer (warmup proportion, linear decay, layer-wise learning-rate
   decay, weight decay, global-norm clip 1.0) on the official summed loss,
   logging progress and TensorBoard summaries, checkpointing every
   save_checkpoints_steps and at the end;
3. evaluation (do_eval) scores the dev split of every task and appends
   {task: metrics} to the results; results_txt (official lines) and
   results_json (every trial plus mean/median/std per metric) are rewritten;
4. with write_test_outputs, the first n_writes_test trials write test
   predictions: raw outputs as JSON, GLUE server TSVs, SQuAD 2.0 answers.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import os
import shutil
import time
from typing import Any, Dict, List, Optional

import keras
import numpy as np
import tensorflow as tf

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.models import optimization
from electra_tf2.utils import run_lock
from electra_tf2.networks import variable_names
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.utils.atomic_io import write_json_atomic, write_text_atomic
from electra_tf2.tasks import classification
from electra_tf2.tasks.config import FinetuningConfig, GLUE_TASKS
from electra_tf2.tasks.preprocessing import Preprocessor
from electra_tf2.tasks.task import FinetuningDataError, Task
from electra_tf2.tasks.task_builder import check_vocab, get_tasks
from electra_tf2.models import finetuning as model_lib
from electra_tf2.checkpoints import describe as describe_lib
from electra_tf2.checkpoints.directories import (PRETRAIN_CONFIG_FILE, PretrainedModelError,
                                                 is_finetuned_model_dir)
from electra_tf2.training import distribution
from electra_tf2.training.options import RunOptions
from electra_tf2.training import loop as loop_lib
from electra_tf2.training.loss_scale import scaled_loss, with_loss_scaling
from electra_tf2.training.progress import ProgressLogger

TaskResults = Dict[str, float]


class ModelRunner:
  """One trial: a model, its training and its evaluation (official ModelRunner).

  Args:
    config: the resolved fine-tuning config.
    tasks: the tasks (shared across trials: examples and tokenizations are cached).
    trial: 1-based trial number; seed config.seed + trial - 1.
    strategy: the tf.distribute strategy.
    options: command-line run options (precision, jit, log interval).
  """

  def __init__(self, config: FinetuningConfig, tasks: List[Task], trial: int,
               strategy: tf.distribute.Strategy, options: RunOptions = RunOptions()):
    self.config = config
    self.tasks = tasks
    self.trial = trial
    self.seed = config.trial_seed(trial)
    self.strategy = strategy
    self.options = options
    self.model_dir = config.trial_model_dir(trial)
    self.is_chief = distribution.is_chief(strategy)
    self.preprocessor = Preprocessor(config, tasks)
    self.step = 0
    self._predict_steps = {}
    with strategy.scope(), distribution.precision_policy(options.mixed_precision):
      keras.utils.set_random_seed(self.seed)
      self.model = model_lib.build_model(config, [task.head_spec() for task in tasks])

  # -------------------------------------------------------------------------
  # Weights
  # -------------------------------------------------------------------------

  def load_pretrained(self) -> Optional[str]:
    """Copies the pre-trained encoder (init_checkpoint) into the model; None if unset."""
    if not self.config.init_checkpoint:
      print("init_checkpoint is null: fine-tuning from random initialisation", flush=True)
      return None
    path = model_lib.load_pretrained_encoder(self.model, self.config.init_checkpoint)
    print(f"initialised the encoder from {path}", flush=True)
    return path

  def restore(self) -> str:
    """Loads this trial's fine-tuned checkpoint (do_eval without do_train)."""
    latest = tf_checkpoint.latest_checkpoint(self.model_dir)
    if latest is None:
      raise FinetuningDataError(f"do_train is false but {self.model_dir} holds no fine-tuned "
                                "checkpoint to evaluate; train first")
    tf_checkpoint.restore(tf.train.Checkpoint(model=self.model), latest, partial=True,
                        match_existing=True,
                        mismatch_hint=": it was fine-tuned with other tasks or model hparams")
    self.step = int(latest.rsplit("-", 1)[-1])
    return latest

  # -------------------------------------------------------------------------
  # Training
  # -------------------------------------------------------------------------

  def _make_optimizer(self, num_train_steps: int):
    config = self.config
    optimizer = optimization.create_optimizer(
        learning_rate=config.learning_rate, num_train_steps=num_train_steps,
        weight_decay_rate=config.weight_decay_rate, warmup_proportion=config.warmup_proportion,
        layerwise_lr_decay_power=config.layerwise_lr_decay,
        n_transformer_layers=self.model.bert_config.num_hidden_layers,
        variable_name_fn=variable_names.official_name_fn(self.model.variable_map()),
        fix_layerwise_lr_off_by_one=config.fix_layerwise_lr_off_by_one)
    wrapped = with_loss_scaling(optimizer, self.options.mixed_precision)
    wrapped.build(self.model.trainable_variables)
    return wrapped, optimizer

  def train(self) -> Dict[str, Any]:
    """Fine-tunes from scratch in the trial's model directory; returns a summary."""
    config = self.config
    path, num_steps = self.preprocessor.prepare_train()
    if num_steps < 1:
      raise FinetuningDataError(
          f"{path} gives 0 training steps: fewer padded examples than train_batch_size "
          f"{config.train_batch_size} x num_train_epochs {config.num_train_epochs}")
    self.load_pretrained()  # first: a pre-trained model that fails to load loses nothing
    if self.is_chief and tf.io.gfile.exists(self.model_dir):
      print(f"replacing the previous fine-tuned model in {self.model_dir} (fine-tuning "
            "restarts from the pre-trained model, as in the official code)", flush=True)
      tf.io.gfile.rmtree(self.model_dir)
    with self.strategy.scope():
      optimizer, base_optimizer = self._make_optimizer(num_steps)
    batch_size = config.train_batch_size
    dataset = self.preprocessor.dataset(path, True, batch_size, seed=self.seed)
    iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
    global_step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    train_loop = self._build_train_loop(optimizer, batch_size, global_step)
    checkpoint = tf.train.Checkpoint(model=self.model, global_step=global_step)
    directory = distribution.checkpoint_dir(self.strategy, self.model_dir)
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=1,
                                         checkpoint_name="ckpt")
    if self.is_chief:
      model_lib.save_model_files(self.model, config, self.model_dir)
    print(f"training {config.tasks_str} (trial {self.trial}, seed {self.seed}) for "
          f"{num_steps} steps", flush=True)
    progress = ProgressLogger(num_steps, 0, os.path.join(self.model_dir, "train")
                              if self.is_chief else None, config.max_seq_length)
    loop = loop_lib.Loop(
        run_steps=lambda n: train_loop(iterator, tf.constant(n)),
        losses_of=lambda pending: {k: float(v) for k, v in pending[-1].items()},
        save=lambda step: tf_checkpoint.save(manager, step),
        learning_rate=lambda step: float(base_optimizer.learning_rate), where=manager.directory)
    schedule = loop_lib.Schedule(0, num_steps, config.iterations_per_loop,
                                 self.options.log_every or config.iterations_per_loop,
                                 config.save_checkpoints_steps, batch_size)
    result = loop_lib.run_training_loop(loop, schedule, progress)
    self.step = result.step
    return {"trial": self.trial, "seed": self.seed, "step": result.step,
            "num_train_steps": num_steps, "final_loss": result.losses["loss"],
            "stopped_early": result.stopped_early, "train_seconds": progress.elapsed,
            "checkpoint": manager.latest_checkpoint}

  def _build_train_loop(self, optimizer, global_batch_size: int, global_step: tf.Variable):
    model, strategy = self.model, self.strategy
    mean = self.config.loss_reduction == "mean"

    def forward_backward(features):
      with tf.GradientTape() as tape:
        outputs = model(features, training=True)
        loss = tf.reduce_sum(model.losses_per_example(features, outputs))
        if mean:
          loss /= global_batch_size
        scaled = scaled_loss(optimizer, loss)
      # The word-embedding gradient stays sparse, for the official clip norm.
      return tape.gradient(scaled, model.trainable_variables), loss
    compiled = tf.function(forward_backward, jit_compile=self.options.jit_compile)

    def replica_step(features):
      grads, loss = compiled(features)
      optimizer.apply(grads, model.trainable_variables)
      return loss

    @tf.function
    def train_loop(iterator, num_steps: tf.Tensor) -> Dict[str, tf.Tensor]:
      """num_steps steps; the mean loss."""
      total = tf.constant(0.0)
      for _ in tf.range(num_steps):
        per_replica = strategy.run(replica_step, args=(next(iterator),))
        total += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, None)
        global_step.assign_add(1)
      return {"loss": total / tf.cast(num_steps, tf.float32)}
    return train_loop

  # -------------------------------------------------------------------------
  # Prediction and evaluation
  # -------------------------------------------------------------------------

  def predict(self, task: Task, split: str, batch_size: int):
    """Yields, per batch, numpy dicts of `task`'s rows: the head's outputs, `loss`,
    `eid` and the task's other features without their `<task>_` prefix."""
    path, _ = self.preprocessor.prepare_predict([task], split, batch_size)
    dataset = self.preprocessor.dataset(path, False, batch_size)
    predict_step = self._predict_steps.get(task.name)
    if predict_step is None:
      predict_step = self._predict_steps[task.name] = self._build_predict_step(task)
    for features in dataset:
      outputs, task_ids = predict_step(features)
      rows = task_ids.numpy() == task.task_id
      if rows.any():
        yield {k: v.numpy()[rows] for k, v in outputs.items()}

  def _build_predict_step(self, task: Task):
    model, head, prefix = self.model, self.model.head(task.name), task.name + "_"

    @tf.function
    def predict_step(features):
      outputs = dict(model(features, training=False)[task.name])
      outputs["loss"] = head.loss(outputs, features)
      outputs.update({k[len(prefix):]: v for k, v in features.items() if k.startswith(prefix)})
      return outputs, features["task_id"]
    return predict_step

  def evaluate_task(self, task: Task, split: str = "dev"):
    """A scorer fed with the model's predictions on `split`."""
    scorer = task.get_scorer(split)
    for batch in self.predict(task, split, self.config.eval_batch_size):
      scorer.update(batch)
    return scorer

  def evaluate(self) -> Dict[str, TaskResults]:
    """{task: dev metrics} (also printed and written to TensorBoard)."""
    results = {}
    writer = ProgressLogger(1, 0, os.path.join(self.model_dir, "eval")
                            if self.is_chief else None, self.config.max_seq_length)
    for task in self.tasks:
      print(f"evaluating {task.name} (trial {self.trial})", flush=True)
      scorer = self.evaluate_task(task, "dev")
      results[task.name] = {k: float(v) for k, v in scorer.get_results().items()}
      print(f"{task.name}: {scorer.results_str()}", flush=True)
      writer.write_summaries(self.step, results[task.name], prefix=f"{task.name}/")
    return results

  # -------------------------------------------------------------------------
  # Test outputs
  # -------------------------------------------------------------------------

  def write_test_outputs(self) -> List[str]:
    """Writes test predictions (GLUE and SQuAD 2.0, as the official code); returns the paths."""
    config, written = self.config, []
    for task in self.tasks:
      if task.name in GLUE_TASKS:
        for split in task.get_test_splits():
          written += self._write_glue_test(task, split)
      elif task.name == "squad":
        scorer = self.evaluate_task(task, "test")
        predictions, null_odds = scorer.predictions()
        answers = {qid: "" if null_odds[qid] > config.qa_na_threshold else text
                   for qid, text in predictions.items()}
        path = config.test_predictions_path(task.name, "test", self.trial) + ".json"
        write_json_atomic(path, answers)
        written.append(path)
      else:
        print(f"skipping task {task.name}: writing test predictions is supported for GLUE "
              "and SQuAD 2.0 only", flush=True)
    return written

  def _write_glue_test(self, task: Task, split: str) -> List[str]:
    config, spec = self.config, task.head_spec()
    raw: Dict[int, Any] = {}
    labels: Dict[int, str] = {}
    for batch in self.predict(task, split, config.predict_batch_size):
      for row, eid in enumerate(batch["eid"]):
        if "logits" in batch:  # a classifier's; a regression head has its score alone
          raw[int(eid)] = [float(x) for x in batch["logits"][row]]
        else:
          raw[int(eid)] = float(batch["predictions"][row])
        labels[int(eid)] = classification.submission_label(spec, batch["predictions"][row])
    json_path = config.test_predictions_path(task.name, split, self.trial) + ".json"
    write_json_atomic(json_path, {str(k): v for k, v in sorted(raw.items())})
    written = [json_path]
    name = classification.submission_file_name(task.name, split)
    if name is not None:
      tsv_path = os.path.join(config.glue_submission_dir(self.trial), name + ".tsv")
      write_text_atomic(tsv_path, "index\tprediction\n" + "".join(
          f"{eid}\t{label}\n" for eid, label in sorted(labels.items())))
      written.append(tsv_path)
    print(f"wrote {len(raw)} {task.name} {split} predictions to {', '.join(written)}", flush=True)
    return written


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


def summarize(trials: List[Dict[str, TaskResults]]) -> Dict[str, Dict[str, Dict[str, float]]]:
  """{task: {metric: {mean, median, std, min, max, n}}} over trials (std with ddof=0)."""
  values: Dict[str, Dict[str, List[float]]] = collections.defaultdict(
      lambda: collections.defaultdict(list))
  for trial in trials:
    for task, metrics in trial.items():
      for name, value in metrics.items():
        values[task][name].append(value)
  return {task: {name: {"mean": float(np.mean(v)), "median": float(np.median(v)),
                        "std": float(np.std(v)), "min": float(np.min(v)),
                        "max": float(np.max(v)), "n": len(v)}
                 for name, v in metrics.items()}
          for task, metrics in values.items()}


def write_results(config: FinetuningConfig, trials: List[Dict[str, TaskResults]],
                  seeds: List[int]) -> None:
  """results_txt (official: one line per task per trial) and results_json."""
  lines = [f"{task}: " + " - ".join(f"{k}: {v:.2f}" for k, v in metrics.items())
           for trial in trials for task, metrics in trial.items()]
  summary = summarize(trials)
  if len(trials) > 1:
    lines += [f"{task} ({len(trials)} trials): " + " - ".join(
        f"{k}: median {s['median']:.2f} mean {s['mean']:.2f} std {s['std']:.2f}"
        for k, s in metrics.items()) for task, metrics in summary.items()]
  write_text_atomic(config.results_txt, "\n".join(lines) + "\n")
  write_json_atomic(config.results_json, {
      "model_name": config.model_name, "task_names": list(config.task_names),
      "trials": [{"trial": i + 1, "seed": seed, "results": trial}
                 for i, (seed, trial) in enumerate(zip(seeds, trials))],
      "summary": summary})
  print(f"wrote {config.results_txt} and {config.results_json}", flush=True)


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------


def _no_pretrained_model(config: FinetuningConfig) -> str:
  """The line for an init_checkpoint that holds no model: what --model-name names, the
  pre-trained models there are, and the random-initialisation override that fits."""
  models_dir = os.path.join(config.data_dir, "models")
  names = sorted(name for name in (os.listdir(models_dir) if os.path.isdir(models_dir) else ())
                 if os.path.isfile(os.path.join(models_dir, name, PRETRAIN_CONFIG_FILE)))
  choices = f"one of {', '.join(names)}" if names else "none is there yet"
  candidates = [config.model_name, os.path.join(config.data_dir, config.model_name),
                *glob.glob(os.path.join(glob.escape(models_dir), "*", config.model_name))]
  for path in candidates:
    if os.path.isdir(path) and is_finetuned_model_dir(path):
      return (f"--model-name {config.model_name} is a fine-tuned model directory: "
              f"--model-name names a pre-trained model in {models_dir} ({choices}); a "
              "fine-tuned model is used with electra export, electra predict or "
              "TextClassifier.from_pretrained")
  vocab = os.path.join(config.data_dir, "vocab.txt")
  size = (f', "vocab_size": {len(vocab_lib.load_vocab(vocab))}' if os.path.isfile(vocab)
          else "")
  return (f"no pre-trained model at {config.init_checkpoint} ({PRETRAIN_CONFIG_FILE} "
          f"missing): --model-name names a pre-trained model in {models_dir} ({choices}); "
          f"pre-train one with electra pretrain --data-dir {config.data_dir} --model-name "
          f"{config.model_name}, or fine-tune from random initialisation with --hparams "
          f"'{{\"init_checkpoint\": null{size}}}'")


def check_pretrained_model(config: FinetuningConfig) -> None:
  """Fails before any heavy work on a missing pre-trained model."""
  if not (config.init_checkpoint and config.do_train):
    return
  try:
    found = describe_lib.describe(config.init_checkpoint)
  except describe_lib.UnknownCheckpointError:
    raise PretrainedModelError(_no_pretrained_model(config)) from None
  if found.kind != "pretrained":
    raise PretrainedModelError(
        f"init_checkpoint {config.init_checkpoint} is {describe_lib.KIND_NAMES[found.kind]}: "
        "fine-tuning starts from a pre-trained model directory (electra convert to-tf2 or "
        "from-hf writes one)")
  if found.checkpoint is None:
    raise PretrainedModelError(f"{config.init_checkpoint} holds no checkpoint (ckpt-N.index)")


def check_task_files(config: FinetuningConfig, tasks: List[Task]) -> None:
  """Fails before any heavy work on a missing task file, or on a dev file that
  cannot be read when it would only be read after the training."""
  for task in tasks:
    if config.do_train:
      task.split_path("train")
    if config.do_eval and config.do_train:
      task.check_labels(task.get_examples("dev"))
    elif config.do_eval:
      task.split_path("dev")


def run_finetuning(config: FinetuningConfig, options: RunOptions = RunOptions()
                   ) -> List[Dict[str, TaskResults]]:
  """Runs every trial; returns each trial's {task: dev metrics} (empty without do_eval)."""
  start = time.time()
  if not os.path.isdir(config.data_dir):
    raise FinetuningDataError(f"--data-dir {config.data_dir} does not exist")
  check_pretrained_model(config)  # before the vocab: a missing model is the likelier cause
  check_vocab(config)
  strategy = distribution.strategy_for(config, options)
  tasks = get_tasks(config)
  check_task_files(config, tasks)
  # Training writes the trial directories, results and test outputs of these tasks: one
  # writer at a time (evaluation alone reads the model and takes no lock).
  with (run_lock.hold(distribution.checkpoint_dir(strategy, config.model_dir))
        if config.do_train else contextlib.nullcontext()):
    results = _run_trials(config, tasks, strategy, options)
  print(f"done in {time.time() - start:.1f}s", flush=True)
  return results


def _run_trials(config: FinetuningConfig, tasks: List[Task], strategy: tf.distribute.Strategy,
                options: RunOptions) -> List[Dict[str, TaskResults]]:
  """The trials of `run_finetuning`; each trial's {task: dev metrics}."""
  results: List[Dict[str, TaskResults]] = []
  seeds: List[int] = []
  trial = 1
  while config.num_trials < 0 or trial <= config.num_trials:
    print(f"=== {config.model_name} {config.tasks_str}: trial {trial}"
          f"{'/' + str(config.num_trials) if config.num_trials > 0 else ''} ===", flush=True)
    runner = ModelRunner(config, tasks, trial, strategy, options)
    if config.do_train:
      summary = runner.train()
      if summary["stopped_early"]:
        print(f"stopped at step {summary['step']}; checkpoint {summary['checkpoint']}",
              flush=True)
        break
    else:
      runner.restore()
    if config.do_eval:
      results.append(runner.evaluate())
      seeds.append(runner.seed)
      if runner.is_chief:
        write_results(config, results, seeds)
        if config.write_test_outputs and trial <= config.n_writes_test:
          runner.write_test_outputs()
    if trial != config.num_trials and not config.keep_all_models and runner.is_chief:
      shutil.rmtree(runner.model_dir, ignore_errors=True)
    trial += 1
  if config.do_train and results:
    print(f"fine-tuned model: {runner.model_dir} (dev " + "; ".join(
        f"{task}: " + ", ".join(f"{k} {v:.2f}" for k, v in metrics.items())
        for task, metrics in results[-1].items()) + ")", flush=True)
  elif config.do_train:
    print(f"fine-tuned model: {runner.model_dir}", flush=True)
  return results
