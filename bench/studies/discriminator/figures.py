"""The figures: reliability diagrams, rates per POS tag, CoLA score histograms."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from bench.common import pyplot, save_figure


def plot_reliability(calibration: Dict[str, Any], path: str) -> None:
  plt = pyplot()
  fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), sharex=True,
                           gridspec_kw={"height_ratios": [3, 1]})
  for column, source in enumerate(("generator", "uniform")):
    stats = calibration[source]
    bins = stats["bins"]
    centres = (np.arange(bins) + 0.5) / bins
    count = np.array(stats["count"])
    shown = count > 0
    ax = axes[0, column]
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect calibration")
    ax.bar(centres[shown], np.array(stats["replaced_fraction"])[shown], width=1 / bins,
           edgecolor="black", alpha=0.7, label="replaced fraction")
    ax.plot(np.array(stats["mean_probability"])[shown],
            np.array(stats["replaced_fraction"])[shown], "o-", color="C3",
            label="(mean p, replaced fraction)")
    ax.set_title(f"{source} replacements: ECE {stats['ece']:.3f}, AUC {stats['auc']:.3f}\n"
                 f"{stats['tokens']} tokens, {100 * stats['replaced_fraction_overall']:.1f}% "
                 "replaced")
    ax.set_ylabel("fraction actually replaced")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", fontsize=8)
    axes[1, column].bar(centres, np.maximum(count, 0.8), width=1 / bins, edgecolor="black")
    axes[1, column].set_yscale("log")
    axes[1, column].set_ylabel("tokens")
    axes[1, column].set_xlabel("discriminator probability (bin)")
  fig.tight_layout()
  save_figure(fig, path, dpi=90)


def plot_pos(pos: Dict[str, Any], path: str, min_replaced: int) -> List[str]:
  plt = pyplot()
  gen = pos["generator"]
  tags = [t for t, v in gen.items() if v["replaced"] >= min_replaced
          and pos["uniform"][t]["replaced"] >= min_replaced]
  tags.sort(key=lambda t: -(gen[t]["replaced"] + gen[t]["original"]))
  fig, axes = plt.subplots(3, 1, figsize=(10, 9), sharex=True)
  x = np.arange(len(tags))
  for ax, source in zip(axes, ("generator", "uniform")):
    table = pos[source]
    ax.bar(x - 0.2, [table[t]["detection_rate"] for t in tags], 0.4, label="detection rate")
    ax.bar(x + 0.2, [table[t]["false_alarm_rate"] for t in tags], 0.4, label="false-alarm rate")
    ax.set_ylim(0, 1)
    ax.set_ylabel("rate (p >= 0.5)")
    ax.set_title(f"{source} replacements, {100 * pos['replace_prob']:.0f}% of words of every tag")
    ax.legend(loc="upper right", fontsize=8)
  axes[2].axhline(0.5, color="grey", linestyle="--", label="chance")
  for offset, source in ((-0.2, "generator"), (0.2, "uniform")):
    axes[2].bar(x + offset, [pos[source][t]["auc"] for t in tags], 0.4,
                label=f"{source} replacements")
  axes[2].set_ylim(0, 1)
  axes[2].set_ylabel("AUC (word p)")
  axes[2].set_title("replaced against untouched words of the tag, threshold-free")
  axes[2].legend(loc="lower right", fontsize=8)
  axes[2].set_xticks(x)
  axes[2].set_xticklabels(tags, rotation=60, fontsize=8)
  axes[2].set_xlabel(f"gold POS tag (CoNLL-2000 test; tags with >= {min_replaced} replaced "
                     "words, most frequent first)")
  fig.tight_layout()
  save_figure(fig, path, dpi=90)
  return tags


def plot_cola(cola: Dict[str, Any], path: str) -> None:
  plt = pyplot()
  hist = cola["histogram"]
  fig, ax = plt.subplots(figsize=(7, 4))
  values = hist["acceptable"] + hist["unacceptable"]
  edges = np.linspace(min(values), max(values), 31)
  ax.hist(hist["acceptable"], edges, alpha=0.6, density=True, label="acceptable (label 1)")
  ax.hist(hist["unacceptable"], edges, alpha=0.6, density=True, label="unacceptable (label 0)")
  s = cola["scores"]["mean_log_odds"]
  ax.set_title(f"CoLA dev, zero-shot: mean log-odds, AUC {s['auc']:.3f}, best MCC "
               f"{s['best_mcc']:.3f}")
  ax.set_xlabel("sentence mean log-odds of 'replaced' (higher = more suspicious)")
  ax.set_ylabel("density")
  ax.legend(fontsize=8)
  fig.tight_layout()
  save_figure(fig, path, dpi=90)
