"""Shared pieces of the data_prep scripts: errors, input files, robust line reading, progress."""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import lzma
import os
import sys
import time
from typing import BinaryIO, Callable, Iterator, List, Optional, Sequence, Tuple

from electra_tf2.utils import errors
from electra_tf2.utils.errors import ElectraError

# Opens a file for binary reading: the built-in open(path, "rb"), or a file system's.
RawOpener = Callable[[str], BinaryIO]


def open_local(path: str) -> BinaryIO:
  return open(path, "rb")  # pylint: disable=consider-using-with

# Names this package writes into an output directory (never read as input).
SHARD_PREFIX = "pretrain_data.tfrecord"
INFO_FILE = "pretrain_data.info.json"


class DataPrepError(ElectraError):
  """A problem the user can fix; the message is one line naming the file or flag."""


# ---------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------

def human_bytes(n: float) -> str:
  for unit in ("B", "KB", "MB", "GB", "TB"):
    if abs(n) < 1000 or unit == "TB":
      return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
    n /= 1000.0
  return f"{n:.1f} TB"


def human_count(n: float) -> str:
  """12345 -> '12.3k', 4.5e6 -> '4.50M'."""
  for threshold, unit, suffix, digits in ((1e9, 1e9, "G", 2), (1e6, 1e6, "M", 2),
                                          (1e4, 1e3, "k", 1)):
    if n >= threshold:
      return f"{n / unit:.{digits}f}{suffix}"
  return f"{n:.0f}"


def human_seconds(s: float) -> str:
  s = int(max(0, s))
  if s >= 3600:
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
  if s >= 60:
    return f"{s // 60}m{s % 60:02d}s"
  return f"{s}s"


# ---------------------------------------------------------------------------
# Input files
# ---------------------------------------------------------------------------

def is_builder_output(path: str) -> bool:
  """Whether `path` names a file the builders write (shards, their temporary names, the info file)."""
  name = os.path.basename(path)
  return (name.startswith(SHARD_PREFIX) or name == INFO_FILE
          or (name.startswith(".") and ".tmp-" in name))


def list_input_files(corpus_dirs: Sequence[str] = (), globs: Sequence[str] = (),
                     file_lists: Sequence[str] = (), exclude_dirs: Sequence[str] = ()
                     ) -> Tuple[List[str], List[str]]:
  """The input files, sorted, and notes about what was left out.

  corpus_dirs: like the official `--corpus-dir`, the entries directly inside
    each directory (sorted by name); subdirectories are left out with a note.
  globs: patterns (`**` recurses); directories they match are left out.
  file_lists: files naming one input path per line (blank lines and lines
    starting with # are ignored; relative paths are relative to the list).
  exclude_dirs: files under these directories are left out.
  Files this package writes (shards, their temporary names, the info file) are
  always left out.

  Raises DataPrepError for a missing directory, list or listed file, and when
  nothing is left.
  """
  files: List[str] = []
  notes: List[str] = []
  for d in corpus_dirs:
    if not os.path.isdir(d):
      raise DataPrepError(f"--corpus-dir {d}: no such directory")
    subdirs = []
    for name in sorted(os.listdir(d)):
      path = os.path.join(d, name)
      if os.path.isdir(path):
        subdirs.append(name)
      else:
        files.append(path)
    if subdirs:
      shown = ", ".join(subdirs[:3]) + (", ..." if len(subdirs) > 3 else "")
      notes.append(f"{d}: left out {len(subdirs)} subdirector{'y' if len(subdirs) == 1 else 'ies'} "
                   f"({shown}); the official builder reads only the files directly in "
                   f"--corpus-dir; use --corpus-glob '{os.path.join(d, '**', '*')}' to include them")
  for pattern in globs:
    matches = sorted(p for p in glob.glob(pattern, recursive=True) if not os.path.isdir(p))
    if not matches:
      notes.append(f"--corpus-glob {pattern!r} matched no files")
    files.extend(matches)
  for list_file in file_lists:
    try:
      with open(list_file, "r", encoding="utf-8") as f:
        entries = f.read().splitlines()
    except OSError as e:
      raise DataPrepError(f"--file-list {list_file}: cannot be read ({e.strerror})") from None
    except UnicodeDecodeError:
      raise DataPrepError(f"--file-list {list_file}: is not UTF-8 text") from None
    base = os.path.dirname(os.path.abspath(list_file))
    for line_no, entry in enumerate(entries, start=1):
      entry = entry.strip()
      if not entry or entry.startswith("#"):
        continue
      path = entry if os.path.isabs(entry) else os.path.join(base, entry)
      if not os.path.exists(path):
        raise DataPrepError(f"--file-list {list_file} line {line_no}: {entry} does not exist")
      files.append(path)
  excluded = [os.path.abspath(d) + os.sep for d in exclude_dirs]
  kept, seen = [], set()
  n_ours = 0
  for path in files:
    real = os.path.abspath(path)
    if real in seen:
      continue
    seen.add(real)
    if any(real.startswith(e) for e in excluded) or is_builder_output(real):
      n_ours += 1
      continue
    kept.append(path)
  if n_ours:
    notes.append(f"left out {n_ours} file(s) written by this builder (shards, temporary "
                 "files, pretrain_data.info.json)")
  kept.sort()
  return kept, notes


