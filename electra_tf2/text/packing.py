"""BERT inputs from WordPieces: pair truncation, `[CLS] a [SEP] (b [SEP])`, padding.

The same rules twice, for the two ways text reaches the model:
- Python lists (fine-tuning featurisation, official finetune/*_tasks.py):
  `truncate_seq_pair`, `pack_tokens`, `padded_features`;
- tensors (SavedModels, the Keras `TextInputs` layer, LiteRT):
  `truncated_pair_lengths`, `keep_first`, `pack_inputs`, and `TextFeaturizer`,
  which runs the in-graph tokenizer and packs strings into model inputs.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf

from electra_tf2.text.sentencepiece import SentencePieceModule
from electra_tf2.text.tokenizer import TokenizerModule
from electra_tf2.text.vocab import special_tokens

Features = Dict[str, tf.Tensor]


# -- Python lists -------------------------------------------------------------


def truncate_seq_pair(tokens_a: List[Any], tokens_b: List[Any], max_length: int) -> None:
  """Pops the last token of the longer list (b on ties) until both fit in max_length.

  BERT's `_truncate_seq_pair` (official finetune/classification/classification_tasks.py),
  in place.
  """
  while len(tokens_a) + len(tokens_b) > max_length:
    if len(tokens_a) > len(tokens_b):
      tokens_a.pop()
    else:
      tokens_b.pop()


def pack_tokens(tokens_a: Sequence[str], tokens_b: Optional[Sequence[str]] = None
                ) -> Tuple[List[str], List[int]]:
  """`[CLS] a [SEP]` (segment 0) and `b [SEP]` (segment 1): the tokens and segment ids."""
  tokens = ["[CLS]", *tokens_a, "[SEP]"]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += [*tokens_b, "[SEP]"]
    segment_ids += [1] * (len(tokens_b) + 1)
  return tokens, segment_ids


def padded_features(input_ids: Sequence[int], segment_ids: Sequence[int], max_seq_length: int
                    ) -> Dict[str, List[int]]:
  """`input_ids`, `input_mask`, `segment_ids` lists padded with 0 to max_seq_length."""
  pad = [0] * (max_seq_length - len(input_ids))
  return {"input_ids": list(input_ids) + pad, "input_mask": [1] * len(input_ids) + pad,
          "segment_ids": list(segment_ids) + pad}


# -- tensors ------------------------------------------------------------------


def truncated_pair_lengths(len_a, len_b, budget) -> Tuple:
  """Lengths `truncate_seq_pair` leaves: tensors (or numbers) in, same out.

  It pops from the longer sequence (from b on a tie) while len_a + len_b >
  budget, so the shorter keeps its length when it fits in half the budget and
  otherwise a gets ceil(budget / 2) and b floor(budget / 2).
  """
  half_up = budget - budget // 2
  half_down = budget // 2
  new_a = tf.minimum(len_a, tf.maximum(budget - len_b, half_up))
  new_b = tf.minimum(len_b, tf.maximum(budget - len_a, half_down))
  return new_a, new_b


def keep_first(ragged: tf.RaggedTensor, lengths: tf.Tensor) -> tf.RaggedTensor:
  """The first `lengths[i]` items of row i."""
  positions = tf.ragged.range(ragged.row_lengths())
  return tf.ragged.boolean_mask(ragged, positions < tf.expand_dims(lengths, 1))


def pack_inputs(segments: Sequence[tf.RaggedTensor], cls_id: int, sep_id: int) -> Features:
  """Ragged WordPiece ids per segment -> `[CLS] a [SEP] (b [SEP])`, padded int32
  `input_ids`, `input_mask`, `segment_ids` `[batch, longest row]`."""
  import tensorflow_text as tft  # pylint: disable=g-import-not-at-top
  ids, segment_ids = tft.combine_segments(segments, start_of_sequence_id=cls_id,
                                          end_of_segment_id=sep_id)
  # At least [CLS] [SEP] wide: an empty batch gives [0, 2] (the heads read position 0).
  shape = tf.stack([ids.nrows(), tf.maximum(ids.bounding_shape(axis=1), 2)])
  return {"input_ids": tf.cast(ids.to_tensor(shape=shape), tf.int32),
          "input_mask": tf.ones_like(ids, tf.int32).to_tensor(shape=shape),
          "segment_ids": tf.cast(segment_ids.to_tensor(shape=shape), tf.int32)}


class TextFeaturizer(tf.Module):
  """Raw strings -> BERT inputs in the graph: the official tokenizer, truncation, packing.

  Args:
    vocab: the WordPiece tokens (or SentencePiece pieces) in id order.
    do_lower_case: the tokenizer's lowercasing.
    max_seq_length: WordPieces per row, [CLS] and [SEP] included (at least 3).
    sentencepiece_model: a SentencePiece model's bytes: its tokenizer instead of WordPiece.
    strip_accents: accent stripping; None is the official rule (stripped when lowercasing).
  """

  def __init__(self, vocab: Sequence[str], do_lower_case: bool = True,
               max_seq_length: int = 128, name: Optional[str] = None,
               sentencepiece_model: Optional[bytes] = None,
               strip_accents: Optional[bool] = None):
    super().__init__(name=name)
    if max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    vocab = list(vocab)
    special = special_tokens({t: i for i, t in enumerate(vocab)})
    if sentencepiece_model is not None:
      self.tokenizer = SentencePieceModule(sentencepiece_model)
    else:
      self.tokenizer = TokenizerModule(vocab, do_lower_case=do_lower_case,
                                       strip_accents=strip_accents, unk_token=special[1])
    self.max_seq_length = max_seq_length
    self.cls_id, self.sep_id = vocab.index(special[2]), vocab.index(special[3])

  def single(self, text: tf.Tensor) -> Features:
    """tf.string `[batch]` -> `[CLS] a [SEP]` features `[batch, longest row]`."""
    ids = self.tokenizer.tokenize_to_ids(text)
    return pack_inputs([ids[:, :self.max_seq_length - 2]], self.cls_id, self.sep_id)

  def pair(self, text: tf.Tensor, text_b: tf.Tensor) -> Features:
    """Two tf.string `[batch]` -> `[CLS] a [SEP] b [SEP]` features, truncated as BERT."""
    ids_a = self.tokenizer.tokenize_to_ids(text)
    ids_b = self.tokenizer.tokenize_to_ids(text_b)
    len_a, len_b = truncated_pair_lengths(ids_a.row_lengths(), ids_b.row_lengths(),
                                          tf.constant(self.max_seq_length - 3, tf.int64))
    return pack_inputs([keep_first(ids_a, len_a), keep_first(ids_b, len_b)], self.cls_id,
                       self.sep_id)

  def features(self, text: tf.Tensor, text_b: Optional[tf.Tensor] = None) -> Features:
    """`single(text)`, or `pair(text, text_b)` when text_b is given."""
    return self.single(text) if text_b is None else self.pair(text, text_b)
