"""One writer per output directory: a run lock.

`hold(directory)` is held by every command that writes a model or output
directory (pre-training, fine-tuning, convert, export, hf_export and the data
builders). Its lock file is the hidden sibling `.<name>.lock` of the
directory, so a command that replaces the directory whole (export's
atomic_directory, fine-tuning's fresh trial directories) keeps its lock.

Local directories: the lock is `fcntl.flock` on that file. The kernel
releases it when the holding process ends, however it ends (kill -9
included), so a lock left behind is never mistaken for a live one and a live
one is never timed out. The file records the holder (host, PID, process start
time, command, start time): a second writer is refused with one line naming
it, and a writer that finds the record of a dead holder says it takes over.

Remote directories (`gs://...`, through tf.io.gfile) have no file lock: the
file is a lease, rewritten by a heartbeat thread every `LEASE_SECONDS / 4`
and taken over once it has not been renewed for `LEASE_SECONDS`. An object
store gives no atomic create, so two writers starting within one heartbeat can
both get through; the run says so in one line.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import socket
import sys
import threading
import time
from typing import Dict, Iterator, Optional, Tuple

from electra_tf2.utils.atomic_io import is_remote, write_text_atomic
from electra_tf2.utils.errors import ElectraError

LEASE_SECONDS = 300.0
_held: Dict[str, int] = {}  # lock files this process holds -> nesting depth


class RunLockError(ElectraError):
  """Another live process writes the directory."""


def lock_path(directory: str) -> str:
  """The lock file of `directory`: its hidden sibling `.<name>.lock`."""
  if not is_remote(directory):
    directory = os.path.abspath(directory)
  parent, name = os.path.split(directory.rstrip("/"))
  return f"{parent}/.{name}.lock"


def _process_start(pid: int) -> Optional[str]:
  """The start time of `pid` in clock ticks since boot (Linux), None where unknown."""
  try:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
      return f.read().rsplit(")", 1)[1].split()[19]
  except (OSError, IndexError):
    return None


def _holder_record() -> Dict[str, object]:
  pid = os.getpid()
  return {"host": socket.gethostname(), "pid": pid, "pid_start": _process_start(pid),
          "command": " ".join(sys.argv) or sys.executable,
          "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def describe(record: Dict[str, object]) -> str:
  """`host <h> PID <p> (<command>, started <time>)`."""
  return (f"host {record.get('host')} PID {record.get('pid')} ({record.get('command')}, "
          f"started {record.get('started')})")


def _parse(text: str) -> Optional[Dict[str, object]]:
  try:
    record = json.loads(text)
  except ValueError:
    return None
  return record if isinstance(record, dict) else None


def is_alive(record: Dict[str, object]) -> bool:
  """Whether the process of `record` still runs; False only where it provably does not
  (same host, and its PID is gone or now belongs to a process started later)."""
  if record.get("host") != socket.gethostname() or not isinstance(record.get("pid"), int):
    return True
  start = _process_start(record["pid"])
  if start is None:
    return os.path.exists(f"/proc/{record['pid']}") if os.path.isdir("/proc") else True
  return record.get("pid_start") in (None, start)


# -----------------------------------------------------------------------------
# Local: flock
# -----------------------------------------------------------------------------


def _acquire_local(path: str) -> int:
  """Opens and flocks `path`; returns the descriptor. Raises RunLockError if held.

  Where the file system has no flock (ENOLCK), the recorded holder's PID is
  checked instead: a live one refuses, a dead one is taken over.
  """
  import fcntl  # pylint: disable=g-import-not-at-top  (POSIX only)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      locked = True
    except BlockingIOError:
      _refuse(path, _holder_of(fd))
    except OSError as e:
      if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
        raise
      locked = False
    previous = _parse(_read_fd(fd))
    if previous and not locked and is_alive(previous):
      _refuse(path, previous)
  except BaseException:
    os.close(fd)
    raise
  if previous:
    state = "is dead" if not is_alive(previous) else "no longer holds it"
    print(f"taking over the run lock {path}: its holder {describe(previous)} {state}",
          flush=True)
  _write_fd(fd, json.dumps(_holder_record()))
  return fd


def _locked_directory(path: str) -> str:
  """The directory whose lock file is `path` (the inverse of `lock_path`)."""
  parent, name = os.path.split(path)
  return os.path.join(parent, name[1:-len(".lock")])


def _refuse(path: str, record: Dict[str, object]) -> None:
  raise RunLockError(f"{_locked_directory(path)}: another run writes here: {describe(record)}"
                     f"; wait for it or stop it (lock file {path})")


def _holder_of(fd: int) -> Dict[str, object]:
  """The record of a lock held elsewhere; waits up to 1 s for a holder that has just
  locked the file to write it."""
  for _ in range(20):
    record = _parse(_read_fd(fd))
    if record:
      return record
    time.sleep(0.05)
  return {}


def _read_fd(fd: int) -> str:
  os.lseek(fd, 0, os.SEEK_SET)
  return os.read(fd, 65536).decode("utf-8", "replace")


def _write_fd(fd: int, text: str) -> None:
  os.ftruncate(fd, 0)
  os.lseek(fd, 0, os.SEEK_SET)
  os.write(fd, text.encode("utf-8"))
  os.fsync(fd)


def _release_local(fd: int) -> None:
  """Empties the record (a clean exit leaves nothing to take over) and unlocks."""
  with contextlib.suppress(OSError):
    _write_fd(fd, "")
  os.close(fd)


# -----------------------------------------------------------------------------
# Remote: a lease
# -----------------------------------------------------------------------------


def _read_lease(path: str) -> Optional[Dict[str, object]]:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote paths only)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path, "r") as f:
    return _parse(f.read())


def _write_lease(path: str, record: Dict[str, object]) -> None:
  write_text_atomic(path, json.dumps(dict(record, renewed=time.time())))


def _acquire_remote(path: str, lease_seconds: float) -> Tuple[Dict[str, object], threading.Event]:
  """Takes the lease of `path` (one line says what it does not promise) and starts its
  heartbeat; returns the record and the event that stops the heartbeat."""
  previous = _read_lease(path)
  if previous and previous.get("token"):
    age = time.time() - float(previous.get("renewed", 0))
    if age < lease_seconds:
      raise RunLockError(f"{_locked_directory(path)}: another run holds the lease: "
                         f"{describe(previous)}, renewed {age:.0f}s ago; wait for it, or "
                         f"{lease_seconds - age:.0f}s if it is dead (lease file {path})")
    print(f"taking over the lease {path}: its holder {describe(previous)} has not renewed "
          f"it for {age:.0f}s", flush=True)
  record = dict(_holder_record(), token=os.urandom(8).hex())
  _write_lease(path, record)
  if (_read_lease(path) or {}).get("token") != record["token"]:
    raise RunLockError(f"{_locked_directory(path)}: another run took the lease at the same "
                       f"moment: {describe(_read_lease(path) or {})}")
  print(f"{_locked_directory(path)} is remote: guarded by the lease {path} (renewed every "
        f"{lease_seconds / 4:.0f}s), not by a lock; two runs started within that interval "
        "are not told apart", flush=True)
  stop = threading.Event()

  def heartbeat():
    while not stop.wait(lease_seconds / 4):
      with contextlib.suppress(Exception):
        _write_lease(path, record)
  threading.Thread(target=heartbeat, name="run-lock-lease", daemon=True).start()
  return record, stop


def _release_remote(path: str, record: Dict[str, object], stop: threading.Event) -> None:
  stop.set()
  with contextlib.suppress(Exception):
    if (_read_lease(path) or {}).get("token") == record["token"]:
      _write_lease(path, {})


# -----------------------------------------------------------------------------
# The lock
# -----------------------------------------------------------------------------


@contextlib.contextmanager
def hold(directory: str, lease_seconds: float = LEASE_SECONDS) -> Iterator[str]:
  """Holds the run lock of `directory` within the block; yields the lock file's path.

  Re-entrant within one process. Raises RunLockError (one line naming the
  holder) if another live process holds it.
  """
  path = lock_path(directory)
  if path in _held:
    _held[path] += 1
    try:
      yield path
    finally:
      _held[path] -= 1
    return
  if is_remote(path):
    record, stop = _acquire_remote(path, lease_seconds)
    release = lambda: _release_remote(path, record, stop)  # noqa: E731
  else:
    fd = _acquire_local(path)
    release = lambda: _release_local(fd)  # noqa: E731
  _held[path] = 1
  try:
    yield path
  finally:
    del _held[path]
    release()
