"""WordPiece (the official tokenizer), SentencePiece and BERT packing with no TensorFlow.

For machines without TensorFlow (JAX, PyTorch): the same ids as ELECTRA's
`FullTokenizer` (model/tokenization.py:112-360) and as `text/tokenizer.py`'s
in-graph one, and the `[CLS] a [SEP] (b [SEP])` features of `text/packing.py`'s
`TextFeaturizer`, as numpy int32 arrays. Imports only the standard library, numpy and
`electra_tf2.text.vocab` (and, for SentencePiece, the `sentencepiece` library).

- `PyFullTokenizer`: text -> WordPiece tokens / ids;
- `PySentencePieceTokenizer`: text -> SentencePiece ids (text/sentencepiece.py's);
- `pack_ids`: id lists -> `input_ids`, `input_mask`, `segment_ids` `[batch, seq_len]`;
- `PyTextFeaturizer`: a tokenizer and packing, raw strings -> features.

How the official per-character loops become whole-text regular expressions
(model/tokenization.py line numbers):

- `_clean_text` (247-258) drops NUL, U+FFFD and `_is_control` (335-344: every category
  C* but \\t \\n \\r) and maps whitespace to " ": one `re.sub` of a class built from
  Python's `unicodedata` (the official code's own tables). The whitespace mapping is
  left out: every character it maps is `str.isspace`, so the final split treats it
  the same;
- `_tokenize_chinese_chars` (212-245): one `re.sub` spacing the CJK ranges, before the
  lowercasing, as there;
- `token.lower()` and `_run_strip_accents` (164-190) run per whitespace token there and
  on the whole text here: no whitespace character is cased or case-ignorable (so
  Python's final-sigma rule sees the same neighbours) and NFD reorders marks only
  between starters, so the result is the same;
- `_run_split_on_punc` (192-210, `_is_punctuation` 347-360) and both
  `whitespace_tokenize` (103-109, `str.split`): one `re.findall` of "a punctuation
  character, or a run of characters that are neither punctuation nor `str.isspace`"
  (Python's `\\s` is `str.isspace`);
- `WordpieceTokenizer.tokenize` (269-320): greedy longest match first, `##`
  continuations, a word of over 200 characters or one that cannot be matched is one
  `[UNK]`; the search starts at the longest vocabulary entry's length instead of the
  word's (no longer piece can match), and each word's ids are cached.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from electra_tf2.text.vocab import (
    VocabError, VocabLookups, load_vocab, special_token_ids, special_tokens)

# BERT's WordpieceTokenizer(max_input_chars_per_word=200): longer words -> [UNK].
MAX_CHARS_PER_WORD = 200
# Distinct words whose ids are cached per tokenizer (about 100 bytes each).
WORD_CACHE_SIZE = 1 << 18

Text = Union[str, bytes]

# model/tokenization.py:225-245, `_is_chinese_char`.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


_ASTRAL = "\U00010000-\U0010ffff"
# What tf.strings.split splits words on (its kernel's absl::ascii_isspace).
_ASCII_SPACES = " \t\n\v\f\r"
_ASCII_SPACE = re.compile(f"[{re.escape(_ASCII_SPACES)}]+")


def _ranges(flags: np.ndarray) -> str:
  """The inside of a `re` character class of the code points whose flag is set."""
  edges = np.flatnonzero(np.diff(np.concatenate([[False], flags, [False]]).astype(np.int8)))
  ranges = []
  for first, stop in zip(edges[::2].tolist(), edges[1::2].tolist()):
    low, high = re.escape(chr(first)), re.escape(chr(stop - 1))
    ranges.append(low if stop - 1 == first else f"{low}-{high}")
  return "".join(ranges)


def _char_class(flags: np.ndarray) -> Tuple[str, str]:
  """A `re` pattern of one code point whose flag is set, and the class of those above
  U+FFFF. `re` tests a class holding code points above U+FFFF range by range (30 times
  slower on text here), one of the BMP alone with a bitmap: so the class is split and
  the astral one tried only on astral characters."""
  astral = flags.copy()
  astral[:0x10000] = False
  astral_class = f"[{_ranges(astral)}]" if astral.any() else "(?!)"
  return f"(?:[{_ranges(flags[:0x10000])}]|(?=[{_ASTRAL}]){astral_class})", astral_class


@functools.lru_cache(maxsize=None)
def _patterns() -> Tuple["re.Pattern", "re.Pattern", "re.Pattern", "re.Pattern"]:
  """(clean, cjk, non-spacing marks, words) from Python's Unicode tables: built once, on
  the first text that is not ASCII (about 0.2 s)."""
  names = ("Cc", "Cf", "Cn", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu", "Mc", "Me", "Mn", "Nd",
           "Nl", "No", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm", "So", "Zl",
           "Zp", "Zs")
  index = {name: i for i, name in enumerate(names)}
  categories = np.fromiter(
      map(index.__getitem__, map(unicodedata.category, map(chr, range(0x110000)))),
      np.int8, 0x110000)
  first_letter = np.array([name[0] for name in names])[categories]
  removed = first_letter == "C"  # `_is_control`, and NUL (Cc) ...
  removed[[ord("\t"), ord("\n"), ord("\r")]] = False
  removed[0xFFFD] = True  # ... and U+FFFD (model/tokenization.py:251)
  punct = first_letter == "P"
  for low, high in ((33, 47), (58, 64), (91, 96), (123, 126)):  # ASCII non-alphanumerics
    punct[low:high + 1] = True
  one_punct, astral_punct = _char_class(punct)
  # A run of characters that are neither `str.isspace` nor punctuation.
  word = (f"(?:[^\\s{_ranges(punct[:0x10000])}{_ASTRAL}]|(?!{astral_punct})[{_ASTRAL}])+")
  cjk = "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in _CJK_RANGES) + "]"
  return (re.compile(_char_class(removed)[0]), re.compile(f"({cjk})"),
          re.compile(_char_class(categories == index["Mn"])[0]),
          re.compile(f"{one_punct}|{word}"))


_ASCII_CLEAN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_WORDS = re.compile(r"[!-/:-@\[-`{-~]|[^\s!-/:-@\[-`{-~]+")


def _to_str(text: Text) -> str:
  """The official `convert_to_unicode` (model/tokenization.py:29-46): bytes as UTF-8,
  invalid bytes dropped."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def resolve_strip_accents(do_lower_case: bool, strip_accents: Optional[bool]) -> bool:
  """Whether accents are stripped: official semantics, only ever when lowercasing.

  The official BasicTokenizer strips accents inside `if do_lower_case:`
  (`strip_accents` defaults to True), so `--no-lower-case --strip-accents`
  keeps the accents. None means the official default.
  """
  return bool(do_lower_case) and (strip_accents is None or bool(strip_accents))


