"""One input (a text file or an archive of documents) -> its examples, counted.

The official `ExampleWriter.write_examples` (build_pretraining_dataset.py:138-153):
each line is tokenized and handed to the packer; a blank line (when blanks
separate documents) and the end of every file end the document. Document k of
an input (counted from 0: its k-th run of lines with text) packs with
`document_rng(seed, input name, k)`; an archive member's input name is
`<archive name>/<member name>`, and the member is one document. Lines are
tokenized a block (a few MB) at a time by the tensorflow-text tokenizer.
Unreadable, binary and UTF-16 files are skipped, lines that are not UTF-8 are
skipped, very long lines are streamed; each is reported (`warn`) and counted
(`Stats`).
"""

from __future__ import annotations

import os
import random
import shutil
import tarfile
from typing import Any, Callable, Generator, Iterator, List, Tuple

import numpy as np

from electra_tf2.data_prep.common import LineReader, RawOpener, SkipFile, human_bytes, open_input, open_local
from electra_tf2.data_prep.example_encoding import ExampleEncoder
from electra_tf2.data_prep.packing import ExampleBuilder, Segments, document_rng, sentence_token_cap
from electra_tf2.data_prep.summary import Stats


class _FileCursor:
  """Where the reading of one file stands: its open document, its lines that are not UTF-8."""

  __slots__ = ("input_name", "doc_index", "doc_has_text", "invalid_first", "invalid_count")

  def __init__(self, input_name: str):
    self.input_name = input_name
    self.doc_index = 0          # documents started so far (k of document_rng)
    self.doc_has_text = False   # a document is open: a line with text since the last end
    self.invalid_first = None   # the line number of the first line that is not UTF-8
    self.invalid_count = 0


