r"""What an ELECTRA discriminator flags: calibration, part of speech, grammaticality, re-ranking.

  python bench/discriminator_analysis.py --model-dir DIR [--checkpoint DIR/ckpt-N] \
      [--shared-data ../shared/data] [--output-dir docs] \
      [--stages calibration,pos,cola,rerank] [--seed 0]

DIR is a pre-trained ELECTRA model directory (ours, or an official checkpoint
converted with `python -m electra_tf2.convert to-tf2`); its generator corrupts the
text and gives the pseudo-log-likelihood baseline. Nothing is fine-tuned.

  calibration  held-out WikiText-2 valid paragraphs cut into windows of the model's
               length; --replace-prob of the tokens replaced, once by the model's own
               generator (the tokens [MASK]ed, one sample each) and once uniformly from the
               vocabulary (no special or [unused] token); a replacement equal to the
               original counts as original, as in pre-training. Per-token reliability
               diagram and expected calibration error (ECE, --bins equal-width bins).
  pos          CoNLL-2000 test (WSJ, gold POS tags): every word replaced with the same
               probability --replace-prob whatever its tag (all its WordPieces, by the
               generator and, separately, uniformly). Per tag: detection rate (replaced
               words whose word probability, the max over its pieces, is >= 0.5) and
               false-alarm rate (the same for untouched words).
  cola         CoLA dev, zero-shot: AUC of each sentence score at telling unacceptable
               sentences (label 0) from acceptable ones, and the MCC at the best
               threshold (chosen on dev itself, so an upper bound), beside the length in
               WordPieces and the generator's pseudo-log-likelihood.
  rerank       --rerank-sentences held-out WikiText-2 sentences (8-30 words), each with k
               (--k) single-word substitutions sampled from the generator at a random
               one-WordPiece word; top-1 accuracy at ranking the original first
               (strictly best: a tie counts as a miss) and milliseconds per candidate,
               for the discriminator's sentence scores, the generator's
               pseudo-log-likelihood (one masked pass per WordPiece, Salazar et al. 2020)
               and a unigram-frequency score (add-one counts of the WordPieces of
               --unigram-corpus, by default the shared corpus without WikiText). Then
               the same with substitutes drawn uniformly from the whole words of the
               vocabulary, as a sanity check of the three scorers.

Writes <output-dir>/discriminator_analysis.json, discriminator_analysis.md (the
measured figures) and discriminator_{reliability,pos,cola}.png. Figures and
discussion: docs/scoring.md.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from electra_tf2.atomic_io import atomic_path, write_json_atomic, write_text_atomic  # noqa: E402

STAGES = ("calibration", "pos", "cola", "rerank")
THRESHOLD = 0.5


def log(message: str) -> None:
  print(message, flush=True)


# ---------------------------------------------------------------------------
# Metrics (numpy)
# ---------------------------------------------------------------------------


def reliability(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10
                ) -> Dict[str, Any]:
  """Equal-width bins over [0, 1]: count, mean probability and replaced fraction per bin,
  and ECE = sum over bins of count/N * |replaced fraction - mean probability|."""
  probabilities = np.asarray(probabilities, np.float64)
  labels = np.asarray(labels, np.float64)
  index = np.minimum((probabilities * bins).astype(int), bins - 1)
  count = np.bincount(index, minlength=bins)
  total_p = np.bincount(index, probabilities, minlength=bins)
  total_y = np.bincount(index, labels, minlength=bins)
  safe = np.maximum(count, 1)
  confidence, frequency = total_p / safe, total_y / safe
  ece = float(np.sum(count / max(len(labels), 1) * np.abs(frequency - confidence)))
  return {"bins": bins, "count": count.tolist(), "mean_probability": confidence.tolist(),
          "replaced_fraction": frequency.tolist(), "ece": ece}


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
  """P(score of a random positive > score of a random negative), ties counting 1/2."""
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels, bool)
  order = np.argsort(scores, kind="mergesort")
  ranks = np.empty(len(scores))
  sorted_scores = scores[order]
  # average ranks (1-based) over ties
  starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
  ends = np.r_[starts[1:], len(scores)]
  for a, b in zip(starts, ends):
    ranks[order[a:b]] = (a + b + 1) / 2
  positives, negatives = labels.sum(), (~labels).sum()
  if positives == 0 or negatives == 0:
    return float("nan")
  return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def best_threshold_mcc(scores: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
  """The largest MCC of `predict positive iff score >= t` over every t, and that t."""
  scores = np.asarray(scores, np.float64)
  labels = np.asarray(labels, bool)
  order = np.argsort(-scores, kind="mergesort")
  s, y = scores[order], labels[order]
  last = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]  # last index of each distinct score
  tp = np.cumsum(y)[last].astype(np.float64)
  fp = np.cumsum(~y)[last].astype(np.float64)
  positives, negatives = y.sum(), (~y).sum()
  fn, tn = positives - tp, negatives - fp
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  mcc = np.where(denominator > 0, (tp * tn - fp * fn) / np.maximum(denominator, 1e-300), 0.0)
  best = int(np.argmax(mcc))
  return float(mcc[best]), float(s[last[best]])


def top1_accuracy(scores: Sequence[Sequence[float]], higher_is_better: bool) -> float:
  """Fraction of groups whose first entry (the original) is strictly better than the rest."""
  hits = 0
  for group in scores:
    group = np.asarray(group, np.float64) * (1 if higher_is_better else -1)
    hits += bool(np.all(group[0] > group[1:]))
  return hits / max(len(scores), 1)


# ---------------------------------------------------------------------------
# The model: discriminator and generator passes
# ---------------------------------------------------------------------------


def pad_rows(rows: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
  """int32 ids and mask `[len(rows), longest]`, padded with 0."""
  length = max(len(r) for r in rows)
  ids = np.zeros((len(rows), length), np.int32)
  for i, row in enumerate(rows):
    ids[i, :len(row)] = row
  return ids, (np.arange(length)[None] < np.array([len(r) for r in rows])[:, None]
               ).astype(np.int32)


class Passes:
  """Batched forward passes of one `ElectraPretrainer` (dropout off)."""

  def __init__(self, model, batch_size: int = 128):
    import tensorflow as tf
    if model.mlm_head is None:
      raise ValueError("this model has no MLM generator (uniform or ELECTRIC generator): the "
                       "corruption and pseudo-log-likelihood need one")
    self.model, self.batch_size, self.tf = model, batch_size, tf

    @tf.function(reduce_retracing=True)
    def discriminate(ids, mask):
      return model.discriminator_head(model.discriminator(ids, mask, tf.zeros_like(ids)))

    @tf.function(reduce_retracing=True)
    def generate(ids, mask, positions):
      encoder = model.mlm_encoder
      hidden = tf.gather(encoder(ids, mask, tf.zeros_like(ids)), positions, batch_dims=1)
      return tf.nn.log_softmax(model.mlm_head(hidden, encoder.embedding_table))

    self._discriminate, self._generate = discriminate, generate

  def logits(self, rows: Sequence[Sequence[int]]) -> List[np.ndarray]:
    """Discriminator logits of each row (ids with [CLS]/[SEP]), same lengths."""
    out = []
    for begin in range(0, len(rows), self.batch_size):
      batch = rows[begin:begin + self.batch_size]
      ids, mask = pad_rows(batch)
      logits = self._discriminate(ids, mask).numpy()
      out.extend(logits[i, :len(r)] for i, r in enumerate(batch))
    return out

  def log_probs(self, rows: Sequence[Sequence[int]], positions: Sequence[int]) -> np.ndarray:
    """Generator log-softmax `[len(rows), vocab]` at one position of each row."""
    out = []
    for begin in range(0, len(rows), self.batch_size):
      ids, mask = pad_rows(rows[begin:begin + self.batch_size])
      at = np.asarray(positions[begin:begin + self.batch_size], np.int32)[:, None]
      out.append(self._generate(ids, mask, at).numpy()[:, 0])
    return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


def sample(log_probs: np.ndarray, allowed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
  """One id per row from softmax(log_probs) restricted to `allowed` (bool `[vocab]`)."""
  logits = np.where(allowed[None], log_probs, -np.inf)
  gumbel = -np.log(-np.log(rng.uniform(1e-12, 1.0, logits.shape)))
  return np.argmax(logits + gumbel, axis=1)


def pseudo_log_likelihood(passes: Passes, rows: Sequence[Sequence[int]], mask_id: int
                          ) -> np.ndarray:
  """Sum over each row's tokens (not [CLS]/[SEP]) of log P_generator(token | the rest),
  the token [MASK]ed: one pass per token."""
  masked, positions, owner, targets = [], [], [], []
  for r, row in enumerate(rows):
    for p in range(1, len(row) - 1):
      copy = list(row)
      copy[p] = mask_id
      masked.append(copy)
      positions.append(p)
      owner.append(r)
      targets.append(row[p])
  log_probs = passes.log_probs(masked, positions)
  picked = log_probs[np.arange(len(targets)), targets] if targets else np.zeros(0)
  return np.bincount(np.asarray(owner, int), picked, minlength=len(rows))


def corrupt(passes: Passes, rows: Sequence[Sequence[int]], chosen: Sequence[Sequence[int]],
            source: str, allowed: np.ndarray, mask_id: int, rng: np.random.Generator
            ) -> List[List[int]]:
  """Rows with the `chosen` positions replaced by generator samples (all of a row's
  positions [MASK]ed at once) or uniform draws from `allowed`."""
  out = [list(r) for r in rows]
  if source == "uniform":
    pool = np.flatnonzero(allowed)
    for row, where in zip(out, chosen):
      for p in where:
        row[p] = int(rng.choice(pool))
    return out
  masked, positions, slots = [], [], []
  for r, (row, where) in enumerate(zip(rows, chosen)):
    copy = list(row)
    for p in where:
      copy[p] = mask_id
    for p in where:
      masked.append(copy)
      positions.append(p)
      slots.append((r, p))
  if slots:
    for (r, p), token in zip(slots, sample(passes.log_probs(masked, positions), allowed, rng)):
      out[r][p] = int(token)
  return out


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def wikitext_paragraphs(path: str) -> List[str]:
  """The text lines of a WikiText raw file (no headings, no blank lines)."""
  with open(path, encoding="utf-8") as f:
    return [line.strip() for line in f if line.strip() and not line.strip().startswith("=")]


def wikitext_sentences(paragraphs: Sequence[str], min_words: int = 8, max_words: int = 30
                       ) -> List[str]:
  """Sentences (split after " . ") without WikiText's @-@ joins or unknown markers."""
  out = []
  for paragraph in paragraphs:
    for sentence in re.split(r"(?<= \.) ", paragraph):
      words = sentence.split()
      if min_words <= len(words) <= max_words and "@" not in sentence and "<unk>" not in sentence:
        out.append(sentence)
  return out


