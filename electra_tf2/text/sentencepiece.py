"""SentencePiece tokenization, in the graph and batched, with FullTokenizer's interface.

`SentencePieceModule` runs a SentencePiece `.model` (unigram or BPE) with
tensorflow-text's `FastSentencepieceTokenizer` (which has LiteRT kernels):
strings -> ragged ids, the same as `sentencepiece.SentencePieceProcessor.encode`
(no BOS/EOS added; CLS and SEP are packed around the pieces as for WordPiece).
`SentencePieceTokenizer` is the same from Python with `FullTokenizer`'s methods,
so the data builder, fine-tuning and the scorer take either. `SentencePieceModule.char_spans`
is `SentencePieceTokenizer.char_spans` in the graph (the QuestionAnswerer's answers).

The special tokens are the model's pieces found by role (vocab.SPECIAL_SPELLINGS):
`electra build-vocab --kind sentencepiece` gives them BERT's spellings; a model
trained elsewhere may spell them `<s>`, `</s>`, `<pad>`, `<unk>`, `<mask>`.
`convert_tokens_to_ids` also takes BERT's spelling of each role (the fine-tuning
tasks pack `[CLS] a [SEP] b [SEP]` by name).
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tft

from electra_tf2.text.tokenizer import GraphTokenizer, split_rows
from electra_tf2.text.vocab import (
    SPECIAL_TOKENS, SpecialTokenIds, VocabError, load_vocab, special_tokens)

# SentencePiece marks the start of a word with U+2581 LOWER ONE EIGHTH BLOCK.
WORD_START = "\u2581"
# The characters Python's str.isspace() takes (char_spans strips them off a piece's start).
_LEADING_SPACES = (r"^[\x{9}-\x{d}\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
                   r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]+")


def read_model(path: str) -> bytes:
  """The serialized ModelProto of a `.model` file."""
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read()


class SentencePieceModule(tf.Module):
  """The in-graph tokenizer: strings -> RaggedTensor of SentencePiece ids (int64).

  Args:
    model: the serialized ModelProto (the bytes of a `.model` file).
  """

  do_lower_case = False  # TokenizerModule's attributes: the model normalizes
  strip_accents = False

  def __init__(self, model: bytes, name=None):
    super().__init__(name=name)
    import sentencepiece  # pylint: disable=g-import-not-at-top
    processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    self.vocab_size = processor.get_piece_size()
    self.unk_id = processor.unk_id()
    self._model = model
    self._sentencepiece = tft.FastSentencepieceTokenizer(model)
    self._with_offsets = None  # tensorflow-text's SentencepieceTokenizer: `char_spans`
    self._is_word_start = tf.constant(
        [processor.id_to_piece(i).startswith(WORD_START) or processor.is_control(i)
         for i in range(self.vocab_size)], dtype=tf.bool)

  def is_word_start(self, ids):
    """Bool, same shape as `ids`: the piece begins a word (it starts with U+2581; an
    unknown piece does not: it follows a U+2581 piece or sits inside a word)."""
    return tf.gather(self._is_word_start, ids)

  def enable_char_spans(self) -> None:
    """Makes `char_spans` available (eagerly, once: it adds the library's tokenizer, which
    gives offsets, to this module and so to the SavedModels that hold it)."""
    if self._with_offsets is None:
      self._with_offsets = tft.SentencepieceTokenizer(self._model)

  def char_spans(self, text: tf.Tensor) -> Tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """`SentencePieceTokenizer.char_spans` in the graph: valid UTF-8 strings `[batch]` ->
    the `(start, end)` code points in its string of each piece of `tokenize_to_ids`, int64
    `[batch, (pieces)]`, the whitespace a U+2581 stands for left out (a lone U+2581 spans
    nothing). Needs `enable_char_spans()` first."""
    if self._with_offsets is None:
      raise ValueError("SentencePieceModule.char_spans needs enable_char_spans() first")
    _, begin, end = self._with_offsets.tokenize_with_offsets(text)
    begin, end = (tf.cast(t, tf.int64).with_row_splits_dtype(tf.int64) for t in (begin, end))
    _, char_bytes = tf.strings.unicode_decode_with_offsets(text, "UTF-8")
    table = char_bytes.with_row_splits_dtype(tf.int64).to_tensor(tf.int64.max)
    def chars(offsets):  # a byte offset's code point: how many characters start before it
      index = tf.searchsorted(table, offsets.to_tensor(tf.int64.max), side="left",
                              out_type=tf.int64)
      return tf.RaggedTensor.from_tensor(index, lengths=offsets.row_lengths())
    start, end = chars(begin), chars(end)
    piece = tf.strings.substr(tf.gather(text, start.value_rowids()), start.flat_values,
                              end.flat_values - start.flat_values, unit="UTF8_CHAR")
    spaces = (tf.strings.length(piece, unit="UTF8_CHAR") - tf.strings.length(
        tf.strings.regex_replace(piece, _LEADING_SPACES, ""), unit="UTF8_CHAR"))
    return start.with_flat_values(start.flat_values + tf.cast(spaces, tf.int64)), end

  def eager_ids_from_valid_utf8(self, text):
    """The ids, op by op: the Python helpers' path."""
    return self._ids(text)

  def _ids(self, text):
    """int64 ids and row splits, as WordPiece's `TokenizerModule` gives them."""
    ids = self._sentencepiece.tokenize(text)
    return tf.cast(ids, tf.int64).with_row_splits_dtype(tf.int64)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize_to_ids(self, text):
    """[batch] strings (invalid UTF-8 replaced) -> [batch, None] int64 ids."""
    text = tf.strings.unicode_transcode(
        text, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace",
        replacement_char=0xFFFD)
    return self._ids(text)


