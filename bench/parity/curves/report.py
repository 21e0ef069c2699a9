"""The parity report: the table of every metric over seeds, the training windows, the plot."""

from __future__ import annotations

import os
import statistics
from typing import Any, Dict, List

from bench.common import log, pyplot, save_figure
from bench.parity.curves.layout import METRICS


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
  plt = pyplot()
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
  save_figure(figure, out, dpi=100)
  log(f"plot: {out}")

