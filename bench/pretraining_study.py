"""ELECTRA against BERT-style MLM and random initialisation at equal pre-training compute.

  python bench/pretraining_study.py --work-dir /tmp/study [--budget 3.2e14] \\
      [--checkpoints 0.25,0.5,1] [--objectives electra_0.25,electra_0.5,electra_1,mlm] \\
      [--tasks sst,cola,mrpc,sts,rte] [--seeds 0,1,2] [--stages data,pretrain,finetune,report]

For each objective, pre-trains the same encoder (the debug size: 3 layers, hidden
144, embedding 128) for --budget FLOPs, counted the paper's way
(electra_tf2/flops.py, the official flops_computation.py method), so a
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

  python bench/pretraining_study.py --preset paper-small --work-dir /data/study_small \
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
Figures and discussion: docs/pretraining_study.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from electra_tf2.atomic_io import write_json_atomic, write_text_atomic  # noqa: E402

# GLUE tasks: directory in <shared-data>/glue, the official metric, the text columns of
# train.tsv and whether it has a header (the official readers, classification_tasks.py:152-322).
TASKS = {
    "sst": ("SST-2", "accuracy", (0,), True),
    "cola": ("CoLA", "mcc", (3,), False),
    "mrpc": ("MRPC", "accuracy", (3, 4), True),
    "sts": ("STS-B", "spearman", (7, 8), True),
    "rte": ("RTE", "accuracy", (1, 2), True),
}
# Fine-tuning length per task: the single-sentence tasks fit in 64 tokens.
TASK_MAX_SEQ_LENGTH = {"sst": 64, "cola": 64}
RANDOM = "random"
PRESETS = {
    # The debug encoder (3 layers, hidden 144) on two CPU cores.
    "debug": {"pretrain": {"debug": True, "train_batch_size": 32, "learning_rate": 1e-3,
                           "iterations_per_loop": 100, "seed": 0, "keep_checkpoint_max": 0},
              "warmup_fraction": 0.1, "budget": 1.6e14, "vocab": "corpus", "run_flags": []},
    # The paper's ELECTRA-Small (configs/electra_small.json) at 6.25% of its 1M steps.
    "paper-small": {"pretrain": {"train_batch_size": 128, "iterations_per_loop": 500,
                                 "seed": 0, "keep_checkpoint_max": 0},
                    "warmup_steps": 10000, "budget": 0.0625 * 1.29e18, "vocab": "bert",
                    "run_flags": ["--mixed-precision", "mixed_bfloat16", "--jit-compile"]},
}
# Paper Table 7 for Small: lr 3e-4, layer-wise decay 0.8, no weight decay, warm-up 10%,
# batch 32; epochs 3, 10 for RTE and STS-B (the official per-task defaults).
FINETUNE_DEFAULTS = {"learning_rate": 3e-4, "layerwise_lr_decay": 0.8,
                     "weight_decay_rate": 0.0, "iterations_per_loop": 100}


def log(message: str) -> None:
  print(f"[study {time.strftime('%H:%M:%S')}] {message}", flush=True)


class TimeLimit(Exception):
  """The --time-limit is reached; rerunning the command resumes."""


def run(args, command: List[str]) -> None:
  """Runs a command of the study; with --time-limit, SIGTERM at the deadline (training
  then saves a checkpoint and stops) and TimeLimit."""
  log("+ " + " ".join(command))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  if args.preset == "debug":
    env["CUDA_VISIBLE_DEVICES"] = ""
  process = subprocess.Popen(command, cwd=REPO, env=env)
  try:
    remaining = None if args.deadline is None else max(1.0, args.deadline - time.time())
    code = process.wait(timeout=remaining)
  except subprocess.TimeoutExpired:
    process.send_signal(signal.SIGTERM)
    process.wait()
    raise TimeLimit() from None
  if code:
    raise subprocess.CalledProcessError(code, command)


def objective_hparams(objective: str) -> Dict[str, Any]:
  """`mlm` or `electra_<generator fraction>` as pre-training hparams."""
  if objective == "mlm":
    return {"electra_objective": False, "untied_generator": False, "generator_hidden_size": 1.0}
  fraction = float(objective.split("_", 1)[1])
  if fraction == 1.0:  # a full-size but separate generator, as the paper's Figure 3
    return {"generator_hidden_size": 1.0}
  return {"generator_hidden_size": fraction}


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def read_tsv(path: str, header: bool) -> List[List[str]]:
  with open(path, encoding="utf-8-sig") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  return rows[1:] if header else rows


def stage_data(args) -> None:
  from data_prep import build_vocab
  from data_prep.builder import BuildConfig, build_pretraining_data
  work, shared = args.work_dir, args.shared_data
  corpus_dir = os.path.join(work, "corpus")
  if not os.path.isdir(corpus_dir):
    os.makedirs(corpus_dir + ".tmp", exist_ok=True)
    patterns = args.corpus_glob or [os.path.join(shared, "corpus", "**", "*")]
    paths = sorted({p for pattern in patterns for p in glob.glob(pattern, recursive=True)
                    if os.path.isfile(p)})
    root = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    for path in paths:
      name = os.path.relpath(path, root).replace(os.sep, "_")
      os.symlink(os.path.abspath(path), os.path.join(corpus_dir + ".tmp", name))
    if args.corpus == "shared+tasks":
      for task in args.tasks:
        directory, _, columns, header = TASKS[task]
        rows = read_tsv(os.path.join(shared, "glue", directory, "train.tsv"), header)
        text = "\n".join(row[c] for row in rows for c in columns if c < len(row)) + "\n"
        write_text_atomic(os.path.join(corpus_dir + ".tmp", f"task_{task}_train.txt"), text)
    os.replace(corpus_dir + ".tmp", corpus_dir)
  files = sorted(os.path.join(corpus_dir, f) for f in os.listdir(corpus_dir))
  vocab = os.path.join(work, "vocab.txt")
  if not os.path.exists(vocab):
    if PRESETS[args.preset]["vocab"] == "bert":
      from electra_tf2.atomic_io import copy_file_atomic
      copy_file_atomic(os.path.join(shared, "vocab", "vocab.txt"), vocab)
    else:
      build_vocab.main(["--corpus-dir", corpus_dir, "--vocab-size", str(args.vocab_size),
                        "--output", vocab])
  records = os.path.join(work, "pretrain_tfrecords")
  if not glob.glob(os.path.join(records, "pretrain_data.tfrecord-*")):
    build_pretraining_data(BuildConfig(inputs=files, vocab_file=vocab, output_dir=records,
                                       max_seq_length=args.max_seq_length,
                                       num_shards=args.num_shards,
                                       seed=0, progress=False))
  for task in args.tasks:
    directory, _, _, header = TASKS[task]
    target = os.path.join(work, "finetuning_data", task)
    if os.path.exists(os.path.join(target, "dev.tsv")):
      continue
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(shared, "glue", directory, "train.tsv"), encoding="utf-8") as f:
      lines = f.readlines()[:args.train_examples + (1 if header else 0)]
    write_text_atomic(os.path.join(target, "train.tsv"), "".join(lines))
    os.symlink(os.path.abspath(os.path.join(shared, "glue", directory, "dev.tsv")),
               os.path.join(target, "dev.tsv"))


def vocab_size(args) -> int:
  with open(os.path.join(args.work_dir, "vocab.txt"), encoding="utf-8") as f:
    return sum(1 for _ in f)


# ---------------------------------------------------------------------------
# Pre-training
# ---------------------------------------------------------------------------


def pretrain_hparams(args, objective: str) -> Dict[str, Any]:
  return dict(PRESETS[args.preset]["pretrain"], vocab_size=vocab_size(args),
              max_seq_length=args.max_seq_length, **args.pretrain_hparams,
              **objective_hparams(objective))


def pretrain_config(args, objective: str):
  from electra_tf2.config import resolve_pretraining_config
  return resolve_pretraining_config("electra_small", args.work_dir,
                                    pretrain_hparams(args, objective))


def plan(args) -> Dict[str, Dict[str, Any]]:
  """Per objective: steps for the budget, FLOPs per step, checkpoint steps and the model dir."""
  from electra_tf2.flops import pretraining_flops_per_step
  plans = {}
  for objective in args.objectives:
    per_step = pretraining_flops_per_step(pretrain_config(args, objective))
    # Steps and checkpoints in whole compiled loops (iterations_per_loop), so that
    # checkpoints land on them and one save interval (their gcd) reaches every one.
    unit = pretrain_config(args, objective).iterations_per_loop
    steps = unit * max(1, round(args.budget / per_step / unit))
    checkpoints = sorted({unit * max(1, round(steps * f / unit)) for f in args.checkpoints})
    plans[objective] = {
        "flops_per_step": per_step, "steps": steps, "checkpoint_steps": checkpoints,
        "model_dir": os.path.join(args.work_dir, "models", f"{objective}_{args.budget:.2g}")}
  return plans


def stage_pretrain(args, plans) -> None:
  import math
  for objective, p in plans.items():
    if all(os.path.exists(os.path.join(p["model_dir"], f"ckpt-{s}.index"))
           for s in p["checkpoint_steps"]):
      continue
    every = math.gcd(*p["checkpoint_steps"])
    preset = PRESETS[args.preset]
    warmup = preset.get("warmup_steps") or int(p["steps"] * preset["warmup_fraction"])
    hparams = dict(pretrain_hparams(args, objective), num_train_steps=p["steps"],
                   num_warmup_steps=warmup, save_checkpoints_steps=every,
                   model_dir=p["model_dir"])
    log(f"pre-training {objective}: {p['steps']} steps of {p['flops_per_step']:.3g} FLOPs")
    run(args, [sys.executable, "run_pretraining.py", "--data-dir", args.work_dir,
               "--model-name", "electra_small", "--hparams", json.dumps(hparams)]
        + preset["run_flags"])


# ---------------------------------------------------------------------------
# Fine-tuning
# ---------------------------------------------------------------------------


def finetune_points(args, plans) -> List[Dict[str, Any]]:
  """Every (objective, checkpoint) to fine-tune, plus random initialisation."""
  points = [{"name": RANDOM, "objective": RANDOM, "flops": 0.0, "checkpoint": None}]
  for objective, p in plans.items():
    for step in p["checkpoint_steps"]:
      points.append({"name": f"{objective}_{args.budget:.2g}_step{step}",
                     "objective": objective, "step": step,
                     "flops": step * p["flops_per_step"],
                     "checkpoint": os.path.join(p["model_dir"], f"ckpt-{step}")})
  return points


def random_init_hparams(args) -> Dict[str, Any]:
  """init_checkpoint null with the pre-trained models' encoder shape."""
  config = pretrain_config(args, "mlm")
  shape = {k: v for k, v in config.bert_config.to_dict().items() if k != "vocab_size"}
  return {"init_checkpoint": None, "model_size": config.model_size,
          "embedding_size": config.embedding_size, "vocab_size": config.vocab_size,
          "model_hparam_overrides": shape}


