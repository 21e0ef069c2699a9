"""SQuAD windows in the graph: (question, context) strings -> the official QA features.

TensorFlow ops for what electra_tf2/tasks/qa.py does in Python (official
finetune/qa/qa_tasks.py:155-417 and qa_metrics.py:307-401), so that a SavedModel
answers questions on raw strings:

- `qa_windows`: the context is split on whitespace (" \\t\\r\\n" and U+202F, as
  qa_tasks.py:155-159) into words with their character offsets, every word is
  tokenised alone, the question keeps its first max_query_length WordPieces;
  windows of `max_seq_length - |q| - 3` document WordPieces start every
  `min(that, doc_stride)` pieces (qa_tasks.py:296-309), each
  `[CLS] q [SEP] doc [SEP]` padded to max_seq_length, with the word of every
  document token (`token_to_orig_map`) and whether this window is the token's
  max-context one (score min(left, right) + 0.01 * length, the first window on
  ties; qa_tasks.py:81-115);
- `answer_labels`: the training labels of an answer's character span: its
  words, their WordPieces made tight as `_improve_answer_span`
  (qa_tasks.py:118-152), offset into each window that holds them, else 0/0
  (qa_tasks.py:277-291, 354-372);
- `span_text`: a WordPiece span back to characters of the context, as
  `get_final_text` (qa_metrics.py:307-401): the span's words joined by one
  space, the prediction found in their basic-tokenised text and cut out of
  them where the characters align one to one, else all the words.

With a SentencePiece tokenizer (#42) every piece also gets its characters in the
context (`SentencePieceModule.char_spans` of its word), as tasks/qa.py does:
`answer_labels` labels the pieces that overlap the answer's characters and
`piece_text` decodes a span as the context between its first piece's start and its
last piece's end, instead of the WordPiece rules above.

Character offsets count Unicode code points of the context (Python `str`
indices); invalid UTF-8 becomes U+FFFD first.
"""

from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import tensorflow as tf
import tensorflow_text as tft

from electra_tf2.text.sentencepiece import SentencePieceModule
from electra_tf2.text.tokenizer import TokenizerModule, basic_split_graph

# qa_tasks.py:155-159 `is_whitespace`: the context's word separators.
_WHITESPACE = r"[ \t\r\n\x{202F}]+"
_INT64_MAX = tf.int64.max


class Words(NamedTuple):
  """The whitespace words of each context: strings and [start, end) code point offsets,
  each `[batch, (words)]`."""
  text: tf.RaggedTensor
  starts: tf.RaggedTensor
  ends: tf.RaggedTensor


class Windows(NamedTuple):
  """The windows of a batch of questions (R windows in all, L = max_seq_length).

  features: int32 `input_ids`, `input_mask`, `segment_ids` `[R, L]`.
  example, window: `[R]` the question of each window and its index among them.
  doc_offset: `[R]` the position of the first document token (|q| + 2).
  doc_start, doc_length: `[R]` the document WordPieces it holds.
  token_word: `[R, L]` the word (index in `words`) of each document token, else -1.
  max_context: `[R, L]` bool, whether this window is the token's max-context one.
  pieces: `[batch, (pieces)]` the document's WordPiece ids.
  word_splits: `[all words + 1]` word i's pieces are pieces.flat_values[splits[i]:splits[i+1]]
    (words of all contexts in one list, as `words.text.flat_values`).
  words: the context's `Words`.
  context: `[batch]` the contexts.
  char_starts, char_ends: SentencePiece only (else None): `[all pieces]` the [start, end)
    code points in its context of each piece of `pieces.flat_values`.
  """
  features: Dict[str, tf.Tensor]
  example: tf.Tensor
  window: tf.Tensor
  doc_offset: tf.Tensor
  doc_start: tf.Tensor
  doc_length: tf.Tensor
  token_word: tf.Tensor
  max_context: tf.Tensor
  pieces: tf.RaggedTensor
  word_splits: tf.Tensor
  words: Words
  context: tf.Tensor
  char_starts: Optional[tf.Tensor] = None
  char_ends: Optional[tf.Tensor] = None


