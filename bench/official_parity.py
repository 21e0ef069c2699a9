"""Training-curve parity with the official TF1 ELECTRA code, on the same data and seeds.

  python bench/official_parity.py --official-dir ELECTRA_TREE --work-dir /tmp/parity \\
      [--seeds 0,1,2] [--num-train-steps 1500] [--eval-at 500,1000,1500] \\
      [--hparams '{"learning_rate": 1e-3}'] [--stages data,equivalence,train,eval]

ELECTRA_TREE is an extracted google-research/electra (the code is not part of
this repository: fetch it yourself). It runs under TensorFlow 2.20 as it is,
in a `tf.compat.v1` graph, with three shims (`install_official_shims`): legacy
Keras behind `tf.compat.v1.layers.dense` (TF_USE_LEGACY_KERAS=1), a
`tf.contrib.layers.layer_norm` stand-in with the same variable names
(`LayerNorm/beta`, `LayerNorm/gamma`) and epsilon 1e-12, and a stub
`tf.estimator.SessionRunHook` for the import of util/training_utils.py. The
training loop is the official `train_one_step` driver run for many steps:
PretrainingModel + optimization.create_optimizer in a session, checkpoints
by `tf.train.Saver`.

Stages (each skips the work that is done, so a rerun resumes):
  data         <work-dir>/data: the shared corpus (Gutenberg, Tiny Shakespeare, BERT's
               sample text) as length-64 TFRecords in 8 shards, built with --seed 0 and
               the BERT uncased vocab; WikiText-2 valid as held-out TFRecords.
  equivalence  one model's initial weights, batches and random draws (the official
               graph's tf.random calls are routed to our stateless seeds) in both
               codes, dropout off, for --equivalence-steps optimizer steps: the losses,
               the learning rates and the weight updates must agree up to float32
               rounding. Also compares every variable's initial spread.
  train        the official code and ours, each seed, checkpoints at --eval-at.
  eval         every checkpoint (the official ones converted by electra_tf2.convert)
               on the same held-out batches and masks, dropout off, by one evaluator;
               prints the table and writes <work-dir>/parity.json and parity.png.
  dropout      our trained seed-0 model in both codes, one batch with fixed masks, dropout
               on: the mean losses over --dropout-passes passes must agree (placement
               and rates of dropout).
  order        the training stream of both input pipelines, each seed: how many shards a
               batch draws from, how close its examples sit to those of the batches
               just before it (the locality of interleave + shuffle buffer), and how
               hard its training-window batches are for one fixed model.

Hparams default to the setting of the parity issue: debug model (3 layers, hidden
144, embedding 128, generator 36), batch 32, length 64, lr 1e-3, 1500 steps,
150 warm-up steps. Not part of CI; figures, command and findings in docs/parity.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
import types
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

BASE_HPARAMS = {"debug": True, "train_batch_size": 32, "max_seq_length": 64,
                "learning_rate": 1e-3, "num_train_steps": 1500, "num_warmup_steps": 150}
METRICS = ("masked_lm_loss", "masked_lm_accuracy", "sampled_masked_lm_accuracy", "disc_loss",
           "disc_auc", "disc_accuracy", "disc_precision", "disc_recall")
EVAL_SEED = 0  # every evaluation draws the same masks: eval batch i is seeded by (i, 0)
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def log(message: str) -> None:
  print(message, flush=True)


# ---------------------------------------------------------------------------
# The official code under TensorFlow 2.20
# ---------------------------------------------------------------------------


def install_official_shims(official_dir: str):
  """Makes google-research/electra importable under TF 2.20; returns `tf.compat.v1`.

  Needs TF_USE_LEGACY_KERAS=1 in the environment before TensorFlow is imported.
  """
  import tensorflow.compat.v1 as tf1
  tf1.disable_v2_behavior()

  def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None, reuse=None):
    """tf.contrib.layers.layer_norm over the last axis: `<scope>/{beta,gamma}`, eps 1e-12."""
    del begin_norm_axis, begin_params_axis  # always -1 in ELECTRA
    with tf1.variable_scope(scope, default_name="LayerNorm", values=[inputs], reuse=reuse):
      depth = inputs.shape[-1]
      beta = tf1.get_variable("beta", [depth], initializer=tf1.zeros_initializer())
      gamma = tf1.get_variable("gamma", [depth], initializer=tf1.ones_initializer())
      mean, variance = tf1.nn.moments(inputs, [-1], keep_dims=True)
      return tf1.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                        variance_epsilon=1e-12)

  contrib = types.ModuleType("tensorflow.contrib")
  contrib.layers = types.ModuleType("tensorflow.contrib.layers")
  contrib.layers.layer_norm = layer_norm
  sys.modules["tensorflow.contrib"] = contrib
  sys.modules["tensorflow.contrib.layers"] = contrib.layers
  tf1.estimator = types.SimpleNamespace(SessionRunHook=object)  # util/training_utils.ETAHook
  sys.path.insert(0, official_dir)
  return tf1


class SeededRandom:
  """`tf.random` for the official pretrain_helpers, drawing from given stateless seeds.

  `categorical` (mask positions), `uniform` of rank 2 (the 85% [MASK] draw) and
  of rank 3 (the Gumbel noise) use the placeholders `position_seed`,
  `keep_seed` and `sample_seed`: the draws our `mask` and
  `sample_ids_from_softmax` make from the same seeds.
  """

  def __init__(self, tf1):
    self._tf1 = tf1
    self.position_seed = tf1.placeholder(tf1.int32, [2], "position_seed")
    self.keep_seed = tf1.placeholder(tf1.int32, [2], "keep_seed")
    self.sample_seed = tf1.placeholder(tf1.int32, [2], "sample_seed")

  def categorical(self, logits, num_samples, dtype=None, **_):
    return self._tf1.random.stateless_categorical(logits, num_samples, self.position_seed,
                                                  dtype=dtype)

  def uniform(self, shape, minval=0, maxval=1, **_):
    seed = self.keep_seed if len(shape) == 2 else self.sample_seed
    return self._tf1.random.stateless_uniform(shape, seed, minval=minval, maxval=maxval)


class _TensorFlowWith:
  """`tf.compat.v1` with another `random` module."""

  def __init__(self, tf1, random):
    self._tf1 = tf1
    self.random = random

  def __getattr__(self, name):
    return getattr(self._tf1, name)


def _capture_learning_rate(optimization) -> Dict[str, Any]:
  """{"tensor": the learning rate} once `create_optimizer` has built its optimizer."""
  captured: Dict[str, Any] = {}
  original = optimization.AdamWeightDecayOptimizer.__init__

  def init(self, learning_rate, *args, **kwargs):
    captured["tensor"] = learning_rate
    original(self, learning_rate, *args, **kwargs)
  optimization.AdamWeightDecayOptimizer.__init__ = init
  return captured


def official_worker(spec: Dict[str, Any]) -> None:
  """Runs in a subprocess: trains the official model (spec["mode"] "train") or runs the
  equivalence steps ("steps")."""
  tf1 = install_official_shims(spec["official_dir"])
  import configure_pretraining  # pylint: disable=import-error
  import run_pretraining  # pylint: disable=import-error
  from model import optimization  # pylint: disable=import-error
  from pretrain import pretrain_data, pretrain_helpers  # pylint: disable=import-error

  config = configure_pretraining.PretrainingConfig(
      "parity", spec["data_dir"], **spec["hparams"])
  graph = tf1.Graph()
  with graph.as_default():
    tf1.set_random_seed(spec["seed"])
    seeded = None
    if spec["mode"] == "stream":
      _official_stream(tf1, spec, config, pretrain_data)
      return
    if spec["mode"] in ("steps", "dropout"):
      seeded = SeededRandom(tf1)
      pretrain_helpers.tf = _TensorFlowWith(tf1, seeded)
      shape = [config.train_batch_size, config.max_seq_length]
      features = {name: tf1.placeholder(tf1.int32, shape, name)
                  for name in ("input_ids", "input_mask", "segment_ids")}
    else:
      dataset = pretrain_data.get_input_fn(config, True)({"batch_size": config.train_batch_size})
      features = tf1.data.make_one_shot_iterator(dataset).get_next()
    model = run_pretraining.PretrainingModel(config, features, True)
    learning_rate = _capture_learning_rate(optimization)
    train_op = optimization.create_optimizer(
        model.total_loss, config.learning_rate, config.num_train_steps,
        weight_decay_rate=config.weight_decay_rate, use_tpu=False,
        warmup_steps=config.num_warmup_steps, lr_decay_power=config.lr_decay_power)
    global_step = tf1.train.get_or_create_global_step()
    losses = {"total_loss": model.total_loss, "mlm_loss": model.mlm_output.loss}
    saver = tf1.train.Saver(max_to_keep=None)
    with tf1.Session(graph=graph) as sess:
      if spec["mode"] == "steps":
        _official_steps(tf1, sess, spec, features, seeded, losses, learning_rate["tensor"],
                        train_op)
      elif spec["mode"] == "dropout":
        _official_dropout_passes(tf1, sess, spec, features, seeded, losses)
      else:
        _official_train(tf1, sess, spec, config, losses, train_op, global_step, saver)


def _official_stream(tf1, spec, config, pretrain_data):
  """Saves the features of the official input_fn's first spec["batches"] training batches."""
  import numpy as np
  dataset = pretrain_data.get_input_fn(config, True)({"batch_size": config.train_batch_size})
  features = tf1.data.make_one_shot_iterator(dataset).get_next()
  names = ("input_ids", "input_mask", "segment_ids")
  with tf1.Session() as sess:
    batches = [sess.run({k: features[k] for k in names}) for _ in range(spec["batches"])]
  np.savez(spec["output"], **{k: np.stack([b[k] for b in batches]) for k in names})


