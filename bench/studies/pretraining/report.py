"""Stage `report`: study.json, the table study.md and the two figures."""

from __future__ import annotations

import glob
import json
import os
import statistics
from typing import Any, Dict, List, Optional

from bench.common import pyplot, save_figure
from electra_tf2.utils.atomic_io import write_json_atomic, write_text_atomic
from bench.studies.pretraining.finetune import results_path
from bench.studies.pretraining.runs import log
from bench.studies.pretraining.settings import FINETUNE_DEFAULTS, PRESETS, RANDOM, TASKS


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
  plt = pyplot()
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
  save_figure(figure, path, dpi=110)
  log(f"wrote {path}")
