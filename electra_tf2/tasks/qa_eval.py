"""The official SQuAD 1.1, SQuAD 2.0 and MRQA evaluation formulas
(finetune/qa/squad_official_eval.py, squad_official_eval_v1.py, mrqa_official_eval.py).

Written from the official scripts' definitions (finetune/qa/squad_official_eval*.py,
mrqa_official_eval.py) as functions on in-memory data:

- answers are normalised the SQuAD way: lowercase, drop punctuation
  (`string.punctuation`), drop the articles a/an/the, collapse whitespace;
- exact match and token F1 take the maximum over the gold answers;
- SQuAD 1.1 (`squad_v1_evaluate`): questions without a prediction score 0;
- SQuAD 2.0 (`squad_v2_evaluate`): gold answers that normalise to "" are
  dropped and a question without any is answered correctly only by ""; F1 is
  1 when both are empty, 0 when one is; a question whose null odds exceed
  `na_prob_thresh` (qa_na_threshold, -2.75) counts as answered ""; also the
  HasAns/NoAns breakdown and the best thresholds over the null odds;
- MRQA (`mrqa_evaluate`): the 1.1 formulas; with skip_no_answer (the official
  setting) unpredicted questions are left out of the total.

`qids` restricts the gold data to the questions that were predicted (runs
with max_examples_per_split); the official scripts always read a whole file.
"""

from __future__ import annotations

import collections
import re
import string
from typing import Any, Collection, Dict, List, Mapping, Optional

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)

Dataset = List[Dict[str, Any]]  # SQuAD's "data": articles of paragraphs of qas


def normalize_answer(s: str) -> str:
  """Lower text and remove punctuation, articles and extra whitespace."""
  s = s.lower()
  s = "".join(ch for ch in s if ch not in _PUNCTUATION)
  s = _ARTICLES.sub(" ", s)
  return " ".join(s.split())


def _token_f1(prediction_tokens: List[str], gold_tokens: List[str]) -> float:
  common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
  num_same = sum(common.values())
  if num_same == 0:
    return 0.0
  precision = num_same / len(prediction_tokens)
  recall = num_same / len(gold_tokens)
  return 2 * precision * recall / (precision + recall)


# ---------------------------------------------------------------------------
# SQuAD 1.1 and MRQA
# ---------------------------------------------------------------------------


def f1_score(prediction: str, ground_truth: str) -> float:
  """SQuAD 1.1 / MRQA token F1 (0 when nothing is shared, including empty answers)."""
  return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
  return normalize_answer(prediction) == normalize_answer(ground_truth)


def _max_over_ground_truths(metric_fn, prediction: str, ground_truths: List[str]) -> float:
  return max(metric_fn(prediction, gold) for gold in ground_truths)


def _selected_qas(dataset: Dataset, qids: Optional[Collection[str]]):
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        if qids is None or qa["id"] in qids:
          yield qa


def squad_v1_evaluate(dataset: Dataset, predictions: Mapping[str, str],
                      qids: Optional[Collection[str]] = None) -> Dict[str, float]:
  """{"exact_match", "f1"} x100 over every question (unpredicted ones score 0)."""
  f1 = exact_match = total = 0.0
  for qa in _selected_qas(dataset, qids):
    total += 1
    if qa["id"] not in predictions:
      continue
    ground_truths = [answer["text"] for answer in qa["answers"]]
    prediction = predictions[qa["id"]]
    exact_match += _max_over_ground_truths(exact_match_score, prediction, ground_truths)
    f1 += _max_over_ground_truths(f1_score, prediction, ground_truths)
  total = max(total, 1.0)
  return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def mrqa_evaluate(answers: Mapping[str, List[str]], predictions: Mapping[str, str],
                  skip_no_answer: bool = True) -> Dict[str, float]:
  """{"exact_match", "f1"} x100; answers are qid -> gold texts."""
  f1 = exact_match = total = 0.0
  for qid, ground_truths in answers.items():
    if qid not in predictions:
      if not skip_no_answer:
        total += 1
      continue
    total += 1
    prediction = predictions[qid]
    exact_match += _max_over_ground_truths(exact_match_score, prediction, ground_truths)
    f1 += _max_over_ground_truths(f1_score, prediction, ground_truths)
  total = max(total, 1.0)
  return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


