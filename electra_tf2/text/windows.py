"""Windows over texts longer than the model: the scorer's and SQuAD's.

- `window_layout`, `windowed_inputs` (tensors): windows of a fixed width over
  each text's WordPieces as `[CLS] window [SEP]` rows, every position scored by
  the window whose centre is nearest (the discriminator's `score`, docs/scoring.md);
- `split_context`, `doc_spans_for`, `check_is_max_context` (Python): the official
  question-answering windows (finetune/qa/qa_tasks.py): the context split on
  whitespace, windows of `max_seq_length - |question| - 3` WordPieces every
  `min(length, doc_stride)`, and the window that gives a token its most
  balanced context (min(left, right) + 0.01 * length); text/qa_windows.py builds
  the same windows in the graph.
"""

from __future__ import annotations

import collections
from typing import Dict, List, Sequence, Tuple

import tensorflow as tf

from electra_tf2.text.packing import pack_inputs

DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def window_layout(lengths: tf.Tensor, width: int, stride: int) -> Dict[str, tf.Tensor]:
  """Where the windows of each text lie and which tokens each one scores.

  Args:
    lengths: int64 `[batch]`, tokens per text.
    width: tokens per window (max_seq_length - 2).
    stride: tokens between window starts, 1 <= stride <= width.

  Returns int64 tensors: `num_windows` `[batch]` (1 for a text that fits, also an
  empty one) and, per window `[num_windows_total]` in text order, `row`, `start`,
  `length` (its tokens are `start .. start + length` of the text) and `own_start`,
  `own_end` (the text positions it scores: those nearer its centre than any other's).
  """
  extra = tf.maximum(lengths - width, 0)
  num_windows = 1 + (extra + stride - 1) // stride
  row = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), num_windows)
  index = tf.ragged.range(num_windows).flat_values
  start = tf.minimum(index * stride, tf.gather(extra, row))
  length = tf.minimum(tf.gather(lengths, row) - start, width)
  twice_centre = 2 * start + length - 1
  is_first = tf.equal(index, 0)
  is_last = tf.equal(index, tf.gather(num_windows, row) - 1)
  # Position p leaves window j-1 for window j once 4p > 2c(j-1) + 2c(j).
  previous = tf.concat([[0], twice_centre[:-1]], 0)
  own_start = tf.where(is_first, tf.zeros_like(start), (previous + twice_centre) // 4 + 1)
  following = tf.concat([own_start[1:], [0]], 0)
  own_end = tf.where(is_last, tf.gather(lengths, row), following)
  return {"num_windows": num_windows, "row": row, "start": start, "length": length,
          "own_start": own_start, "own_end": own_end}


def windowed_inputs(ids: tf.RaggedTensor, max_seq_length: int, stride: int, cls_id: int,
                    sep_id: int) -> Tuple[Dict[str, tf.Tensor], tf.Tensor, tf.Tensor]:
  """Texts of any length as `[CLS] window [SEP]` rows of at most max_seq_length WordPieces.

  Args:
    ids: int64 RaggedTensor `[batch, (tokens)]`, WordPiece ids without [CLS]/[SEP].
    max_seq_length: the model's input length ([CLS] and [SEP] included).
    stride: tokens between window starts (see `window_layout`).
    cls_id, sep_id: the vocabulary's [CLS] and [SEP].

  Returns:
    the windows' `pack_inputs` features `[windows, seq_len]`; int32 `owner`
    `[tokens, 2]`, for every token of `ids.flat_values` the (window, column) whose
    output it takes; int64 `num_windows` `[batch]`.
  """
  layout = window_layout(ids.row_lengths(), max_seq_length - 2, stride)
  offsets = tf.gather(ids.row_splits, layout["row"])
  positions = tf.ragged.range(offsets + layout["start"],
                              offsets + layout["start"] + layout["length"])
  features = pack_inputs([tf.gather(ids.flat_values, positions)], cls_id, sep_id)
  # Window w owns text positions own_start..own_end, at 1 + position - start in its row.
  local = tf.ragged.range(layout["own_start"] - layout["start"] + 1,
                          layout["own_end"] - layout["start"] + 1)
  owner = tf.stack([tf.cast(local.value_rowids(), tf.int32),
                    tf.cast(local.flat_values, tf.int32)], 1)
  return features, owner, layout["num_windows"]


def is_whitespace(c: str) -> bool:
  return c in " \t\r\n" or ord(c) == 0x202F


def split_context(text: str) -> Tuple[List[str], List[int]]:
  """Whitespace words of a context and the word index of every character."""
  doc_tokens: List[str] = []
  char_to_word_offset: List[int] = []
  prev_is_whitespace = True
  for c in text:
    if is_whitespace(c):
      prev_is_whitespace = True
    else:
      if prev_is_whitespace:
        doc_tokens.append(c)
      else:
        doc_tokens[-1] += c
      prev_is_whitespace = False
    char_to_word_offset.append(len(doc_tokens) - 1)
  return doc_tokens, char_to_word_offset


def check_is_max_context(doc_spans: Sequence[DocSpan], cur_span_index: int, position: int
                         ) -> bool:
  """Whether window `cur_span_index` gives token `position` its most balanced context."""
  best_score, best_span_index = None, None
  for span_index, doc_span in enumerate(doc_spans):
    end = doc_span.start + doc_span.length - 1
    if position < doc_span.start or position > end:
      continue
    score = min(position - doc_span.start, end - position) + 0.01 * doc_span.length
    if best_score is None or score > best_score:
      best_score, best_span_index = score, span_index
  return cur_span_index == best_span_index


def doc_spans_for(n_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> List[DocSpan]:
  """The sliding windows over `n_tokens` document wordpieces."""
  spans = []
  start = 0
  while start < n_tokens:
    length = min(n_tokens - start, max_tokens_for_doc)
    spans.append(DocSpan(start, length))
    if start + length == n_tokens:
      break
    start += min(length, doc_stride)
  return spans
