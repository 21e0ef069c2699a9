"""Files written whole or not at all.

Every file the project writes goes first to a hidden temporary sibling,
`.name.tmp-<token>` (no reader's glob matches it), and is renamed over its
final name only once complete. If writing fails, the temporary file is removed
and whatever was at the final name is left as it was.

Local paths use the standard library (and fsync before the rename). Paths with
a scheme (`gs://...`, as TPU users give for model directories) go through
`tf.io.gfile`; TensorFlow is imported only then, so the data_prep workers that
use this module do not load it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from typing import Any, Iterator, Optional


def is_remote(path: str) -> bool:
  """Whether `path` names an object in a file system with a scheme (`gs://...`)."""
  return "://" in path


def _gfile():
  """`tf.io.gfile`, imported on first use (only remote paths need it)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.io.gfile


def exists(path: str) -> bool:
  """`os.path.exists`, or `tf.io.gfile.exists` for a remote path."""
  return _gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path: str) -> bool:
  """`os.path.isdir`, or `tf.io.gfile.isdir` for a remote path."""
  return _gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def makedirs(path: str) -> None:
  """`os.makedirs(path, exist_ok=True)`, or `tf.io.gfile.makedirs` for a remote path."""
  if is_remote(path):
    _gfile().makedirs(path)
  else:
    os.makedirs(path, exist_ok=True)


def open_file(path: str, mode: str = "r"):
  """`open(path, mode)`, or `tf.io.gfile.GFile` for a remote path."""
  return _gfile().GFile(path, mode) if is_remote(path) else open(path, mode)


def temp_name_for(path: str, token: Optional[str] = None) -> str:
  """The hidden temporary sibling of `path`; `token` defaults to the process id."""
  directory, name = os.path.split(path if is_remote(path) else os.path.normpath(path))
  return os.path.join(directory, f".{name}.tmp-{token or os.getpid()}")


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
  """Yields a temporary path to write; renames it to `path` when the block succeeds.

  The parent directory is created if missing. Use it for writers that take a
  path (TFRecordWriter, tokenizers); `write_text_atomic` covers plain text.
  """
  tmp = temp_name_for(path)
  directory = os.path.dirname(path)
  if is_remote(path):
    gfile = _gfile()
    exists, remove = gfile.exists, gfile.remove
    rename = lambda src, dst: gfile.rename(src, dst, overwrite=True)  # noqa: E731
  else:
    exists, remove, rename = os.path.exists, os.remove, os.replace
  if directory:
    makedirs(directory)
  try:
    yield tmp
    rename(tmp, path)
  except BaseException:
    with contextlib.suppress(Exception):
      if exists(tmp):
        remove(tmp)
    raise


@contextlib.contextmanager
def atomic_directory(path: str) -> Iterator[str]:
  """Yields a temporary directory to fill; it replaces `path` when the block succeeds.

  An existing `path` is swapped out only after the new directory is complete.
  Remote paths (object stores have no directory rename) are written in place.
  """
  if is_remote(path):
    yield path
    return
  path = os.path.abspath(path)
  tmp, old = temp_name_for(path), temp_name_for(path, f"old-{os.getpid()}")
  os.makedirs(os.path.dirname(path), exist_ok=True)
  for leftover in (tmp, old):  # from an earlier process with the same id
    shutil.rmtree(leftover, ignore_errors=True)
  try:
    yield tmp
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise
  if os.path.exists(path):
    os.replace(path, old)
  os.replace(tmp, path)
  shutil.rmtree(old, ignore_errors=True)


def write_text_atomic(path: str, text: str) -> None:
  """Writes `text` (UTF-8, "\\n" newlines) to `path` through a temporary file."""
  with atomic_path(path) as tmp:
    if is_remote(path):
      with _gfile().GFile(tmp, "w") as f:
        f.write(text)
    else:
      with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def copy_file_atomic(source: str, path: str) -> None:
  """Copies `source` to `path` through a temporary file."""
  with atomic_path(path) as tmp:
    if is_remote(source) or is_remote(path):
      _gfile().copy(source, tmp, overwrite=True)
    else:
      shutil.copyfile(source, tmp)


def write_json_atomic(path: str, data: Any, indent: int = 2, sort_keys: bool = True) -> None:
  """Writes `data` as JSON (plus a final newline) to `path` through a temporary file."""
  write_text_atomic(path, json.dumps(data, indent=indent, sort_keys=sort_keys) + "\n")