def cut_padding(features: Dict[str, tf.Tensor], min_length: int) -> Dict[str, tf.Tensor]:
  """Windows' `input_ids`, `input_mask`, `segment_ids` `[R, L]` cut to the longest window's
  real tokens `[R, length]`, length at least min_length (and at most L). The rest of every
  window is padding, which the encoder's attention and the QA head mask, so the real
  positions' outputs are the same; a server graph's lever (the answers never read the
  padding, docs/benchmarks.md)."""
  mask = features["input_mask"]
  seq_len = tf.shape(mask)[1]
  last = tf.reduce_max(tf.where(mask > 0, tf.range(1, seq_len + 1)[tf.newaxis], 0))
  length = tf.minimum(tf.maximum(last, min_length), seq_len)
  return {k: features[k][:, :length] for k in ("input_ids", "input_mask", "segment_ids")}


def valid_utf8(text: tf.Tensor) -> tf.Tensor:
  """Strings `[batch]` with invalid UTF-8 replaced by U+FFFD (as the tokenizer sees them)."""
  return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                      replacement_char=0xFFFD)


def split_context(context: tf.Tensor) -> Words:
  """Valid UTF-8 contexts `[batch]` -> their whitespace words and code point offsets."""
  words, begin, end = tft.regex_split_with_offsets(context, _WHITESPACE, "")
  _, char_bytes = tf.strings.unicode_decode_with_offsets(context, "UTF-8")
  # A byte offset's code point index: how many characters start before it.
  table = char_bytes.to_tensor(_INT64_MAX)
  def chars(offsets):
    index = tf.searchsorted(table, offsets.to_tensor(_INT64_MAX), side="left",
                           out_type=tf.int64)
    return tf.RaggedTensor.from_tensor(index, lengths=offsets.row_lengths())
  return Words(words, chars(begin), chars(end))