# ---------------------------------------------------------------------------
# SQuAD 2.0
# ---------------------------------------------------------------------------


def compute_exact(a_gold: str, a_pred: str) -> int:
  return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
  """SQuAD 2.0 token F1: when either side is empty, 1 if both are, else 0."""
  gold_toks = normalize_answer(a_gold).split() if a_gold else []
  pred_toks = normalize_answer(a_pred).split() if a_pred else []
  if not gold_toks or not pred_toks:
    return float(gold_toks == pred_toks)
  return _token_f1(pred_toks, gold_toks)


def _make_eval_dict(exact_scores: Mapping[str, float], f1_scores: Mapping[str, float],
                    qid_list: Optional[List[str]] = None) -> Dict[str, float]:
  if not qid_list:
    total = len(exact_scores)
    return {"exact": 100.0 * sum(exact_scores.values()) / total,
            "f1": 100.0 * sum(f1_scores.values()) / total, "total": total}
  total = len(qid_list)
  return {"exact": 100.0 * sum(exact_scores[k] for k in qid_list) / total,
          "f1": 100.0 * sum(f1_scores[k] for k in qid_list) / total, "total": total}


def _find_best_thresh(predictions: Mapping[str, str], scores: Mapping[str, float],
                      na_probs: Mapping[str, float], qid_to_has_ans: Mapping[str, bool]):
  num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
  cur_score = best_score = num_no_ans
  best_thresh = 0.0
  for qid in sorted(na_probs, key=lambda k: na_probs[k]):
    if qid not in scores:
      continue
    if qid_to_has_ans[qid]:
      diff = scores[qid]
    else:
      diff = -1 if predictions[qid] else 0
    cur_score += diff
    if cur_score > best_score:
      best_score = cur_score
      best_thresh = na_probs[qid]
  return 100.0 * best_score / len(scores), best_thresh


def squad_v2_evaluate(dataset: Dataset, predictions: Mapping[str, str],
                      na_probs: Optional[Mapping[str, float]] = None,
                      na_prob_thresh: float = 1.0,
                      qids: Optional[Collection[str]] = None) -> Dict[str, float]:
  """The official v2 script's output: exact, f1, total, HasAns_*, NoAns_*, and with
  na_probs best_exact(_thresh), best_f1(_thresh)."""
  qas = list(_selected_qas(dataset, qids))
  qid_to_has_ans = {qa["id"]: bool(qa["answers"]) for qa in qas}
  has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
  no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
  exact_raw, f1_raw = {}, {}
  for qa in qas:
    qid = qa["id"]
    gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])] or [""]
    if qid not in predictions:
      continue
    exact_raw[qid] = max(compute_exact(a, predictions[qid]) for a in gold_answers)
    f1_raw[qid] = max(compute_f1(a, predictions[qid]) for a in gold_answers)
  probs = na_probs if na_probs is not None else {k: 0.0 for k in predictions}

  def thresholded(scores: Mapping[str, float]) -> Dict[str, float]:
    return {qid: float(not qid_to_has_ans[qid]) if probs[qid] > na_prob_thresh else s
            for qid, s in scores.items()}
  exact_thresh, f1_thresh = thresholded(exact_raw), thresholded(f1_raw)
  out = _make_eval_dict(exact_thresh, f1_thresh)
  if has_ans_qids:
    for k, v in _make_eval_dict(exact_thresh, f1_thresh, has_ans_qids).items():
      out[f"HasAns_{k}"] = v
  if no_ans_qids:
    for k, v in _make_eval_dict(exact_thresh, f1_thresh, no_ans_qids).items():
      out[f"NoAns_{k}"] = v
  if na_probs is not None:
    out["best_exact"], out["best_exact_thresh"] = _find_best_thresh(
        predictions, exact_raw, na_probs, qid_to_has_ans)
    out["best_f1"], out["best_f1_thresh"] = _find_best_thresh(
        predictions, f1_raw, na_probs, qid_to_has_ans)
  return out