# ---------------------------------------------------------------------------
# Robust reading
# ---------------------------------------------------------------------------

READ_BLOCK_BYTES = 4 << 20     # read this much at a time
LONG_LINE_BYTES = 8 << 20      # lines longer than this are streamed in pieces
LONG_LINE_PIECE_BYTES = 1 << 20  # piece size when streaming a long line
_SNIFF_BYTES = 8192

_GZIP_MAGIC = b"\x1f\x8b"
_BZ2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"


class SkipFile(Exception):
  """This file cannot be used: `category` (for counting) and str(e) (why, and what to do)."""

  def __init__(self, category: str, message: str):
    super().__init__(message)
    self.category = category



def corpus_files(args, name_the_flags: bool = False) -> List[str]:
  """The files of --corpus-dir/--corpus-glob/--file-list, with their notes printed.

  Raises DataPrepError when there are none (naming the flags when `name_the_flags`).
  """
  inputs, notes = list_input_files(args.corpus_dir, args.corpus_glob, args.file_list)
  for note in notes:
    print(f"note: {note}", file=sys.stderr)
  if not inputs:
    given = ([f"--corpus-dir {d}" for d in args.corpus_dir]
             + [f"--corpus-glob {g!r}" for g in args.corpus_glob]
             + [f"--file-list {f}" for f in args.file_list])
    raise DataPrepError("no input files found" + (f": {', '.join(given)} gave no files to read"
                                                  if name_the_flags else ""))
  return inputs

def open_input(path: str, open_raw: RawOpener = open_local) -> BinaryIO:
  """Opens a corpus file for binary reading, decompressing gzip, bzip2 and xz.

  Raises SkipFile when the file cannot be opened.
  """
  try:
    raw = open_raw(path)
  except IsADirectoryError:
    raise SkipFile("unreadable", "is a directory") from None
  except PermissionError:
    raise SkipFile("unreadable", "permission denied") from None
  except OSError as e:
    raise SkipFile("unreadable", f"cannot be opened ({e.strerror or e})") from None
  return _wrap_stream(raw, path)


def _wrap_stream(raw: BinaryIO, name: str) -> BinaryIO:
  try:
    head = raw.read(8)
    raw.seek(0)
  except OSError as e:
    raw.close()
    raise SkipFile("unreadable", f"cannot be read ({e.strerror or e})") from None
  except io.UnsupportedOperation:
    raw = io.BytesIO(head + raw.read())
  if head.startswith(_GZIP_MAGIC):
    stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
  elif head.startswith(_BZ2_MAGIC):
    stream = bz2.BZ2File(raw, "rb")  # type: ignore[assignment]
  elif head.startswith(_XZ_MAGIC):
    stream = lzma.LZMAFile(raw, "rb")  # type: ignore[assignment]
  else:
    stream = raw
  return stream


