"""Scorers against hand-computed values (finetune/*/..._metrics.py); the SQuAD/MRQA formulas (finetune/qa/qa_metrics.py, squad_official_eval*.py)."""

import numpy as np
import pytest

from electra_tf2.tasks import qa_eval, scorers


def test_accuracy():
  s = scorers.AccuracyScorer()
  s.update({"label_ids": np.array([0, 1, 1]), "predictions": np.array([0, 1, 0]),
            "loss": np.array([1.0, 2.0, 3.0])})
  s.update({"label_ids": np.array([0, 1]), "predictions": np.array([0, 0]),
            "loss": np.array([4.0, 5.0])})
  assert s.get_results() == {"accuracy": 60.0, "loss": 3.0}
  assert s.results_str() == "accuracy: 60.00 - loss: 3.00"


def test_mcc():
  # TP 2, TN 2, FP 1, FN 1: (2*2 - 1*1) / sqrt(3*3*3*3) = 1/3
  s = scorers.MCCScorer()
  s.update({"label_ids": np.array([1, 1, 1, 0, 0, 0]), "predictions": np.array([1, 1, 0, 0, 0, 1]),
            "loss": np.zeros(6)})
  assert s.get_results()["mcc"] == pytest.approx(100.0 / 3)


def test_regression():
  s = scorers.RegressionScorer()
  s.update({"targets": np.array([0.0, 0.2, 0.4, 0.6]), "predictions": np.array([0.1, 0.3, 0.2, 0.9]),
            "loss": np.array([0.01, 0.01, 0.04, 0.09])})
  r = s.get_results()
  # Pearson: sum dx dy = 0.23, sum dx^2 = 0.2, sum dy^2 = 0.3875
  assert r["pearson"] == pytest.approx(100 * 0.23 / np.sqrt(0.2 * 0.3875))
  # Spearman: ranks [1,2,3,4] vs [1,3,2,4], sum d^2 = 2: 1 - 6*2/(4*15) = 0.8
  assert r["spearman"] == pytest.approx(80.0)
  assert r["mse"] == pytest.approx(0.0375)
  assert r["loss"] == pytest.approx(0.0375)


def test_span_labels_follow_the_official_rules():
  assert scorers.get_span_labels(["B-NP", "E-NP", "O", "S-VP"]) == [(0, 1, "NP"), (3, 3, "VP")]
  assert scorers.get_span_labels(["B-NP", "I-NP", "B-NP"]) == [(0, 1, "NP"), (2, 2, "NP")]
  # I- after O opens a span; a type change without B- does not close one
  assert scorers.get_span_labels(["I-NP", "I-NP", "O"]) == [(0, 1, "NP")]
  assert scorers.get_span_labels(["B-NP", "I-VP"]) == [(0, 1, "VP")]
  assert scorers.get_span_labels([]) == []
  assert scorers.get_span_labels([2, 0, 1], {0: "O", 1: "S-X", 2: "S-Y"}) == [(0, 0, "Y"),
                                                                            (2, 2, "X")]


def test_tags_from_spans():
  spans = [(0, 2, "NP"), (3, 3, "VP")]
  assert scorers.get_tags(spans, 5, "BIOES") == ["B-NP", "I-NP", "E-NP", "S-VP", "O"]
  assert scorers.get_tags(spans, 5, "BIO") == ["B-NP", "I-NP", "I-NP", "B-VP", "O"]


def test_entity_level_f1():
  mapping = {"B-NP": 0, "E-NP": 1, "O": 2, "S-NP": 3, "S-VP": 4}
  s = scorers.EntityLevelF1Scorer(mapping)
  gold = [[0, 1, 2, 4, 2], [3, 2, 2, 2, 2]]  # (0,1,NP) (3,3,VP) | (0,0,NP)
  pred = [[0, 1, 4, 2, 4], [2, 2, 2, 2, 2]]  # (0,1,NP) (2,2,VP) [word 4 masked] | none
  s.update({"labels": np.array(gold), "predictions": np.array(pred),
            "labels_mask": np.array([[1, 1, 1, 1, 0], [1, 0, 0, 0, 0]], np.float32),
            "loss": np.array([2.0, 1.0])})
  r = s.get_results()
  # correct 1, predicted 2, gold 3
  assert (r["precision"], r["recall"]) == pytest.approx((50.0, 100.0 / 3))
  assert r["f1"] == pytest.approx(40.0)
  assert r["loss"] == pytest.approx(3.0 / 5)  # per word, counted once


# ---------------------------------------------------------------------------
# SQuAD / MRQA
# ---------------------------------------------------------------------------


