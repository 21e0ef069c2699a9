"""QA decoding: windows' logits -> answer text, n-best, null odds (official qa_metrics.py).

For every question (`decode_example`):
1. each window's candidates are the beam pairs (start i, end j) of the joint
   head (or the n_best_size best start and end logits without
   joint_prediction); a candidate is dropped when it falls outside the
   window's tokens, starts at 0, starts or ends outside the document part, is
   not the max-context window of its start, ends before it starts, or is
   longer than max_answer_length wordpieces;
2. score = start log-prob + end log-prob (or the two logits); candidates are
   sorted by score, mapped back to the original text with `get_final_text`
   (SentencePiece: the context between the pieces' character offsets),
   de-duplicated on that text and cut to n_best_size ("empty" if none);
3. SQuAD 2.0: score_null = the minimum over windows of the answerability
   logit (or of start_logits[0] + end_logits[0] without the classifier); the
   null odds are score_null, or score_null minus the best non-null score
   without the classifier. The prediction is always the best non-null text;
   the evaluation (or the test output) applies qa_na_threshold.

`SpanBasedQAScorer` collects the head's outputs, writes qa_preds_file, the n-best
lists (which the official code computes but does not write) and qa_na_file for
SQuAD 2.0, and scores them with electra_tf2/tasks/qa_eval.py.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.utils.atomic_io import write_json_atomic
from electra_tf2.tasks import qa_eval
from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.scorers import Results, Scorer
from electra_tf2.text.tokenizer import is_control, resolve_strip_accents

OUTPUT_NAMES = ("start_logits", "end_logits", "answerable_logit", "start_top_log_probs",
                "start_top_index", "end_top_log_probs", "end_top_index")


@dataclasses.dataclass
class Prediction:
  """One n-best entry."""
  text: str
  start_logit: float
  end_logit: float

  @property
  def score(self) -> float:
    return self.start_logit + self.end_logit


def get_best_indexes(logits: Sequence[float], n_best_size: int) -> List[int]:
  """Indices of the n_best_size largest logits, best first (stable on ties)."""
  order = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
  return [index for index, _ in order[:n_best_size]]


def compute_softmax(scores: Sequence[float]) -> List[float]:
  if not scores:
    return []
  top = max(scores)
  exps = [float(np.exp(s - top)) for s in scores]
  total = sum(exps)
  return [e / total for e in exps]


@functools.lru_cache(maxsize=4)
def _basic_tokenizer(do_lower_case: bool, strip_accents: Optional[bool] = None):
  """The official BasicTokenizer in Python, as get_final_text builds it
  (`tokenization.BasicTokenizer(do_lower_case=...)`): tf-models-official's copy of
  BERT's, with ELECTRA's `_is_control` (every category C*, text/tokenizer.py).
  port: `strip_accents` False keeps accents when lowercasing, as the tokenizer did."""
  from official.nlp.tools import tokenization  # pylint: disable=g-import-not-at-top
  keep_accents = not resolve_strip_accents(do_lower_case, strip_accents)

  class ElectraBasicTokenizer(tokenization.BasicTokenizer):
    def _clean_text(self, text):
      return super()._clean_text("".join(c for c in text if not is_control(c)))

    def _run_strip_accents(self, text):
      return text if keep_accents else super()._run_strip_accents(text)

  return ElectraBasicTokenizer(do_lower_case=do_lower_case)


def _strip_spaces(text: str) -> Tuple[str, Dict[int, int]]:
  """Text without spaces and the map from its indices to the original ones."""
  chars, ns_to_s_map = [], {}
  for i, c in enumerate(text):
    if c == " ":
      continue
    ns_to_s_map[len(chars)] = i
    chars.append(c)
  return "".join(chars), ns_to_s_map


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool,
                   strip_accents: Optional[bool] = None) -> str:
  """Projects normalised wordpiece text back onto the original characters.

  E.g. pred_text "steve smith", orig_text "Steve Smith's" -> "Steve Smith".
  `orig_text` is basic-tokenized; if, without spaces, it has as many
  characters as orig_text, they are aligned one to one and pred_text's span
  is cut out of orig_text; when any step fails, orig_text is returned.
  """
  tok_text = " ".join(_basic_tokenizer(do_lower_case, strip_accents).tokenize(orig_text))
  start_position = tok_text.find(pred_text)
  if start_position == -1:
    return orig_text
  end_position = start_position + len(pred_text) - 1
  orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
  tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
  if len(orig_ns_text) != len(tok_ns_text):
    return orig_text
  tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}

  def to_orig(position: int) -> Optional[int]:
    ns_position = tok_s_to_ns_map.get(position)
    return None if ns_position is None else orig_ns_to_s_map.get(ns_position)
  orig_start, orig_end = to_orig(start_position), to_orig(end_position)
  if orig_start is None or orig_end is None:
    return orig_text
  return orig_text[orig_start:orig_end + 1]


def _candidate_text(feature: Mapping[str, Any], task: str, doc_tokens: Sequence[str],
                    start_index: int, end_index: int, do_lower_case: bool,
                    strip_accents: Optional[bool] = None) -> str:
  tok_tokens = feature[task + "_tokens"][start_index:end_index + 1]
  token_to_orig_map = feature[task + "_token_to_orig_map"]
  orig_tokens = doc_tokens[token_to_orig_map[start_index]:token_to_orig_map[end_index] + 1]
  tok_text = " ".join(tok_tokens).replace(" ##", "").replace("##", "")
  tok_text = " ".join(tok_text.strip().split())
  return get_final_text(tok_text, " ".join(orig_tokens), do_lower_case, strip_accents)


def decode_example(example, features: Sequence[Mapping[str, Any]],
                   results: Mapping[int, Mapping[str, np.ndarray]], task: str,
                   config: FinetuningConfig, v2: bool
                   ) -> Tuple[List[Prediction], Optional[float]]:
  """The n-best predictions of one question and, for v2, its null score.

  Args:
    example: the `QAExample`.
    features: its windows, featurised with for_eval=True.
    results: eid -> the head's outputs for that window (OUTPUT_NAMES).
    task: the task name (feature prefix).
    config: n_best_size, max_answer_length, joint_prediction,
      answerable_classifier, do_lower_case.
    v2: whether null scores are computed.
  """
  prelim = []  # (score, start_logit, end_logit, window, start, end)
  score_null = 1000000.0
  for window, feature in enumerate(features):
    result = results[feature[task + "_eid"]]
    if v2:
      score_null = min(score_null, _window_null_score(result, config))
    prelim.extend(_window_candidates(feature, result, window, task, config))
  prelim.sort(key=lambda p: p[0], reverse=True)  # stable: ties keep the candidate order
  nbest = _nbest(prelim, example, features, task, config)
  return nbest, (score_null if v2 else None)


def _window_null_score(result: Mapping[str, np.ndarray], config: FinetuningConfig) -> float:
  """A window's null score: the answerability logit, else start_logits[0] + end_logits[0]."""
  if config.answerable_classifier:
    return float(result["answerable_logit"])
  return float(result["start_logits"][0] + result["end_logits"][0])