class InputExamples:
  """Yields the serialized examples of text files and archives, counting into `stats`.

  tokenizer: an `electra_tf2.text.tokenizer.FullTokenizer`.
  seed: the seed of every document's generator (`document_rng`).
  order_rng: shuffles an archive's members (the order of the examples only).
  progress(bytes_read): called now and then with the bytes read of the current input.
  warn(message): one line about a skipped file or line.
  open_raw(path): opens an input for binary reading (default: a local file).
  """

  def __init__(self, tokenizer, max_length: int, seed: int, order_rng: random.Random,
               progress: Callable[[int], None], warn: Callable[[str], None],
               open_raw: RawOpener = open_local):
    self.stats = Stats()
    self.tokenizer = tokenizer
    ids = tokenizer.special_ids
    self.unk_id = ids.unk
    self.cap = sentence_token_cap(max_length)
    self.seed = seed
    self.order_rng = order_rng
    self.builder = ExampleBuilder(max_length)
    self._encode = ExampleEncoder(tokenizer.vocab_size, max_length, ids.cls, ids.sep).encode
    self._progress = progress
    self._warn = warn
    self._open_raw = open_raw

  def _record(self, example: Segments) -> bytes:
    first, second = example
    stats = self.stats
    stats.examples += 1
    stats.example_tokens += len(first) + len(second)
    return self._encode(first, second)

  def _examples(self, name: str, stream, input_name: str, blanks_separate_docs: bool
                ) -> Generator[bytes, None, bool]:
    """One file (or archive member): its lines, then the official add_line("").

    name: the file in messages; input_name: in the document keys. Returns
    False if the file was skipped (binary, UTF-16).
    """
    reader = LineReader(stream, name)
    try:
      reader.sniff()
    except SkipFile as e:
      self.stats.skip(name, e.category)
      self._warn(f"skipped {name}: {e}")
      return False
    cursor = _FileCursor(input_name)
    try:
      for kind, first_line_no, payload in reader:
        if kind == "long":
          lines = yield from self._long_line_examples(name, payload, cursor)
          flat_ids = splits = None
        else:
          lines = payload
          flat_ids, splits = self._count_and_tokenize(lines)
        yield from self._block_examples(lines, flat_ids, splits, first_line_no, cursor,
                                        blanks_separate_docs)
        self._progress(reader.bytes_read)
    except SkipFile as e:
      self.stats.read_errors.append(f"{name}: {e}")
      self._warn(f"{name}: {e}; the text before the error was used")
    yield from self._end_of_file(name, cursor)
    self.stats.bytes_read += reader.bytes_read
    return True

  def _start_document(self, cursor: "_FileCursor") -> None:
    """A document's first line with text: the packer starts it with the document's generator."""
    self.builder.start_document(document_rng(self.seed, cursor.input_name, cursor.doc_index))
    cursor.doc_index += 1
    cursor.doc_has_text = True

  def _long_line_examples(self, name: str, long_line, cursor: "_FileCursor"
                          ) -> Generator[bytes, None, List[str]]:
    """A long line's example, if any; returns the lines left for `_block_examples`.

    Those are [""] when the line is blank (it may end a document), else none.
    """
    self.stats.lines += 1
    ids = self._long_line(name, long_line)
    if ids is None:                 # not UTF-8: counted and reported by _long_line
      return []
    if ids is False:
      return [""]
    self.stats.sentences += 1
    if not cursor.doc_has_text:
      self._start_document(cursor)
    example = self.builder.add_line(ids)
    if example:
      yield self._record(example)
    return []

  def _count_and_tokenize(self, lines: List[Any]) -> Tuple[Any, Any]:
    """Counts a block's lines and tokenizes those with text.

    Returns their ids as one flat list and the offsets where each line's ids
    start (one more than the lines), or (None, None) if no line has text.
    """
    stats = self.stats
    stats.lines += len(lines)
    # A line is blank when str.strip() leaves nothing, i.e. it isspace().
    texts = [line for line in lines if line and not line.isspace()]
    if not texts:
      return None, None
    flat, splits = self.tokenizer.encode_lines_flat(texts)
    stats.tokens += len(flat)
    stats.unk_tokens += int(np.count_nonzero(flat == self.unk_id))
    return flat.tolist(), splits.tolist()

  def _block_examples(self, lines: List[Any], flat_ids, splits, first_line_no: int,
                      cursor: "_FileCursor", blanks_separate_docs: bool) -> Iterator[bytes]:
    """The examples of a block of lines (`_count_and_tokenize` gave flat_ids and splits).

    A line with text goes to the packer, a blank one may end the document, one
    that is not UTF-8 (None) is left out and counted in `cursor`.
    """
    stats = self.stats
    add_line, add_blank, record = self.builder.add_line, self.builder.add_blank, self._record
    j = 0
    n_blank = 0
    for offset, line in enumerate(lines):
      if line and not line.isspace():
        if not cursor.doc_has_text:
          self._start_document(cursor)
        example = add_line(flat_ids[splits[j]:splits[j + 1]])
        j += 1
        if example:
          yield record(example)
      elif line is None:        # not UTF-8: left out
        cursor.invalid_count += 1
        if cursor.invalid_first is None:
          cursor.invalid_first = first_line_no + offset
      else:                     # blank line
        n_blank += 1
        if blanks_separate_docs:
          if cursor.doc_has_text:
            stats.documents += 1
            cursor.doc_has_text = False
          example = add_blank()
          if example:
            yield record(example)
    stats.sentences += j
    stats.blank_lines += n_blank

  def _end_of_file(self, name: str, cursor: "_FileCursor") -> Iterator[bytes]:
    """Reports the file's lines that are not UTF-8; the end of the file ends its document."""
    stats = self.stats
    if cursor.invalid_count:
      stats.invalid_lines += cursor.invalid_count
      self._warn(f"{name}: {cursor.invalid_count} line(s) are not valid UTF-8 (first: line "
                 f"{cursor.invalid_first}); they were skipped. Convert the file to UTF-8 "
                 "(e.g. iconv -f latin1 -t utf-8)")
    if cursor.doc_has_text:
      stats.documents += 1
    example = self.builder.add_blank()
    if example:
      yield self._record(example)

  def _long_line(self, name: str, long_line) -> Any:
    """A line over 8 MB: tokenized in pieces until no more tokens can matter.

    Returns its ids (False if it is blank, None if it is not UTF-8).
    """
    stats = self.stats
    stats.long_lines += 1
    ids: List[int] = []
    has_text = False
    valid = True
    for piece in long_line.pieces():
      try:
        text = piece.decode("utf-8")
      except UnicodeDecodeError:
        valid = False
        continue
      if not valid or not text.strip():
        continue
      has_text = True
      if len(ids) < self.cap:
        flat, _ = self.tokenizer.encode_utf8_flat([text])
        kept = flat[:self.cap - len(ids)]
        stats.tokens += len(kept)
        stats.unk_tokens += int((kept == self.unk_id).sum())
        ids.extend(kept.tolist())
      self._progress(long_line.reader.bytes_read)
    size = human_bytes(long_line.n_bytes)
    if not valid:
      stats.invalid_lines += 1
      self._warn(f"{name} line {long_line.line_no}: a {size} line that is not valid UTF-8; skipped")
      return None
    self._warn(f"{name} line {long_line.line_no} is {size} long: it was read in pieces and "
               f"tokenized up to {len(ids):,} tokens (the official builder would truncate all "
               "but the first max_seq_length anyway); consider one sentence or paragraph per line")
    return ids if has_text else False

  def text_file(self, path: str, input_name: str, blanks_separate_docs: bool) -> Iterator[bytes]:
    """The examples of one text file (gzip, bzip2 or xz compressed or not)."""
    try:
      stream = open_input(path, self._open_raw)
    except SkipFile as e:
      self.stats.skip(path, e.category)
      self._warn(f"skipped {path}: {e}")
      return
    with stream:
      if (yield from self._examples(path, stream, input_name, blanks_separate_docs)):
        self.stats.files_read += 1

  def archive(self, path: str, input_name: str, spool_dir: str) -> Iterator[bytes]:
    """An OpenWebText-style archive: every regular file in it is one document.

    The archive is read as a stream; its members are spooled to the empty
    folder `spool_dir` (the caller removes it) and read in the official order:
    sorted by name, then shuffled by `order_rng`
    (build_openwebtext_pretraining_dataset.py:64-70).
    """
    members: List[Tuple[str, str]] = []
    try:
      with self._open_raw(path) as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
        for member in tar:
          if not member.isfile():
            continue
          src = tar.extractfile(member)
          if src is None:
            continue
          local = os.path.join(spool_dir, str(len(members)))
          with src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
          members.append((member.name, local))
    except (tarfile.TarError, OSError, EOFError) as e:
      reason = "not a readable tar archive"
      self.stats.skip(path, reason)
      self._warn(f"skipped {path}: {reason} ({e})")
      return
    members.sort()
    self.order_rng.shuffle(members)
    for member_name, local in members:
      with open(local, "rb") as stream:
        yield from self._examples(f"{path}:{member_name}", stream,
                                  f"{input_name}/{member_name}", False)
    self.stats.files_read += 1