def squad(qas):
  return [{"title": "t", "paragraphs": [{"context": "c", "qas": [
      {"id": qid, "question": "q?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
      for qid, golds in qas]}]}]


def test_normalisation():
  assert qa_eval.normalize_answer("The  Quick, brown fox!") == "quick brown fox"
  assert qa_eval.normalize_answer("an apple a day") == "apple day"
  assert qa_eval.normalize_answer("Theatre") == "theatre"  # articles only as whole words
  assert qa_eval.normalize_answer(" 24\u201310 ") == "24\u201310"  # not ASCII punctuation


def test_squad_v1_max_over_gold_answers_and_missing_predictions():
  data = squad([("q1", ["Denver Broncos", "the Denver Broncos", "Broncos"]),
                ("q2", ["Carolina Panthers"]), ("q3", ["x"])])
  preds = {"q1": "Broncos", "q2": "the Panthers team"}
  r = qa_eval.squad_v1_evaluate(data, preds)
  # q1 exact; q2: "panthers team" vs "carolina panthers": P = R = 1/2; q3 unanswered: 0
  assert r["exact_match"] == pytest.approx(100 / 3)
  assert r["f1"] == pytest.approx(100 * 1.5 / 3)
  assert qa_eval.squad_v1_evaluate(data, preds, qids={"q1", "q2"})["f1"] == pytest.approx(75.0)


def v2_case():
  data = squad([("q1", ["Paris"]), ("q2", []), ("q3", ["in 1895"]), ("q4", []), ("q5", ["The"])])
  preds = {"q1": "paris", "q2": "x", "q3": "1895", "q4": "something", "q5": ""}
  odds = {"q1": -5.0, "q2": 0.0, "q3": -10.0, "q4": -3.0, "q5": -20.0}
  return data, preds, odds


def test_squad_v2_thresholded_scores_and_breakdown():
  data, preds, odds = v2_case()
  r = qa_eval.squad_v2_evaluate(data, preds, odds, na_prob_thresh=-2.75)
  # q1 1/1; q2 odds 0 > -2.75 -> "" -> 1/1; q3 0/(2/3); q4 -3 < -2.75 keeps "something" -> 0/0;
  # q5's only gold normalises to "" -> gold "" -> 1/1
  assert r["total"] == 5
  assert r["exact"] == pytest.approx(100 * 3 / 5)
  assert r["f1"] == pytest.approx(100 * (3 + 2 / 3) / 5)
  assert (r["HasAns_total"], r["NoAns_total"]) == (3, 2)
  assert r["HasAns_exact"] == pytest.approx(100 * 2 / 3)
  assert r["HasAns_f1"] == pytest.approx(100 * (2 + 2 / 3) / 3)
  assert (r["NoAns_exact"], r["NoAns_f1"]) == pytest.approx((50.0, 50.0))
  # best threshold: ascending odds q5 -20, q3 -10, q1 -5, q4 -3, q2 0, starting from 2
  # (no-answer questions): exact +1 +0 +1 -1 -1 -> best 4 at -5; f1 +1 +2/3 +1 ...
  assert (r["best_exact"], r["best_exact_thresh"]) == pytest.approx((80.0, -5.0))
  assert (r["best_f1"], r["best_f1_thresh"]) == pytest.approx((100 * (4 + 2 / 3) / 5, -5.0))


def test_squad_v2_f1_on_empty_answers():
  assert qa_eval.compute_f1("", "") == 1.0
  assert qa_eval.compute_f1("", "a") == 1.0  # "a" normalises to nothing
  assert qa_eval.compute_f1("", "x") == 0.0
  assert qa_eval.compute_f1("x y", "") == 0.0
  assert qa_eval.f1_score("", "") == 0.0  # the 1.1 formula differs


def test_against_tf_models_official_evaluators():
  from official.nlp.tools import squad_evaluate_v1_1, squad_evaluate_v2_0
  data, preds, odds = v2_case()
  theirs = squad_evaluate_v2_0.evaluate(data, preds, odds)  # threshold 1.0
  ours = qa_eval.squad_v2_evaluate(data, preds, odds, na_prob_thresh=1.0)
  for key in ("exact", "f1", "total", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1"):
    assert ours[key] == pytest.approx(theirs[key]), key
  assert (ours["best_exact"], ours["best_f1"]) == pytest.approx((theirs["final_exact"],
                                                                theirs["final_f1"]))
  data = squad([("a", ["Denver Broncos", "Broncos"]), ("b", ["the cat sat"]), ("c", ["1,000"])])
  preds = {"a": "broncos!", "b": "a cat sat down", "c": "1000"}
  theirs = squad_evaluate_v1_1.evaluate(data, preds)
  ours = qa_eval.squad_v1_evaluate(data, preds)
  assert ours["exact_match"] == pytest.approx(100 * theirs["exact_match"])
  assert ours["f1"] == pytest.approx(100 * theirs["final_f1"])


def test_mrqa_skips_unpredicted_questions():
  answers = {"a": ["x"], "b": ["y z", "w"]}
  assert qa_eval.mrqa_evaluate(answers, {"a": "X."}) == {"exact_match": 100.0, "f1": 100.0}
  r = qa_eval.mrqa_evaluate(answers, {"a": "x"}, skip_no_answer=False)
  assert r == {"exact_match": 50.0, "f1": 50.0}
  r = qa_eval.mrqa_evaluate(answers, {"a": "q", "b": "z"})
  assert r["f1"] == pytest.approx(100 * (2 / 3) / 2)