def _official_steps(tf1, sess, spec, features, seeded, losses, learning_rate, train_op):
  import numpy as np
  sess.run(tf1.global_variables_initializer())
  initial = {v.op.name: sess.run(v) for v in tf1.trainable_variables()}
  stats = {name: [float(value.mean()), float(value.std())] for name, value in initial.items()}
  saver_init = tf1.train.Saver(tf1.trainable_variables())
  saver_init.restore(sess, spec["init_checkpoint"])  # our initial weights, by official name
  batches = np.load(spec["batches"])
  results = []
  for step, seeds in enumerate(spec["seeds"]):
    feed = {features[name]: batches[name][step] for name in features}
    feed.update({seeded.position_seed: seeds["position"], seeded.keep_seed: seeds["keep"],
                 seeded.sample_seed: seeds["sample"]})
    lr = sess.run(learning_rate)  # read before the step: the schedule's value at this step
    values, _ = sess.run([losses, train_op], feed)
    values = {k: float(v) for k, v in values.items()}
    values["learning_rate"] = float(lr)
    results.append(values)
  after = {v.op.name: sess.run(v) for v in tf1.trainable_variables()}
  np.savez(spec["output"] + ".npz", **{k.replace("/", "|"): v for k, v in after.items()})
  with open(spec["output"] + ".json", "w", encoding="utf-8") as f:
    json.dump({"steps": results, "init_stats": stats}, f)


