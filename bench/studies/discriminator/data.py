"""The held-out text the stages read: WikiText-2, CoNLL-2000, CoLA dev."""

from __future__ import annotations

import re
from typing import List, Sequence, Tuple

import numpy as np


def wikitext_paragraphs(path: str) -> List[str]:
  """The text lines of a WikiText raw file (no headings, no blank lines)."""
  with open(path, encoding="utf-8") as f:
    return [line.strip() for line in f if line.strip() and not line.strip().startswith("=")]


def wikitext_sentences(paragraphs: Sequence[str], min_words: int = 8, max_words: int = 30
                       ) -> List[str]:
  """Sentences (split after " . ") without WikiText's @-@ joins or unknown markers."""
  out = []
  for paragraph in paragraphs:
    for sentence in re.split(r"(?<= \.) ", paragraph):
      words = sentence.split()
      if min_words <= len(words) <= max_words and "@" not in sentence and "<unk>" not in sentence:
        out.append(sentence)
  return out


def conll_sentences(path: str) -> List[List[Tuple[str, str]]]:
  """CoNLL-2000 `word POS chunk` lines -> sentences of (word, POS)."""
  sentences, current = [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      parts = line.split()
      if not parts:
        if current:
          sentences.append(current)
        current = []
      else:
        current.append((parts[0], parts[1]))
  if current:
    sentences.append(current)
  return sentences


def cola_dev(path: str) -> Tuple[List[str], np.ndarray]:
  """CoLA dev.tsv (no header: source, label, original label, sentence)."""
  texts, labels = [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      parts = line.rstrip("\n").split("\t")
      if len(parts) == 4:
        texts.append(parts[3])
        labels.append(int(parts[1]))
  return texts, np.array(labels)