class LongLine:
  """A line too long to hold at once: iterate `pieces()` (bytes, cut after a space or tab)."""

  def __init__(self, reader: "LineReader", line_no: int, first: bytes, complete: bool = False):
    self.reader = reader
    self.line_no = line_no
    self._first = first
    self._complete = complete  # first holds the whole line (no newline to look for)
    self.n_bytes = 0
    self._iter = self._generate()

  def pieces(self) -> Iterator[bytes]:
    """The line's bytes (carriage returns removed) in pieces cut after a space or tab.

    One iterator per line: stopping early and calling pieces() again resumes.
    """
    return self._iter

  def drain(self) -> None:
    for _ in self._iter:
      pass

  def _generate(self) -> Iterator[bytes]:
    reader = self.reader
    buf = self._first
    self._first = b""
    pos = 0
    complete = self._complete
    piece_bytes = LONG_LINE_PIECE_BYTES
    while True:
      if not complete:
        newline = buf.find(b"\n", pos)
        if newline >= 0:
          reader._carry = buf[newline + 1:]
          buf = buf[:newline]
          complete = True
      while len(buf) - pos >= piece_bytes:
        limit = pos + piece_bytes
        split = max(buf.rfind(b" ", pos, limit), buf.rfind(b"\t", pos, limit))
        if split < 0:  # a very long word: cut at the next space or tab
          after = [i for i in (buf.find(b" ", limit), buf.find(b"\t", limit)) if i >= 0]
          if not after:
            break
          split = min(after)
        piece = buf[pos:split + 1].replace(b"\r", b"")
        pos = split + 1
        self.n_bytes += len(piece)
        yield piece
      if complete:
        break
      block = reader._read_block()
      if not block:
        reader._carry = b""
        reader._eof = True
        break
      buf = buf[pos:] + block
      pos = 0
    rest = buf[pos:].replace(b"\r", b"")
    if rest:
      self.n_bytes += len(rest)
      yield rest