class PyFullTokenizer(VocabLookups):
  """ELECTRA's FullTokenizer in pure Python: the official ids, no TensorFlow.

  >>> tokenizer = PyFullTokenizer.from_tokens(
  ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "!"])
  >>> tokenizer.tokenize("UNAFFABLE!")
  ['un', '##aff', '##able', '!']
  >>> tokenizer.encode_batch(["unaffable", "xyz"])
  [[5, 6, 7], [1]]

  Args:
    vocab_file: a vocab.txt (one token per line), validated by
      `electra_tf2.text.vocab.load_vocab` (special tokens, duplicates, size).
    do_lower_case: lowercase the text (official default True).
    strip_accents: strip accents; None means the official default (True). As in the
      official code it only applies when lowercasing.
    expected_vocab_size: if given, the vocab must have exactly this many tokens.
  """

  def __init__(self, vocab_file: str, do_lower_case: bool = True,
               strip_accents: Optional[bool] = None,
               expected_vocab_size: Optional[int] = None):
    self._setup(load_vocab(vocab_file, expected_vocab_size), do_lower_case, strip_accents)
    self.vocab_file = vocab_file

  @classmethod
  def from_tokens(cls, tokens: Sequence[str], do_lower_case: bool = True,
                  strip_accents: Optional[bool] = None) -> "PyFullTokenizer":
    """A tokenizer over `tokens` in id order (as `TextFeaturizer` takes them); needs [UNK]."""
    vocab = {token: index for index, token in enumerate(tokens)}
    if len(vocab) != len(tokens):
      raise VocabError("the vocabulary has duplicate tokens: remove them")
    if "[UNK]" not in vocab:
      raise VocabError("the vocabulary lacks [UNK]")
    tokenizer = cls.__new__(cls)
    tokenizer._setup(vocab, do_lower_case, strip_accents)
    tokenizer.vocab_file = None
    return tokenizer

  to_str = staticmethod(_to_str)  # str of a text: the official `convert_to_unicode`

  def _setup(self, vocab: Dict[str, int], do_lower_case: bool,
             strip_accents: Optional[bool]) -> None:
    self.vocab: Dict[str, int] = vocab
    self.inv_vocab: Dict[int, str] = {i: t for t, i in vocab.items()}
    self.do_lower_case = bool(do_lower_case)
    # Official: accents are stripped inside `if do_lower_case:` (model/tokenization.py:172).
    self.strip_accents = resolve_strip_accents(do_lower_case, strip_accents)
    self.unk_id = vocab["[UNK]"]
    self._longest = max(map(len, vocab), default=1)
    self._word_ids = functools.lru_cache(maxsize=WORD_CACHE_SIZE)(self._wordpiece)

  @property
  def special_ids(self):
    """`vocab.SpecialTokenIds` (pad, unk, cls, sep, mask); VocabError if one is missing."""
    return special_token_ids(self.vocab)

  # -- words -------------------------------------------------------------------

  def basic_tokenize(self, text: Text) -> List[str]:
    """BasicTokenizer.tokenize (model/tokenization.py:156-179): the words of one text."""
    text = _to_str(text)
    if text.isascii():
      text = _ASCII_CLEAN.sub("", text)
      return _ASCII_WORDS.findall(text.lower() if self.do_lower_case else text)
    clean, cjk, marks, words = _patterns()
    if not text.isprintable() or "\ufffd" in text:  # printable: no C* (nor Z* but " ")
      text = clean.sub("", text)
    text = cjk.sub(r" \1 ", text)
    if self.do_lower_case:
      text = text.lower()
      if self.strip_accents:
        text = marks.sub("", unicodedata.normalize("NFD", text))
    return words.findall(text)

  def _wordpiece(self, word: str) -> Tuple[int, ...]:
    """WordpieceTokenizer.tokenize of one word (model/tokenization.py:269-320)."""
    vocab = self.vocab
    whole = vocab.get(word)
    if whole is not None:
      return (whole,)
    n = len(word)
    if n > MAX_CHARS_PER_WORD:
      return (self.unk_id,)
    ids, start, longest = [], 0, self._longest
    while start < n:
      prefix = "##" if start else ""
      end = min(n, start + longest)
      while end > start:
        piece = vocab.get(prefix + word[start:end])
        if piece is not None:
          ids.append(piece)
          break
        end -= 1
      else:
        return (self.unk_id,)
      start = end
    return tuple(ids)

  # -- ids and tokens ------------------------------------------------------------

  def encode(self, text: Text) -> List[int]:
    """The WordPiece ids of one text (str, or UTF-8 bytes)."""
    word_ids = self._word_ids
    ids: List[int] = []
    for word in self.basic_tokenize(text):
      ids.extend(word_ids(word))
    return ids

  def encode_batch(self, texts: Iterable[Text]) -> List[List[int]]:
    """`encode` of each text."""
    return [self.encode(text) for text in texts]