def _window_candidates(feature: Mapping[str, Any], result: Mapping[str, np.ndarray],
                       window: int, task: str, config: FinetuningConfig
                       ) -> List[Tuple[float, float, float, int, int, int]]:
  """A window's valid (start, end) pairs, in the head's order, as
  (score, start_logit, end_logit, window, start, end)."""
  if config.joint_prediction:
    start_indexes = result["start_top_index"]
    end_indexes = result["end_top_index"]
  else:
    start_indexes = get_best_indexes(result["start_logits"], config.n_best_size)
    end_indexes = get_best_indexes(result["end_logits"], config.n_best_size)
  n_tokens = len(feature[task + "_tokens"])
  token_to_orig_map = feature[task + "_token_to_orig_map"]
  token_is_max_context = feature[task + "_token_is_max_context"]
  candidates = []
  for i, start_index in enumerate(start_indexes):
    start_index = int(start_index)
    ends = end_indexes[i] if config.joint_prediction else end_indexes
    for j, end_index in enumerate(ends):
      end_index = int(end_index)
      if start_index >= n_tokens or end_index >= n_tokens or start_index == 0:
        continue
      if start_index not in token_to_orig_map or end_index not in token_to_orig_map:
        continue
      if not token_is_max_context.get(start_index, False):
        continue
      if end_index < start_index or end_index - start_index + 1 > config.max_answer_length:
        continue
      if config.joint_prediction:
        start_logit = float(result["start_top_log_probs"][i])
        end_logit = float(result["end_top_log_probs"][i, j])
      else:
        start_logit = float(result["start_logits"][start_index])
        end_logit = float(result["end_logits"][end_index])
      candidates.append((start_logit + end_logit, start_logit, end_logit, window, start_index,
                         end_index))
  return candidates


def _nbest(prelim: Sequence[Tuple[float, float, float, int, int, int]], example,
           features: Sequence[Mapping[str, Any]], task: str, config: FinetuningConfig
           ) -> List[Prediction]:
  """The best-scored candidates' texts, each text once, at most n_best_size ("empty" if none)."""
  nbest: List[Prediction] = []
  seen = set()
  for _, start_logit, end_logit, window, start_index, end_index in prelim:
    if len(nbest) >= config.n_best_size:
      break
    char_spans = features[window].get(task + "_token_char_spans")
    if char_spans is not None:  # SentencePiece: the context between the pieces' characters
      text = example.context[char_spans[start_index][0]:char_spans[end_index][1]]
    else:
      text = _candidate_text(features[window], task, example.doc_tokens, start_index,
                             end_index, config.do_lower_case, config.strip_accents)
    if text in seen:
      continue
    seen.add(text)
    nbest.append(Prediction(text, start_logit, end_logit))
  if not nbest:
    nbest.append(Prediction("empty", 0.0, 0.0))
  return nbest