def _official_dropout_passes(tf1, sess, spec, features, seeded, losses):
  """The losses of one batch with fixed masks and samples, dropout on, spec["passes"] times."""
  import numpy as np
  sess.run(tf1.global_variables_initializer())
  tf1.train.Saver(tf1.trainable_variables()).restore(sess, spec["init_checkpoint"])
  batches = np.load(spec["batches"])
  seeds = spec["seeds"][0]
  feed = {features[name]: batches[name][0] for name in features}
  feed.update({seeded.position_seed: seeds["position"], seeded.keep_seed: seeds["keep"],
               seeded.sample_seed: seeds["sample"]})
  passes = [{k: float(v) for k, v in sess.run(losses, feed).items()}
            for _ in range(spec["passes"])]
  with open(spec["output"] + ".json", "w", encoding="utf-8") as f:
    json.dump(passes, f)


def _official_train(tf1, sess, spec, config, losses, train_op, global_step, saver):
  model_dir = spec["model_dir"]
  os.makedirs(model_dir, exist_ok=True)
  latest = tf1.train.latest_checkpoint(model_dir)
  if latest:
    saver.restore(sess, latest)
    log(f"official: resumed from {latest} (the input stream restarts)")
  else:
    sess.run(tf1.global_variables_initializer())
  step = int(sess.run(global_step))
  window: Dict[str, List[float]] = {}
  history = []
  start = time.time()
  while step < config.num_train_steps:
    values, _ = sess.run([losses, train_op])
    step += 1
    for name, value in values.items():
      window.setdefault(name, []).append(float(value))
    if step % 50 == 0:
      means = {k: sum(v) / len(v) for k, v in window.items()}
      means["disc_loss"] = (means["total_loss"] - config.gen_weight * means["mlm_loss"]) / \
          config.disc_weight
      history.append({"step": step, **means})
      log(f"official seed {spec['seed']} step {step} | "
          + " ".join(f"{k} {v:.4g}" for k, v in means.items())
          + f" | {time.time() - start:.0f}s")
      window = {}
    if step in spec["save_at"]:
      saver.save(sess, os.path.join(model_dir, "model.ckpt"), global_step=step,
                 write_meta_graph=False)
  with open(os.path.join(model_dir, "train_history.json"), "a", encoding="utf-8") as f:
    f.write(json.dumps(history) + "\n")


def run_official(args, spec: Dict[str, Any]) -> None:
  """Starts `official_worker(spec)` in a fresh process with legacy Keras."""
  spec = dict(spec, official_dir=os.path.abspath(args.official_dir))
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="3",
             CUDA_VISIBLE_DEVICES="")
  subprocess.run([sys.executable, os.path.abspath(__file__), "--official-worker",
                  json.dumps(spec)], check=True, env=env, cwd=REPO)


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


def stage_data(args) -> None:
  data = os.path.join(args.work_dir, "data")
  corpus = os.path.join(args.shared_data, "corpus")
  vocab = os.path.join(args.shared_data, "vocab", "vocab.txt")
  builds = {"pretrain_tfrecords": (os.path.join(corpus, "**", "*.txt"), 8),
            "heldout_tfrecords": (os.path.join(corpus, "wikitext-2-raw", "wiki.valid.raw"), 1)}
  for name, (pattern, shards) in builds.items():
    if glob.glob(os.path.join(data, name, "pretrain_data.tfrecord-*")):
      continue
    subprocess.run([sys.executable, "data_prep/build_pretraining_dataset.py", "--corpus-glob",
                    pattern, "--vocab-file", vocab, "--output-dir", os.path.join(data, name),
                    "--max-seq-length", "64", "--num-shards", str(shards), "--seed", "0",
                    "--no-progress"], check=True, cwd=REPO)
  if not os.path.exists(os.path.join(data, "vocab.txt")):
    from electra_tf2.atomic_io import copy_file_atomic
    copy_file_atomic(vocab, os.path.join(data, "vocab.txt"))


