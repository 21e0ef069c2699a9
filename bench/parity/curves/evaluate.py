"""Stage `eval`: every checkpoint of both codes on the same batches and masks, one evaluator."""

from __future__ import annotations

import glob
import json
import os
import statistics
from typing import Any, Dict, List

from bench.common import log
from bench.parity.curves.layout import EVAL_SEED, EVAL_SETS, METRICS, model_dir, our_config, trained
from bench.parity.curves.report import report


def evaluate_checkpoint(args, eval_set: str, directory: str, prefix: str) -> Dict[str, float]:
  from electra_tf2.training.tf_pretraining import PretrainingRun
  records = os.path.join(args.work_dir, "data", EVAL_SETS[eval_set], "pretrain_data.tfrecord*")
  config = our_config(args, do_train=False, do_eval=True, model_dir=directory,
                      pretrain_tfrecords=records, eval_batch_size=32,
                      num_eval_steps=args.eval_batches, seed=EVAL_SEED, deterministic=True)
  return PretrainingRun(config).evaluate(prefix)


def stage_eval(args) -> Dict[str, Any]:
  from electra_tf2.conversion import convert
  from electra_tf2.utils.atomic_io import write_json_atomic
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
  """The measure compared: mean MLM and discriminator training loss of the 50-step windows
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

