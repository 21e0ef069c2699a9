"""Stage `cola`: zero-shot grammaticality on CoLA dev, against length and pseudo-log-likelihood."""

from __future__ import annotations

import os
from typing import Any, Dict

import numpy as np

from bench.common import log
from bench.studies.discriminator.context import Context
from bench.studies.discriminator.data import cola_dev
from bench.studies.discriminator.metrics import auc, best_threshold_mcc
from bench.studies.discriminator.passes import pseudo_log_likelihood


def cola_stage(ctx: Context, args) -> Dict[str, Any]:
  texts, labels = cola_dev(os.path.join(args.shared_data, "glue", "CoLA", "dev.tsv"))
  unacceptable = labels == 0
  scored = ctx.scorer.score(texts)
  from electra_tf2 import scoring
  candidates = {name: np.array([s.scores[name] for s in scored])
                for name in scoring.SENTENCE_SCORES}
  rows = [[ctx.cls] + ctx.tokenizer.convert_tokens_to_ids(s.tokens) + [ctx.sep] for s in scored]
  pll = pseudo_log_likelihood(ctx.passes, rows, ctx.mask)
  lengths = np.array([len(s.tokens) for s in scored], np.float64)
  # Higher = more likely unacceptable for every entry.
  candidates.update({"length_wordpieces": lengths, "minus_pll_sum": -pll,
                     "minus_pll_mean": -pll / np.maximum(lengths, 1)})
  results: Dict[str, Any] = {"sentences": len(texts),
                             "unacceptable_fraction": float(unacceptable.mean()), "scores": {}}
  for name, values in candidates.items():
    mcc, threshold = best_threshold_mcc(values, unacceptable)
    results["scores"][name] = {"auc": auc(values, unacceptable), "best_mcc": mcc,
                               "best_threshold": threshold}
    log(f"cola/{name}: AUC {results['scores'][name]['auc']:.3f}, best MCC {mcc:.3f}")
  results["histogram"] = {"score": "mean_log_odds",
                          "acceptable": candidates["mean_log_odds"][~unacceptable].tolist(),
                          "unacceptable": candidates["mean_log_odds"][unacceptable].tolist()}
  return results
