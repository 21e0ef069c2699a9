"""Stage `rerank`: ranking an original sentence above its single-word substitutions."""

from __future__ import annotations

import glob
import os
import time
from typing import Any, Dict, List

import numpy as np

from bench.common import log
from bench.studies.discriminator.context import Context
from bench.studies.discriminator.data import wikitext_paragraphs, wikitext_sentences
from bench.studies.discriminator.metrics import top1_accuracy
from bench.studies.discriminator.passes import pseudo_log_likelihood, sample


def substitutions(ctx: Context, sentence: str, k: int, source: str) -> List[str]:
  """Up to k distinct sentences, each with one one-WordPiece word swapped for another whole
  alphabetic word: a generator sample at that word ([MASK]ed), or a uniform draw."""
  words = sentence.split()
  pieces = ctx.tokenizer.encode_batch(words)
  row = [ctx.cls] + [p for ps in pieces for p in ps] + [ctx.sep]
  where, offset = [], 1
  for i, ps in enumerate(pieces):
    if len(ps) == 1 and ctx.whole_words[ps[0]]:
      where.append((i, offset))
    offset += len(ps)
  if not where:
    return []
  picks = ctx.rng.permutation(len(where))
  picks = [where[picks[j % len(where)]] for j in range(3 * k)]
  if source == "generator":
    masked = [row[:p] + [ctx.mask] + row[p + 1:] for _, p in picks]
    log_probs = ctx.passes.log_probs(masked, [p for _, p in picks])
  else:
    log_probs = np.zeros((len(picks), len(ctx.tokens)), np.float32)
  out, seen = [], {sentence.lower()}
  for (i, position), scores in zip(picks, log_probs):
    allowed = ctx.whole_words.copy()
    allowed[row[position]] = False
    token = ctx.tokens[int(sample(scores[None], allowed, ctx.rng)[0])]
    candidate = " ".join(words[:i] + [token] + words[i + 1:])
    if candidate.lower() not in seen:
      seen.add(candidate.lower())
      out.append(candidate)
    if len(out) == k:
      break
  return out


def unigram_log_probs(ctx: Context, pattern: str) -> np.ndarray:
  """Add-one log-probability of every WordPiece in the files matching `pattern`."""
  counts = np.zeros(len(ctx.tokens), np.float64)
  files = sorted(f for f in glob.glob(pattern, recursive=True) if "wikitext" not in f)
  if not files:
    raise ValueError(f"--unigram-corpus {pattern} matches no file")
  for path in files:
    with open(path, encoding="utf-8", errors="replace") as f:
      lines = [line for line in f.read().splitlines() if line.strip()]
    flat, _ = ctx.tokenizer.encode_lines_flat(lines)
    counts += np.bincount(flat, minlength=len(ctx.tokens))
  return np.log((counts + 1) / (counts.sum() + len(counts)))


def rerank_stage(ctx: Context, args) -> Dict[str, Any]:
  paragraphs = wikitext_paragraphs(os.path.join(args.shared_data, "corpus", "wikitext-2-raw",
                                                "wiki.valid.raw"))
  pool = wikitext_sentences(paragraphs)
  order = ctx.rng.permutation(len(pool))
  unigram = unigram_log_probs(ctx, args.unigram_corpus)
  results: Dict[str, Any] = {"k": args.k, "random_top1": 1 / (args.k + 1)}
  for source in ("generator", "uniform"):
    groups = []
    for index in order:
      candidates = substitutions(ctx, pool[index], args.k, source)
      if len(candidates) == args.k:
        groups.append([pool[index]] + candidates)
      if len(groups) == args.rerank_sentences:
        break
    results["groups"] = len(groups)
    log(f"rerank/{source}: {len(groups)} groups of {args.k + 1} candidates")
    results[source] = rerank_groups(ctx, groups, unigram)
  return results


def rerank_groups(ctx: Context, groups: List[List[str]], unigram: np.ndarray
                  ) -> Dict[str, Any]:
  """Top-1 and time per candidate of every method on groups (the original first)."""
  from electra_tf2 import scoring
  flat = [c for g in groups for c in g]
  n, size = len(flat), len(groups[0])
  ctx.scorer.score(flat[:8])  # trace the graph outside the timing
  start = time.perf_counter()
  scored = ctx.scorer.score(flat)
  disc_seconds = time.perf_counter() - start
  rows = [[ctx.cls] + ctx.tokenizer.convert_tokens_to_ids(s.tokens) + [ctx.sep] for s in scored]
  pseudo_log_likelihood(ctx.passes, rows[:8], ctx.mask)
  start = time.perf_counter()
  pll = pseudo_log_likelihood(ctx.passes, rows, ctx.mask)
  pll_seconds = time.perf_counter() - start
  start = time.perf_counter()
  uni = np.array([unigram[ids].sum() for ids in ctx.tokenizer.encode_batch(flat)])
  uni_seconds = time.perf_counter() - start

  def grouped(values):
    return [values[i:i + size] for i in range(0, n, size)]

  methods: Dict[str, Dict[str, Any]] = {}
  for name in scoring.SENTENCE_SCORES:
    values = np.array([s.scores[name] for s in scored])
    methods[f"discriminator_{name}"] = {"top1": top1_accuracy(grouped(values), False),
                                        "ms_per_candidate": 1000 * disc_seconds / n}
  methods["pseudo_log_likelihood"] = {"top1": top1_accuracy(grouped(pll), True),
                                      "ms_per_candidate": 1000 * pll_seconds / n}
  methods["unigram"] = {"top1": top1_accuracy(grouped(uni), True),
                        "ms_per_candidate": 1000 * uni_seconds / n}
  for name, m in methods.items():
    log(f"  {name}: top-1 {m['top1']:.3f}, {m['ms_per_candidate']:.2f} ms/candidate")
  example = [{"text": c, "mean_log_odds": round(s.scores["mean_log_odds"], 3),
              "pll": round(float(p), 2), "unigram": round(float(u), 2)}
             for c, s, p, u in zip(groups[0], scored, pll, uni)]
  return {"methods": methods, "example": example}