def best_prediction(nbest: Sequence[Prediction], score_null: Optional[float],
                    answerable_classifier: bool) -> Tuple[str, Optional[float]]:
  """The predicted text (best non-null) and the null odds (None for v1)."""
  best_non_null = next((p for p in nbest if p.text), nbest[0])
  if score_null is None:
    return nbest[0].text, None
  if answerable_classifier:
    return best_non_null.text, score_null
  return best_non_null.text, score_null - best_non_null.score


def nbest_json(nbest: Sequence[Prediction]) -> List[Dict[str, Any]]:
  probs = compute_softmax([p.score for p in nbest])
  return [{"text": p.text, "probability": prob, "start_logit": p.start_logit,
           "end_logit": p.end_logit} for p, prob in zip(nbest, probs)]


def _write_json(path: str, data: Any) -> None:
  """Prediction files keep their key order (the official files are in question order)."""
  write_json_atomic(path, data, indent=1, sort_keys=False)


class SpanBasedQAScorer(Scorer):
  """Decodes and scores SQuAD 1.1, SQuAD 2.0 and MRQA predictions.

  Args:
    config: the fine-tuning config (decoding options and output paths).
    task: the `QATask`; its examples of `split` are the questions.
    split: "dev" (or "test" for test outputs).
    v2: SQuAD 2.0 (null odds and the v2 metrics).
  """

  def __init__(self, config: FinetuningConfig, task, split: str, v2: bool):
    super().__init__()
    self._config = config
    self._task = task
    self._name = task.name
    self._split = split
    self._v2 = v2
    self._results: Dict[int, Dict[str, np.ndarray]] = {}
    self.nbest: Dict[str, List[Dict[str, Any]]] = collections.OrderedDict()

  def update(self, outputs: Mapping[str, np.ndarray]) -> None:
    super().update(outputs)
    for row, eid in enumerate(outputs["eid"]):
      self._results[int(eid)] = {name: outputs[name][row] for name in OUTPUT_NAMES}

  def predictions(self) -> Tuple[Dict[str, str], Dict[str, float]]:
    """({id: text}, {id: null odds} (empty for v1)) for every question of the split."""
    predictions: Dict[str, str] = collections.OrderedDict()
    null_odds: Dict[str, float] = collections.OrderedDict()
    examples = self._task.get_examples(self._split)
    self._task.prepare(examples)
    for example in examples:
      features = self._task.featurize(example, False, for_eval=True)
      nbest, score_null = decode_example(example, features, self._results, self._name,
                                         self._config, self._v2)
      text, odds = best_prediction(nbest, score_null, self._config.answerable_classifier)
      predictions[example.example_id] = text
      if odds is not None:
        null_odds[example.example_id] = float(odds)
      self.nbest[example.example_id] = nbest_json(nbest)
    self._task.release()
    return predictions, null_odds

  def write_predictions(self) -> Tuple[Dict[str, str], Dict[str, float]]:
    """Decodes and writes qa_preds_file, its n-best lists (`<task>_nbest.json` beside
    it: text, probability, start/end log-probs) and qa_na_file for SQuAD 2.0."""
    predictions, null_odds = self.predictions()
    preds_path = self._config.qa_preds_path(self._name)
    _write_json(preds_path, predictions)
    _write_json(os.path.join(os.path.dirname(preds_path), f"{self._name}_nbest.json"),
                self.nbest)
    if self._v2:
      _write_json(self._config.qa_na_path(self._name), null_odds)
    return predictions, null_odds

  def get_results(self) -> Results:
    predictions, null_odds = self.write_predictions()
    qids = set(predictions) if self._config.max_examples_per_split else None
    if self._name == "squad":
      results = qa_eval.squad_v2_evaluate(self._task.dataset(self._split), predictions,
                                          null_odds, self._config.qa_na_threshold, qids)
    elif self._name == "squadv1":
      results = qa_eval.squad_v1_evaluate(self._task.dataset(self._split), predictions, qids)
    else:
      results = qa_eval.mrqa_evaluate(self._task.gold_answers(self._split), predictions,
                                      skip_no_answer=True)
    results = dict(sorted(results.items()))
    _write_json(self._config.qa_eval_path(self._name), results)
    return results