class SentencePieceTokenizer(GraphTokenizer):
  """A SentencePiece `.model` with FullTokenizer's methods (ids, tokens, batches).

  Args:
    vocab_file: the `.model` file; validated by `electra_tf2.text.vocab.load_vocab`.
    expected_vocab_size: if given, the model must have exactly this many pieces.
  """

  do_lower_case = False
  strip_accents = False

  def __init__(self, vocab_file: str, expected_vocab_size=None):
    self.vocab_file = vocab_file
    self.vocab: Dict[str, int] = load_vocab(vocab_file, expected_vocab_size)
    self.inv_vocab: Dict[int, str] = {i: t for t, i in self.vocab.items()}
    spellings = special_tokens(self.vocab, vocab_file)
    self.special_ids = SpecialTokenIds(*(self.vocab[t] for t in spellings))
    # BERT's spelling of each role names it too (the tasks pack "[CLS]" by name).
    self._aliases = dict(zip(SPECIAL_TOKENS, self.special_ids))
    self.model = read_model(vocab_file)
    self._processor = None  # the sentencepiece library's, for char_spans (made on first use)
    try:
      self.module = SentencePieceModule(self.model)
    except Exception as e:  # pylint: disable=broad-except
      raise VocabError(f"vocab file {vocab_file}: tensorflow-text cannot load this SentencePiece "
                       f"model ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
                       ) from None

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    """Ids of pieces (BERT's spelling of a special role included); KeyError if unknown."""
    vocab, aliases = self.vocab, self._aliases
    return [vocab[t] if t in vocab else aliases[t] for t in tokens]

  def char_spans(self, text: str) -> List[Tuple[int, int]]:
    """Where each piece of `encode(text)` came from: `(start, end)` character offsets in
    `text` (the sentencepiece library's byte offsets, which survive the model's
    normalization), without the whitespace a U+2581 stands for: a lone U+2581 spans
    nothing (start == end)."""
    if self._processor is None:
      import sentencepiece  # pylint: disable=g-import-not-at-top
      self._processor = sentencepiece.SentencePieceProcessor(model_proto=self.model)
    data = text.encode("utf-8")
    char_of_byte = [0] * (len(data) + 1)
    position = 0
    for index, char in enumerate(text):
      width = len(char.encode("utf-8"))
      char_of_byte[position:position + width] = [index] * width
      position += width
    char_of_byte[len(data)] = len(text)
    pieces = self._processor.encode(text, return_type="proto").pieces
    spans = []
    for piece in pieces:
      start, end = char_of_byte[piece.begin], char_of_byte[piece.end]
      while start < end and text[start].isspace():
        start += 1
      spans.append((start, end))
    return spans

  def encode_batch(self, texts: Sequence[Union[str, bytes]]) -> List[List[int]]:
    """Ids of many texts."""
    return split_rows(*self.encode_batch_flat(texts))

  def encode_lines_flat(self, lines: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """Ids of str lines (the data builder's path)."""
    return self.encode_batch_flat(lines)


__all__ = ["SentencePieceModule", "SentencePieceTokenizer", "read_model", "WORD_START"]
