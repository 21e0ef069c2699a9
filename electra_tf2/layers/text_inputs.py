"""Raw text -> BERT inputs inside the graph (tensorflow-text), as a Keras layer.

`TextInputs` holds the WordPiece vocabulary in its config (so `.keras` files
and SavedModels carry it) and tokenises like the official FullTokenizer
(electra_tf2/tokenization.py). Single texts become `[CLS] a [SEP]`, pairs
`[CLS] a [SEP] b [SEP]` truncated as BERT's `_truncate_seq_pair`
(export.truncated_pair_lengths); words (`call_words`) become the official
tagging features: every whitespace-separated word tokenised alone, segment 1,
the position of its first WordPiece kept.
"""

from __future__ import annotations

from typing import Any, Dict, Sequence

import keras
import tensorflow as tf

from electra_tf2.export import bert_features, keep_first, truncated_pair_lengths
from electra_tf2.tokenization import TokenizerModule

Features = Dict[str, tf.Tensor]


@keras.saving.register_keras_serializable(package="electra_tf2")
class TextInputs(keras.layers.Layer):
  """tf.string `[batch]` (or a pair of them) -> int32 `input_ids`, `input_mask`,
  `segment_ids` `[batch, longest row]` of at most `max_seq_length` WordPieces."""

  def __init__(self, vocab: Sequence[str], do_lower_case: bool = True,
               max_seq_length: int = 128, **kwargs):
    super().__init__(trainable=False, **kwargs)
    if max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    self.vocab = list(vocab)
    self.do_lower_case = bool(do_lower_case)
    self.max_seq_length = max_seq_length
    self.tokenizer = TokenizerModule(self.vocab, do_lower_case=self.do_lower_case)
    self.cls_id, self.sep_id = self.vocab.index("[CLS]"), self.vocab.index("[SEP]")
    self.supports_jit = False  # string ops: Keras' jit_compile="auto" (XLA on GPUs) stays off
    self.built = True

  def call(self, text, text_b=None) -> Features:
    ids = self.tokenizer.tokenize_to_ids(tf.reshape(text, [-1]))
    if text_b is None:
      return bert_features([ids[:, :self.max_seq_length - 2]], self.cls_id, self.sep_id)
    ids_b = self.tokenizer.tokenize_to_ids(tf.reshape(text_b, [-1]))
    len_a, len_b = truncated_pair_lengths(ids.row_lengths(), ids_b.row_lengths(),
                                          tf.constant(self.max_seq_length - 3, tf.int64))
    return bert_features([keep_first(ids, len_a), keep_first(ids_b, len_b)], self.cls_id,
                         self.sep_id)

  def call_words(self, text) -> Features:
    """Tagging features: also `labeled_positions` and `words_mask` `[batch, max_seq_length]`
    (word i's first WordPiece, 0 past the words that fit).

    port: whole words are kept while they fit in max_seq_length - 2 WordPieces;
    the official test (finetune/tagging/tagging_tasks.py:132) also counts the
    words, so long sentences lose more words there.
    """
    words = tf.strings.split(tf.reshape(text, [-1]))  # [batch, (words)]
    pieces = self.tokenizer.tokenize_to_ids(words.flat_values)  # [words, (pieces)]
    lengths = pieces.row_lengths()
    ends = tf.cumsum(lengths)
    sentence_start = tf.gather(tf.concat([[0], ends], 0), words.row_starts())
    end_in_sentence = ends - tf.repeat(sentence_start, words.row_lengths())
    keep = end_in_sentence <= self.max_seq_length - 2
    rows = tf.boolean_mask(words.value_rowids(), keep)
    kept = tf.ragged.boolean_mask(pieces, keep)
    nrows = words.nrows()
    ids = tf.RaggedTensor.from_value_rowids(
        kept.flat_values, tf.repeat(rows, kept.row_lengths()), nrows=nrows)
    starts = tf.boolean_mask(end_in_sentence - lengths + 1, keep)  # after [CLS]
    shape = [None, self.max_seq_length]
    positions = tf.RaggedTensor.from_value_rowids(starts, rows, nrows=nrows)
    features = bert_features([ids], self.cls_id, self.sep_id)
    features["segment_ids"] = features["input_mask"]  # official: segment 1 for every token
    features["labeled_positions"] = tf.cast(positions.to_tensor(0, shape=shape), tf.int32)
    features["words_mask"] = tf.ones_like(positions, tf.int32).to_tensor(0, shape=shape)
    return features

  def get_config(self) -> Dict[str, Any]:
    config = super().get_config()
    config.pop("trainable", None)
    config.update(vocab=self.vocab, do_lower_case=self.do_lower_case,
                  max_seq_length=self.max_seq_length)
    return config
