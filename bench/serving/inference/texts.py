"""The bench's inputs: SST-2 and CoLA dev sentences, MRPC dev pairs, or the embedded corpus.

A `TextSet` is columns of raw strings (one column for single texts, two for
pairs) with their gold labels when known, and the vocabulary to tokenise them
with: the BERT uncased vocabulary of ../shared (ELECTRA's own), or, without
../shared, one learned from the embedded default corpus (docstrings of the
installed packages, electra_tf2/data_prep/default_corpus.py).
"""

from __future__ import annotations

import csv
import dataclasses
import os
from typing import List, Optional, Sequence

from bench.common import SHARED_DATA

EMBEDDED_TEXTS = 872  # as many as SST-2 dev has
EMBEDDED_VOCAB_SIZE = 8000


@dataclasses.dataclass
class TextSet:
  """Raw texts: `columns[0]` the texts (`columns[1]` the second texts of pairs)."""
  name: str
  columns: List[List[str]]
  labels: Optional[List[int]]
  vocab_file: str

  @property
  def pairs(self) -> bool:
    return len(self.columns) == 2

  def __len__(self) -> int:
    return len(self.columns[0])

  def rows(self, begin: int, end: int) -> List[List[str]]:
    """The columns of texts begin..end."""
    return [column[begin:end] for column in self.columns]


def _tsv(path: str, header: bool = True) -> List[List[str]]:
  with open(path, encoding="utf-8-sig") as f:
    return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1 if header else 0:]


def glue_sets(data_dir: str = SHARED_DATA) -> List[TextSet]:
  """SST-2 dev (872 sentences, about 19 words), MRPC dev (408 pairs) and CoLA dev (1043
  short sentences, about 8 words; no header), with labels."""
  vocab = os.path.join(data_dir, "vocab", "vocab.txt")
  sst = _tsv(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"))
  mrpc = _tsv(os.path.join(data_dir, "glue", "MRPC", "dev.tsv"))
  sets = [TextSet("sst2_dev", [[r[0] for r in sst]], [int(r[1]) for r in sst], vocab),
          TextSet("mrpc_dev", [[r[3] for r in mrpc], [r[4] for r in mrpc]],
                  [int(r[0]) for r in mrpc], vocab)]
  cola = os.path.join(data_dir, "glue", "CoLA", "dev.tsv")
  if os.path.exists(cola):
    rows = _tsv(cola, header=False)
    sets.append(TextSet("cola_dev", [[r[3] for r in rows]], [int(r[1]) for r in rows], vocab))
  return sets


def embedded_sets(work_dir: str) -> List[TextSet]:
  """Paragraphs of the embedded corpus as single texts and as pairs (neighbours), no labels;
  the vocabulary learned from them (cached in `work_dir`)."""
  from electra_tf2.data_prep import build_vocab, default_corpus
  paragraphs = [p for _, document in default_corpus.default_corpus_documents(400_000)
                for p in document]
  texts = [" ".join(p.split()[:40]) for p in paragraphs[:2 * EMBEDDED_TEXTS]]
  vocab = os.path.join(work_dir, "embedded_vocab.txt")
  if not os.path.exists(vocab):
    os.makedirs(work_dir, exist_ok=True)
    corpus = os.path.join(work_dir, "embedded_corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
      f.write("\n".join(paragraphs) + "\n")
    build_vocab.learn_vocab_from_files([corpus], EMBEDDED_VOCAB_SIZE, vocab, log=None)
  return [TextSet("embedded", [texts[:EMBEDDED_TEXTS]], None, vocab),
          TextSet("embedded_pairs", [texts[0::2], texts[1::2]], None, vocab)]


def text_sets(work_dir: str, data_dir: str = SHARED_DATA,
              names: Optional[Sequence[str]] = None) -> List[TextSet]:
  """The GLUE dev sets when `data_dir` has them, else the embedded ones; `names` picks."""
  have_glue = os.path.exists(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"))
  sets = glue_sets(data_dir) if have_glue else embedded_sets(work_dir)
  return [s for s in sets if names is None or s.name in names]