def results_path(args, point: Dict[str, Any], task: str) -> str:
  return os.path.join(args.work_dir, "results", point["name"], f"{task}.json")


def stage_finetune(args, points) -> None:
  for point in points:
    if point["checkpoint"] and not os.path.exists(point["checkpoint"] + ".index"):
      log(f"skipping {point['name']}: no checkpoint yet")
      continue
    for task in args.tasks:
      path = results_path(args, point, task)
      done = json.load(open(path, encoding="utf-8"))["trials"] if os.path.exists(path) else []
      if len(done) >= len(args.seeds):
        continue
      base = random_init_hparams(args) if point["checkpoint"] is None else {
          "init_checkpoint": point["checkpoint"]}
      where = os.path.join(args.work_dir, "finetuning", point["name"], task)
      hparams = dict(FINETUNE_DEFAULTS,
                     max_seq_length=min(TASK_MAX_SEQ_LENGTH.get(task, 128), args.max_seq_length),
                     **args.finetune_hparams, **base,
                     num_trials=len(args.seeds), seed=args.seeds[0],
                     model_dir=os.path.join(where, "model"), keep_all_models=False,
                     results_txt=os.path.join(where, "results.txt"), results_json=path,
                     preprocessed_data_dir=os.path.join(args.work_dir, "finetuning_tfrecords",
                                                        task))
      run(args, [sys.executable, "run_finetuning.py", "--data-dir", args.work_dir,
                 "--model-name", "study", "--task", task, "--hparams", json.dumps(hparams)]
          + PRESETS[args.preset]["run_flags"])


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def scores(args, points) -> Dict[str, Dict[str, Any]]:
  """{point: {task: {"median", "trials"}, "average"}} from the results files."""
  table = {}
  for point in points:
    row = {}
    for task in args.tasks:
      path = results_path(args, point, task)
      if not os.path.exists(path):
        continue
      metric = TASKS[task][1]
      trials = [t["results"][task][metric] for t in json.load(open(path, encoding="utf-8"))
                ["trials"]][:len(args.seeds)]
      row[task] = {"median": statistics.median(trials), "trials": trials}
    if all(len(row.get(t, {}).get("trials", [])) >= len(args.seeds) for t in args.tasks):
      row["average"] = statistics.mean(row[t]["median"] for t in args.tasks)
    table[point["name"]] = row
  return table