class LineReader:
  """Splits a byte stream into lines exactly as the official builder's tf.io.gfile.GFile did.

  GFile splits on "\\n" only and drops every "\\r" (not only a trailing one). Lines
  are decoded as UTF-8 one block at a time; a line that is not valid UTF-8 is
  given as None (the official builder crashed on it). Lines longer than
  LONG_LINE_BYTES are given as `LongLine` objects that the caller must iterate
  (or drain) before asking for the next item.

  Iterating yields ("lines", first_line_no, [str | None, ...]) and
  ("long", line_no, LongLine).
  """

  def __init__(self, stream: BinaryIO, name: str):
    self.stream = stream
    self.name = name
    self._carry = b""
    self._eof = False
    self.bytes_read = 0
    self.line_no = 0

  def _read_block(self) -> bytes:
    try:
      block = self.stream.read(READ_BLOCK_BYTES)
    except (OSError, EOFError, lzma.LZMAError) as e:
      raise SkipFile("read error", f"read error after {human_bytes(self.bytes_read)} ({e})") from None
    self.bytes_read += len(block)
    return block

  def sniff(self) -> None:
    """Raises SkipFile if the start of the stream looks binary (NUL bytes) or UTF-16."""
    block = self._read_block()
    self._carry = block
    if not block:
      self._eof = True
      return
    head = block[:_SNIFF_BYTES]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
      raise SkipFile("UTF-16", "is UTF-16 text: convert it to UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    nul = head.find(b"\x00")
    if nul >= 0:
      raise SkipFile("binary", f"looks binary (NUL byte at offset {nul}); pass text files only "
                     "(archives of documents go to build_openwebtext_pretraining_dataset.py)")

  def __iter__(self):
    while True:
      if self._eof and not self._carry:
        return
      data = self._carry
      if not self._eof:
        block = self._read_block()
        if not block:
          self._eof = True
        data += block
      cut = data.rfind(b"\n")
      if cut < 0:
        if self._eof:
          self._carry = b""
          # GFile stops at a last line that is empty once "\r" is dropped.
          if data.replace(b"\r", b""):
            yield "lines", self.line_no + 1, self._decode(data)
            self.line_no += 1
          return
        self._carry = data
        if len(data) > LONG_LINE_BYTES:
          self._carry = b""
          self.line_no += 1
          long_line = LongLine(self, self.line_no, data)
          yield "long", self.line_no, long_line
          long_line.drain()
        continue
      complete, self._carry = data[:cut], data[cut + 1:]
      if len(complete) > LONG_LINE_BYTES:
        raw_lines = complete.split(b"\n")
        if max(map(len, raw_lines)) > LONG_LINE_BYTES:
          yield from self._mixed(raw_lines)
          continue
      lines = self._decode(complete)
      first = self.line_no + 1
      self.line_no += len(lines)
      yield "lines", first, lines

  def _mixed(self, raw_lines: List[bytes]):
    """Complete lines some of which are long."""
    group: List[bytes] = []
    for raw in raw_lines + [None]:
      if raw is None or len(raw) > LONG_LINE_BYTES:
        if group:
          lines = self._decode(b"\n".join(group))
          first = self.line_no + 1
          self.line_no += len(lines)
          group = []
          yield "lines", first, lines
        if raw is not None:
          self.line_no += 1
          long_line = LongLine(self, self.line_no, raw, complete=True)
          yield "long", self.line_no, long_line
          long_line.drain()
      else:
        group.append(raw)

  @staticmethod
  def _decode(data: bytes) -> List[Optional[str]]:
    data = data.replace(b"\r", b"")
    try:
      return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
      out: List[Optional[str]] = []
      for raw in data.split(b"\n"):
        try:
          out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
          out.append(None)
      return out


# ---------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------

class Progress:
  """A one-line progress bar on a terminal, a line every 15 s otherwise; silent if disabled."""

  def __init__(self, total_bytes: int, enabled: bool = True, stream=None,
               label: str = "building"):
    self.total = max(1, total_bytes)
    self.stream = stream or sys.stderr
    self.enabled = enabled
    self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.time()
    self.last = 0.0
    self.label = label
    self.done_bytes = 0
    self.examples = 0
    self.tokens = 0
    self._shown = False

  def update(self, done_bytes: int, examples: int, tokens: int, force: bool = False) -> None:
    self.done_bytes, self.examples, self.tokens = done_bytes, examples, tokens
    if not self.enabled:
      return
    now = time.time()
    interval = 0.25 if self.tty else 15.0
    if not force and now - self.last < interval:
      return
    self.last = now
    elapsed = max(now - self.start, 1e-6)
    frac = min(1.0, done_bytes / self.total)
    eta = (elapsed / frac - elapsed) if frac > 0.001 else 0.0
    text = (f"{self.label} {100 * frac:5.1f}% {human_bytes(done_bytes)}/{human_bytes(self.total)} "
            f"{human_count(examples)} examples {human_count(tokens / elapsed)} tokens/s "
            f"ETA {human_seconds(eta)}")
    if self.tty:
      width = 24
      filled = int(frac * width)
      bar = "#" * filled + "." * (width - filled)
      self.stream.write(f"\r[{bar}] {text}\x1b[K")
    else:
      self.stream.write(text + "\n")
    self.stream.flush()
    self._shown = True

  def warn(self, message: str) -> None:
    """Writes `warning: message` on its own line (clearing the progress bar first)."""
    if self.tty and self._shown:
      self.stream.write("\r\x1b[K")
    self.stream.write(f"warning: {message}\n")
    self.stream.flush()

  def close(self) -> None:
    if self.enabled and self.tty and self._shown:
      self.stream.write("\n")
      self.stream.flush()


def make_bool_parser(flag: str) -> Callable[[str], bool]:
  """An argparse `type` turning true/false/yes/no/1/0 into a bool (unlike type=bool)."""
  def parse(value: str) -> bool:
    v = str(value).strip().lower()
    if v in ("1", "true", "t", "yes", "y", "on"):
      return True
    if v in ("0", "false", "f", "no", "n", "off"):
      return False
    import argparse  # pylint: disable=g-import-not-at-top
    raise argparse.ArgumentTypeError(f"{flag} takes true or false, not {value!r}")
  return parse


def quiet_tensorflow_logs() -> None:
  """For the scripts' own processes, before TensorFlow is imported: no C++ start-up
  chatter, and no GPU (data preparation runs on the CPU; a GPU context would only
  reserve memory and print CUDA errors on machines without one)."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # 2 would still print cuInit errors
  os.environ["CUDA_VISIBLE_DEVICES"] = ""


def run_script(work: Callable[[], None], interrupted: str) -> int:
  """A script's main body under the exit-code rule of electra_tf2/utils/errors.py: 0, or 2
  after one `error:` line, or 130 on Ctrl-C (a bug keeps its traceback).

  interrupted: what the Ctrl-C line says of the output ("OUT was left as it was").
  """
  try:
    work()
  except (*errors.REPORTED, KeyboardInterrupt) as e:
    return errors.report(e, f"interrupted: {interrupted}")
  return 0
