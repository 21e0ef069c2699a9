"""The official BasicTokenizer's per-character rules as a FastBertNormalizer model.

LiteRT (TFLite) has kernels for tensorflow-text's `FastBertNormalize`, but
not for the regex and `normalize_utf8` ops of our SavedModel tokenizer
(electra_tf2/text/tokenizer.py). `FastBertNormalize` maps every code point to a
string through a trie held in its model buffer. The stock buffer applies NFKC
case folding, where the official tokenizer uses `str.lower()`: "ß" becomes "ss",
"½" becomes "1⁄2", "…" becomes "...". It also turns control characters into
spaces, where the official tokenizer removes them. So we write the buffer
ourselves from the official rules (model/tokenization.py:156-259), computed
with Python's own `unicodedata`:

- remove NUL, U+FFFD and the control characters: Cc and Cf but \\t \\n \\r
  (`_clean_text`, :247-258; the private-use and unassigned ones of ELECTRA's
  `_is_control` become U+FFFD before the map, see `is_control`);
- map whitespace (\\t \\n \\r, Zs) to a space (`_clean_text`, :247-258);
- if lowercasing: `str.lower()` and, if stripping accents, NFD without the
  nonspacing marks (Mn) (:172-190).

`FastWordpieceTokenize` then splits words on whitespace, punctuation and CJK
ideographs by ICU's classes. Where ICU's class of a character differs from the
official one (Python's `str.isspace`, `_is_punctuation`, `_is_chinese_char`),
the map also fixes it: a separator ICU does not know is surrounded by spaces,
and a word character ICU would split on becomes a placeholder that no vocabulary
token contains (the official word holding it matches nothing either: [UNK]).

What a per-character map cannot do (docs/design.md#litert-tokenizer): the
final-sigma rule of `str.lower()` ("ΟΔΟΣ" -> "οδος"), and invalid UTF-8 bytes,
which the kernel turns into spaces where the official code drops them.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import AbstractSet, Dict, FrozenSet, Iterable, Tuple

import flatbuffers
import numpy as np

from electra_tf2.text import darts_trie

MAX_CODE_POINT = 0x10FFFF
# FastBertNormalizer's value bits (tensorflow_text/core/kernels/fast_bert_normalizer.h).
_DIFFERENT = 0x40000000
_LENGTH_BITS = 6
_MAX_MAPPED_BYTES = (1 << _LENGTH_BITS) - 1
# Word characters (in no vocabulary token) that stand for word characters ICU splits on.
_PLACEHOLDER_CANDIDATES = range(0xF0000, 0xF0100)  # plane 15 private use (official: removed)


def is_control(char: str) -> bool:
  """The controls the map removes: categories Cc and Cf but \\t \\n \\r (BERT's rule).

  ELECTRA's `_is_control` (model/tokenization.py:335-344, text/tokenizer.py
  `is_control`) also removes the unassigned (Cn) and private-use (Co) code
  points, about a million: too many for the trie. `prepare_texts` turns those
  into U+FFFD, which the map removes (docs/design.md#litert-tokenizer).
  """
  return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


def is_official_punctuation(char: str) -> bool:
  """`_is_punctuation` (model/tokenization.py:347-360): ASCII non-alphanumerics and P*."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_official_cjk(char: str) -> bool:
  """`_is_chinese_char` (model/tokenization.py:225-245)."""
  cp = ord(char)
  return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def official_char(char: str, do_lower_case: bool, strip_accents: bool) -> str:
  """What the official BasicTokenizer makes of one character, before splitting."""
  if char in "\0\ufffd" or is_control(char):
    return ""
  if char in "\t\n\r" or unicodedata.category(char) == "Zs":
    return " "
  if do_lower_case:
    char = char.lower()
    if strip_accents:
      char = "".join(c for c in unicodedata.normalize("NFD", char)
                     if unicodedata.category(c) != "Mn")
  return char


def official_class(char: str) -> str:
  """How the official tokenizer splits at a character of normalized text: "space"
  (`str.split`), "split" (a word of its own: punctuation, CJK) or "word"."""
  if char.isspace():
    return "space"
  if is_official_punctuation(char) or is_official_cjk(char):
    return "split"
  return "word"


def code_points() -> Iterable[str]:
  """Every Unicode scalar value (no surrogates)."""
  return (chr(cp) for cp in range(MAX_CODE_POINT + 1) if not 0xD800 <= cp <= 0xDFFF)


@functools.lru_cache(maxsize=1)
def icu_classes() -> Dict[str, str]:
  """{character: class} where FastWordpieceTokenize's splitting (ICU) disagrees with
  `official_class`, found by running the kernel on "q<char>q" for every character."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text as tft  # pylint: disable=g-import-not-at-top
  wordpiece = tft.FastWordpieceTokenizer(["[UNK]", "q"], token_out_type=tf.int32,
                                         no_pretokenization=False)
  chars = [c for c in code_points() if c not in "\0"]
  texts = tf.constant([f"q{c}q".encode("utf-8") for c in chars])
  lengths = wordpiece.tokenize(texts).row_lengths().numpy()
  kernel = np.array(["word", "space", "split"])[np.clip(lengths - 1, 0, 2)]
  return {c: k for c, k in zip(chars, kernel) if k != official_class(c)}


def _fix_class(char: str, placeholder: str, in_vocab: AbstractSet[str]) -> str:
  """`char` (of normalized text) written so that the kernel splits it as officially."""
  kernel = icu_classes().get(char)
  if kernel is None:
    return char
  wanted = official_class(char)
  if wanted == "space":
    return " "
  if wanted == "split" and kernel == "word":
    return f" {char} "
  if wanted == "word":
    return char if char in in_vocab else placeholder
  raise ValueError(f"U+{ord(char):04X} is a separator for the kernel and punctuation "
                   "officially: no map reproduces that")


def normalizer_model(vocab_tokens: Iterable[str], do_lower_case: bool,
                     strip_accents: bool) -> bytes:
  """The FastBertNormalizer model buffer of `char_map` (cached: building takes seconds)."""
  return _cached_model(frozenset("".join(vocab_tokens)), do_lower_case, strip_accents)


@functools.lru_cache(maxsize=4)
def _cached_model(vocab_chars: FrozenSet[str], do_lower_case: bool, strip_accents: bool
                  ) -> bytes:
  return model_buffer(char_map(vocab_chars, do_lower_case, strip_accents)[0])


def char_map(vocab_chars: AbstractSet[str], do_lower_case: bool, strip_accents: bool
             ) -> Tuple[Dict[str, str], str]:
  """({character: official normalized string} for every character it changes, the
  placeholder used). A word character ICU would split on becomes the placeholder
  only if no vocabulary token contains it (else its words' ids may differ).
  `vocab_chars`: the characters of the vocabulary's tokens."""
  placeholder = next(chr(cp) for cp in _PLACEHOLDER_CANDIDATES if chr(cp) not in vocab_chars)
  mapping = {}
  for char in code_points():
    normalized = official_char(char, do_lower_case, strip_accents)
    fixed = "".join(_fix_class(c, placeholder, vocab_chars) for c in normalized)
    if fixed != char:
      mapping[char] = fixed
  return mapping, placeholder


def model_buffer(mapping: Dict[str, str]) -> bytes:
  """The FastBertNormalizerModel flatbuffer (fast_bert_normalizer_model.fbs) of a map."""
  pool = bytearray()
  offsets: Dict[bytes, int] = {}
  values: Dict[bytes, int] = {}
  zero = 0
  for char, normalized in mapping.items():
    target = normalized.encode("utf-8")
    if len(target) > _MAX_MAPPED_BYTES:
      raise ValueError(f"U+{ord(char):04X} maps to {len(target)} bytes (at most 63)")
    if target and target not in offsets:
      offsets[target] = len(pool)
      pool += target
    value = _DIFFERENT | (offsets[target] << _LENGTH_BITS if target else 0) | len(target)
    if char == "\0":
      zero = value
    else:
      values[char.encode("utf-8")] = value
  trie = darts_trie.build_trie(values)
  builder = flatbuffers.Builder(len(pool) + 4 * len(trie) + 64)
  pool_vector = builder.CreateByteVector(bytes(pool))
  trie_vector = builder.CreateNumpyVector(trie)
  builder.StartObject(4)
  builder.PrependBoolSlot(0, False, False)  # lower_case_nfd_strip_accents: unused by the kernel
  builder.PrependUOffsetTRelativeSlot(1, trie_vector, 0)
  builder.PrependInt32Slot(2, zero, 0)
  builder.PrependUOffsetTRelativeSlot(3, pool_vector, 0)
  builder.Finish(builder.EndObject())
  return bytes(builder.Output())
