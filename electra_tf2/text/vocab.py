"""Vocabularies: loading, validation and the special-token ids.

Two kinds, recognised from the file (`vocab_kind`):
- WordPiece: a text file with one token per line; a token's id is its line
  number (0-based), as in BERT's `vocab.txt`;
- SentencePiece: a `.model` file (a serialized `ModelProto`); a piece's id is
  its index, as `sentencepiece.SentencePieceProcessor` numbers it.

The special tokens are found by role, not by one spelling (`SPECIAL_SPELLINGS`):
BERT's `[MASK]` or SentencePiece's `<mask>`, `[CLS]` or `<s>`, and so on. Every
command that takes a vocab validates it here, so a broken file gives one clear
line instead of the official code's `KeyError: '[UNK]'` (google-research/electra
issue 8) deep inside training.
"""

from __future__ import annotations

import functools
import os
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

from electra_tf2.utils.errors import ElectraError

# BERT's spellings, in SpecialTokenIds' order: what build-vocab reserves (both kinds).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Every spelling a role is recognised by, first match wins: BERT's, then the
# SentencePiece conventions (XLM-R / RoBERTa `<s>` `</s>`, ALBERT `<cls>` `<sep>`).
SPECIAL_SPELLINGS = {
    "pad": ("[PAD]", "<pad>"),
    "unk": ("[UNK]", "<unk>"),
    "cls": ("[CLS]", "<cls>", "<s>"),
    "sep": ("[SEP]", "<sep>", "</s>"),
    "mask": ("[MASK]", "<mask>"),
}
KINDS = ("wordpiece", "sentencepiece")
# A SentencePiece ModelProto starts with its first `pieces` entry: field 1, wire type 2.
_SENTENCEPIECE_FIRST_BYTE = b"\x0a"


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


def default_vocab_file(data_dir: str) -> str:
  """A data directory's vocabulary: `vocab.txt`, else `spm.model` when only it is there."""
  wordpiece = os.path.join(data_dir, "vocab.txt")
  sentencepiece = os.path.join(data_dir, "spm.model")
  if not os.path.exists(wordpiece) and os.path.exists(sentencepiece):
    return sentencepiece
  return wordpiece


def vocab_kind(path: str) -> str:
  """"sentencepiece" for a SentencePiece model (a binary ModelProto), else "wordpiece".

  A vocab.txt never starts with a newline (its first line would be empty), a
  serialized ModelProto always starts with byte 0x0a; a `.model` name is
  SentencePiece's own convention.
  """
  if path.endswith(".model"):
    return "sentencepiece"
  try:
    with open(path, "rb") as f:
      head = f.read(1)
  except OSError:
    return "wordpiece"  # load_vocab reports the missing file
  return "sentencepiece" if head == _SENTENCEPIECE_FIRST_BYTE else "wordpiece"


def check_kind(path: str, kind: Optional[str], flag: str = "--kind") -> str:
  """The kind of `path`; a VocabError naming both when `kind` (if given) differs."""
  found = vocab_kind(path)
  if kind is not None and kind != found:
    other = "a SentencePiece .model" if kind == "sentencepiece" else "a WordPiece vocab.txt"
    raise VocabError(f"vocab file {path} is a {_KIND_NAMES[found]}, not {other}: pass "
                     f"{flag} {found} or {other}")
  return found


_KIND_NAMES = {"wordpiece": "WordPiece vocab.txt", "sentencepiece": "SentencePiece model"}


