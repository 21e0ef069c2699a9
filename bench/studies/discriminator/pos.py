"""Stage `pos`: detection and false-alarm rates per gold part-of-speech tag (CoNLL-2000)."""

from __future__ import annotations

import os
from typing import Any, Dict, List

import numpy as np

from bench.common import log
from bench.studies.discriminator.context import Context
from bench.studies.discriminator.data import conll_sentences
from bench.studies.discriminator.metrics import auc
from bench.studies.discriminator.passes import corrupt


def pos_stage(ctx: Context, args) -> Dict[str, Any]:
  sentences = conll_sentences(os.path.join(args.shared_data, "conll2000", "test.txt"))
  words = sorted({w for s in sentences for w, _ in s})
  pieces_of = dict(zip(words, ctx.tokenizer.encode_batch(words)))
  width = ctx.max_len - 2
  rows, spans, tags = [], [], []  # spans: per row, (first, end) of each kept word
  for sentence in sentences:
    ids, row_spans, row_tags = [], [], []
    for word, tag in sentence:
      pieces = pieces_of[word]
      if not pieces:
        continue
      if len(ids) + len(pieces) > width:
        break
      row_spans.append((1 + len(ids), 1 + len(ids) + len(pieces)))
      row_tags.append(tag)
      ids.extend(pieces)
    if row_spans:
      rows.append([ctx.cls] + ids + [ctx.sep])
      spans.append(row_spans)
      tags.append(row_tags)
  selected = [ctx.rng.uniform(size=len(s)) < args.replace_prob for s in spans]
  chosen = [[p for (a, b), on in zip(s, sel) if on for p in range(a, b)]
            for s, sel in zip(spans, selected)]
  results: Dict[str, Any] = {"sentences": len(rows), "words": int(sum(map(len, spans))),
                             "replace_prob": args.replace_prob}
  for source in ("generator", "uniform"):
    corrupted = corrupt(ctx.passes, rows, chosen, source, ctx.allowed, ctx.mask, ctx.rng)
    logits = ctx.passes.logits(corrupted)
    per_tag: Dict[str, List[List[int]]] = {}
    for row, new, row_logits, row_spans, row_tags in zip(rows, corrupted, logits, spans, tags):
      for (a, b), tag in zip(row_spans, row_tags):
        replaced = row[a:b] != new[a:b]
        per_tag.setdefault(tag, []).append((replaced, float(row_logits[a:b].max())))
    table = {}
    for tag, pairs in sorted(per_tag.items()):
      replaced = np.array([r for r, _ in pairs])
      flagged = np.array([logit >= 0.0 for _, logit in pairs])  # word p >= 0.5
      table[tag] = {"replaced": int(replaced.sum()), "original": int((~replaced).sum()),
                    "detection_rate": float(flagged[replaced].mean()) if replaced.any() else None,
                    "false_alarm_rate": float(flagged[~replaced].mean())
                                        if (~replaced).any() else None,
                    "auc": auc([l for _, l in pairs], replaced)}
    results[source] = table
    everything = [pair for pairs in per_tag.values() for pair in pairs]
    replaced = np.array([r for r, _ in everything])
    flagged = np.array([logit >= 0.0 for _, logit in everything])
    results[f"{source}_all_tags"] = {"detection_rate": float(flagged[replaced].mean()),
                                     "false_alarm_rate": float(flagged[~replaced].mean()),
                                     "auc": auc([l for _, l in everything], replaced)}
    log(f"pos/{source}: detection {flagged[replaced].mean():.3f}, false alarms "
        f"{flagged[~replaced].mean():.3f}, AUC {results[f'{source}_all_tags']['auc']:.3f} over "
        f"{len(everything)} words")
  return results
