"""Packing: token ids of lines -> (segment A, segment B), the official ExampleBuilder.

A line-for-line port of `ExampleBuilder` in the official
build_pretraining_dataset.py:34-95, quirks included: overflow tokens are
dropped, 10% of examples are single-segment, a later short sentence can still
join segment A, 5% of examples get a random shorter target length.

The random draws come from one generator per document (`document_rng`), not
from one per process as officially: packing never crosses a document, so the
examples then depend only on the seed and the documents, not on how the work is
split (processes, Beam workers, shards). See docs/data_prep.md.
"""

from __future__ import annotations

import os
import random
from typing import Dict, List, Optional, Sequence, Tuple

# The official single-segment target length (`first_segment_target_length = 100000`,
# build_pretraining_dataset.py:61).
SINGLE_SEGMENT_TARGET = 100000

Segments = Tuple[List[int], List[int]]


def input_names(paths: Sequence[str]) -> Dict[str, str]:
  """Each input's name in the document keys: its path below the deepest folder of all inputs.

  '/'-separated and the same wherever the corpus lies (a local folder, a
  gs:// bucket): a single file is its base name, `corpus/a/x.txt` and
  `corpus/b/x.txt` are `a/x.txt` and `b/x.txt`.
  """
  def parts(path: str) -> List[str]:
    if "://" in path:
      scheme, rest = path.split("://", 1)
      return [scheme + "://"] + rest.split("/")
    return os.path.abspath(path).split(os.sep)
  split = [parts(p) for p in paths]
  common = os.path.commonprefix([p[:-1] for p in split])
  return {path: "/".join(p[len(common):]) for path, p in zip(paths, split)}


def document_rng(seed: int, input_name: str, doc_index: int) -> random.Random:
  """The generator of one document's draws: document `doc_index` (0, 1, ...) of an input.

  input_name is the input's name from `input_names` (for an archive member,
  `<archive name>/<member name>`).
  """
  return random.Random(f"{seed}\0{input_name}\0{doc_index}")


def sentence_token_cap(max_seq_length: int) -> int:
  """Tokens of one line that can influence the output; later ones are never used.

  A line's length is only compared with the target length (<= max_seq_length)
  and with first-segment targets (<= 100000), and at most max_seq_length of its
  tokens survive the truncation, so capping a line's tokens here changes
  nothing in the examples.
  """
  return max(SINGLE_SEGMENT_TARGET, max_seq_length) + max_seq_length


class ExampleBuilder:
  """Packs tokenized lines into examples with the official rules.

  Feed it the lines of the corpus in order: `add_line(ids)` for a line with
  text (its token ids, maybe none), `add_blank()` for an empty line or the end
  of a file (the official `add_line("")`). Each returns (segment_a, segment_b)
  when that line completes an example, else None. Random choices come from
  `rng` in the official order; `start_document(rng)` before a document's first
  line switches to that document's generator.
  """

  def __init__(self, max_length: int, rng: Optional[random.Random] = None):
    self._rng = rng  # None: each document brings its own (start_document)
    self._max_length = max_length
    self._target_length = max_length  # after an example: max, or 5% a random length
    self._sentences: List[List[int]] = []
    self._length = 0  # tokens in self._sentences

  def start_document(self, rng: random.Random) -> None:
    """The next lines are a new document, drawn from `rng`.

    Its first target length is drawn as officially after every example (the
    official first example of a document took the draw that followed the
    previous document's last example). The buffer is emptied: after the
    add_blank() that ended the previous document it holds at most empty
    sentences, which never change an example (and after an input that failed
    half-way, the rest of its document, which must not leak into this one).
    """
    self._rng = rng
    self._sentences = []
    self._length = 0
    self._target_length = self._draw_target_length()

  def _draw_target_length(self) -> int:
    # One time in twenty an example aims at a random length in [5, max].
    if self._rng.random() < 0.05:
      return self._rng.randint(5, self._max_length)
    return self._max_length

  def add_blank(self) -> Optional[Segments]:
    """An empty line: ends the buffered text, if any, as an example.

    With nothing buffered, the official code tokenizes the empty line and keeps
    its (empty) token list as a sentence; that is harmless and kept.
    """
    if self._length:
      return self._make_example()
    self._sentences.append([])
    return None

  def add_line(self, ids: List[int]) -> Optional[Segments]:
    """A line with text: buffered; the example is made once the target is reached.

    The line that reaches it is included whole; what exceeds the example is
    truncated away in _make_example (never carried into the next example).
    """
    self._sentences.append(ids)
    self._length += len(ids)
    if self._length >= self._target_length:
      return self._make_example()
    return None

  def _make_example(self) -> Segments:
    rng = self._rng
    # One example in ten is a single segment: A's target is then out of reach.
    if rng.random() < 0.1:
      a_target = SINGLE_SEGMENT_TARGET
    else:
      a_target = (self._target_length - 3) // 2  # 3 = [CLS] and two [SEP]
    seg_a: List[int] = []
    seg_b: List[int] = []
    for ids in self._sentences:
      # A takes the sentence while A is empty or it stays under A's target;
      # a sentence that would pass the target still joins A half of the time
      # while B is empty and A under target. A later short sentence can go to
      # A after B started (the official order quirk).
      joins_a = (not seg_a
                 or len(seg_a) + len(ids) < a_target
                 or (not seg_b and len(seg_a) < a_target and rng.random() < 0.5))
      if joins_a:
        seg_a.extend(ids)
      else:
        seg_b.extend(ids)
    # Room for [CLS] A [SEP] B [SEP]; the overflow is lost.
    seg_a = seg_a[:self._max_length - 2]
    seg_b = seg_b[:max(0, self._max_length - len(seg_a) - 3)]
    self._sentences = []
    self._length = 0
    self._target_length = self._draw_target_length()
    return seg_a, seg_b
