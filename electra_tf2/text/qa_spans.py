"""The official answer search in the graph: every window's candidate spans -> one per question.

What electra_tf2/tasks/qa_decoding.py does in Python (official
finetune/qa/qa_metrics.py:90-269) for the answer it predicts:

1. candidates are the beam pairs (start i, end j) of the joint head, or the
   n_best_size best start and end logits without joint_prediction; a candidate is
   dropped when it starts at 0, starts or ends outside the window's document
   tokens, is not the max-context window of its start, ends before it starts or
   is longer than max_answer_length WordPieces (qa_metrics.py:136-153);
2. its score is the start log-prob plus the end log-prob (or the two logits),
   added in float64 as Python does; the answer is the best candidate over the
   question's windows, the first one (window, then i, then j) on ties, as the
   official stable sort (qa_metrics.py:177-180). The n-best list below it only
   de-duplicates texts, so it never changes the answer;
3. SQuAD 2.0: score_null is the minimum over windows of the answerability logit
   (or start_logits[0] + end_logits[0] without the classifier), at most 1e6; the
   null score difference is score_null, or score_null minus the best score
   without the classifier (qa_metrics.py:121-129, 252-258).

A question without any valid candidate gets `found` False (the official code
predicts the nonce text "empty" then).

SentencePiece (#42, tasks/qa_decoding.py): the answer is the context between its
first piece's start and its last piece's end (`qa_windows.piece_text`). A span of one
lone U+2581 piece is the empty text, which SQuAD 2.0's prediction passes over (the best
non-null text of the n-best list, qa_decoding.py `best_prediction`): with squad_v2 and
n_best_size >= 2 the answer is the best span whose text is not empty, if there is one.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import tensorflow as tf

from electra_tf2.text import qa_windows

Outputs = Dict[str, tf.Tensor]
_NULL_START = 1000000.0  # qa_metrics.py:111


class Decoding(NamedTuple):
  """The settings of the answer search (QuestionAnswerer's; a QA `.tflite`'s metadata)."""
  joint_prediction: bool
  n_best_size: int
  max_answer_length: int
  squad_v2: bool
  answerable_classifier: bool
  qa_na_threshold: float


def candidates(outputs: Outputs, joint_prediction: bool, n_best_size: int):
  """`(start, end, start_score, end_score)`, each `[windows, candidates]`, in the
  official order (start i, then end j)."""
  if joint_prediction:
    start = outputs["start_top_index"][:, :, tf.newaxis]
    end = outputs["end_top_index"]
    start_score = outputs["start_top_log_probs"][:, :, tf.newaxis]
    end_score = outputs["end_top_log_probs"]
  else:
    k = tf.minimum(n_best_size, tf.shape(outputs["start_logits"])[1])
    start_score, start = tf.nn.top_k(outputs["start_logits"], k)  # ties: lower index first
    end_score, end = tf.nn.top_k(outputs["end_logits"], k)
    start, start_score = start[:, :, tf.newaxis], start_score[:, :, tf.newaxis]
    end, end_score = end[:, tf.newaxis, :], end_score[:, tf.newaxis, :]
  shape = tf.broadcast_dynamic_shape(tf.shape(start), tf.shape(end))
  flat = lambda t: tf.reshape(tf.broadcast_to(t, shape), [shape[0], -1])
  return flat(start), flat(end), flat(start_score), flat(end_score)


def best_spans(outputs: Outputs, token_word: tf.Tensor, max_context: tf.Tensor,
               example: tf.Tensor, n_examples: tf.Tensor, joint_prediction: bool,
               n_best_size: int, max_answer_length: int,
               token_chars: Optional[Tuple[tf.Tensor, tf.Tensor]] = None
               ) -> Dict[str, tf.Tensor]:
  """The best span of each question `[n_examples]`.

  Args:
    outputs: the QA head's outputs on the windows `[windows, ...]`.
    token_word, max_context: `[windows, seq_len]` (text/qa_windows.py's `Windows`).
    example: `[windows]` the question of each window.
    token_chars: the [start, end) characters of every token `[windows, seq_len]`: spans
      whose text would be empty are no candidates (`qa_windows.token_chars`).

  Returns:
    `found` (bool), `row` (its window; the number of windows when not found),
    `start`, `end` (token positions in it), `start_score`, `end_score` (float64);
    zeros when not found.
  """
  start, end, start_score, end_score = candidates(outputs, joint_prediction, n_best_size)
  start, end = tf.cast(start, tf.int32), tf.cast(end, tf.int32)
  valid = ((start != 0) & (tf.gather(token_word, start, batch_dims=1) >= 0)
           & (tf.gather(token_word, end, batch_dims=1) >= 0)
           & tf.gather(max_context, start, batch_dims=1)
           & (end >= start) & (end - start + 1 <= max_answer_length))
  if token_chars is not None:
    valid &= (tf.gather(token_chars[1], end, batch_dims=1)
              > tf.gather(token_chars[0], start, batch_dims=1))
  start_score, end_score = tf.cast(start_score, tf.float64), tf.cast(end_score, tf.float64)
  score = tf.where(valid, start_score + end_score, -float("inf"))
  window_best = tf.reduce_max(score, axis=1)
  column = tf.reduce_min(tf.where(score == window_best[:, tf.newaxis],
                                  tf.range(tf.shape(score)[1])[tf.newaxis], tf.int32.max), axis=1)

  example = tf.cast(example, tf.int32)
  n_examples = tf.cast(n_examples, tf.int32)
  best = tf.math.unsorted_segment_max(window_best, example, n_examples)
  rows = tf.range(tf.shape(score)[0])
  is_best = (window_best == tf.gather(best, example)) & (window_best > -float("inf"))
  row = tf.math.unsorted_segment_min(tf.where(is_best, rows, tf.int32.max), example,
                                     n_examples)
  found = row < tf.int32.max
  # Questions without a span read a padding row of zeros (there may be no window at all).
  row = tf.where(found, row, tf.shape(score)[0])
  index = tf.stack([row, tf.gather(tf.pad(column, [[0, 1]]), row)], -1)
  pick = lambda t: tf.gather_nd(tf.pad(t, [[0, 1], [0, 0]]), index)
  return {"found": found, "row": row, "start": pick(start),
          "end": pick(end), "start_score": pick(start_score), "end_score": pick(end_score)}


def null_score_diff(outputs: Outputs, example: tf.Tensor, n_examples: tf.Tensor,
                    best_score: tf.Tensor, answerable_classifier: bool) -> tf.Tensor:
  """SQuAD 2.0's null odds `[n_examples]` (float64): above qa_na_threshold, no answer."""
  if answerable_classifier:
    window_null = outputs["answerable_logit"]
  else:
    window_null = outputs["start_logits"][:, 0] + outputs["end_logits"][:, 0]
  score_null = tf.minimum(
      tf.math.unsorted_segment_min(tf.cast(window_null, tf.float64), tf.cast(example, tf.int32),
                                   tf.cast(n_examples, tf.int32)), _NULL_START)
  return score_null if answerable_classifier else score_null - best_score


def answers(windows: qa_windows.Windows, outputs: Outputs, n_questions: tf.Tensor,
            vocab: tf.Tensor, do_lower_case: bool, strip_accents: bool,
            decoding: Decoding) -> Outputs:
  """The QA head's outputs on the windows -> the answer of each of the n questions
  (QuestionAnswerer's outputs: answer_text, answer_start, answer_end, score; with
  squad_v2 also span_text, is_impossible, null_score_diff).

  vocab: the WordPiece strings in id order; do_lower_case, strip_accents: the
  tokenizer's (`get_final_text` maps the answer back to the context's characters; not
  used with SentencePiece, whose windows have `char_starts`).
  """
  sentencepiece = windows.char_starts is not None
  nonempty = sentencepiece and decoding.squad_v2 and decoding.n_best_size >= 2
  search = lambda token_chars=None: best_spans(
      outputs, windows.token_word, windows.max_context, windows.example, n_questions,
      decoding.joint_prediction, decoding.n_best_size, decoding.max_answer_length,
      token_chars)
  best = search()
  if nonempty:  # the n-best list's best non-empty text (its second entry at worst)
    text_best = search(qa_windows.token_chars(windows))
    best = {k: tf.where(text_best["found"], v, best[k]) for k, v in text_best.items()}
  found = tf.where(best["found"])[:, 0]
  span = [tf.gather(best[k], found) for k in ("row", "start", "end")]
  if sentencepiece:
    text, start, end = qa_windows.piece_text(windows, *span)
  else:
    text, start, end = qa_windows.span_text(windows, vocab, *span, do_lower_case,
                                            strip_accents)
  shape = tf.shape(best["found"], out_type=tf.int64)
  scatter = lambda values: tf.scatter_nd(found[:, tf.newaxis], values, shape)
  span, score = scatter(text), best["start_score"] + best["end_score"]
  result = {"answer_text": span, "answer_start": scatter(start),
            "answer_end": scatter(end), "score": tf.cast(score, tf.float32)}
  if decoding.squad_v2:
    odds = null_score_diff(outputs, windows.example, n_questions, score,
                           decoding.answerable_classifier)
    impossible = odds > decoding.qa_na_threshold
    result.update(answer_text=tf.where(impossible, "", span), span_text=span,
                  is_impossible=impossible, null_score_diff=tf.cast(odds, tf.float32))
  return result
