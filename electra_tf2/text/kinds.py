"""The tokenizer of a vocabulary file, by its kind (WordPiece vocab.txt or SentencePiece
.model, recognised from the file: electra_tf2.text.vocab.vocab_kind)."""

from __future__ import annotations

from typing import Optional

from electra_tf2.text.sentencepiece import SentencePieceTokenizer
from electra_tf2.text.tokenizer import FullTokenizer
from electra_tf2.text.vocab import check_kind


def load_tokenizer(vocab_file: str, do_lower_case: bool = True,
                   strip_accents: Optional[bool] = None,
                   expected_vocab_size: Optional[int] = None, kind: Optional[str] = None):
  """The tokenizer of a vocabulary, by its kind: `FullTokenizer` for a WordPiece vocab.txt,
  `SentencePieceTokenizer` for a SentencePiece .model (which ignores the casing flags).

  kind: if given, the kind the caller expects; another kind is a one-line VocabError.
  """
  if check_kind(vocab_file, kind) == "sentencepiece":
    return SentencePieceTokenizer(vocab_file, expected_vocab_size)
  return FullTokenizer(vocab_file, do_lower_case, strip_accents, expected_vocab_size)


__all__ = ["load_tokenizer"]