def conll_sentences(path: str) -> List[List[Tuple[str, str]]]:
  """CoNLL-2000 `word POS chunk` lines -> sentences of (word, POS)."""
  sentences, current = [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      parts = line.split()
      if not parts:
        if current:
          sentences.append(current)
        current = []
      else:
        current.append((parts[0], parts[1]))
  if current:
    sentences.append(current)
  return sentences


def cola_dev(path: str) -> Tuple[List[str], np.ndarray]:
  """CoLA dev.tsv (no header: source, label, original label, sentence)."""
  texts, labels = [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      parts = line.rstrip("\n").split("\t")
      if len(parts) == 4:
        texts.append(parts[3])
        labels.append(int(parts[1]))
  return texts, np.array(labels)


# ---------------------------------------------------------------------------
# Stages
# ---------------------------------------------------------------------------


class Context:
  """What every stage needs: model, passes, tokenizer, scorer, vocabulary facts."""

  def __init__(self, args):
    from electra_tf2 import export, model_directory, scoring
    from electra_tf2.tokenization import FullTokenizer
    self.config = model_directory.load_pretraining_config(args.model_dir)
    self.model = model_directory.restore_pretrainer(args.model_dir, args.checkpoint, self.config)
    vocab_file = export.find_vocab(args.model_dir, self.config)
    if vocab_file is None:
      raise scoring.ScoringError(f"{args.model_dir} has no vocab.txt")
    self.passes = Passes(self.model)
    self.scorer = scoring.Scorer.from_pretrainer(
        self.model, vocab_file, self.config.do_lower_case, self.config.max_seq_length,
        name=args.model_dir)
    self.tokenizer = FullTokenizer(vocab_file, self.config.do_lower_case)
    self.tokens = self.scorer.vocab_tokens
    special = self.tokenizer.special_ids
    self.cls, self.sep, self.mask = special.cls, special.sep, special.mask
    self.max_len = self.config.max_seq_length
    # Replacements: any token but the special and [unused] ones.
    self.allowed = np.array([not (t.startswith("[") and t.endswith("]")) for t in self.tokens])
    # Re-ranking substitutes: whole alphabetic words.
    self.whole_words = self.allowed & np.array([t.isalpha() for t in self.tokens])
    self.rng = np.random.default_rng(args.seed)


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


# ---------------------------------------------------------------------------
# Report: figures and markdown
# ---------------------------------------------------------------------------


def _save(fig, path: str) -> None:
  with atomic_path(path) as tmp:
    fig.savefig(tmp, dpi=90, format="png")


def plot_reliability(calibration: Dict[str, Any], path: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
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
  _save(fig, path)
  plt.close(fig)


def plot_pos(pos: Dict[str, Any], path: str, min_replaced: int) -> List[str]:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
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
  _save(fig, path)
  plt.close(fig)
  return tags


def plot_cola(cola: Dict[str, Any], path: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
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
  _save(fig, path)
  plt.close(fig)


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
           "Written by `bench/discriminator_analysis.py` (do not edit by hand; discussion in "
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


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model-dir", required=True)
  parser.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
  parser.add_argument("--shared-data", default=os.path.join(os.path.dirname(REPO), "shared",
                                                            "data"))
  parser.add_argument("--output-dir", default=os.path.join(REPO, "docs"))
  parser.add_argument("--stages", default=",".join(STAGES))
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--replace-prob", type=float, default=0.15)
  parser.add_argument("--bins", type=int, default=10)
  parser.add_argument("--calibration-rows", type=int, default=800)
  parser.add_argument("--rerank-sentences", type=int, default=200)
  parser.add_argument("--k", type=int, default=9, help="substitutions per sentence")
  parser.add_argument("--unigram-corpus", default=None,
                      help="glob of unigram-count text (default <shared-data>/corpus/**/*.txt; "
                           "WikiText files are always left out)")
  parser.add_argument("--min-pos-replaced", type=int, default=30,
                      help="tags with fewer replaced words are left out of the figure/table")
  args = parser.parse_args(argv)
  stages = [s for s in args.stages.split(",") if s]
  unknown = sorted(set(stages) - set(STAGES))
  if unknown:
    print(f"error: --stages: unknown {', '.join(unknown)} (use {', '.join(STAGES)})",
          file=sys.stderr)
    return 2
  args.unigram_corpus = args.unigram_corpus or os.path.join(args.shared_data, "corpus", "**",
                                                            "*.txt")
  if not os.path.isdir(args.shared_data):
    print(f"error: --shared-data {args.shared_data} does not exist", file=sys.stderr)
    return 2
  from electra_tf2 import checkpoint_files, scoring
  start = time.time()
  try:
    ctx = Context(args)
  except (checkpoint_files.ModelDirectoryError, scoring.ScoringError, ValueError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  config = ctx.config
  checkpoint = args.checkpoint or checkpoint_files.latest_checkpoint(args.model_dir)
  results: Dict[str, Any] = {"meta": {
      "model_dir": args.model_dir, "checkpoint": checkpoint,
      "model": f"{config.model_size}, {config.bert_config.num_hidden_layers} layers, hidden "
               f"{config.bert_config.hidden_size}, max_seq_length {config.max_seq_length}, "
               f"vocab {config.vocab_size}",
      "command": "python bench/discriminator_analysis.py " + " ".join(
          a if " " not in a else repr(a) for a in (argv if argv is not None else sys.argv[1:])),
      "seed": args.seed, "host": f"{os.cpu_count()} CPU cores"}}
  for stage in stages:
    log(f"== {stage}")
    results[stage] = globals()[f"{stage}_stage"](ctx, args)
  results["meta"]["seconds"] = time.time() - start
  os.makedirs(args.output_dir, exist_ok=True)
  pos_tags = None
  if "calibration" in results:
    plot_reliability(results["calibration"],
                     os.path.join(args.output_dir, "discriminator_reliability.png"))
  if "pos" in results:
    pos_tags = plot_pos(results["pos"], os.path.join(args.output_dir, "discriminator_pos.png"),
                        args.min_pos_replaced)
  if "cola" in results:
    plot_cola(results["cola"], os.path.join(args.output_dir, "discriminator_cola.png"))
  write_json_atomic(os.path.join(args.output_dir, "discriminator_analysis.json"), results)
  write_text_atomic(os.path.join(args.output_dir, "discriminator_analysis.md"),
                    markdown(results, pos_tags))
  log(f"wrote {args.output_dir}/discriminator_analysis.{{json,md}} and the figures in "
      f"{results['meta']['seconds'] / 60:.1f} min")
  return 0


if __name__ == "__main__":
  sys.exit(main())
