"""ELECTRA against BERT-style MLM and random initialisation at equal pre-training compute.

  python -m bench.studies.pretraining_study --work-dir /tmp/study [--budget 3.2e14] \\
      [--checkpoints 0.25,0.5,1] [--objectives electra_0.25,electra_0.5,electra_1,mlm] \\
      [--tasks sst,cola,mrpc,sts,rte] [--seeds 0,1,2] [--stages data,pretrain,finetune,report]

For each objective, pre-trains the same encoder (the debug size: 3 layers, hidden
144, embedding 128) for --budget FLOPs, counted the paper's way
(electra_tf2/pretraining/flops.py, the official flops_computation.py method), so a
costlier objective trains fewer steps. Objectives: `electra_<f>` is ELECTRA with
a generator of f times the discriminator's width (1/4, 1/2, 1 in the paper's
Figure 3), `mlm` the official BERT baseline (`electra_objective: false`). Every
checkpoint at the --checkpoints fractions of the budget is fine-tuned on each
task with every seed, as is a randomly initialised encoder of the same shape,
and the median over seeds of the official metric is reported (SST-2, MRPC, RTE:
accuracy; CoLA: MCC; STS-B: Spearman), with their average.

Data (stage `data`): the shared corpus (<shared-data>/corpus: Gutenberg, Tiny
Shakespeare, WikiText-2 valid, BERT's sample text) plus, unless --corpus shared,
the unlabelled training sentences of the tasks (never their dev sets), one
document per task; a WordPiece vocab of --vocab-size learned from that text;
length-128 TFRecords in 1000 shards, so the official input pipeline mixes them
(docs/data_prep.md). Fine-tuning reads the first --train-examples rows of each
task's training set (before MRPC/STS-B pairs are doubled) and the whole dev set.

Paper scale (a machine with a GPU), in one command:

  python -m bench.studies.pretraining_study --preset paper-small --work-dir /data/study_small \
      --time-limit 9     # repeat until it prints "the study is complete"

`--preset paper-small` is the electra_small preset (12 layers, hidden 256,
embedding 128, generator 1/4, length 128, batch 128, lr 5e-4, 10000 warm-up
steps) with the BERT uncased vocab, mixed_bfloat16 and XLA, for 6.25% of
ELECTRA-Small's pre-training (62,500 steps; the paper's Table 1 scores it GLUE
74.1), checkpoints at 1/4, 1/2 and 1 of that, then the same fine-tuning.
`--time-limit M` stops every run after M minutes (pre-training saves a
checkpoint); rerunning resumes, so each call fits one device session.
`--corpus-glob` replaces the shared corpus by your own text.

Outputs in --work-dir: study.json (every run and score), study.md (the table),
glue_vs_flops.png and pretraining_curves.png. Every run is checkpointed and every
result kept: rerunning the command skips what is done, so the study can grow
(more seeds, budgets, tasks) across sessions or move to a larger machine.
Figures and discussion: docs/pretraining_study.md. The stages are the modules of
bench/studies/pretraining/.

The quick comparison on SST-2 (one debug ELECTRA pre-trained for a number of
steps against random initialisation, with a re-initialisation ablation; results
in docs/finetuning.md) has its own flags:

  python -m bench.studies.pretraining_study pretrained-vs-random [--trials 3] [--reinit REGEX] ...
  python -m bench.studies.pretraining_study pretrained-vs-random --help
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

from bench.common import SHARED_DATA, add_stages_flag, script_parser
from bench.studies.pretraining import data, finetune, pretrained_vs_random
from bench.studies.pretraining.pretrain import plan, stage_pretrain
from bench.studies.pretraining.report import stage_report
from bench.studies.pretraining.runs import TimeLimit, log
from bench.studies.pretraining.settings import PRESETS, TASKS


def fractions(text: str) -> List[float]:
  values = [float(v) for v in text.split(",")]
  if not values or any(not 0 < v <= 1 for v in values):
    raise argparse.ArgumentTypeError(f"{text!r}: give fractions in (0, 1], e.g. 0.25,0.5,1")
  return sorted(values)


def objectives(text: str) -> List[str]:
  names = text.split(",")
  for name in names:
    if name != "mlm":
      try:
        fraction = float(name.split("electra_", 1)[1]) if name.startswith("electra_") else None
      except ValueError:
        fraction = None
      if fraction is None or not 0 < fraction <= 1:
        raise argparse.ArgumentTypeError(f"{name!r}: objectives are mlm or electra_<generator "
                                         "fraction>, e.g. electra_0.25")
  return names


def tasks(text: str) -> List[str]:
  names = text.split(",")
  unknown = [n for n in names if n not in TASKS]
  if unknown:
    raise argparse.ArgumentTypeError(f"unknown task(s) {', '.join(unknown)}: use "
                                     f"{', '.join(TASKS)}")
  return names


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
  parser = script_parser(__doc__)
  parser.add_argument("--work-dir", default="/tmp/electra_study")
  parser.add_argument("--shared-data", default=SHARED_DATA)
  parser.add_argument("--preset", choices=sorted(PRESETS), default="debug",
                      help="debug: the 3-layer encoder on a CPU; paper-small: ELECTRA-Small on "
                           "a GPU (see above)")
  parser.add_argument("--budget", type=float, default=None,
                      help="pre-training FLOPs per objective, official counting (default: "
                           "1.6e14 for debug, 6.25%% of ELECTRA-Small's for paper-small)")
  parser.add_argument("--time-limit", type=float, default=None, metavar="MINUTES",
                      help="stop every run after this many minutes in all; rerun to resume")
  parser.add_argument("--corpus-glob", action="append", default=[],
                      help="your pre-training text instead of the shared corpus (repeatable)")
  parser.add_argument("--checkpoints", type=fractions, default=[0.25, 0.5, 1.0],
                      help="fractions of the budget whose checkpoints are fine-tuned")
  parser.add_argument("--objectives", type=objectives,
                      default=["electra_0.25", "electra_0.5", "electra_1", "mlm"])
  parser.add_argument("--tasks", type=tasks, default=list(TASKS))
  parser.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")],
                      default=[0, 1, 2])
  parser.add_argument("--corpus", choices=("shared", "shared+tasks"), default="shared+tasks")
  parser.add_argument("--vocab-size", type=int, default=8192)
  parser.add_argument("--max-seq-length", type=int, default=128,
                      help="pre-training length (and the longest fine-tuning length)")
  parser.add_argument("--num-shards", type=int, default=1000)
  parser.add_argument("--train-examples", type=int, default=4000)
  parser.add_argument("--pretrain-hparams", default="{}",
                      help="JSON object (or .json file) of pre-training hparams over the study's")
  parser.add_argument("--finetune-hparams", default="{}",
                      help="JSON object (or .json file) of fine-tuning hparams over the study's")
  add_stages_flag(parser, ["data", "pretrain", "finetune", "report"])
  args = parser.parse_args(argv)
  args.work_dir = os.path.abspath(args.work_dir)
  args.shared_data = os.path.abspath(args.shared_data)
  from electra_tf2.config.hparams import ConfigError, parse_hparams
  try:
    args.pretrain_hparams = parse_hparams(args.pretrain_hparams)
    args.finetune_hparams = parse_hparams(args.finetune_hparams)
  except ConfigError as e:
    parser.error(str(e))
  if {"data", "finetune"} & set(args.stages):  # the stages that read it
    for part in ("corpus", "glue"):
      if not os.path.isdir(os.path.join(args.shared_data, part)):
        parser.error(f"--shared-data {args.shared_data} has no {part}/ directory")
  if args.budget is None:
    args.budget = PRESETS[args.preset]["budget"]
  args.deadline = None if args.time_limit is None else time.time() + 60 * args.time_limit
  return args


def main(argv: Optional[List[str]] = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == [pretrained_vs_random.COMMAND]:
    return pretrained_vs_random.main(argv[1:])
  args = parse_args(argv)
  try:
    missing = run_stages(args)
  except TimeLimit:
    log(f"the --time-limit of {args.time_limit} minutes is reached: rerun the same command "
        "to go on")
    return 3
  if "report" not in args.stages:
    log("done")
  elif missing:
    log(f"report written without {len(missing)} fine-tuning result(s) ({missing[0]}, ...): "
        "rerun with the finetune stage to complete it")
  else:
    log("the study is complete")
  return 0


def run_stages(args) -> List[str]:
  """Runs the stages asked for; returns the fine-tuning results the report lacks, as
  "point/task" (none when the report stage is not run)."""
  stages = args.stages
  os.makedirs(args.work_dir, exist_ok=True)
  if "data" in stages:
    data.stage_data(args)
  plans = plan(args)
  points = finetune.finetune_points(args, plans)
  if "pretrain" in stages:
    stage_pretrain(args, plans)
  if "finetune" in stages:
    finetune.stage_finetune(args, points)
  if "report" not in stages:
    return []
  study = stage_report(args, plans, points)
  return [f"{p['name']}/{task}" for p in study["points"] for task in args.tasks
          if len(p["scores"].get(task, {}).get("trials", [])) < len(args.seeds)]


if __name__ == "__main__":
  sys.exit(main())
