"""BERT/ELECTRA WordPiece tokenization with tensorflow-text, id for id like the official one.

`FullTokenizer` runs ELECTRA's FullTokenizer (model/tokenization.py:112-360: clean
(every category C* removed, `is_control`), lowercase and strip accents, split on whitespace, punctuation and CJK, greedy
longest-match WordPiece, words over 200 characters -> [UNK]) as TensorFlow ops,
batched; `TokenizerModule` is the same as a `tf.Module` for SavedModels;
`BasicTokenizer` splits words only. How it matches the official tokenizer where
tensorflow-text's BertTokenizer does not: docs/design.md#tokenization.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
import tensorflow_text as tft

# resolve_strip_accents lives in the TensorFlow-free py_tokenizer; imported from here too.
from electra_tf2.text.py_tokenizer import resolve_strip_accents
from electra_tf2.text.vocab import (
    load_vocab, special_token_ids, special_tokens, SPECIAL_TOKENS, VocabError, VocabLookups)

# BERT's WordpieceTokenizer(max_input_chars_per_word=200): longer words -> [UNK].
MAX_CHARS_PER_WORD = 200

_NONSPACING_MARK_PATTERN = r"\p{Mn}"
# The same for pure-ASCII text (no Cf or U+FFFD there).
_ASCII_CLEAN_PATTERN = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"

# Letters whose ICU lowercase depends on the locale (tr, az, lt), with the
# lowercase Python's locale-independent str.lower() gives them. ASCII I and J
# are handled by an ASCII-only lowercase pass.
_LOCALE_SENSITIVE_LOWER = (
    ("\u00cc", "\u00ec"),  # Ì
    ("\u00cd", "\u00ed"),  # Í
    ("\u0128", "\u0129"),  # Ĩ
    ("\u012e", "\u012f"),  # Į
    ("\u0130", "i\u0307"),  # İ
)
_LOCALE_PROBE = "IJ" + "".join(upper for upper, _ in _LOCALE_SENSITIVE_LOWER)
_LOCALE_PROBE_LOWER = "ij" + "".join(lower for _, lower in _LOCALE_SENSITIVE_LOWER)

# Texts per TensorFlow call in the Python helpers (bounded memory, few calls).
_BATCH_LINES = 8192
_BATCH_BYTES = 4 << 20


def is_control(char: str) -> bool:
  """ELECTRA's `_is_control` (model/tokenization.py:335-344): every category C* (control,
  format, private use, surrogate, unassigned), but \t \n \r. (BERT's checks Cc and Cf only.)"""
  return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


@functools.lru_cache(maxsize=None)
def clean_pattern() -> str:
  """An RE2 class of what the official `_clean_text` (model/tokenization.py:247-258)
  removes: NUL, U+FFFD and `is_control`, by Python's own Unicode tables (RE2's are
  newer: its \\p{C} would keep what Python still calls unassigned). Built once."""
  removed = [cp == 0xFFFD or (not 0xD800 <= cp <= 0xDFFF and is_control(chr(cp)))
             for cp in range(0x110000)]
  ranges, start = [], None
  for cp, remove in enumerate(removed + [False]):
    if remove and start is None:
      start = cp
    elif not remove and start is not None:
      ranges.append(f"\\x{{{start:X}}}" + (f"-\\x{{{cp - 1:X}}}" if cp - 1 > start else ""))
      start = None
  return "[" + "".join(ranges) + "]"


def _lower_graph(text):
  """Python's str.lower() in the graph, whatever the process locale (see module doc)."""

  def plain():
    return tf.strings.lower(text, encoding="utf-8")

  def locale_safe():
    t = tf.strings.lower(text)  # ASCII only: I -> i, J -> j
    for upper, lower in _LOCALE_SENSITIVE_LOWER:
      t = tf.strings.regex_replace(t, upper, lower)
    return tf.strings.lower(t, encoding="utf-8")

  probe = tf.strings.lower(tf.constant(_LOCALE_PROBE), encoding="utf-8")
  return tf.cond(tf.equal(probe, _LOCALE_PROBE_LOWER), plain, locale_safe)


def normalize_graph(text, do_lower_case: bool, strip_accents: bool):
  """BERT's BasicTokenizer up to (not including) the splitting, on a string tensor.

  Removes control/format characters, lowercases, strips accents (NFD, drop Mn).
  """
  text = tf.strings.regex_replace(text, clean_pattern(), "")
  if do_lower_case:
    text = _lower_graph(text)
    if strip_accents:
      text = tft.normalize_utf8(text, "NFD")
      text = tf.strings.regex_replace(text, _NONSPACING_MARK_PATTERN, "")
  return text


# Splitting as BERT's BasicTokenizer: Unicode whitespace separates words; every
# punctuation character (ASCII non-alphanumerics, category P) and every CJK
# ideograph is a word of its own.
_CJK_CLASS = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
              r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
_KEEP_PATTERN = r"[!-/:-@\[-`{-~\p{P}" + _CJK_CLASS + "]"
_SPLIT_PATTERN = r"[\t\n\v\f\r \x{85}\p{Z}]+|" + _KEEP_PATTERN


def basic_split_graph(text, do_lower_case: bool, strip_accents: bool) -> tf.RaggedTensor:
  """BERT's BasicTokenizer.tokenize on a string tensor `[batch]` -> words `[batch, (words)]`."""
  text = normalize_graph(text, do_lower_case, strip_accents)
  return tft.regex_split(text, _SPLIT_PATTERN, _KEEP_PATTERN)


class BasicTokenizer:
  """BERT's BasicTokenizer with TensorFlow ops: text -> words (no vocabulary needed).

  Used to count words for vocabulary learning; `split_graph` works inside a graph.
  """

  def __init__(self, do_lower_case: bool = True, strip_accents: Optional[bool] = None):
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = resolve_strip_accents(do_lower_case, strip_accents)
    lower, strip = self.do_lower_case, self.strip_accents

    self.split_graph = tf.function(lambda text: basic_split_graph(text, lower, strip),
                                   input_signature=[tf.TensorSpec([None], tf.string)],
                                   autograph=False)

  def tokenize(self, text: Union[str, bytes]) -> List[str]:
    return self.tokenize_batch([text])[0]

  def tokenize_batch(self, texts: Sequence[Union[str, bytes]]) -> List[List[str]]:
    ragged = self.split_graph(tf.constant([to_utf8(t) for t in texts], tf.string))
    return [[w.decode("utf-8") for w in row] for row in ragged.to_list()]


class TokenizerModule(tf.Module):
  """The in-graph tokenizer: strings -> RaggedTensor of WordPiece ids.

  Save it in (or as) a SavedModel; loading needs `import tensorflow_text`
  first so that its ops are registered.
  """

  def __init__(self, vocab_tokens: Sequence[str], do_lower_case: bool = True,
               strip_accents: Optional[bool] = None, unk_token: str = "[UNK]",
               name: Optional[str] = None):
    super().__init__(name=name)
    vocab_tokens = list(vocab_tokens)
    if unk_token not in vocab_tokens:
      raise VocabError(f"the vocabulary lacks {unk_token}")
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = resolve_strip_accents(do_lower_case, strip_accents)
    self.vocab_size = len(vocab_tokens)
    self.unk_id = vocab_tokens.index(unk_token)
    try:
      # The op itself turns words of over 4*200 bytes (hence over 200
      # characters) into [UNK]; shorter overlong words are fixed below.
      self._wordpiece = tft.FastWordpieceTokenizer(
          vocab=vocab_tokens, suffix_indicator="##",
          max_bytes_per_word=4 * MAX_CHARS_PER_WORD, token_out_type=tf.int64,
          unknown_token=unk_token, no_pretokenization=False)
    except Exception as e:  # the model builder reports vocab problems tersely
      raise VocabError(f"tensorflow-text cannot build a WordPiece model from this "
                       f"vocabulary: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
                       ) from None
    # Continuation pieces ("##x"); every other id starts a word.
    self._is_suffix = tf.constant(
        [len(t) > 2 and t.startswith("##") for t in vocab_tokens], dtype=tf.bool)

  # -- graph pieces ------------------------------------------------------

  def _normalize(self, text):
    return normalize_graph(text, self.do_lower_case, self.strip_accents)

  def _limit_word_length(self, text, ids, starts, ends):
    """Replaces the pieces of every word over 200 characters by one [UNK]."""
    flat_ids = ids.flat_values
    is_start = self.is_word_start(flat_ids)
    word_of_token = tf.cumsum(tf.cast(is_start, tf.int64)) - 1
    word_begin = tf.math.segment_min(starts.flat_values, word_of_token)
    word_end = tf.math.segment_max(ends.flat_values, word_of_token)
    # A word of more than 200 characters has more than 200 bytes.
    candidates = tf.where(word_end - word_begin > MAX_CHARS_PER_WORD)[:, 0]

    def fix():
      token_row = ids.value_rowids()
      word_row = tf.boolean_mask(token_row, is_start)
      rows = tf.gather(word_row, candidates)
      begins = tf.gather(word_begin, candidates)
      lengths = tf.gather(word_end, candidates) - begins
      words = tf.strings.substr(tf.gather(text, rows), begins, lengths)
      too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
      long_words = tf.boolean_mask(candidates, too_long)
      n_words = tf.shape(word_begin, out_type=tf.int64)[0]
      word_is_long = tf.scatter_nd(long_words[:, None],
                                   tf.ones_like(long_words, dtype=tf.bool), [n_words])
      token_in_long = tf.gather(word_is_long, word_of_token)
      keep = tf.logical_or(tf.logical_not(token_in_long), is_start)
      new_ids = tf.where(token_in_long, tf.constant(self.unk_id, tf.int64), flat_ids)
      return tf.RaggedTensor.from_value_rowids(
          tf.boolean_mask(new_ids, keep), tf.boolean_mask(token_row, keep),
          nrows=ids.nrows())

    return tf.cond(tf.size(candidates) > 0, fix, lambda: ids)

  def is_word_start(self, ids):
    """Bool, same shape as `ids`: the id begins a word (it is not a `##` continuation)."""
    return tf.logical_not(tf.gather(self._is_suffix, ids))

  def eager_ids_from_valid_utf8(self, text):
    """The ids, op by op (no tf.function tracing): the Python helpers' path."""
    return self._ids_from_valid_utf8(text)

  def _ids_from_valid_utf8(self, text):
    text = self._normalize(text)
    ids, starts, ends = self._wordpiece.tokenize_with_offsets(text)
    return self._limit_word_length(text, ids, starts, ends)

  # -- public graph functions ---------------------------------------------

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def tokenize_to_ids(self, text):
    """[batch] strings (any bytes; invalid UTF-8 is dropped) -> [batch, None] int64 ids."""
    text = tf.strings.unicode_transcode(
        text, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace",
        replacement_char=0xFFFD)
    return self._ids_from_valid_utf8(text)


def to_utf8(text: Union[str, bytes]) -> bytes:
  """UTF-8 bytes of a Python string, as the oracle would see them.

  Bytes are decoded like the oracle's convert_to_unicode ("ignore"). A lone
  surrogate (a code point, not a character) cannot be encoded; it becomes a
  private-use character, which the cleaning removes as the official code
  removes the surrogate (both are `is_control`).
  """
  if isinstance(text, bytes):
    text = text.decode("utf-8", "ignore")
  elif not isinstance(text, str):
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")
  try:
    return text.encode("utf-8")
  except UnicodeEncodeError:
    return "".join("\ue000" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text).encode("utf-8")


class GraphTokenizer(VocabLookups):
  """A tokenizer whose ids come from an in-graph `module` (strings -> ragged int64 ids),
  in the graph and batched from Python: FullTokenizer's and SentencePieceTokenizer's
  shared methods. A subclass sets `vocab`, `inv_vocab`, `special_ids` and `module`, and
  defines `encode_batch` and `encode_lines_flat`."""

  def tokenize_to_ids(self, text):
    """In-graph: tf.string [batch] -> tf.RaggedTensor int64 [batch, None] (self.module's)."""
    return self.module.tokenize_to_ids(text)

  def encode(self, text: Union[str, bytes]) -> List[int]:
    """Token ids of one text."""
    return self.encode_batch([text])[0]

  def encode_batch_flat(self, texts: Sequence[Union[str, bytes]]
                        ) -> Tuple[np.ndarray, np.ndarray]:
    """All ids in one int64 array plus row splits: text i is flat[splits[i]:splits[i+1]]."""
    return self.encode_utf8_flat([to_utf8(t) for t in texts])

  def encode_utf8_flat(self, texts: Sequence[Union[bytes, str]]
                       ) -> Tuple[np.ndarray, np.ndarray]:
    """encode_batch_flat for texts that are valid UTF-8 bytes or str without lone surrogates."""
    return run_batched(self.module.eager_ids_from_valid_utf8, texts)

  def encode_lines(self, lines: Sequence[str]) -> Tuple[List[List[int]], int, int]:
    """Ids of each line, total tokens, number of UNK tokens (see encode_lines_flat)."""
    flat, splits = self.encode_lines_flat(lines)
    n_unk = int(np.count_nonzero(flat == self.special_ids.unk))
    return split_rows(flat, splits), len(flat), n_unk


def split_rows(flat: np.ndarray, splits: np.ndarray) -> List[List[int]]:
  """Flat ids and their row splits -> one list of ids per row."""
  flat_list, sp = flat.tolist(), splits.tolist()
  return [flat_list[sp[i]:sp[i + 1]] for i in range(len(sp) - 1)]


class FullTokenizer(GraphTokenizer):
  """BERT's FullTokenizer on tensorflow-text: same ids, batched and in-graph.

  Args:
    vocab_file: a vocab.txt (one token per line); validated by
      `electra_tf2.text.vocab.load_vocab` (special tokens, duplicates, size).
    do_lower_case: lowercase the text (official default True).
    strip_accents: strip accents; None means the official default (True).
      As in the official code it only applies when lowercasing.
    expected_vocab_size: if given, the vocab must have exactly this many tokens.
  """

  def __init__(self, vocab_file: str, do_lower_case: bool = True,
               strip_accents: Optional[bool] = None,
               expected_vocab_size: Optional[int] = None):
    self.vocab_file = vocab_file
    self.vocab: Dict[str, int] = load_vocab(vocab_file, expected_vocab_size)
    self.inv_vocab: Dict[int, str] = {i: t for t, i in self.vocab.items()}
    self.special_ids = special_token_ids(self.vocab)
    self.unk_token = special_tokens(self.vocab, vocab_file)[1]
    self.do_lower_case = bool(do_lower_case)
    self.strip_accents = resolve_strip_accents(do_lower_case, strip_accents)
    tokens = [None] * len(self.vocab)
    for token, index in self.vocab.items():
      tokens[index] = token
    self.module = TokenizerModule(tokens, do_lower_case=self.do_lower_case,
                                  strip_accents=self.strip_accents, unk_token=self.unk_token)
    self._ascii_fn = None

  def encode_batch(self, texts: Sequence[Union[str, bytes]]) -> List[List[int]]:
    """Token ids of many texts (one TensorFlow call per few MB)."""
    strs = [t if isinstance(t, str) else t.decode("utf-8", "ignore") if isinstance(t, bytes)
            else _bad_type(t) for t in texts]
    return self.encode_lines(strs)[0]

  def encode_lines_flat(self, lines: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
    """encode_batch_flat for str lines, faster: the data builder's path.

    Pure-ASCII lines (`str.isascii()` costs nothing) go through a shorter graph
    (ASCII control removal and lowercasing, WordPiece with a 200-byte word limit,
    which for ASCII is the 200-character limit), the others through the full
    graph; the results are merged back in order with numpy.
    """
    is_ascii = np.fromiter((line.isascii() for line in lines), dtype=bool, count=len(lines))
    n_ascii = int(is_ascii.sum())
    if n_ascii == len(lines):
      return run_batched(self._ascii_graph(), lines)
    other_lines = []
    for line in lines:
      if not line.isascii():
        try:
          line.encode("utf-8")
          other_lines.append(line)
        except UnicodeEncodeError:
          other_lines.append(to_utf8(line))
    if n_ascii == 0:
      return run_batched(self.module.eager_ids_from_valid_utf8, other_lines)
    ascii_lines = [line for line in lines if line.isascii()]
    a_flat, a_splits = run_batched(self._ascii_graph(), ascii_lines)
    o_flat, o_splits = run_batched(self.module.eager_ids_from_valid_utf8, other_lines)
    lengths = np.empty(len(lines), np.int64)
    lengths[is_ascii] = np.diff(a_splits)
    lengths[~is_ascii] = np.diff(o_splits)
    source_start = np.empty(len(lines), np.int64)
    source_start[is_ascii] = a_splits[:-1]
    source_start[~is_ascii] = o_splits[:-1] + len(a_flat)
    splits = np.zeros(len(lines) + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    index = np.repeat(source_start - splits[:-1], lengths) + np.arange(splits[-1])
    return np.concatenate([a_flat, o_flat])[index], splits

  def _ascii_graph(self):
    if self._ascii_fn is None:
      tokens = [None] * len(self.vocab)
      for token, index in self.vocab.items():
        tokens[index] = token
      wordpiece = tft.FastWordpieceTokenizer(
          vocab=tokens, suffix_indicator="##", max_bytes_per_word=MAX_CHARS_PER_WORD,
          token_out_type=tf.int64, unknown_token=self.unk_token, no_pretokenization=False)
      lower = self.do_lower_case

      def ascii_ids(text):  # run eagerly: no tracing cost, same kernels
        text = tf.strings.regex_replace(text, _ASCII_CLEAN_PATTERN, "")
        if lower:
          text = tf.strings.lower(text)  # ASCII only, locale-independent
        return wordpiece.tokenize(text)

      self._ascii_wordpiece = wordpiece
      self._ascii_fn = ascii_ids
    return self._ascii_fn


def run_batched(fn, texts) -> Tuple[np.ndarray, np.ndarray]:
  """`fn` (strings -> ragged ids) over texts, a few MB per call: flat ids and row splits."""
  flats: List[np.ndarray] = []
  splits: List[np.ndarray] = [np.zeros(1, np.int64)]
  offset = 0
  start = 0
  n = len(texts)
  while start < n:
    end, size = start, 0
    while end < n and end - start < _BATCH_LINES and (size < _BATCH_BYTES or end == start):
      size += len(texts[end])
      end += 1
    ragged = fn(tf.constant(texts[start:end], tf.string))
    flat = ragged.flat_values.numpy()
    row_splits = ragged.row_splits.numpy()
    flats.append(flat)
    splits.append(row_splits[1:] + offset)
    offset += len(flat)
    start = end
  flat_all = np.concatenate(flats) if flats else np.zeros(0, np.int64)
  return flat_all, np.concatenate(splits)


def _bad_type(t):
  raise TypeError(f"expected str or bytes, got {type(t).__name__}")


__all__ = ["FullTokenizer", "GraphTokenizer", "TokenizerModule", "MAX_CHARS_PER_WORD",
           "SPECIAL_TOKENS", "resolve_strip_accents", "run_batched", "split_rows"]