def our_config(args, **hparams):
  from electra_tf2.config import resolve_pretraining_config
  return resolve_pretraining_config("electra_small", os.path.join(args.work_dir, "data"),
                                    dict(args.hparams, **hparams))


def stage_equivalence(args) -> Dict[str, Any]:
  """K optimizer steps of both codes from our initial weights with shared randomness."""
  import numpy as np
  import tensorflow as tf
  from electra_tf2 import convert, input_pipeline, variable_names
  from electra_tf2.training.pretraining import PretrainingRun

  out_dir = os.path.join(args.work_dir, "equivalence")
  os.makedirs(out_dir, exist_ok=True)
  overrides = dict(args.hparams.get("model_hparam_overrides", {}), **NO_DROPOUT)
  config = our_config(args, model_hparam_overrides=overrides, seed=0, deterministic=True,
                      model_dir=os.path.join(out_dir, "ours"))
  run = PretrainingRun(config)
  init = convert.official_tensors(run.variable_names)
  init_prefix = convert.write_official_checkpoint(os.path.join(out_dir, "init"), init)
  steps = args.equivalence_steps
  batches = list(input_pipeline.input_fn(config, False, config.train_batch_size).take(steps))
  np.savez(os.path.join(out_dir, "batches.npz"),
           **{k: np.stack([b[k].numpy() for b in batches]) for k in batches[0]})
  seeds = []
  for step in range(steps):  # PretrainingRun._seed of shard 0, then the splits of our model
    seed = tf.constant([step, config.seed * 65536], tf.int32)
    mask_seed, sample_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    position, keep = tf.unstack(tf.random.experimental.stateless_split(mask_seed, 2))
    seeds.append({"position": position.numpy().tolist(), "keep": keep.numpy().tolist(),
                  "sample": sample_seed.numpy().tolist()})

  # The official update of step k runs with lr(k + 1): the graph's global_step.assign is
  # not ordered before the learning-rate read, and TensorFlow runs it first (measured:
  # the first official step moves the weights although lr(0) = 0). Start our optimizer's
  # step counter at 1 so both codes apply the same rates here.
  run.base_optimizer.iterations.assign(1)
  train_loop = run._build_train_loop()  # pylint: disable=protected-access
  iterator = iter(tf.data.Dataset.from_tensor_slices(
      {k: tf.stack([b[k] for b in batches]) for k in batches[0]}))
  ours = []
  for _ in range(steps):
    lr = float(run.base_optimizer.learning_rate)
    values = train_loop(iterator, tf.constant(1))
    ours.append(dict({k: float(v) for k, v in values.items() if not k.startswith("metric/")},
                     learning_rate=lr))

  official_hparams = dict(args.hparams, model_hparam_overrides=overrides)
  run_official(args, {"mode": "steps", "data_dir": os.path.join(args.work_dir, "data"),
                      "hparams": official_hparams, "seed": 0, "init_checkpoint": init_prefix,
                      "batches": os.path.join(out_dir, "batches.npz"), "seeds": seeds,
                      "output": os.path.join(out_dir, "official")})
  with open(os.path.join(out_dir, "official.json"), encoding="utf-8") as f:
    official = json.load(f)
  after = dict(np.load(os.path.join(out_dir, "official.npz")))
  after = {k.replace("|", "/"): v for k, v in after.items()}

  log("\nequivalence: the same weights, batches and draws, dropout off (our optimizer one "
      "step ahead: the official step k applies lr(k + 1), see stage_equivalence)")
  log(f"{'step':>4} {'lr(k+1) ours':>12} {'lr(k) official':>14} {'total ours':>11} "
      f"{'total official':>15} {'mlm ours':>9} {'mlm official':>13}")
  for step, (a, b) in enumerate(zip(ours, official["steps"])):
    log(f"{step:>4} {a['learning_rate']:>12.3e} {b['learning_rate']:>14.3e} "
        f"{a['total_loss']:>11.6f} {b['total_loss']:>15.6f} {a['mlm_loss']:>9.6f} "
        f"{b['mlm_loss']:>13.6f}")
  # Weight updates: |(ours - init) - (official - init)| relative to the official update.
  names = variable_names.pretrainer_variable_map(run.model)
  worst = []
  # The attention key biases get a gradient of zero up to rounding (a softmax does not
  # change when every score of a query moves by q.b); Adam turns that rounding noise into
  # full-size steps in both codes, so their updates are noise and are not compared.
  for name, variable in names.items():
    if name.endswith("attention/self/key/bias"):
      continue
    update_ours = variable.numpy() - init[name]
    update_official = after[name] - init[name]
    scale = float(np.abs(update_official).max()) or 1.0
    worst.append((float(np.abs(update_ours - update_official).max()) / scale, name))
  worst.sort(reverse=True)
  log("largest relative differences of the weight updates after "
      f"{steps} steps (|ours - official| / max |official update|):")
  for value, name in worst[:6]:
    log(f"  {value:.2e}  {name}")
  # Initial spreads: our initialisers against the official ones (fresh official init).
  ours_init = {name: float(np.std(value)) for name, value in init.items()}
  ratios = sorted(((ours_init[name] / official["init_stats"][name][1], name)
                   for name in ours_init if official["init_stats"][name][1] > 0),
                  key=lambda r: abs(np.log(r[0])), reverse=True)
  log("initial standard deviations, ours / official (most different first):")
  for ratio, name in ratios[:4]:
    log(f"  {ratio:.3f}  {name}")
  result = {"ours": ours, "official": official["steps"],
            "max_relative_update_difference": worst[0][0], "worst_variable": worst[0][1],
            "init_std_ratio_range": [min(r for r, _ in ratios), max(r for r, _ in ratios)]}
  with open(os.path.join(out_dir, "equivalence.json"), "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1)
  return result


def stage_dropout(args) -> Dict[str, Any]:
  """Dropout placement and rates: the mean losses of one batch under dropout, both codes.

  The same trained weights (our seed-0 model at the last --eval-at step, written in the
  official layout), batch, masks and samples; only the dropout draws differ from pass
  to pass. Dropout in another place or at another rate moves the mean loss of a
  trained model, so the means must agree within their standard errors.
  """
  import numpy as np
  import tensorflow as tf
  from electra_tf2 import convert, model_directory
  out_dir = os.path.join(args.work_dir, "equivalence")
  ours_dir = model_dir(args, "ours", args.seeds[0])
  checkpoint = os.path.join(ours_dir, f"ckpt-{max(args.eval_at)}")
  official_prefix = convert.export_official_checkpoint(
      ours_dir, os.path.join(out_dir, "trained"), checkpoint)
  model = model_directory.restore_pretrainer(ours_dir, checkpoint)
  batches = np.load(os.path.join(out_dir, "batches.npz"))
  features = {k: tf.constant(batches[k][0]) for k in ("input_ids", "input_mask", "segment_ids")}
  seed = tf.constant([0, 0], tf.int32)
  mask_seed, sample_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
  position, keep = tf.unstack(tf.random.experimental.stateless_split(mask_seed, 2))
  seeds = [{"position": position.numpy().tolist(), "keep": keep.numpy().tolist(),
            "sample": sample_seed.numpy().tolist()}]
  call = tf.function(lambda: model(features, training=True, seed=seed))
  ours = []
  for _ in range(args.dropout_passes):
    out = call()
    ours.append({"total_loss": float(out["total_loss"]), "mlm_loss": float(out["mlm_loss"])})
  run_official(args, {"mode": "dropout", "data_dir": os.path.join(args.work_dir, "data"),
                      "hparams": args.hparams, "seed": 0, "init_checkpoint": official_prefix,
                      "batches": os.path.join(out_dir, "batches.npz"), "seeds": seeds,
                      "passes": args.dropout_passes,
                      "output": os.path.join(out_dir, "official_dropout")})
  with open(os.path.join(out_dir, "official_dropout.json"), encoding="utf-8") as f:
    official = json.load(f)
  result = {}
  log(f"\ndropout: mean loss of one batch over {args.dropout_passes} passes with dropout on "
      "(the same trained weights, masks and samples), +- standard error")
  disc_weight = our_config(args).disc_weight
  for sample in (ours, official):
    for row in sample:
      row["disc_loss"] = (row["total_loss"] - row["mlm_loss"]) / disc_weight
  for name in ("mlm_loss", "disc_loss"):
    stats = {}
    for side, sample in (("ours", ours), ("official", official)):
      values = np.array([row[name] for row in sample])
      stats[side] = (float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values))))
    z = (stats["ours"][0] - stats["official"][0]) / np.hypot(stats["ours"][1],
                                                              stats["official"][1])
    result[name] = {"ours": stats["ours"], "official": stats["official"], "z": float(z)}
    log(f"  {name:<10} ours {stats['ours'][0]:.4f} +- {stats['ours'][1]:.4f}   official "
        f"{stats['official'][0]:.4f} +- {stats['official'][1]:.4f}   z = {z:+.2f}")
  # Without dropout both codes give one value; the spread above is dropout's alone.
  no_dropout = model(features, training=False, seed=seed)
  log(f"  (dropout off: mlm_loss {float(no_dropout['mlm_loss']):.4f})")
  with open(os.path.join(out_dir, "dropout.json"), "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1)
  return result


def stage_order(args) -> Dict[str, Any]:
  """How local and how hard the training stream is, in the official input_fn and ours.

  Locality: which shard and record each example of the first num_train_steps batches
  comes from. Difficulty: the MLM loss of one fixed model (each side's seed-0 final
  checkpoint, dropout off) on the batches of the training-window steps, so the content
  of the two streams is compared apart from the models trained on them.
  """
  import numpy as np
  import tensorflow as tf
  from electra_tf2 import input_pipeline, model_directory
  from electra_tf2.atomic_io import write_json_atomic
  out_dir = os.path.join(args.work_dir, "order")
  os.makedirs(out_dir, exist_ok=True)
  files = sorted(glob.glob(os.path.join(args.work_dir, "data", "pretrain_tfrecords",
                                        "pretrain_data.tfrecord*")))
  origin = {}
  feature = {"input_ids": tf.io.FixedLenFeature([args.hparams["max_seq_length"]], tf.int64)}
  for file_index, path in enumerate(files):
    for record, example in enumerate(tf.data.TFRecordDataset(path)):
      ids = tf.io.parse_single_example(example, feature)["input_ids"].numpy()
      origin.setdefault(ids.astype(np.int32).tobytes(), (file_index, record))
  steps, batch = args.hparams["num_train_steps"], args.hparams["train_batch_size"]
  final = max(args.eval_at)
  first = final - final // 3
  streams, results = {}, {}
  for seed in args.seeds:
    for side in ("official", "ours"):
      path = os.path.join(out_dir, f"{side}_seed{seed}.npz")
      if not os.path.exists(path):
        if side == "official":
          run_official(args, {"mode": "stream", "data_dir": os.path.join(args.work_dir, "data"),
                              "hparams": args.hparams, "seed": seed, "batches": steps,
                              "output": path})
        else:
          stream = list(input_pipeline.input_fn(our_config(args, seed=seed), True,
                                                batch).take(steps))
          np.savez(path, **{k: np.stack([b[k].numpy() for b in stream])
                            for k in ("input_ids", "input_mask", "segment_ids")})
      streams[side, seed] = dict(np.load(path))
      ids = streams[side, seed]["input_ids"].astype(np.int32)
      where = np.array([[origin[row.tobytes()] for row in rows] for rows in ids])
      near = []
      for k in range(5, steps):
        recent = where[k - 5:k].reshape(-1, 2)
        near.append(np.mean([np.any((recent[:, 0] == f) & (np.abs(recent[:, 1] - r) <= 10))
                             for f, r in where[k]]))
      results[f"{side}/{seed}"] = {
          "shards_per_batch": float(np.mean([len(set(where[k, :, 0])) for k in range(steps)])),
          "near_previous_5": float(np.mean(near))}
  judges = {"official": os.path.join(args.work_dir, "converted",
                                     f"seed{args.seeds[0]}_step{final}"),
            "ours": model_dir(args, "ours", args.seeds[0])}
  for judge, directory in judges.items():
    if not os.path.exists(os.path.join(directory, f"ckpt-{final}.index")):
      log(f"difficulty: no {directory}/ckpt-{final} (run the train and eval stages); skipped")
      continue
    model = model_directory.restore_pretrainer(directory,
                                               os.path.join(directory, f"ckpt-{final}"))
    loss = tf.function(lambda features, seed: model(features, training=False,
                                                    seed=seed)["mlm_loss"])
    for (side, seed), stream in streams.items():
      losses = [float(loss({k: tf.constant(v[step]) for k, v in stream.items()},
                           tf.constant([step, EVAL_SEED]))) for step in range(first, final)]
      results[f"{side}/{seed}"][f"difficulty_for_{judge}"] = float(np.mean(losses))
  log(f"training stream, {steps} batches of {batch} from {len(files)} shards: distinct "
      "shards per batch; the share of a batch's examples within 10 records (same shard) "
      "of an example of the 5 batches before it; the MLM loss of a fixed model (seed "
      f"{args.seeds[0]}, step {final}, dropout off) on the batches of steps {first}-{final}. "
      "Mean [min, max] over seeds")
  for name in results[f"ours/{args.seeds[0]}"]:
    cells = [f"{side} {spread([results[f'{side}/{s}'][name] for s in args.seeds])}"
             for side in ("official", "ours")]
    log(f"  {name:<25} " + "   ".join(cells))
  write_json_atomic(os.path.join(out_dir, "order.json"), results)
  return results


def model_dir(args, side: str, seed: int) -> str:
  return os.path.join(args.work_dir, "models", f"{side}_seed{seed}")


def trained(args, side: str, seed: int) -> bool:
  """Whether this side and seed has its final checkpoint."""
  name = "model.ckpt" if side == "official" else "ckpt"
  return os.path.exists(os.path.join(model_dir(args, side, seed),
                                     f"{name}-{max(args.eval_at)}.index"))


def stage_train(args) -> None:
  final = max(args.eval_at)
  for seed in args.seeds:
    for side in args.sides:
      if trained(args, side, seed):
        continue
      directory = model_dir(args, side, seed)
      if side == "official":
        run_official(args, {"mode": "train", "data_dir": os.path.join(args.work_dir, "data"),
                            "hparams": dict(args.hparams, num_train_steps=final),
                            "seed": seed, "model_dir": directory, "save_at": args.eval_at})
      else:
        hparams = dict(args.hparams, num_train_steps=final, seed=seed, model_dir=directory,
                       save_checkpoints_steps=min(args.eval_at), keep_checkpoint_max=0,
                       iterations_per_loop=50)
        subprocess.run([sys.executable, "run_pretraining.py", "--data-dir",
                        os.path.join(args.work_dir, "data"), "--model-name", "electra_small",
                        "--hparams", json.dumps(hparams)], check=True,
                       cwd=args.trees.get(side, REPO))


# Eval sets: WikiText-2 valid (held out, another domain) and the training data itself,
# which is what the official do_eval reads (pretrain/pretrain_data.py:32-76).
EVAL_SETS = {"heldout": "heldout_tfrecords", "train": "pretrain_tfrecords"}


def evaluate_checkpoint(args, eval_set: str, directory: str, prefix: str) -> Dict[str, float]:
  from electra_tf2.training.pretraining import PretrainingRun
  records = os.path.join(args.work_dir, "data", EVAL_SETS[eval_set], "pretrain_data.tfrecord*")
  config = our_config(args, do_train=False, do_eval=True, model_dir=directory,
                      pretrain_tfrecords=records, eval_batch_size=32,
                      num_eval_steps=args.eval_batches, seed=EVAL_SEED, deterministic=True)
  return PretrainingRun(config).evaluate(prefix)


def stage_eval(args) -> Dict[str, Any]:
  from electra_tf2 import convert
  from electra_tf2.atomic_io import write_json_atomic
  path = os.path.join(args.work_dir, "parity.json")
  results = json.load(open(path, encoding="utf-8")) if os.path.exists(path) else {}
  for eval_set in args.eval_sets:
    for seed in args.seeds:
      for side in args.sides:
        if not trained(args, side, seed):
          log(f"{side} seed {seed}: not trained to step {max(args.eval_at)}; left out")
          continue
        for step in args.eval_at:
          key = f"{eval_set}/{side}/{seed}/{step}"
          if key in results:
            continue
          directory = model_dir(args, side, seed)
          if side == "official":
            converted = os.path.join(args.work_dir, "converted", f"seed{seed}_step{step}")
            if not os.path.exists(os.path.join(converted, f"ckpt-{step}.index")):
              convert.convert_official_checkpoint(
                  os.path.join(directory, f"model.ckpt-{step}"),
                  our_config(args, seed=seed, model_dir=converted), converted,
                  vocab_file=os.path.join(args.work_dir, "data", "vocab.txt"))
            directory, prefix = converted, os.path.join(converted, f"ckpt-{step}")
          else:
            prefix = os.path.join(directory, f"ckpt-{step}")
          results[key] = {k: v for k, v in
                          evaluate_checkpoint(args, eval_set, directory, prefix).items()
                          if k in METRICS}
          write_json_atomic(path, results)
  results["train_windows"] = {f"{side}/{seed}": train_windows(args, side, seed)
                              for side in args.sides for seed in args.seeds
                              if trained(args, side, seed)}
  write_json_atomic(path, results)
  report(args, results)
  return results


def train_windows(args, side: str, seed: int) -> Dict[str, float]:
  """The issue's measure: mean MLM and discriminator training loss of the 50-step windows
  over the last third of training (steps 1000-1500 by default)."""
  directory = model_dir(args, side, seed)
  final = max(args.eval_at)
  first = final - final // 3
  windows: Dict[str, List[float]] = {}
  if side == "official":
    with open(os.path.join(directory, "train_history.json"), encoding="utf-8") as f:
      rows = [json.loads(line) for line in f][-1]
    for row in rows:
      if first < row["step"] <= final:
        for name in ("mlm_loss", "disc_loss"):
          windows.setdefault(name, []).append(row[name])
  else:
    import tensorflow as tf
    for events in sorted(glob.glob(os.path.join(directory, "train", "events*"))):
      for event in tf.compat.v1.train.summary_iterator(events):
        for value in event.summary.value:
          if value.tag in ("mlm_loss", "disc_loss") and first < event.step <= final:
            windows.setdefault(value.tag, []).append(float(tf.make_ndarray(value.tensor)))
  return {name: statistics.mean(values) for name, values in windows.items()}


def spread(values: List[float]) -> str:
  return f"{statistics.mean(values):.4f} [{min(values):.4f}, {max(values):.4f}]"


def effect(values: List[float], official: List[float]) -> float:
  """The difference of the means in official seed-to-seed standard deviations."""
  return (statistics.mean(values) - statistics.mean(official)) / statistics.stdev(official)


def report(args, results: Dict[str, Any]) -> None:
  others = [side for side in args.sides if side != "official"]
  for eval_set in args.eval_sets:
    title = {"heldout": "held-out WikiText-2 valid", "train": "the training data (as the "
             "official do_eval)"}[eval_set]
    log(f"\n{title}: {args.eval_batches} batches of 32, dropout off, the same masks for every "
        f"model; mean [min, max] over seeds {','.join(map(str, args.seeds))}; 'in' = how many "
        "seeds fall within the official range; 'd' = (mean - official mean) / official "
        "seed-to-seed standard deviation")
    log(f"{'step':>5} {'metric':<27}" + "".join(f"{side:>29}" for side in args.sides)
        + "".join(f"  in, d ({side})" for side in others))
    for step in args.eval_at:
      for metric in METRICS:
        row = {side: [results[k][metric] for k in
                      (f"{eval_set}/{side}/{s}/{step}" for s in args.seeds) if k in results]
               for side in args.sides}
        if not all(row.values()):
          continue
        cells = "".join(f"{spread(row[side]):>29}" for side in args.sides)
        inside = ""
        if "official" in row:
          low, high = min(row["official"]), max(row["official"])
          inside = "".join(f"  {sum(low <= v <= high for v in row[side])}/{len(row[side])}"
                           f" {effect(row[side], row['official']):+5.1f}"
                           f"{'':>{len(side) - 2}}" for side in others)
        log(f"{step:>5} {metric:<27}{cells}{inside}")
  first = max(args.eval_at) - max(args.eval_at) // 3
  log(f"\ntraining windows of steps {first}-{max(args.eval_at)} (dropout on), mean over seeds "
      "[min, max], d as above:")
  for name in ("mlm_loss", "disc_loss"):
    values = {side: [results["train_windows"][f"{side}/{s}"][name] for s in args.seeds
                     if f"{side}/{s}" in results["train_windows"]]
              for side in args.sides}
    cells = [f"{side} {spread(values[side])}"
             + (f" d {effect(values[side], values['official']):+.1f}"
                if side != "official" and "official" in values else "")
             for side in args.sides]
    log(f"  {name:<10} " + "   ".join(cells))
  plot(args, results)


def plot(args, results: Dict[str, Any]) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  shown = ("masked_lm_loss", "masked_lm_accuracy", "disc_loss", "disc_auc")
  colors = dict(zip(args.sides, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
  figure, axes = plt.subplots(len(args.eval_sets), len(shown),
                              figsize=(4 * len(shown), 3.2 * len(args.eval_sets)),
                              squeeze=False)
  for row, eval_set in zip(axes, args.eval_sets):
    for axis, metric in zip(row, shown):
      for side in args.sides:
        for seed in args.seeds:
          steps = [s for s in args.eval_at if f"{eval_set}/{side}/{seed}/{s}" in results]
          values = [results[f"{eval_set}/{side}/{seed}/{s}"][metric] for s in steps]
          axis.plot(steps, values, "o-", color=colors[side], alpha=0.7,
                    label=side if seed == args.seeds[0] else None)
      axis.set_title(f"{metric} ({eval_set})")
      axis.set_xlabel("pre-training step")
      axis.grid(alpha=0.3)
  axes[0][0].legend()
  figure.suptitle("Official TF1 ELECTRA vs electra_tf2: the same data, hparams and seeds "
                  f"({','.join(map(str, args.seeds))}), one evaluator, dropout off")
  figure.tight_layout()
  out = os.path.join(args.work_dir, "parity.png")
  figure.savefig(out + ".tmp.png", dpi=100)
  os.replace(out + ".tmp.png", out)
  log(f"plot: {out}")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--official-dir", help="extracted google-research/electra tree")
  parser.add_argument("--work-dir", default="/tmp/electra_parity")
  parser.add_argument("--shared-data", default=os.path.join(os.path.dirname(REPO), "shared",
                                                            "data"))
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--sides", default="official,ours",
                      help="official, ours, and names given to --tree")
  parser.add_argument("--tree", action="append", default=[], metavar="NAME=DIR",
                      help="another checkout of this repository whose run_pretraining.py "
                           "trains the side NAME (e.g. the commit before a fix)")
  parser.add_argument("--eval-sets", default="heldout,train")
  parser.add_argument("--eval-at", default="500,1000,1500")
  parser.add_argument("--eval-batches", type=int, default=60)
  parser.add_argument("--equivalence-steps", type=int, default=8)
  parser.add_argument("--dropout-passes", type=int, default=100)
  parser.add_argument("--hparams", default="{}", help="JSON merged over the issue's setting")
  parser.add_argument("--stages", default="data,equivalence,train,eval,dropout,order")
  parser.add_argument("--official-worker", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.official_worker:
    official_worker(json.loads(args.official_worker))
    return 0
  stages = args.stages.split(",")
  unknown = set(stages) - {"data", "equivalence", "train", "eval", "dropout", "order"}
  if unknown:
    parser.error(f"--stages: unknown stage(s) {', '.join(sorted(unknown))}")
  if not args.official_dir or not os.path.exists(
      os.path.join(args.official_dir, "run_pretraining.py")):
    parser.error("--official-dir must be an extracted google-research/electra tree "
                 "(with run_pretraining.py)")
  args.seeds = [int(s) for s in args.seeds.split(",")]
  args.sides = args.sides.split(",")
  args.trees = dict(tree.split("=", 1) for tree in args.tree)
  args.eval_sets = args.eval_sets.split(",")
  unknown = (set(args.sides) - {"official", "ours"} - set(args.trees)) | (
      set(args.eval_sets) - set(EVAL_SETS))
  if unknown:
    parser.error(f"unknown side(s) or eval set(s): {', '.join(sorted(unknown))}")
  args.eval_at = sorted(int(s) for s in args.eval_at.split(","))
  args.hparams = dict(BASE_HPARAMS, **json.loads(args.hparams))
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  if "data" in stages:
    stage_data(args)
  if "equivalence" in stages:
    stage_equivalence(args)
  if "train" in stages:
    stage_train(args)
  if "eval" in stages:
    stage_eval(args)
  if "dropout" in stages:
    stage_dropout(args)
  if "order" in stages:
    stage_order(args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