class PySentencePieceTokenizer:
  """A SentencePiece model run by the `sentencepiece` library: the ids of text/sentencepiece.py's
  in-graph `SentencePieceModule` (tensorflow-text's FastSentencepieceTokenizer, which gives
  the library's `encode`: no BOS/EOS), without TensorFlow.

  Args:
    model: the serialized ModelProto (the bytes of a `.model` file).
  """

  def __init__(self, model: bytes):
    import sentencepiece  # pylint: disable=g-import-not-at-top
    try:
      self._processor = sentencepiece.SentencePieceProcessor(model_proto=model)
    except RuntimeError as e:
      raise VocabError(f"the SentencePiece model cannot be loaded ({str(e).splitlines()[0]}): "
                       "pass a .model written by spm_train or electra build-vocab") from None

  def encode(self, text: Text) -> List[int]:
    """The ids of one text (str, or UTF-8 bytes)."""
    return self.encode_batch([text])[0]

  @staticmethod
  def to_str(text: Text) -> str:
    """str, or UTF-8 bytes with each invalid byte sequence as U+FFFD (as the graph's
    `SentencePieceModule.tokenize_to_ids` transcodes them)."""
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else _to_str(text)

  def encode_batch(self, texts: Iterable[Text]) -> List[List[int]]:
    """`encode` of each text."""
    return self._processor.encode(list(map(self.to_str, texts)))


