"""Training-curve parity with the official TF1 ELECTRA code, on the same data and seeds.

  python -m bench.parity.official_parity --official-dir ELECTRA_TREE --work-dir /tmp/parity \\
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
  eval         every checkpoint (the official ones converted by electra_tf2.conversion.convert)
               on the same held-out batches and masks, dropout off, by one evaluator;
               prints the table and writes <work-dir>/parity.json and parity.png.
  dropout      our trained seed-0 model in both codes, one batch with fixed masks, dropout
               on: the mean losses over --dropout-passes passes must agree (placement
               and rates of dropout).
  order        the training stream of both input pipelines, each seed: how many shards a
               batch draws from, how close its examples sit to those of the batches
               just before it (the locality of interleave + shuffle buffer), and how
               hard its training-window batches are for one fixed model.

Hparams default to the parity setting: debug model (3 layers, hidden
144, embedding 128, generator 36), batch 32, length 64, lr 1e-3, 1500 steps,
150 warm-up steps. Not part of CI; figures, command and findings in docs/parity.md.
The stages are the modules of bench/parity/curves/; the official code runs in a subprocess
whose PYTHONPATH starts with ELECTRA_TREE (parity.shims.official_env).
"""

from __future__ import annotations

import json
import os
import sys

from bench.common import add_stages_flag
from bench.parity.curves import data, dropout, equivalence, evaluate, order, train
from bench.parity.curves.layout import EVAL_SETS
from bench.parity.curves.official import official_parser, official_worker, parse_official_args
# Shared with bench/parity/official_finetune_parity.py.
from bench.parity.curves.shims import (SeededRandom, TensorFlowWith, install_official_shims,
                                       official_env)

__all__ = ["SeededRandom", "TensorFlowWith", "install_official_shims", "official_env", "main"]

BASE_HPARAMS = {"debug": True, "train_batch_size": 32, "max_seq_length": 64,
                "learning_rate": 1e-3, "num_train_steps": 1500, "num_warmup_steps": 150}
STAGES = {"data": data.stage_data, "equivalence": equivalence.stage_equivalence,
          "train": train.stage_train, "eval": evaluate.stage_eval,
          "dropout": dropout.stage_dropout, "order": order.stage_order}


def main(argv=None) -> int:
  parser = official_parser(__doc__, work_dir="/tmp/electra_parity", seeds="0,1,2")
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
  parser.add_argument("--hparams", default="{}", help="JSON merged over the parity setting")
  add_stages_flag(parser, list(STAGES))
  args = parse_official_args(parser, argv, "run_pretraining.py", official_worker)
  if args is None:
    return 0
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
  for name, stage in STAGES.items():  # in this order, whatever the order of --stages
    if name in args.stages:
      stage(args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
