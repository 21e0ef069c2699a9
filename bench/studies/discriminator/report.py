"""discriminator_analysis.md: the measured figures as markdown tables."""

from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Sequence


def _f(x, digits=3):
  return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> List[str]:
  """A markdown table."""
  return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] +
          ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def _section(title: str, paragraphs: Sequence[str], tables: Sequence[List[str]]) -> List[str]:
  """`## title`, the paragraphs, then the tables and figure lines, blank-line separated."""
  lines = [f"## {title}", ""]
  for block in list(paragraphs) + list(tables):
    lines += ([block] if isinstance(block, str) else block) + [""]
  return lines


def markdown(results: Dict[str, Any], pos_tags: Optional[List[str]]) -> str:
  meta = results["meta"]
  lines = ["# Discriminator analysis: measured figures", "",
           "Written by `bench/studies/discriminator_analysis.py` (do not edit by hand; discussion in "
           "[scoring.md](scoring.md)).", "",
           f"- model: `{meta['model_dir']}`, checkpoint `{os.path.basename(meta['checkpoint'])}` "
           f"({meta['model']})",
           f"- command: `{meta['command']}`",
           f"- run time: {meta['seconds'] / 60:.1f} min on {meta['host']}", ""]
  if "calibration" in results:
    c = results["calibration"]
    table = _table(["replacements", "tokens", "replaced", "mean p", "ECE", "AUC",
                    "accuracy (p >= 0.5)", "accuracy of 'all original'"],
                   [[source, c[source]["tokens"],
                     f"{100 * c[source]['replaced_fraction_overall']:.1f}%",
                     _f(c[source]["mean_probability_overall"]), _f(c[source]["ece"], 4),
                     _f(c[source]["auc"]), _f(c[source]["accuracy"]),
                     _f(c[source]["accuracy_all_original"])]
                    for source in ("generator", "uniform")])
    flagged = ", ".join(f"`{t}` {n}" for t, n in c["generator"]["most_flagged_originals"])
    lines += _section("Calibration (WikiText-2 valid, held out)",
                      [f"{c['rows']} windows, {100 * c['replace_prob']:.0f}% of tokens replaced; "
                       "a replacement equal to the original counts as original."],
                      [table, "Original tokens most often given p >= 0.9 (generator run, "
                       f"count): {flagged}.", "![reliability](discriminator_reliability.png)"])
  if "pos" in results:
    p = results["pos"]
    rows = [(t, p["generator"][t], p["uniform"][t]) for t in pos_tags or []]
    rows.append(("all tags", dict(p["generator_all_tags"], replaced=""), p["uniform_all_tags"]))
    table = _table(["tag", "replaced (gen)", "detection (gen)", "false alarms (gen)",
                    "AUC (gen)", "detection (uniform)", "false alarms (uniform)",
                    "AUC (uniform)"],
                   [[tag, g["replaced"]] + [_f(x[k]) for x in (g, u) for k in
                                            ("detection_rate", "false_alarm_rate", "auc")]
                    for tag, g, u in rows])
    lines += _section("Part of speech (CoNLL-2000 test, gold tags)",
                      [f"{p['sentences']} sentences, {p['words']} words; "
                       f"{100 * p['replace_prob']:.0f}% of the words of every tag replaced. "
                       "Rates at p >= 0.5, word probability = max over its WordPieces.",
                       "AUC: replaced against untouched words of the tag, by word probability."],
                      [table, "![pos](discriminator_pos.png)"])
  if "cola" in results:
    c = results["cola"]
    table = _table(["score (higher = flagged)", "AUC", "best MCC"],
                   [[name, _f(s["auc"]), _f(s["best_mcc"])] for name, s in c["scores"].items()])
    lines += _section("Grammaticality, zero-shot (CoLA dev)",
                      [f"{c['sentences']} sentences, {100 * c['unacceptable_fraction']:.1f}% "
                       "unacceptable. AUC of the score at flagging unacceptable sentences (0.5 "
                       "= chance); MCC at the best threshold chosen on dev itself (an upper "
                       "bound)."], [table, "![cola](discriminator_cola.png)"])
  if "rerank" in results:
    r = results["rerank"]
    tables = [_table(["method", "top-1 (generator)", "top-1 (uniform)", "ms / candidate"],
                     [[name, _f(m["top1"]), _f(r["uniform"]["methods"][name]["top1"]),
                       _f(m["ms_per_candidate"], 2)]
                      for name, m in r["generator"]["methods"].items()])]
    for source in ("generator", "uniform"):
      tables += [f"One group with {source} substitutions (the original first; the "
                 "discriminator ranks lowest first, PLL and unigram highest first):",
                 _table(["candidate", "mean log-odds", "PLL", "unigram"],
                        [[e["text"], e["mean_log_odds"], e["pll"], e["unigram"]]
                         for e in r[source]["example"]])]
    lines += _section("Re-ranking single-word substitutions (WikiText-2 valid sentences)",
                      [f"{r['groups']} sentences, each with {r['k']} substitutions of one "
                       "one-WordPiece word: sampled from the generator (the main setting) or "
                       "uniformly from the vocabulary's whole words (a sanity check). Top-1 = "
                       f"the original strictly best (chance {r['random_top1']:.3f}). Unigram "
                       "timing leaves out counting the corpus. Time on this host, batch 64."],
                      tables)
  return "\n".join(lines[:-1]) + "\n"
