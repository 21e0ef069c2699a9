"""A pre-training reader in a worker process, and batches put on the devices ahead.

`BackgroundReader(reader)` runs a copy of a `PretrainingDataReader` (same arguments, same
state) in a Python process of its own, `depth` batches ahead of the trainer: reading,
CRCs and decoding never hold the trainer's interpreter lock. Iterating gives (batch, the
reader's state after it), so a checkpoint saves the position of the last batch the
trainer took, not the worker's.

The worker is a plain subprocess (`python -c`, this module's `_serve`) that writes pickled
messages to a pipe, not a `multiprocessing` process: "spawn" would run the caller's main
script again in the worker, and "fork" would copy a process that JAX's threads may hold
locks in.

- a DataError in the worker (a damaged record) reaches the trainer as the same one line;
- a worker that dies is reported in one line, never waited for;
- the worker ignores SIGINT and SIGTERM (the trainer decides when to stop; `close()` ends
  it) and ends by itself when the trainer's process is gone (its pipe breaks).

`put_ahead(items, put, ahead)` calls `put` (the copy to the devices) on each batch
`ahead` batches before it is taken: the copy overlaps the steps before it.
"""

from __future__ import annotations

import collections
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, Tuple

from electra_tf2.data_io.pretraining import Batch, PretrainingDataReader
from electra_tf2.data_io.tfrecord import DataError

_WORKER = ("import pickle, sys; header = pickle.load(sys.stdin.buffer); "
           "from electra_tf2.data_io.background import _serve; _serve(header)")
# The folder holding this electra_tf2, first on the worker's path: it runs the same package.
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class BackgroundReader:
  """`reader`'s batches, from a copy of it in a worker process (see the module doc)."""

  def __init__(self, reader: PretrainingDataReader, depth: int = 4):
    path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    self._process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     env=dict(os.environ, PYTHONPATH=path))
    pickle.dump({"arguments": reader.arguments,
                 "state": reader.state(), "depth": depth}, self._process.stdin)
    self._process.stdin.close()

  def __iter__(self) -> Iterator[Tuple[Batch, Dict[str, Any]]]:
    return self

  def __next__(self) -> Tuple[Batch, Dict[str, Any]]:
    try:
      kind, payload = pickle.load(self._process.stdout)
    except (EOFError, pickle.UnpicklingError, OSError):
      raise DataError(f"the input reader process died (exit code {self._process.wait()}); "
                      "see its message above, then resume from the last checkpoint") from None
    if kind == "batch":
      return payload
    if kind == "end":
      raise StopIteration
    raise DataError(payload)

  def close(self) -> None:
    if self._process.poll() is None:
      self._process.kill()
    self._process.wait()
    self._process.stdout.close()

  def __enter__(self) -> "BackgroundReader":
    return self

  def __exit__(self, *exc) -> None:
    self.close()


def _serve(header: Dict[str, Any]) -> None:
  """The worker: the reader restored to the header's state; its batches and states, read
  `depth` ahead by a thread, pickled to what was stdout (stdout itself goes to stderr)."""
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  signal.signal(signal.SIGTERM, signal.SIG_IGN)
  out = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)
  ahead: "queue.Queue[Tuple[str, Any]]" = queue.Queue(maxsize=header["depth"])
  threading.Thread(target=_read, args=(header, ahead), daemon=True).start()
  while True:
    item = ahead.get()
    try:
      pickle.dump(item, out, protocol=pickle.HIGHEST_PROTOCOL)
      out.flush()
    except BrokenPipeError:  # the trainer is gone
      return
    if item[0] != "batch":
      return


def _read(header: Dict[str, Any], ahead: "queue.Queue[Tuple[str, Any]]") -> None:
  try:
    reader = PretrainingDataReader(**header["arguments"])
    reader.restore(header["state"])
    for batch in reader:
      ahead.put(("batch", (batch, reader.state())))
    ahead.put(("end", None))
  except DataError as e:
    ahead.put(("error", str(e)))
  except Exception as e:  # pylint: disable=broad-except
    ahead.put(("error", f"the input reader process failed: {type(e).__name__}: {e}"))


def put_ahead(items: Iterable[Tuple[Batch, Any]], put: Callable[[Batch], Any], ahead: int = 2
              ) -> Iterator[Tuple[Any, Any]]:
  """(put(batch), rest) of each (batch, rest) of `items`, each put `ahead` items early."""
  waiting: Deque[Tuple[Any, Any]] = collections.deque()
  for batch, rest in items:
    waiting.append((put(batch), rest))
    if len(waiting) > ahead:
      yield waiting.popleft()
  yield from waiting


__all__ = ["BackgroundReader", "put_ahead"]
