"""The tokenizer description saved with the data, every model directory and every export.

`tokenizer_description.json` says how text became ids: the vocabulary's kind
(WordPiece or SentencePiece), its file, the casing, and the spelling and id of
each special token (PAD, UNK, CLS, SEP, MASK or their SentencePiece
equivalents). The data builder writes it beside the TFRecords, pre-training and
fine-tuning beside the checkpoints, the exports beside the SavedModel or
Hugging Face files; whoever reads such a directory takes the ids from it.

A directory written before the description existed has none: its vocabulary's
BERT spellings are its description (`read_description` derives it), so old
directories keep working. A description that disagrees with the vocabulary
beside it is refused in one line.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from electra_tf2.text import vocab as vocab_lib
from electra_tf2.utils.atomic_io import write_json_atomic
from electra_tf2.text.py_tokenizer import resolve_strip_accents
from electra_tf2.text.vocab import SpecialTokenIds, VocabError

DESCRIPTION_FILE = "tokenizer_description.json"
_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class TokenizerDescription:
  """How text becomes ids.

  kind: "wordpiece" or "sentencepiece" (vocab.KINDS).
  vocab_file: the vocabulary (vocab.txt or .model) as it was given.
  vocab_size: its number of tokens.
  do_lower_case, strip_accents: WordPiece's casing (both False for SentencePiece,
    which normalizes with the rule inside its model).
  special_tokens: the spelling of PAD, UNK, CLS, SEP, MASK, in that order.
  special_ids: their ids.
  """
  kind: str
  vocab_file: str
  vocab_size: int
  do_lower_case: bool
  strip_accents: bool
  special_tokens: Tuple[str, ...]
  special_ids: SpecialTokenIds

  def to_dict(self) -> Dict[str, Any]:
    return {"format": _FORMAT, "kind": self.kind,
            "vocab_file": os.path.basename(self.vocab_file), "vocab_size": self.vocab_size,
            "do_lower_case": self.do_lower_case, "strip_accents": self.strip_accents,
            "special_tokens": {role: {"token": token, "id": index} for role, token, index
                               in zip(SpecialTokenIds._fields, self.special_tokens,
                                      self.special_ids)}}

  @classmethod
  def from_dict(cls, values: Dict[str, Any], vocab_file: str, source: str
                ) -> "TokenizerDescription":
    """The description saved as `values` (read from `source`), its vocabulary at `vocab_file`."""
    try:
      special = values["special_tokens"]
      kind = values["kind"]
      if kind not in vocab_lib.KINDS:
        raise ValueError(f"kind {kind!r}")
      return cls(kind, vocab_file, int(values["vocab_size"]), bool(values["do_lower_case"]),
                 bool(values["strip_accents"]),
                 tuple(str(special[r]["token"]) for r in SpecialTokenIds._fields),
                 SpecialTokenIds(*(int(special[r]["id"]) for r in SpecialTokenIds._fields)))
    except (KeyError, TypeError, ValueError) as e:
      raise VocabError(f"{source} is not a tokenizer description ({type(e).__name__}: {e}): "
                       "delete it to describe the vocabulary beside it afresh") from None


def describe_vocab(vocab_file: str, do_lower_case: bool = True,
                   strip_accents: Optional[bool] = None, kind: Optional[str] = None,
                   expected_size: Optional[int] = None) -> TokenizerDescription:
  """The description of a vocabulary file (validated; `kind`, if given, must be its kind)."""
  found = vocab_lib.check_kind(vocab_file, kind)
  vocab = vocab_lib.load_vocab(vocab_file, expected_size)
  tokens = vocab_lib.special_tokens(vocab, vocab_file)
  if found == "sentencepiece":
    do_lower_case, strip = False, False
  else:
    strip = resolve_strip_accents(do_lower_case, strip_accents)
  return TokenizerDescription(found, vocab_file, len(vocab), bool(do_lower_case), strip, tokens,
                              SpecialTokenIds(*(vocab[t] for t in tokens)))


def pretraining_description(vocab_file: Optional[str], do_lower_case: bool,
                            tfrecord_files: Sequence[str]) -> Optional[TokenizerDescription]:
  """The tokenizer a model is pre-trained with: `vocab_file` (None without one), with the
  casing of the TFRecords' description where their directory has one (`electra build-data
  --no-strip-accents` for Korean), else with `do_lower_case` and the official rule."""
  if not (vocab_file and os.path.exists(vocab_file)):
    return None
  described = describe_vocab(vocab_file, do_lower_case)
  for data_dir in sorted({os.path.dirname(f) for f in tfrecord_files}):
    if os.path.exists(os.path.join(data_dir, DESCRIPTION_FILE)):
      data = read_description(data_dir, vocab_file)
      return dataclasses.replace(described, do_lower_case=data.do_lower_case,
                                 strip_accents=data.strip_accents)
  return described


def write_description(directory: str, description: TokenizerDescription) -> str:
  """Writes `directory/tokenizer_description.json` atomically; returns its path."""
  path = os.path.join(directory, DESCRIPTION_FILE)
  write_json_atomic(path, description.to_dict())
  return path


def read_description(directory: str, vocab_file: Optional[str] = None,
                     do_lower_case: bool = True, strip_accents: Optional[bool] = None
                     ) -> Optional[TokenizerDescription]:
  """The tokenizer of `directory`, checked against its vocabulary; None without either.

  The vocabulary is the one beside the description (its `vocab_file` name in
  `directory`), else `vocab_file`. Without a description (a directory written
  before it existed) the vocabulary is described with `do_lower_case` and
  `strip_accents`: its BERT spellings, as before.

  Raises:
    VocabError: the description is unreadable, or disagrees with the vocabulary
      (kind, size, a special token's spelling or id); the message names both files.
  """
  path = os.path.join(directory, DESCRIPTION_FILE)
  if not os.path.isfile(path):
    if vocab_file is None or not os.path.exists(vocab_file):
      return None
    return describe_vocab(vocab_file, do_lower_case, strip_accents)
  try:
    with open(path, encoding="utf-8") as f:
      values = json.load(f)
  except (OSError, ValueError) as e:
    raise VocabError(f"{path} cannot be read ({e}): delete it to describe the vocabulary "
                     "beside it afresh") from None
  beside = os.path.join(directory, os.path.basename(str(values.get("vocab_file", ""))))
  vocab = beside if os.path.isfile(beside) else vocab_file
  saved = TokenizerDescription.from_dict(values, vocab or beside, path)
  if vocab is None or not os.path.exists(vocab):
    return saved
  actual = describe_vocab(vocab, saved.do_lower_case, saved.strip_accents)
  differences = _differences(saved, actual)
  if differences:
    raise VocabError(f"{path} disagrees with the vocabulary {vocab}: {'; '.join(differences)}. "
                     "Put back the vocabulary the model was trained with, or delete the "
                     "description if the vocabulary is the right one")
  return saved


def _differences(saved: TokenizerDescription, actual: TokenizerDescription) -> list:
  """What differs between a saved description and its vocabulary's, in words."""
  out = []
  if saved.kind != actual.kind:
    out.append(f"kind {saved.kind} there, {actual.kind} here")
  if saved.vocab_size != actual.vocab_size:
    out.append(f"{saved.vocab_size} tokens there, {actual.vocab_size} here")
  for role, a, b, i, j in zip(SpecialTokenIds._fields, saved.special_tokens,
                              actual.special_tokens, saved.special_ids, actual.special_ids):
    if (a, i) != (b, j):
      out.append(f"{role.upper()} {a}={i} there, {b}={j} here")
  return out


__all__ = ["DESCRIPTION_FILE", "TokenizerDescription", "describe_vocab", "pretraining_description",
           "read_description", "write_description"]
