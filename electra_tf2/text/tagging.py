"""Tagging inputs: every word tokenised alone, its first WordPiece the position labelled.

Official finetune/tagging/tagging_tasks.py:127-162 (the featurisation; `tokenize_and_align`
226-246): `[CLS] w1 w2 ... [SEP]`, segment 1 for every token, the label of
a word read at its first WordPiece. `tagging_ids` is that rule on Python lists;
`word_features` the same in the graph for raw text (words split on whitespace).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import tensorflow as tf

from electra_tf2.text.packing import TextFeaturizer, pack_inputs


def tagging_ids(word_ids: Sequence[Sequence[int]], cls_id: int, sep_id: int, max_len: int
                ) -> Tuple[List[int], List[int]]:
  """`(input_ids, tagged_positions)` of words given as WordPiece ids, as the official code.

  Official quirk (tagging_tasks.py:132): a word is added only while the words
  plus the ids so far fit in max_len, so long sentences lose more words than
  the WordPieces alone would need; a result still too long is cut to
  max_len - 1 ids plus [SEP].
  """
  words_to_ids = [[cls_id], *word_ids, [sep_id]]
  input_ids: List[int] = []
  tagged_positions: List[int] = []
  for ids in words_to_ids:
    if len(words_to_ids) + len(input_ids) + 1 > max_len:
      input_ids.append(sep_id)
      break
    if cls_id not in ids and sep_id not in ids:
      tagged_positions.append(len(input_ids))
    input_ids.extend(ids)
  if len(input_ids) > max_len:
    input_ids = input_ids[:max_len - 1] + [sep_id]
    tagged_positions = [p for p in tagged_positions if p < max_len - 1]
  return input_ids, tagged_positions


def word_features(featurizer: TextFeaturizer, text: tf.Tensor) -> Dict[str, tf.Tensor]:
  """tf.string `[batch]` -> tagging features: `input_ids`, `input_mask`, `segment_ids`
  `[batch, longest row]`; `labeled_positions`, `words_mask` `[batch, max_seq_length]`
  (word i's first WordPiece, 0 past the words that fit).

  port: whole words are kept while they fit in max_seq_length - 2 WordPieces;
  the official rule (`tagging_ids`) also counts the words, so long sentences
  lose more words there.
  """
  max_seq_length = featurizer.max_seq_length
  words = tf.strings.split(tf.reshape(text, [-1]))  # [batch, (words)]
  pieces = featurizer.tokenizer.tokenize_to_ids(words.flat_values)  # [words, (pieces)]
  lengths = pieces.row_lengths()
  ends = tf.cumsum(lengths)
  sentence_start = tf.gather(tf.concat([[0], ends], 0), words.row_starts())
  end_in_sentence = ends - tf.repeat(sentence_start, words.row_lengths())
  keep = end_in_sentence <= max_seq_length - 2
  rows = tf.boolean_mask(words.value_rowids(), keep)
  kept = tf.ragged.boolean_mask(pieces, keep)
  nrows = words.nrows()
  ids = tf.RaggedTensor.from_value_rowids(
      kept.flat_values, tf.repeat(rows, kept.row_lengths()), nrows=nrows)
  starts = tf.boolean_mask(end_in_sentence - lengths + 1, keep)  # after [CLS]
  shape = [None, max_seq_length]
  positions = tf.RaggedTensor.from_value_rowids(starts, rows, nrows=nrows)
  features = pack_inputs([ids], featurizer.cls_id, featurizer.sep_id)
  features["segment_ids"] = features["input_mask"]  # official: segment 1 for every token
  features["labeled_positions"] = tf.cast(positions.to_tensor(0, shape=shape), tf.int32)
  features["words_mask"] = tf.ones_like(positions, tf.int32).to_tensor(0, shape=shape)
  return features
