"""WordPiece vocabularies: loading, validation and the special-token ids.

A vocabulary is a text file with one token per line; a token's id is its line
number (0-based), as in BERT's `vocab.txt`. Every command that takes a vocab
validates it here, so a broken file gives one clear line instead of the
official code's `KeyError: '[UNK]'` deep inside training.
"""

from __future__ import annotations

import functools
import os
from typing import Dict, NamedTuple, Optional

from electra_tf2.errors import ElectraError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabError(ElectraError, ValueError):
  """A vocabulary file that cannot be used; the message names the file."""


class SpecialTokenIds(NamedTuple):
  """Ids of the tokens the model and the data builder rely on."""
  pad: int
  unk: int
  cls: int
  sep: int
  mask: int


# The BERT uncased vocabulary (30522 tokens) used by every released ELECTRA.
BERT_UNCASED_SPECIAL_IDS = SpecialTokenIds(pad=0, unk=100, cls=101, sep=102, mask=103)


def load_vocab(path: str, expected_size: Optional[int] = None) -> Dict[str, int]:
  """Reads and validates a vocabulary file.

  Args:
    path: the vocab file, one token per line.
    expected_size: if given, the number of tokens the model config expects.

  Returns:
    token -> id, in file order.

  Raises:
    VocabError: the file is missing or unreadable, not UTF-8, has an empty or
      duplicated token, lacks a special token, or disagrees with expected_size.
  """
  path = os.path.abspath(path)
  try:
    stat = os.stat(path)
    version = (stat.st_mtime_ns, stat.st_size)  # a changed file is read again
  except OSError:
    version = None
  return dict(_load_vocab_cached(path, version, expected_size))


@functools.lru_cache(maxsize=8)
def _load_vocab_cached(path: str, version, expected_size: Optional[int]):
  del version  # part of the cache key only
  if not os.path.isfile(path):
    raise VocabError(f"vocab file {path} does not exist: pass an existing vocab.txt "
                     "(build one with electra build-vocab, or electra default-data for the embedded corpus)")
  try:
    with open(path, "r", encoding="utf-8") as f:
      lines = f.read().split("\n")
  except UnicodeDecodeError as e:
    raise VocabError(f"vocab file {path} is not valid UTF-8 (byte {e.start}): "
                     "save it as UTF-8") from None
  except OSError as e:
    raise VocabError(f"vocab file {path} cannot be read: {e.strerror}") from None
  if lines and lines[-1] == "":
    lines.pop()  # the usual trailing newline
  vocab: Dict[str, int] = {}
  for line_number, raw in enumerate(lines, start=1):
    token = raw.rstrip("\r").strip()
    if not token:
      raise VocabError(f"vocab file {path} line {line_number} is empty: "
                       "every line must hold one token")
    if token in vocab:
      raise VocabError(f"vocab file {path} line {line_number}: token {token!r} is a "
                       f"duplicate of line {vocab[token] + 1}; remove one of them")
    vocab[token] = len(vocab)
  missing = [t for t in SPECIAL_TOKENS if t not in vocab]
  if missing:
    raise VocabError(f"vocab file {path} lacks the special token(s) {', '.join(missing)}: "
                     "ELECTRA needs " + ", ".join(SPECIAL_TOKENS))
  if expected_size is not None and len(vocab) != expected_size:
    raise VocabError(f"vocab file {path} has {len(vocab)} tokens but the model config "
                     f"says vocab_size={expected_size}: pass --hparams "
                     f"'{{\"vocab_size\": {len(vocab)}}}' or the matching vocab")
  return tuple(vocab.items())


def special_token_ids(vocab: Dict[str, int]) -> SpecialTokenIds:
  """The ids of [PAD], [UNK], [CLS], [SEP] and [MASK] in a validated vocab."""
  return SpecialTokenIds(*(vocab[t] for t in SPECIAL_TOKENS))
