"""The official side: a subprocess that trains or steps the official TF1 model in a session."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional

from bench.common import REPO, SHARED_DATA, bench_command, log, script_parser
from bench.parity.curves.shims import (SeededRandom, TensorFlowWith, install_official_shims,
                                       official_env)



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
      pretrain_helpers.tf = TensorFlowWith(tf1, seeded)
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
    feed.update(seeded.feed(seeds))
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
  feed = {features[name]: batches[name][0] for name in features}
  feed.update(seeded.feed(spec["seeds"][0]))
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


def official_parser(doc: str, work_dir: str, seeds: str) -> argparse.ArgumentParser:
  """The flags both official-parity scripts start with: the official tree, the work
  directory, the shared data and the seeds, and the hidden flag of their worker process."""
  parser = script_parser(doc, whole=False)
  parser.add_argument("--official-dir", help="extracted google-research/electra tree")
  parser.add_argument("--work-dir", default=work_dir)
  parser.add_argument("--shared-data", default=SHARED_DATA)
  parser.add_argument("--seeds", default=seeds)
  parser.add_argument("--official-worker", help=argparse.SUPPRESS)
  return parser


def parse_official_args(parser: argparse.ArgumentParser, argv: Optional[List[str]],
                        entry: str, worker: Callable[[Dict[str, Any]], None]
                        ) -> Optional[argparse.Namespace]:
  """Parses argv. In a worker process (--official-worker) runs `worker` on its spec and
  returns None; else refuses an --official-dir without the official `entry` script."""
  args = parser.parse_args(argv)
  if args.official_worker:
    worker(json.loads(args.official_worker))
    return None
  if not args.official_dir or not os.path.exists(os.path.join(args.official_dir, entry)):
    parser.error(f"--official-dir must be an extracted google-research/electra tree (with "
                 f"{entry})")
  return args


def run_official(args, spec: Dict[str, Any]) -> None:
  """Starts `official_worker(spec)` in a fresh process with legacy Keras."""
  spec = dict(spec, official_dir=os.path.abspath(args.official_dir))
  subprocess.run(bench_command("bench.parity.official_parity", "--official-worker",
                               json.dumps(spec)),
                 check=True, env=official_env(args.official_dir), cwd=REPO)