def qa_windows(tokenizer: TokenizerModule | SentencePieceModule, question: tf.Tensor,
               context: tf.Tensor, max_seq_length: int, max_query_length: int,
               doc_stride: int, cls_id: int, sep_id: int) -> Windows:
  """The official windows of valid UTF-8 questions and contexts `[batch]` (see `Windows`)."""
  words = split_context(context)
  word_pieces = tokenizer.tokenize_to_ids(words.text.flat_values)  # [all words, (pieces)]
  counts = tf.RaggedTensor.from_row_splits(word_pieces.row_lengths(), words.text.row_splits)
  pieces = tf.RaggedTensor.from_row_lengths(word_pieces.flat_values,
                                            tf.reduce_sum(counts, axis=1))
  word_in_context = tf.ragged.range(words.text.row_lengths()).flat_values
  piece_word = pieces.with_flat_values(tf.repeat(word_in_context, word_pieces.row_lengths()))
  query = tokenizer.tokenize_to_ids(question)[:, :max_query_length]

  n_query = query.row_lengths()
  n_pieces = pieces.row_lengths()
  per_window = max_seq_length - n_query - 3  # qa_tasks.py:293
  step = tf.minimum(per_window, doc_stride)
  n_windows = tf.where(n_pieces == 0, tf.zeros_like(n_pieces),
                       1 + tf.maximum(-((per_window - n_pieces) // step), 0))
  example = tf.repeat(tf.range(tf.size(n_pieces, tf.int64)), n_windows)
  window = tf.ragged.range(n_windows).flat_values
  doc_start = window * tf.gather(step, example)
  doc_length = tf.minimum(tf.gather(per_window, example),
                          tf.gather(n_pieces, example) - doc_start)
  first = tf.gather(pieces.row_starts(), example) + doc_start
  doc = tf.gather(pieces.flat_values, tf.ragged.range(first, first + doc_length))
  ids, segments = tft.combine_segments([tf.gather(query, example), doc], cls_id, sep_id)
  shape = [None, max_seq_length]
  features = {"input_ids": tf.cast(ids.to_tensor(0, shape=shape), tf.int32),
              "input_mask": tf.ones_like(ids, tf.int32).to_tensor(0, shape=shape),
              "segment_ids": tf.cast(segments.to_tensor(0, shape=shape), tf.int32)}

  doc_offset = tf.gather(n_query, example) + 2
  position = tf.range(max_seq_length, dtype=tf.int64)[tf.newaxis] - doc_offset[:, tf.newaxis]
  in_doc = (position >= 0) & (position < doc_length[:, tf.newaxis])
  piece = tf.where(in_doc, first[:, tf.newaxis] + position, 0)  # flat index into `pieces`
  best = _max_context_windows(pieces, per_window, step, n_windows)
  token_word = tf.where(in_doc, _gather_or_zero(piece_word.flat_values, piece), -1)
  max_context = in_doc & (_gather_or_zero(best, piece) == window[:, tf.newaxis])
  char_starts = char_ends = None
  if isinstance(tokenizer, SentencePieceModule):  # tasks/qa.py QATask._char_spans
    starts, ends = tokenizer.char_spans(words.text.flat_values)
    word_start = tf.repeat(words.starts.flat_values, starts.row_lengths())
    char_starts, char_ends = starts.flat_values + word_start, ends.flat_values + word_start
  return Windows(features, example, window, doc_offset, doc_start, doc_length, token_word,
                 max_context, pieces, word_pieces.row_splits, words, context, char_starts,
                 char_ends)


def _gather_or_zero(values: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
  """values[indices], or zeros when `values` is empty (no context has a word)."""
  return tf.gather(tf.concat([values, tf.zeros([1], values.dtype)], 0), indices)


def _max_context_windows(pieces: tf.RaggedTensor, per_window: tf.Tensor, step: tf.Tensor,
                         n_windows: tf.Tensor) -> tf.Tensor:
  """`[all pieces]`: the window of each piece with the most context (qa_tasks.py:81-115)."""
  example = pieces.value_rowids()
  position = tf.ragged.range(pieces.row_lengths()).flat_values
  size, stride = tf.gather(per_window, example), tf.gather(step, example)
  n_pieces = tf.gather(pieces.row_lengths(), example)
  last = tf.minimum(tf.gather(n_windows, example) - 1, position // stride)
  # Windows last, last - 1, ... hold the piece; the earliest best one wins ties.
  n_loops = tf.reduce_max(tf.concat([tf.zeros([1], per_window.dtype),
                                     -(-per_window // tf.maximum(step, 1))], 0)) + 1

  def body(d, best, best_score):
    k = last - d
    start = k * stride
    length = tf.minimum(size, n_pieces - start)
    score = (tf.cast(tf.minimum(position - start, start + length - 1 - position), tf.float64)
             + 0.01 * tf.cast(length, tf.float64))
    better = (k >= 0) & (start + length > position) & (score >= best_score)
    return d + 1, tf.where(better, k, best), tf.where(better, score, best_score)

  _, best, _ = tf.while_loop(
      lambda d, *_: d < n_loops, body,
      [tf.constant(0, tf.int64), tf.zeros_like(position),
       tf.fill(tf.shape(position), tf.constant(-1.0, tf.float64))])
  return best


def answer_labels(windows: Windows, tokenizer: TokenizerModule | SentencePieceModule,
                  context: tf.Tensor, answer_start: tf.Tensor, answer_end: tf.Tensor
                  ) -> Dict[str, tf.Tensor]:
  """Training labels `[R]` of answers given as character spans [start, end) of the valid
  UTF-8 contexts `[batch]` (start < 0: no answer): int32 `start_positions`,
  `end_positions` and `is_impossible`, as qa_tasks.py:277-291 and 354-372 (SentencePiece:
  the pieces that overlap the answer, tasks/qa.py `pieces_of_answer`; 0/0 when none
  does)."""
  answer_start, answer_end = tf.cast(answer_start, tf.int64), tf.cast(answer_end, tf.int64)
  impossible = answer_start < 0
  if windows.char_starts is not None:
    tok_start, tok_end = _overlapping_pieces(windows, answer_start, answer_end, impossible)
    return _window_labels(windows, tok_start, tok_end, impossible)
  start_char = tf.maximum(answer_start, 0)
  end_char = tf.maximum(answer_end - 1, start_char)  # inclusive
  answer = tokenizer.tokenize_to_ids(tf.strings.substr(
      context, start_char, end_char + 1 - start_char, unit="UTF8_CHAR"))
  word_starts = windows.words.starts.to_tensor(_INT64_MAX)
  first_word = windows.words.text.row_starts()

  def word_of(char):  # qa_tasks.py:173-185 char_to_word_offset, as a flat word index
    local = tf.searchsorted(word_starts, char[:, tf.newaxis], side="right",
                            out_type=tf.int64)[:, 0] - 1
    return first_word + tf.maximum(local, 0)
  last = tf.size(windows.word_splits, tf.int64) - 1
  split = lambda word: tf.gather(windows.word_splits, tf.minimum(word, last))
  tok_start, tok_end = split(word_of(start_char)), split(word_of(end_char) + 1) - 1
  tok_start, tok_end = _tightest_span(windows.pieces.flat_values, tok_start, tok_end, answer)
  return _window_labels(windows, tok_start, tok_end, impossible)


def _window_labels(windows: Windows, tok_start: tf.Tensor, tok_end: tf.Tensor,
                   impossible: tf.Tensor) -> Dict[str, tf.Tensor]:
  """The labels `[R]` of answers at pieces tok_start..tok_end `[batch]` (flat indices into
  `windows.pieces`; -1 when no piece holds the answer: 0/0 in every window)."""
  base = tf.gather(windows.pieces.row_starts(), windows.example)
  start = tf.gather(tok_start, windows.example) - base
  end = tf.gather(tok_end, windows.example) - base
  is_impossible = tf.gather(impossible, windows.example)
  inside = (~is_impossible & (start >= windows.doc_start)
            & (end < windows.doc_start + windows.doc_length))
  offset = windows.doc_offset - windows.doc_start
  return {"start_positions": tf.cast(tf.where(inside, start + offset, 0), tf.int32),
          "end_positions": tf.cast(tf.where(inside, end + offset, 0), tf.int32),
          "is_impossible": tf.cast(is_impossible, tf.int32)}


def _overlapping_pieces(windows: Windows, answer_start: tf.Tensor, answer_end: tf.Tensor,
                        impossible: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """tasks/qa.py `pieces_of_answer` `[batch]`: the first and last piece (flat indices)
  whose characters overlap [answer_start, answer_end), pieces that span nothing left out;
  -1, -1 when none does."""
  example = windows.pieces.value_rowids()
  index = tf.range(tf.size(example, tf.int64), dtype=tf.int64)
  starts, ends = windows.char_starts, windows.char_ends
  overlap = ((starts < ends) & (starts < tf.gather(answer_end, example))
             & (ends > tf.gather(answer_start, example)) & ~tf.gather(impossible, example))
  n = tf.size(answer_start, tf.int64)
  first = tf.math.unsorted_segment_min(tf.where(overlap, index, _INT64_MAX), example, n)
  last = tf.math.unsorted_segment_max(tf.where(overlap, index, -1), example, n)
  found = first < _INT64_MAX
  return tf.where(found, first, -1), tf.where(found, last, -1)


def _tightest_span(pieces: tf.Tensor, start: tf.Tensor, end: tf.Tensor,
                   answer: tf.RaggedTensor):
  """`_improve_answer_span`: the first sub-span of pieces[start..end] (flat indices,
  inclusive) whose pieces are the answer's, else (start, end) itself."""
  length = answer.row_lengths()
  n_tries = tf.where(length > 0, tf.maximum(end - length + 2 - start, 0), 0)
  tries = tf.ragged.range(start, start + n_tries)  # [batch, (candidate starts)]
  offsets = tf.ragged.range(tf.repeat(length, n_tries))  # [all tries, (answer pieces)]
  try_start = tf.repeat(tries.flat_values, offsets.row_lengths())
  answer_piece = tf.repeat(tf.gather(answer.row_starts(), tries.value_rowids()),
                           offsets.row_lengths()) + offsets.flat_values
  equal = (tf.gather(pieces, try_start + offsets.flat_values)
           == tf.gather(answer.flat_values, answer_piece))
  found = tf.reduce_all(offsets.with_flat_values(equal), axis=1)  # [all tries]
  first = tf.reduce_min(tries.with_flat_values(tf.where(found, tries.flat_values,
                                                        _INT64_MAX)), axis=1)
  matched = first < _INT64_MAX
  return tf.where(matched, first, start), tf.where(matched, first + length - 1, end)


def span_text(windows: Windows, vocab: tf.Tensor, row: tf.Tensor, start: tf.Tensor,
              end: tf.Tensor, do_lower_case: bool, strip_accents: bool):
  """Tokens start..end (inclusive) of windows `row` `[n]` -> the answer `[n]` as
  `get_final_text` gives it, and its [start, end) code point offsets in the context.

  vocab: the WordPiece strings in id order (to rebuild the predicted text).
  """
  flat = lambda t: tf.reshape(t, [-1])
  row, start, end = (tf.cast(t, tf.int64) for t in (row, start, end))
  at = row * windows.features["input_ids"].shape[1]  # flat index of the row's first token
  ids = tf.gather(flat(windows.features["input_ids"]), tf.ragged.range(at + start, at + end + 1))
  pred = tf.strings.reduce_join(tf.gather(vocab, ids), axis=1, separator=" ")
  for pattern, rewrite in ((" ##", ""), ("##", ""), (r"\s+", " ")):  # qa_metrics.py:200-206
    pred = tf.strings.regex_replace(pred, pattern, rewrite)
  pred = tf.strings.strip(pred)
  first_word = tf.gather(windows.words.text.row_starts(), tf.gather(windows.example, row))
  token_word = flat(windows.token_word)
  words = tf.ragged.range(first_word + tf.gather(token_word, at + start),
                          first_word + tf.gather(token_word, at + end) + 1)
  orig = tf.strings.reduce_join(tf.gather(windows.words.text.flat_values, words), axis=1,
                                separator=" ")
  tokenized = tf.strings.reduce_join(basic_split_graph(orig, do_lower_case, strip_accents),
                                     axis=1, separator=" ")
  found, orig_start, orig_end = _align(pred, orig, tokenized)
  text = tf.where(found, tf.strings.substr(orig, orig_start, orig_end + 1 - orig_start,
                                           unit="UTF8_CHAR"), orig)
  orig_end = tf.where(found, orig_end,
                      tf.cast(tf.strings.length(orig, unit="UTF8_CHAR"), tf.int64) - 1)
  to_context = _context_offset(windows.words, words)
  return text, to_context(tf.where(found, orig_start, 0)), to_context(orig_end) + 1


def token_chars(windows: Windows) -> Tuple[tf.Tensor, tf.Tensor]:
  """SentencePiece: the [start, end) code points in its context of every window token
  `[R, L]` (0, 0 outside the document tokens)."""
  length = windows.features["input_ids"].shape[1]
  position = (tf.range(length, dtype=tf.int64)[tf.newaxis]
              - tf.cast(windows.doc_offset, tf.int64)[:, tf.newaxis])
  in_doc = windows.token_word >= 0
  first = tf.gather(windows.pieces.row_starts(), windows.example) + windows.doc_start
  piece = tf.where(in_doc, first[:, tf.newaxis] + position, 0)
  return tuple(tf.where(in_doc, _gather_or_zero(chars, piece), 0)
               for chars in (windows.char_starts, windows.char_ends))


def piece_text(windows: Windows, row: tf.Tensor, start: tf.Tensor, end: tf.Tensor):
  """SentencePiece: tokens start..end (inclusive) of windows `row` `[n]` -> the context
  from the first token's start to the last token's end (tasks/qa_decoding.py
  `decode_example`), and those [start, end) code points."""
  row, start, end = (tf.cast(t, tf.int64) for t in (row, start, end))
  starts, ends = token_chars(windows)
  first = tf.gather_nd(starts, tf.stack([row, start], -1))
  last = tf.gather_nd(ends, tf.stack([row, end], -1))
  context = tf.gather(windows.context, tf.gather(windows.example, row))
  return tf.strings.substr(context, first, last - first, unit="UTF8_CHAR"), first, last


def _context_offset(words: Words, span: tf.RaggedTensor):
  """The function: a character of the span's words joined by spaces `[n]` -> the same
  character of the context: its word's start plus its place in the word."""
  starts = tf.gather(words.starts.flat_values, span)
  in_joined = _exclusive_cumsum(tf.gather(words.ends.flat_values, span) - starts + 1)
  rows = in_joined.value_rowids()

  def offset(i):
    words_before = tf.math.unsorted_segment_sum(
        tf.cast(in_joined.flat_values <= tf.gather(i, rows), tf.int64), rows, tf.size(i, tf.int64))
    at = in_joined.row_starts() + words_before - 1  # i's word
    return _gather_or_zero(starts.flat_values, at) + i - _gather_or_zero(in_joined.flat_values, at)
  return offset


def _exclusive_cumsum(values: tf.RaggedTensor) -> tf.RaggedTensor:
  """The sum of the items before each item of its row."""
  total = tf.cumsum(values.flat_values, exclusive=True)
  return values.with_flat_values(
      total - tf.repeat(_gather_or_zero(total, values.row_starts()), values.row_lengths()))


def _align(pred: tf.Tensor, orig: tf.Tensor, tokenized: tf.Tensor):
  """get_final_text's alignment (qa_metrics.py:353-399) `[n]`: whether it holds, and the
  first and last code point of `pred` in `orig`.

  pred is looked for in the basic-tokenised text (first occurrence, as str.find); the
  characters of orig and tokenized without spaces must be as many, then pair one to one.
  """
  pred_bytes = tf.cast(tf.strings.length(pred), tf.int64)
  n_tries = tf.maximum(tf.cast(tf.strings.length(tokenized), tf.int64) - pred_bytes + 1, 0)
  tries = tf.ragged.range(n_tries)
  row = tries.value_rowids()
  hit = (tf.strings.substr(tf.gather(tokenized, row), tries.flat_values,
                           tf.gather(pred_bytes, row)) == tf.gather(pred, row))
  first_byte = tf.reduce_min(tries.with_flat_values(tf.where(hit, tries.flat_values,
                                                             _INT64_MAX)), axis=1)
  found = first_byte < _INT64_MAX
  tok_start = tf.cast(tf.strings.length(
      tf.strings.substr(tokenized, tf.zeros_like(first_byte), tf.where(found, first_byte, 0)),
      unit="UTF8_CHAR"),
      tf.int64)
  tok_end = tok_start + tf.cast(tf.strings.length(pred, unit="UTF8_CHAR"), tf.int64) - 1
  tok_chars = tf.strings.unicode_decode(tokenized, "UTF-8")
  tok_kept = tf.cast(tok_chars.flat_values != 32, tf.int64)
  kept_before = tf.cumsum(tok_kept, exclusive=True)
  tok_length = tok_chars.row_lengths()

  def kept_index(position):  # the index of tokenized[position] among its non-spaces
    inside = (position >= 0) & (position < tok_length)
    at = tok_chars.row_starts() + tf.where(inside, position, 0)
    index = _gather_or_zero(kept_before, at) - _gather_or_zero(kept_before, tok_chars.row_starts())
    return index, inside & (_gather_or_zero(tok_kept, at) == 1)
  start_index, start_kept = kept_index(tok_start)
  end_index, end_kept = kept_index(tok_end)
  orig_chars = tf.strings.unicode_decode(orig, "UTF-8")
  orig_kept = tf.where(orig_chars.flat_values != 32)[:, 0]  # flat positions of non-spaces
  rows = tf.size(orig, tf.int64)
  n_kept = tf.math.unsorted_segment_sum(tf.ones_like(orig_kept),
                                        tf.gather(orig_chars.value_rowids(), orig_kept), rows)
  n_tok_kept = tf.math.unsorted_segment_sum(tok_kept, tok_chars.value_rowids(), rows)
  found &= (n_tok_kept == n_kept) & start_kept & end_kept & (end_index >= start_index)
  first_kept = tf.cumsum(n_kept, exclusive=True)
  pick = lambda i: (_gather_or_zero(orig_kept, first_kept + tf.where(found, i, 0))
                    - orig_chars.row_starts())
  return found, tf.where(found, pick(start_index), 0), tf.where(found, pick(end_index), 0)
