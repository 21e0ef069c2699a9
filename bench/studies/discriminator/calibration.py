"""Stage `calibration`: reliability and ECE of the token probabilities on WikiText-2 valid."""

from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

from bench.common import log
from bench.studies.discriminator.context import Context
from bench.studies.discriminator.data import wikitext_paragraphs
from bench.studies.discriminator.metrics import auc, reliability
from bench.studies.discriminator.passes import corrupt

THRESHOLD = 0.5


def calibration_stage(ctx: Context, args) -> Dict[str, Any]:
  paragraphs = wikitext_paragraphs(os.path.join(args.shared_data, "corpus", "wikitext-2-raw",
                                                "wiki.valid.raw"))
  width = ctx.max_len - 2
  rows = []
  for ids in ctx.tokenizer.encode_batch(paragraphs):
    for begin in range(0, len(ids) - width // 2, width):
      rows.append([ctx.cls] + ids[begin:begin + width] + [ctx.sep])
    if len(rows) >= args.calibration_rows:
      break
  rows = rows[:args.calibration_rows]
  chosen = []
  for row in rows:
    n = len(row) - 2
    picks = np.flatnonzero(ctx.rng.uniform(size=n) < args.replace_prob) + 1
    chosen.append(picks if len(picks) else np.array([1 + int(ctx.rng.integers(n))]))
  results = {"rows": len(rows), "replace_prob": args.replace_prob}
  for source in ("generator", "uniform"):
    corrupted = corrupt(ctx.passes, rows, chosen, source, ctx.allowed, ctx.mask, ctx.rng)
    logits = ctx.passes.logits(corrupted)
    p = np.concatenate([1 / (1 + np.exp(-l[1:-1])) for l in logits])
    y = np.concatenate([np.array(c[1:-1]) != np.array(r[1:-1]) for c, r in zip(corrupted, rows)])
    stats = reliability(p, y, args.bins)
    ids = np.concatenate([np.array(c[1:-1]) for c in corrupted])
    confident = np.bincount(ids[(p >= 0.9) & ~y], minlength=len(ctx.tokens))
    stats["most_flagged_originals"] = [[ctx.tokens[i], int(confident[i])]
                                       for i in np.argsort(-confident)[:10] if confident[i]]
    stats.update(tokens=int(len(y)), replaced_fraction_overall=float(y.mean()),
                 mean_probability_overall=float(p.mean()), auc=auc(p, y),
                 accuracy=float(np.mean((p >= THRESHOLD) == y)),
                 accuracy_all_original=float(1 - y.mean()))
    results[source] = stats
    log(f"calibration/{source}: {len(y)} tokens, {100 * y.mean():.1f}% replaced, "
        f"ECE {stats['ece']:.4f}, AUC {stats['auc']:.3f}")
  return results