def load_vocab(path: str, expected_size: Optional[int] = None,
               table_size: Optional[int] = None) -> Dict[str, int]:
  """Reads and validates a vocabulary file.

  Args:
    path: the vocab file, one token per line.
    expected_size: if given, the number of tokens the model config expects.
    table_size: if given, the embedding rows of the model that ships this vocab: fewer
      tokens are a padded table (only the vocab's ids are ever looked up, as in the
      official code and transformers), more are refused.

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
  return dict(_load_vocab_cached(path, version, expected_size, table_size))


@functools.lru_cache(maxsize=8)
def _load_vocab_cached(path: str, version, expected_size: Optional[int],
                       table_size: Optional[int]):
  del version  # part of the cache key only
  if not os.path.isfile(path):
    raise VocabError(f"vocab file {path} does not exist: pass an existing vocab.txt or "
                     "SentencePiece .model (build one with electra build-vocab)")
  if vocab_kind(path) == "sentencepiece":
    vocab = _sentencepiece_vocab(path)
  else:
    vocab = _wordpiece_vocab(path)
  special_tokens(vocab, path)
  if expected_size is not None and len(vocab) != expected_size:
    raise VocabError(f"vocab file {path} has {len(vocab)} tokens but the model config "
                     f"says vocab_size={expected_size}: pass --hparams "
                     f"'{{\"vocab_size\": {len(vocab)}}}' or the matching vocab")
  if table_size is not None and len(vocab) > table_size:
    raise VocabError(f"vocab file {path} has {len(vocab)} tokens, more than the model's "
                     f"{table_size} embedding rows: put back the vocab the model was "
                     "trained with")
  return tuple(vocab.items())


def _sentencepiece_vocab(path: str) -> Dict[str, int]:
  """The pieces of a SentencePiece model, piece -> id."""
  import sentencepiece  # pylint: disable=g-import-not-at-top
  try:
    processor = sentencepiece.SentencePieceProcessor(model_file=path)
  except (RuntimeError, OSError) as e:
    raise VocabError(f"vocab file {path} is no SentencePiece model ("
                     f"{str(e).splitlines()[0] if str(e) else type(e).__name__}): pass a "
                     ".model written by spm_train or electra build-vocab --kind sentencepiece"
                     ) from None
  return {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}


def _wordpiece_vocab(path: str) -> Dict[str, int]:
  """The tokens of a vocab.txt, token -> line number."""
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
  return vocab


def special_tokens(vocab: Dict[str, int], path: str = "the vocabulary") -> Tuple[str, ...]:
  """The spelling of each special role (SpecialTokenIds' order) in `vocab`.

  Raises:
    VocabError: a role has none of its SPECIAL_SPELLINGS; the message names the file.
  """
  found, missing = [], []
  for role, spellings in SPECIAL_SPELLINGS.items():
    token = next((t for t in spellings if t in vocab), None)
    found.append(token)
    if token is None:
      missing.append(f"no {role.upper()}-like token ({' or '.join(spellings)})")
  if missing:
    raise VocabError(f"vocab file {path} has {', '.join(missing)}: ELECTRA needs all five "
                     "special tokens; rebuild it with electra build-vocab (it reserves "
                     f"{', '.join(SPECIAL_TOKENS)}) or add the missing ones")
  return tuple(found)


def special_token_ids(vocab: Dict[str, int]) -> SpecialTokenIds:
  """The ids of the PAD, UNK, CLS, SEP and MASK tokens (found by role) of a validated vocab."""
  return SpecialTokenIds(*(vocab[t] for t in special_tokens(vocab)))


class VocabLookups:
  """Token <-> id lookups of a tokenizer that holds `vocab` (token -> id) and `inv_vocab`
  (id -> token) and encodes one text with `encode` (the tokenizers' shared methods)."""

  vocab: Dict[str, int]
  inv_vocab: Dict[int, str]

  @property
  def vocab_size(self) -> int:
    return len(self.vocab)

  def tokenize(self, text) -> List[str]:
    """The tokens of one text (as the official FullTokenizer.tokenize)."""
    return self.convert_ids_to_tokens(self.encode(text))

  def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
    """Ids of tokens; a token not in the vocab raises KeyError, as in the official code."""
    vocab = self.vocab
    return [vocab[t] for t in tokens]

  def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
    inv = self.inv_vocab
    return [inv[int(i)] for i in ids]