def pretraining_curves(model_dir: str) -> Dict[str, List[List[float]]]:
  """{tag: [[step, value], ...]} of the training summaries (TensorBoard events)."""
  import tensorflow as tf
  curves: Dict[str, List[List[float]]] = {}
  for path in sorted(glob.glob(os.path.join(model_dir, "train", "events*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.tag in ("mlm_loss", "disc_loss", "train_metrics/disc_auc",
                         "train_metrics/masked_lm_accuracy"):
          number = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") \
              else value.simple_value
          curves.setdefault(value.tag, []).append([int(event.step), number])
  return {tag: sorted(points) for tag, points in curves.items()}


def stage_report(args, plans, points) -> Dict[str, Any]:
  table = scores(args, points)
  study = {"budget_flops": args.budget, "checkpoint_fractions": args.checkpoints,
           "tasks": {t: TASKS[t][1] for t in args.tasks}, "seeds": args.seeds,
           "corpus": args.corpus, "preset": args.preset,
           "pretrain_hparams": dict(PRESETS[args.preset]["pretrain"],
                                                           **args.pretrain_hparams),
           "finetune_hparams": dict(FINETUNE_DEFAULTS, **args.finetune_hparams),
           "train_examples": args.train_examples, "plans": plans,
           "points": [dict(p, scores=table.get(p["name"], {})) for p in points],
           "curves": {o: pretraining_curves(p["model_dir"]) for o, p in plans.items()}}
  write_json_atomic(os.path.join(args.work_dir, "study.json"), study, sort_keys=False)
  lines = [f"| model | pre-training FLOPs | {' | '.join(args.tasks)} | average |",
           "|---|---|" + "---|" * (len(args.tasks) + 1)]
  for point in points:
    row = table.get(point["name"], {})
    cells = [table_cell(row.get(t), len(args.seeds)) for t in args.tasks]
    average = f"{row['average']:.2f}" if "average" in row else ""
    label = point["name"] if point["objective"] == RANDOM else \
        f"{point['objective']} step {point['step']}"
    lines.append(f"| {label} | {point['flops']:.2e} | {' | '.join(cells)} | {average} |")
  write_text_atomic(os.path.join(args.work_dir, "study.md"), "\n".join(lines) + "\n")
  print("\n".join(lines), flush=True)
  plot(args, study)
  return study


def table_cell(score: Optional[Dict[str, Any]], seeds: int) -> str:
  """The median, marked when fewer seeds than asked for are in (such a row has no average)."""
  if score is None:
    return ""
  done = len(score["trials"])
  return f"{score['median']:.2f}" + (f" ({done} of {seeds} seeds)" if done < seeds else "")


def plot(args, study) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  # One colour per objective in both figures (MLM has no discriminator curves).
  colors = {o: f"C{i}" for i, o in enumerate(args.objectives)}
  figure, axis = plt.subplots(figsize=(6.5, 4.2))
  random_row = next((p["scores"] for p in study["points"] if p["objective"] == RANDOM), {})
  if "average" in random_row:
    axis.axhline(random_row["average"], color="gray", linestyle="--",
                 label="random initialisation")
  for objective in args.objectives:
    rows = [(p["flops"], p["scores"]["average"]) for p in study["points"]
            if p["objective"] == objective and "average" in p["scores"]]
    if rows:
      axis.plot(*zip(*rows), "o-", label=objective, color=colors[objective])
  axis.set_xlabel("pre-training FLOPs (official counting)")
  axis.set_ylabel(f"GLUE-subset average\n(median of {len(args.seeds)} seeds per task)")
  axis.set_title(", ".join(args.tasks), fontsize=9)
  axis.set_xlim(0, 1.1 * max([p["flops"] for p in study["points"]] + [1.0]))
  axis.grid(alpha=0.3)
  axis.legend()
  figure.tight_layout()
  save(figure, os.path.join(args.work_dir, "glue_vs_flops.png"))

  tags = [("mlm_loss", "generator / MLM loss"), ("disc_loss", "discriminator loss"),
          ("train_metrics/disc_auc", "discriminator AUC (training batches)")]
  figure, axes = plt.subplots(1, len(tags), figsize=(15, 4))
  for axis, (tag, title) in zip(axes, tags):
    for objective, curves in study["curves"].items():
      if tag in curves:
        flops_per_step = study["plans"][objective]["flops_per_step"]
        steps, values = zip(*curves[tag])
        axis.plot([s * flops_per_step for s in steps], values, label=objective,
                  color=colors.get(objective))
    axis.set_title(title)
    axis.set_xlabel("pre-training FLOPs")
    axis.grid(alpha=0.3)
  axes[0].legend()
  figure.tight_layout()
  save(figure, os.path.join(args.work_dir, "pretraining_curves.png"))


def save(figure, path: str) -> None:
  figure.savefig(path + ".tmp.png", dpi=110)
  os.replace(path + ".tmp.png", path)
  log(f"wrote {path}")


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
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--work-dir", default="/tmp/electra_study")
  parser.add_argument("--shared-data", default=os.path.join(os.path.dirname(REPO), "shared",
                                                            "data"))
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
  parser.add_argument("--stages", default="data,pretrain,finetune,report")
  args = parser.parse_args(argv)
  args.work_dir = os.path.abspath(args.work_dir)
  args.shared_data = os.path.abspath(args.shared_data)
  from electra_tf2.config import ConfigError, parse_hparams
  try:
    args.pretrain_hparams = parse_hparams(args.pretrain_hparams)
    args.finetune_hparams = parse_hparams(args.finetune_hparams)
  except ConfigError as e:
    parser.error(str(e))
  args.stages = args.stages.split(",")
  unknown = set(args.stages) - {"data", "pretrain", "finetune", "report"}
  if unknown:
    parser.error(f"--stages: unknown stage(s) {', '.join(sorted(unknown))}")
  for part in ("corpus", "glue"):
    if not os.path.isdir(os.path.join(args.shared_data, part)):
      parser.error(f"--shared-data {args.shared_data} has no {part}/ directory")
  if args.budget is None:
    args.budget = PRESETS[args.preset]["budget"]
  args.deadline = None if args.time_limit is None else time.time() + 60 * args.time_limit
  return args


def main(argv: Optional[List[str]] = None) -> int:
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
    stage_data(args)
  plans = plan(args)
  points = finetune_points(args, plans)
  if "pretrain" in stages:
    stage_pretrain(args, plans)
  if "finetune" in stages:
    stage_finetune(args, points)
  if "report" not in stages:
    return []
  study = stage_report(args, plans, points)
  return [f"{p['name']}/{task}" for p in study["points"] for task in args.tasks
          if len(p["scores"].get(task, {}).get("trials", [])) < len(args.seeds)]


if __name__ == "__main__":
  sys.exit(main())