def pair_lengths(len_a: np.ndarray, len_b: np.ndarray, budget: int
                 ) -> Tuple[np.ndarray, np.ndarray]:
  """The lengths BERT's `_truncate_seq_pair` (official finetune/classification/
  classification_tasks.py:296-310) leaves to a and b, elementwise: it pops from the longer
  (from b on a tie) while len_a + len_b > budget (text/packing.py `truncated_pair_lengths`)."""
  new_a = np.minimum(len_a, np.maximum(budget - len_b, budget - budget // 2))
  new_b = np.minimum(len_b, np.maximum(budget - len_a, budget // 2))
  return new_a, new_b


def pack_ids(ids_a: Sequence[Sequence[int]], ids_b: Optional[Sequence[Sequence[int]]] = None,
             *, cls_id: int, sep_id: int, max_seq_length: Optional[int] = None,
             pad_to_max_length: bool = False) -> Dict[str, np.ndarray]:
  """WordPiece ids -> `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` model inputs.

  What `TextFeaturizer.single` / `.pair` (text/packing.py) give: a is cut to
  max_seq_length - 2 ids; a pair is cut by `_truncate_seq_pair` to max_seq_length - 3,
  and every row of a pair gets b's [SEP], an empty b too. Padding is 0.

  Args:
    ids_a: `batch` lists of ids.
    ids_b: None, or `batch` lists of ids (the second segment, segment id 1).
    cls_id, sep_id: the ids of [CLS] and [SEP].
    max_seq_length: ids per row with [CLS] and [SEP] (at least 3); None: no cut.
    pad_to_max_length: pad to max_seq_length; else to the longest row (at least 2).

  Returns:
    {"input_ids", "input_mask", "segment_ids"}: int32 `[batch, seq_len]`.
  """
  if max_seq_length is not None and max_seq_length < 3:
    raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
  if pad_to_max_length and max_seq_length is None:
    raise ValueError("pad_to_max_length needs max_seq_length")
  if ids_b is not None and len(ids_b) != len(ids_a):
    raise ValueError(f"{len(ids_a)} first segments but {len(ids_b)} second segments")
  len_a = np.fromiter(map(len, ids_a), np.int64, len(ids_a))
  if ids_b is None:
    len_b = np.zeros_like(len_a)
    if max_seq_length is not None:
      len_a = np.minimum(len_a, max_seq_length - 2)
  else:
    len_b = np.fromiter(map(len, ids_b), np.int64, len(ids_b))
    if max_seq_length is not None:
      len_a, len_b = pair_lengths(len_a, len_b, max_seq_length - 3)
  flat: List[int] = []
  if ids_b is None:
    for a, n_a in zip(ids_a, len_a.tolist()):
      flat += [cls_id, *a[:n_a], sep_id]
  else:
    for a, n_a, b, n_b in zip(ids_a, len_a.tolist(), ids_b, len_b.tolist()):
      flat += [cls_id, *a[:n_a], sep_id, *b[:n_b], sep_id]
  len_first = len_a + 2
  lengths = len_first + (len_b + 1 if ids_b is not None else 0)
  width = max_seq_length if pad_to_max_length else max(int(lengths.max(initial=0)), 2)
  positions = np.arange(width)
  mask = positions < lengths[:, None]
  input_ids = np.zeros((len(ids_a), width), np.int32)
  input_ids[mask] = flat
  segment_ids = (mask & (positions >= len_first[:, None])).astype(np.int32)
  return {"input_ids": input_ids, "input_mask": mask.astype(np.int32),
          "segment_ids": segment_ids}


class PyTextFeaturizer:
  """Raw strings -> BERT inputs without TensorFlow: `TextFeaturizer`'s features (WordPiece,
  or SentencePiece with `sentencepiece_model`).

  >>> featurizer = PyTextFeaturizer(
  ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"], max_seq_length=8)
  >>> featurizer.features(["Hello world", "hello"])["input_ids"].tolist()
  [[2, 5, 6, 3], [2, 5, 3, 0]]

  Args:
    vocab: the WordPiece tokens in id order, or a vocab.txt path; with a SentencePiece
      model, its pieces in id order.
    do_lower_case: the tokenizer's lowercasing; WordPiece only.
    max_seq_length: WordPieces per row, [CLS] and [SEP] included (at least 3).
    sentencepiece_model: a SentencePiece model's bytes: its tokenizer instead of WordPiece
      (CLS and SEP found by role, vocab.SPECIAL_SPELLINGS).
    strip_accents: WordPiece's accent stripping; None is the official rule (stripped when
      lowercasing).
  """

  def __init__(self, vocab: Union[str, Sequence[str]], do_lower_case: bool = True,
               max_seq_length: int = 128, sentencepiece_model: Optional[bytes] = None,
               strip_accents: Optional[bool] = None):
    if max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3, got {max_seq_length}")
    self.max_seq_length = max_seq_length
    if sentencepiece_model is not None:
      self.tokenizer = PySentencePieceTokenizer(sentencepiece_model)
      pieces = list(vocab)
      cls, sep = special_tokens({t: i for i, t in enumerate(pieces)})[2:4]
      self.cls_id, self.sep_id = pieces.index(cls), pieces.index(sep)
      return
    self.tokenizer = (PyFullTokenizer(vocab, do_lower_case, strip_accents)
                      if isinstance(vocab, str)
                      else PyFullTokenizer.from_tokens(list(vocab), do_lower_case, strip_accents))
    missing = [t for t in ("[CLS]", "[SEP]") if t not in self.tokenizer.vocab]
    if missing:
      raise VocabError(f"the vocabulary lacks {' and '.join(missing)}")
    self.cls_id = self.tokenizer.vocab["[CLS]"]
    self.sep_id = self.tokenizer.vocab["[SEP]"]

  def features(self, texts: Sequence[Text], texts_b: Optional[Sequence[Text]] = None,
               pad_to_max_length: bool = False) -> Dict[str, np.ndarray]:
    """`batch` texts (and optional second texts) -> int32 `[batch, seq_len]` features
    (`pack_ids`): seq_len is the longest row's, or max_seq_length."""
    encode = self.tokenizer.encode_batch
    return pack_ids(encode(texts), None if texts_b is None else encode(texts_b),
                    cls_id=self.cls_id, sep_id=self.sep_id,
                    max_seq_length=self.max_seq_length, pad_to_max_length=pad_to_max_length)

  def word_features(self, texts: Sequence[Text], pad_to_max_length: bool = False
                    ) -> Dict[str, np.ndarray]:
    """Tagging features, as text/tagging.py's `word_features` in the graph: every word
    (split on ASCII whitespace, as `tf.strings.split`) tokenised alone, whole words kept
    while they fit in max_seq_length - 2 WordPieces; `[CLS] pieces [SEP]` with segment 1
    for every token (official finetune/tagging/tagging_tasks.py:127-162).

    Returns int32 `input_ids`, `input_mask`, `segment_ids` `[batch, seq_len]` (`features`'
    widths) and `labeled_positions`, `words_mask` `[batch, max_seq_length]` (word i's first
    WordPiece, 0 past the words that fit).
    """
    budget = self.max_seq_length - 2
    rows: List[List[int]] = []
    positions = np.zeros((len(texts), self.max_seq_length), np.int32)
    for row, text in enumerate(texts):
      ids: List[int] = []
      words = self.tokenizer.to_str(text).strip(_ASCII_SPACES)
      for i, word in enumerate(_ASCII_SPACE.split(words)):
        pieces = self.tokenizer.encode(word) if word else []
        if not word or len(ids) + len(pieces) > budget or i == self.max_seq_length:
          break
        positions[row, i] = len(ids) + 1  # after [CLS]
        ids += pieces
      rows.append(ids)
    features = pack_ids(rows, cls_id=self.cls_id, sep_id=self.sep_id,
                        max_seq_length=self.max_seq_length, pad_to_max_length=pad_to_max_length)
    features["segment_ids"] = features["input_mask"].copy()
    features["labeled_positions"] = positions
    features["words_mask"] = (positions > 0).astype(np.int32)
    return features


__all__ = ["PyFullTokenizer", "PySentencePieceTokenizer", "PyTextFeaturizer", "pack_ids",
           "pair_lengths", "MAX_CHARS_PER_WORD"]
