"""Raw text -> BERT features with ops that LiteRT (TFLite) can run.

`LiteRTFeaturizer` is `TextFeaturizer` (text/packing.py: the official
tokenizer of text/tokenizer.py, truncation, packing) and the tagging features
of text/tagging.py rebuilt from ops with TFLite kernels only: TFLite builtins
plus the tensorflow-text ops of `tensorflow_text.tflite_registrar`
(FastBertNormalize, FastWordpieceTokenize, ByteSplit, WhitespaceTokenize). A
`.tflite` file holding it takes tf.string `[batch]` and needs no Select TF ops:

1. `FastBertNormalize` with a model of our own (electra_tf2/text/
   litert_normalizer.py): the official per-character rules (clean, lowercase,
   strip accents) instead of the stock NFKC case folding;
2. `FastWordpieceTokenize` in end-to-end mode (whitespace, punctuation and CJK
   splitting, then greedy longest-match WordPiece), words of over 800 bytes ->
   [UNK];
3. words of 201 to 800 bytes and over 200 characters -> one [UNK]
   (model/tokenization.py:292-294), counted with `ByteSplit`;
4. `[CLS] a [SEP] (b [SEP])` with BERT's pair truncation, padded to the batch's
   longest row, with gathers on the flat ids (no ragged ops without kernels).

`LiteRTSentencePieceFeaturizer` does the same for a SentencePiece model, with
`FastSentencepieceTokenize` in place of steps 1-3 (`litert_featurizer` picks one).

`prepare_texts` is the part done in Python before the interpreter: the rules a
per-character map cannot hold (docs/design.md#litert-tokenizer).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

import tensorflow as tf
import tensorflow_text as tft

from electra_tf2.text import litert_normalizer
from electra_tf2.text.packing import truncated_pair_lengths
from electra_tf2.text.tokenizer import (MAX_CHARS_PER_WORD, is_control, resolve_strip_accents,
                                        to_utf8)
from electra_tf2.text.vocab import VocabError, special_tokens

Features = Dict[str, tf.Tensor]
Segment = Tuple[tf.Tensor, tf.Tensor, tf.Tensor]  # (flat ids, row splits, lengths kept)
# The ASCII whitespace of tf.strings.split (TextInputs.call_words' word split), as a
# WhitespaceTokenize config: bit c is set for whitespace code point c.
_ASCII_SPACE_CONFIG = bytes(
    sum(1 << (c % 8) for c in b" \t\n\v\f\r" if c // 8 == i) for i in range(5))


class LiteRTPacking(tf.Module):
  """The features of `token_ids` (a subclass's), with TFLite kernels only: `single`,
  `pair` and `word_features`, as TextFeaturizer's and text/tagging.py's.

  Subclasses set `max_seq_length`, `cls_id`, `sep_id` and define `token_ids`.
  """

  max_seq_length: int
  cls_id: int
  sep_id: int

  def __init__(self, name: Optional[str] = None):
    super().__init__(name=name)
    self._words = tft.WhitespaceTokenizer()
    self._words._config = _ASCII_SPACE_CONFIG  # pylint: disable=protected-access

  def token_ids(self, text: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """[batch] UTF-8 strings -> (int32 ids `[tokens]`, int32 row splits `[batch + 1]`)."""
    raise NotImplementedError(f"{type(self).__name__} defines no token_ids")

  # -- features ----------------------------------------------------------------

  def single(self, text: tf.Tensor) -> Features:
    """tf.string `[batch]` -> `[CLS] a [SEP]` features `[batch, longest row]`, a text
    cut to max_seq_length - 2 WordPieces (TextFeaturizer.single)."""
    ids, splits = self.token_ids(text)
    return self.pack([(ids, splits, tf.minimum(splits[1:] - splits[:-1],
                                               self.max_seq_length - 2))])

  def pair(self, text: tf.Tensor, text_b: tf.Tensor) -> Features:
    """Two tf.string `[batch]` -> `[CLS] a [SEP] b [SEP]` features, cut by BERT's
    `_truncate_seq_pair` to max_seq_length - 3 WordPieces (TextFeaturizer.pair)."""
    ids, splits = self.token_ids(text)
    ids_b, splits_b = self.token_ids(text_b)
    keep_a, keep_b = truncated_pair_lengths(splits[1:] - splits[:-1], splits_b[1:] - splits_b[:-1],
                                            self.max_seq_length - 3)
    return self.pack([(ids, splits, keep_a), (ids_b, splits_b, keep_b)])

  def features(self, text: tf.Tensor, text_b: Optional[tf.Tensor] = None) -> Features:
    """`single(text)`, or `pair(text, text_b)` when text_b is given."""
    return self.single(text) if text_b is None else self.pair(text, text_b)

  def word_features(self, text: tf.Tensor) -> Features:
    """text/tagging.py `word_features`: every ASCII-whitespace-separated word tokenized
    alone, whole words kept while they fit, segment 1; `labeled_positions` and
    `words_mask` `[batch, max_seq_length]`."""
    words = self._words.tokenize(text)
    word_splits = tf.cast(words.row_splits, tf.int32)
    ids, splits = self.token_ids(words.flat_values)
    lengths = splits[1:] - splits[:-1]
    n_words = tf.size(lengths)
    word_rows = _row_ids(word_splits, n_words)
    ends = tf.cumsum(lengths)
    before = tf.gather(tf.concat([[0], ends], 0), word_splits[:-1])  # pieces before row
    end_in_row = ends - tf.gather(before, word_rows)
    keep = end_in_row <= self.max_seq_length - 2
    batch = tf.size(word_splits) - 1
    kept_splits = _row_splits(tf.boolean_mask(word_rows, keep), batch)
    piece_keep = tf.gather(keep, _row_ids(splits, tf.size(ids)))
    kept_ids = tf.boolean_mask(ids, piece_keep)
    piece_rows = tf.boolean_mask(tf.gather(word_rows, _row_ids(splits, tf.size(ids))),
                                 piece_keep)
    piece_splits = _row_splits(piece_rows, batch)
    features = self.pack([(kept_ids, piece_splits,
                           piece_splits[1:] - piece_splits[:-1])])
    features["segment_ids"] = features["input_mask"]  # official: segment 1 for every token
    starts = tf.boolean_mask(end_in_row - lengths + 1, keep)  # after [CLS]
    counts = kept_splits[1:] - kept_splits[:-1]
    positions = tf.range(self.max_seq_length)[None, :]
    in_row = positions < counts[:, None]
    index = tf.clip_by_value(kept_splits[:-1, None] + positions, 0, tf.size(starts))
    features["labeled_positions"] = tf.where(
        in_row, tf.gather(tf.concat([starts, [0]], 0), index), 0)
    features["words_mask"] = tf.cast(in_row, tf.int32)
    return features

  def pack(self, segments: List[Segment]) -> Features:
    """`[CLS] s1 [SEP] s2 [SEP] ...` (the first `kept` ids of each row of each
    segment), segment ids 0, 1, ..., padded with 0 to the longest row."""
    total = 1 + sum(kept + 1 for _, _, kept in segments)  # [batch]
    width = tf.reduce_max(tf.concat([total, [2]], 0))  # [0, 2] for an empty batch, as TextInputs
    position = tf.range(width)[None, :]
    input_ids = tf.where(position == 0, self.cls_id, 0)
    segment_ids = tf.zeros_like(input_ids)
    start = tf.ones_like(total)
    for index, (ids, splits, kept) in enumerate(segments):
      offset = position - start[:, None]
      in_segment = (offset >= 0) & (offset < kept[:, None])
      flat = tf.clip_by_value(splits[:-1, None] + offset, 0, tf.size(ids))
      input_ids = tf.where(in_segment, tf.gather(tf.concat([ids, [0]], 0), flat), input_ids)
      input_ids = tf.where(offset == kept[:, None], self.sep_id, input_ids)
      segment_ids = tf.where((offset >= 0) & (offset <= kept[:, None]), index, segment_ids)
      start += kept + 1
    input_mask = tf.cast(position < total[:, None], tf.int32)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


class LiteRTFeaturizer(LiteRTPacking):
  """tf.string `[batch]` -> WordPiece ids and BERT features, with TFLite kernels only.

  Args:
    vocab_tokens: the WordPiece tokens in id order.
    do_lower_case, strip_accents: as electra_tf2.text.tokenizer.TokenizerModule.
    max_seq_length: WordPieces per row of `features`, [CLS] and [SEP] included.
  """

  def __init__(self, vocab_tokens: Sequence[str], do_lower_case: bool = True,
               strip_accents: Optional[bool] = None, max_seq_length: int = 128,
               name: Optional[str] = None):
    super().__init__(name=name)
    vocab_tokens = list(vocab_tokens)
    for token in ("[UNK]", "[CLS]", "[SEP]"):
      if token not in vocab_tokens:
        raise VocabError(f"the vocabulary lacks {token}")
    self.do_lower_case = bool(do_lower_case)
    self.max_seq_length = max_seq_length
    self._normalizer = tft.FastBertNormalizer(model_buffer=litert_normalizer.normalizer_model(
        vocab_tokens, self.do_lower_case, resolve_strip_accents(do_lower_case, strip_accents)))
    self._wordpiece = tft.FastWordpieceTokenizer(
        vocab=vocab_tokens, suffix_indicator="##", max_bytes_per_word=4 * MAX_CHARS_PER_WORD,
        token_out_type=tf.int32, unknown_token="[UNK]", no_pretokenization=False)
    self._is_suffix = tf.constant([len(t) > 2 and t.startswith("##") for t in vocab_tokens])
    self.unk_id, self.cls_id, self.sep_id = (vocab_tokens.index(t)
                                             for t in ("[UNK]", "[CLS]", "[SEP]"))

  # -- ids --------------------------------------------------------------------

  def token_ids(self, text: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """[batch] UTF-8 strings -> (int32 ids `[tokens]`, int32 row splits `[batch + 1]`)."""
    text = self._normalizer.normalize(text)
    pieces, starts, ends = self._wordpiece.tokenize_with_offsets(text)
    ids, splits = pieces.flat_values, tf.cast(pieces.row_splits, tf.int32)
    rows = _row_ids(splits, tf.size(ids))
    is_start = tf.logical_not(tf.gather(self._is_suffix, ids))
    is_last = tf.concat([is_start[1:], tf.ones_like(is_start[:1])], 0)  # [] if no tokens
    word_rows = tf.boolean_mask(rows, is_start)
    lengths = _char_counts(text, word_rows, tf.boolean_mask(starts.flat_values, is_start),
                           tf.boolean_mask(ends.flat_values, is_last))
    word_of_token = tf.cumsum(tf.cast(is_start, tf.int32)) - 1
    in_long_word = tf.gather(lengths > MAX_CHARS_PER_WORD, word_of_token)
    keep = tf.logical_or(is_start, tf.logical_not(in_long_word))
    ids = tf.boolean_mask(tf.where(in_long_word, self.unk_id, ids), keep)
    return ids, _row_splits(tf.boolean_mask(rows, keep), tf.size(splits) - 1)


class LiteRTSentencePieceFeaturizer(LiteRTPacking):
  """tf.string `[batch]` -> SentencePiece ids and BERT features, with TFLite kernels only:
  tensorflow-text's `FastSentencepieceTokenize` (the SavedModel's tokenizer,
  text/sentencepiece.py), then the packing of `LiteRTPacking`. The texts must be valid
  UTF-8 (`prepare_texts(..., sentencepiece=True)`: the SavedModel's U+FFFD replacement).

  Args:
    model: the SentencePiece model (the bytes of its `.model` file).
    vocab_tokens: its pieces in id order (the special tokens found by role).
    max_seq_length: pieces per row of `features`, [CLS] and [SEP] included.
  """

  do_lower_case = False

  def __init__(self, model: bytes, vocab_tokens: Sequence[str], max_seq_length: int = 128,
               name: Optional[str] = None):
    super().__init__(name=name)
    vocab_tokens = list(vocab_tokens)
    special = special_tokens({t: i for i, t in enumerate(vocab_tokens)})
    self.cls_id, self.sep_id = vocab_tokens.index(special[2]), vocab_tokens.index(special[3])
    self.max_seq_length = max_seq_length
    self._sentencepiece = tft.FastSentencepieceTokenizer(model)

  def token_ids(self, text: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """[batch] UTF-8 strings -> (int32 ids `[tokens]`, int32 row splits `[batch + 1]`)."""
    pieces = self._sentencepiece.tokenize(text)
    return tf.cast(pieces.flat_values, tf.int32), tf.cast(pieces.row_splits, tf.int32)


def litert_featurizer(vocab_tokens: Sequence[str], do_lower_case: bool, max_seq_length: int,
                      sentencepiece_model: Optional[bytes] = None,
                      strip_accents: Optional[bool] = None) -> LiteRTPacking:
  """The LiteRT featurizer of a vocabulary: WordPiece (with its casing), or the
  SentencePiece model given."""
  if sentencepiece_model is not None:
    return LiteRTSentencePieceFeaturizer(sentencepiece_model, vocab_tokens, max_seq_length)
  return LiteRTFeaturizer(vocab_tokens, do_lower_case, strip_accents, max_seq_length)


def _row_ids(splits: tf.Tensor, size: tf.Tensor) -> tf.Tensor:
  """The row of each of `size` values, from int32 row splits (no RaggedTensor ops)."""
  starts = tf.math.unsorted_segment_sum(tf.ones_like(splits[:-1]), splits[:-1], size + 1)
  return tf.cumsum(starts)[:size] - 1


def _row_splits(rows: tf.Tensor, nrows: tf.Tensor) -> tf.Tensor:
  """Row splits `[nrows + 1]` of values whose sorted rows are `rows`."""
  lengths = tf.math.unsorted_segment_sum(tf.ones_like(rows), rows, nrows)
  return tf.concat([[0], tf.cumsum(lengths)], 0)


def _char_counts(text: tf.Tensor, rows: tf.Tensor, begins: tf.Tensor,
                 ends: tf.Tensor) -> tf.Tensor:
  """Characters of the byte ranges `[begins, ends)` of `text[rows]` (UTF-8 lead bytes)."""
  data = tft.ByteSplitter().split(text)
  values = tf.cast(data.flat_values, tf.int32)
  is_lead = tf.cast((values < 0x80) | (values >= 0xC0), tf.int32)
  before = tf.concat([[0], tf.cumsum(is_lead)], 0)  # lead bytes before each byte
  base = tf.gather(tf.cast(data.row_splits, tf.int32), rows)
  return (tf.gather(before, base + tf.cast(ends, tf.int32))
          - tf.gather(before, base + tf.cast(begins, tf.int32)))


def prepare_texts(texts: Sequence[Union[str, bytes]], do_lower_case: bool,
                  sentencepiece: bool = False) -> List[bytes]:
  """The texts as the .tflite should get them: what the per-character map cannot do.

  With `sentencepiece` only the first two rules apply (valid UTF-8, as the SavedModel's
  `unicode_transcode`); the model's own normalization runs in the kernel.

  - invalid UTF-8 in bytes becomes U+FFFD, which the map removes: the official
    `convert_to_unicode` drops it ("ignore"), while the kernel would make each
    invalid byte a space. As in the SavedModel (which also replaces it by
    U+FFFD), a tagging word made only of invalid bytes stays a word;
  - a str holding lone surrogates is encoded as the SavedModel's helpers do
    (text/tokenizer.py `to_utf8`);
  - the official controls the map keeps (private use and unassigned code
    points, `litert_normalizer.is_control`) become U+FFFD too, so the map
    removes them where the official `_clean_text` does;
  - a text holding "Σ", when lowercasing, is lowercased here first, in the
    official order (controls removed, then `str.lower()`), for the final-sigma
    rule ("ΟΔΟΣ" -> "οδος"); the graph's map is the identity on lowercase text.
  """
  out = []
  for text in texts:
    data = (text.decode("utf-8", "replace").encode("utf-8") if isinstance(text, bytes)
            else to_utf8(text))
    if not data.isascii() and not sentencepiece:
      chars = data.decode("utf-8")
      if do_lower_case and "Σ" in chars:
        chars = "".join(c for c in chars if c not in "\0\ufffd" and not is_control(c)).lower()
      else:
        chars = "".join("\ufffd" if is_control(c) and not litert_normalizer.is_control(c)
                        else c for c in chars)
      data = chars.encode("utf-8")
    out.append(data)
  return out
