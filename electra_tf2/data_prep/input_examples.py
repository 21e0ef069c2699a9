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
    stats = self.stats
    builder = self.builder
    add_line, add_blank, start_document = builder.add_line, builder.add_blank, builder.start_document
    seed = self.seed
    doc_index = 0
    record = self._record
    encode_lines_flat = self.tokenizer.encode_lines_flat
    unk_id = self.unk_id
    doc_has_text = False
    invalid_first = None
    invalid_count = 0
    try:
      for kind, first_line_no, payload in reader:
        if kind == "long":
          stats.lines += 1
          ids = self._long_line(name, payload)
          if ids is None:           # not UTF-8: counted and reported by _long_line
            payload = []
          elif ids is False:
            payload = [""]
          else:
            stats.sentences += 1
            if not doc_has_text:
              start_document(document_rng(seed, input_name, doc_index))
              doc_index += 1
              doc_has_text = True
            example = add_line(ids)
            if example:
              yield record(example)
            payload = []
        else:
          stats.lines += len(payload)
          # A line is blank when str.strip() leaves nothing, i.e. it isspace().
          texts = [line for line in payload if line and not line.isspace()]
          if texts:
            flat, splits = encode_lines_flat(texts)
            stats.tokens += len(flat)
            stats.unk_tokens += int(np.count_nonzero(flat == unk_id))
            flat_list = flat.tolist()
            splits_list = splits.tolist()
        j = 0
        n_blank = 0
        for offset, line in enumerate(payload):
          if line and not line.isspace():
            if not doc_has_text:
              start_document(document_rng(seed, input_name, doc_index))
              doc_index += 1
              doc_has_text = True
            example = add_line(flat_list[splits_list[j]:splits_list[j + 1]])
            j += 1
            if example:
              yield record(example)
          elif line is None:        # not UTF-8: left out
            invalid_count += 1
            if invalid_first is None:
              invalid_first = first_line_no + offset
          else:                     # blank line
            n_blank += 1
            if blanks_separate_docs:
              if doc_has_text:
                stats.documents += 1
                doc_has_text = False
              example = add_blank()
              if example:
                yield record(example)
        stats.sentences += j
        stats.blank_lines += n_blank
        self._progress(reader.bytes_read)
    except SkipFile as e:
      stats.read_errors.append(f"{name}: {e}")
      self._warn(f"{name}: {e}; the text before the error was used")
    if invalid_count:
      stats.invalid_lines += invalid_count
      self._warn(f"{name}: {invalid_count} line(s) are not valid UTF-8 (first: line "
                 f"{invalid_first}); they were skipped. Convert the file to UTF-8 "
                 "(e.g. iconv -f latin1 -t utf-8)")
    if doc_has_text:
      stats.documents += 1
    example = builder.add_blank()
    if example:
      yield record(example)
    stats.bytes_read += reader.bytes_read
    return True

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
