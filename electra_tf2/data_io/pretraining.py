"""The pre-training input pipeline without TensorFlow, resumable exactly.

`PretrainingDataReader` runs the structure of `input_pipeline.input_fn` (itself the
official pretrain/pretrain_data.py:50-76) on the TFRecords `electra build-data` writes:

1. this host's files: the sorted files, every `process_count`-th from `process_index`
   when there are at least as many files as hosts (`Dataset.shard`);
2. the files repeated forever and shuffled through a buffer of as many files
   (`repeat().shuffle(n_files)`: a file of the next epoch may come before the last of
   this one);
3. min(4, n_files) files read side by side, one record from each in turn; a finished
   file's slot takes the next file when its turn comes (`interleave(cycle_length=4)`,
   deterministic);
4. with fewer files than hosts: every `process_count`-th record of that stream;
5. records shuffled through a buffer of 100 (`shuffle(100)`), batched with the remainder
   dropped, decoded to int32 `[batch, max_seq_length]`.

With `shuffle=False` (steps 2 and 5 left out) the batches are those of `input_fn(...,
shuffle=False)`, record for record. With shuffling, the order cannot be TensorFlow's:
its shuffle buffers draw from its own Philox streams. The draws here come from numpy
generators seeded with the same `seed * 1009 + process_index`; the structure (which
files can be mixed, how far a record can move) is the same.

Each open file is read by an `ExampleCursor`: 512 records at a time, framed and
CRC-checked through a memory map and decoded together (`example_arrays`), so the per-record
Python work is the interleave and the shuffles' draws.

`state()` is a JSON-able dict (the files, each open slot's file and byte offset, the
epoch position, the shuffle buffers as file and offset, the generators' states) between
two batches; `restore(state)` continues with the very batches that followed it.
"""

from __future__ import annotations

import collections
from typing import Any, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from electra_tf2.data_io.example_arrays import int64_features, vectorised_int64_features
from electra_tf2.data_io.tfrecord import DataError, RecordCursor, read_record, tfrecord_files

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")
# Files read at once and records shuffled: official pretrain_data.py:55 (4 CPU threads), 64.
CYCLE_LENGTH = 4
SHUFFLE_BUFFER = 100
STATE_VERSION = 1

Batch = Dict[str, np.ndarray]


class PretrainingDataReader:
  """Batches of pre-training TFRecords as numpy arrays, like `input_pipeline.input_fn`.

  Args:
    files: comma-separated glob patterns (config.pretrain_tfrecords) or a list of files.
    max_seq_length: the length of every feature.
    batch_size: examples per batch (this host's).
    seed: config.seed; the generators get seed * 1009 + process_index as input_fn.
    process_index, process_count: this host and the number of hosts (JAX's
      `jax.process_index()` / `jax.process_count()`; input_fn's input pipelines).
    shuffle: the file and record shuffles of input_fn; False reads in a fixed order.
    repeat: read the files forever (input_fn); False reads each file once and stops.
    check_crc: check both CRCs of every record.

  Iterating gives {"input_ids", "input_mask", "segment_ids"}: int32 `[batch_size,
  max_seq_length]`.
  """

  def __init__(self, files: Union[str, Sequence[str]], max_seq_length: int, batch_size: int,
               seed: int = 0, process_index: int = 0, process_count: int = 1,
               shuffle: bool = True, repeat: bool = True, check_crc: bool = True):
    all_files = tfrecord_files(files) if isinstance(files, str) else sorted(files)
    if not all_files:
      raise DataError(f"no pre-training TFRecords match {files}: build them with "
                      "`electra build-data` or set pretrain_tfrecords")
    if not 0 <= process_index < process_count:
      raise DataError(f"process_index {process_index} is not in [0, {process_count})")
    if batch_size < 1:
      raise DataError(f"batch_size must be at least 1, got {batch_size}")
    self.shard_files = process_count > 1 and len(all_files) >= process_count
    self.files: List[str] = (all_files[process_index::process_count] if self.shard_files
                             else all_files)
    # input_fn's n_files (len(files) // hosts when sharding files) sizes buffer and cycle.
    n_files = len(all_files) // process_count if self.shard_files else len(all_files)
    self.file_buffer_size = max(n_files, 1)
    self.cycle_length = min(CYCLE_LENGTH, n_files)
    self.record_shard = (process_count, process_index) if (
        process_count > 1 and not self.shard_files) else None
    self.max_seq_length = max_seq_length
    self.batch_size = batch_size
    self.seed = seed * 1009 + process_index
    self.shuffle, self.repeat, self.check_crc = shuffle, repeat, check_crc
    # What makes this reader again (in a worker process: data_io/background.py).
    self.arguments = dict(files=all_files, max_seq_length=max_seq_length,
                          batch_size=batch_size, seed=seed, process_index=process_index,
                          process_count=process_count, shuffle=shuffle, repeat=repeat,
                          check_crc=check_crc)
    self._cursors: Dict[int, ExampleCursor] = {}  # by slot
    self._reset()

  # -- state ------------------------------------------------------------------------

  def _reset(self) -> None:
    self.close()
    self._next_file = 0  # position in the repeated file stream: epoch * len(files) + i
    self._file_buffer: List[int] = []
    self._slots: List[Optional[List[int]]] = [None] * self.cycle_length  # [file, offset]
    self._cycle_index = 0
    self._records_seen = 0  # records of the interleaved stream (for the record shard)
    self._record_buffer: List[Tuple[int, int, np.ndarray]] = []  # (file, offset, example)
    self._exhausted = False
    self._file_rng = np.random.default_rng([self.seed, 0])
    self._record_rng = np.random.default_rng([self.seed, 1])

  def state(self) -> Dict[str, Any]:
    """Where the stream is, between two batches: pass it to `restore` to continue."""
    return {
        "version": STATE_VERSION, "files": list(self.files), "seed": self.seed,
        "shuffle": self.shuffle, "repeat": self.repeat,
        "epoch": self._next_file // len(self.files),
        "next_file": self._next_file, "file_buffer": list(self._file_buffer),
        "slots": [None if s is None else list(s) for s in self._slots],
        "cycle_index": self._cycle_index, "records_seen": self._records_seen,
        "record_buffer": [[f, o] for f, o, _ in self._record_buffer],
        "exhausted": self._exhausted,
        "file_rng": self._file_rng.bit_generator.state,
        "record_rng": self._record_rng.bit_generator.state}

  def restore(self, state: Dict[str, Any]) -> None:
    """Continues from `state()`; a state of other files or settings is a DataError."""
    for key in ("version", "files", "seed", "shuffle", "repeat"):
      mine = STATE_VERSION if key == "version" else getattr(self, key)
      if state.get(key) != mine:
        raise DataError(f"the input state was saved with another {key} "
                        f"({_short(state.get(key))}, now {_short(mine)}); start the input "
                        "stream afresh")
    if len(state["slots"]) != self.cycle_length:
      raise DataError("the input state was saved with another number of files read at once")
    self._reset()
    self._next_file = state["next_file"]
    self._file_buffer = list(state["file_buffer"])
    self._slots = [None if s is None else list(s) for s in state["slots"]]
    self._cycle_index = state["cycle_index"]
    self._records_seen = state["records_seen"]
    self._exhausted = state["exhausted"]
    self._file_rng.bit_generator.state = state["file_rng"]
    self._record_rng.bit_generator.state = state["record_rng"]
    self._record_buffer = [(f, o, self._record_at(f, o)) for f, o in state["record_buffer"]]

  # -- the stream -----------------------------------------------------------------------

  def _record_at(self, file_index: int, offset: int) -> np.ndarray:
    """The example at byte `offset` of a file ([features, max_seq_length] int32)."""
    path = self.files[file_index]
    with open(path, "rb") as f:
      f.seek(offset)
      record = read_record(f, path, offset, self.check_crc)
    if record is None:
      raise DataError(f"{path}: the input state names a record at byte offset {offset}, "
                      "past the file's end: the file changed; start the input stream afresh")
    try:
      return example_rows([(offset, record)], path, self.max_seq_length)[0][1]
    except _PartlyDecoded as e:
      raise e.error from None

  def _slot_record(self, slot: List[int]) -> Optional[Tuple[int, np.ndarray]]:
    """The next example of the current slot's file and the byte offset after it (None
    when the file is done)."""
    cursor = self._cursors.get(self._cycle_index)
    if cursor is None:
      cursor = self._cursors[self._cycle_index] = ExampleCursor(
          self.files[slot[0]], slot[1], self.max_seq_length, self.check_crc)
    item = cursor.next()
    if item is None:
      self._cursors.pop(self._cycle_index).close()
      return None
    return item

  def _next_file_index(self) -> Optional[int]:
    """The next file of `repeat().shuffle(n_files)` (None when not repeating and done)."""
    n = len(self.files)
    if not self.shuffle:
      if not self.repeat and self._next_file >= n:
        return None
      self._next_file += 1
      return (self._next_file - 1) % n
    while len(self._file_buffer) < self.file_buffer_size and (
        self.repeat or self._next_file < n):
      self._file_buffer.append(self._next_file % n)
      self._next_file += 1
    if not self._file_buffer:
      return None
    index = int(self._file_rng.random() * len(self._file_buffer))  # integers(): 3x slower
    self._file_buffer[index], self._file_buffer[-1] = (self._file_buffer[-1],
                                                       self._file_buffer[index])
    return self._file_buffer.pop()

  def _next_interleaved(self) -> Optional[Tuple[int, int, np.ndarray]]:
    """The next example of the interleave: (file, offset, example), None at the end."""
    empty_opened = 0
    while True:
      slot = self._slots[self._cycle_index]
      if slot is None:
        if self._exhausted:
          if all(s is None for s in self._slots):
            return None
          self._cycle_index = (self._cycle_index + 1) % self.cycle_length
          continue
        file_index = self._next_file_index()
        if file_index is None:
          self._exhausted = True
          continue
        slot = self._slots[self._cycle_index] = [file_index, 0]
      item = self._slot_record(slot)
      if item is None:  # this file is done: the turn passes to the next slot
        self._slots[self._cycle_index] = None
        self._cycle_index = (self._cycle_index + 1) % self.cycle_length
        empty_opened += 1
        if empty_opened > 2 * (len(self.files) + self.cycle_length):
          raise DataError(f"the pre-training files {self.files[0]} ... hold no records; "
                          "rebuild the pre-training data")
        continue
      file_index, offset = slot
      slot[1], example = item
      self._cycle_index = (self._cycle_index + 1) % self.cycle_length
      return file_index, offset, example

  def _next_record(self) -> Optional[Tuple[int, int, np.ndarray]]:
    """The next record after the record shard and the record shuffle."""
    if not self.shuffle:
      return self._next_sharded()
    while len(self._record_buffer) < SHUFFLE_BUFFER:
      item = self._next_sharded()
      if item is None:
        break
      self._record_buffer.append(item)
    if not self._record_buffer:
      return None
    index = int(self._record_rng.random() * len(self._record_buffer))
    buffer = self._record_buffer
    buffer[index], buffer[-1] = buffer[-1], buffer[index]
    return buffer.pop()

  def _next_sharded(self) -> Optional[Tuple[int, int, np.ndarray]]:
    while True:
      item = self._next_interleaved()
      if item is None or self.record_shard is None:
        return item
      count, index = self.record_shard
      self._records_seen += 1
      if (self._records_seen - 1) % count == index:
        return item

  def __iter__(self) -> Iterator[Batch]:
    return self

  def __next__(self) -> Batch:
    items = []
    for _ in range(self.batch_size):
      item = self._next_record()
      if item is None:  # drop_remainder
        raise StopIteration
      items.append(item)
    batch = np.stack([example for _, _, example in items])
    return {name: np.ascontiguousarray(batch[:, i]) for i, name in enumerate(FEATURE_NAMES)}

  def close(self) -> None:
    for cursor in self._cursors.values():
      cursor.close()
    self._cursors.clear()


class ExampleCursor:
  """The examples of a pre-training TFRecord file from byte `offset` on: `next()` gives
  (the offset after the example, its features as [3, max_seq_length] int32), then None.
  Records come `chunk` at a time (`tfrecord.RecordCursor`, CRCs checked) and each chunk is
  decoded at once; a damaged record raises its DataError when the cursor reaches it."""

  def __init__(self, path: str, offset: int, max_seq_length: int, check_crc: bool = True,
               chunk: int = 512):
    self.path, self.max_seq_length = path, max_seq_length
    self._records = RecordCursor(path, offset, check_crc, chunk)
    self._ready: Deque[Tuple[int, np.ndarray]] = collections.deque()
    self._error: Optional[DataError] = None

  def next(self) -> Optional[Tuple[int, np.ndarray]]:
    if not self._ready:
      if self._error is not None:
        raise self._error
      try:
        self._ready.extend(example_rows(self._records.take(), self.path,
                                        self.max_seq_length))
      except _PartlyDecoded as e:
        self._ready.extend(e.rows)
        self._error = e.error
        return self.next()
      if not self._ready:
        return None
    return self._ready.popleft()

  def close(self) -> None:
    self._records.close()


class _PartlyDecoded(Exception):
  def __init__(self, rows: List[Tuple[int, np.ndarray]], error: DataError):
    super().__init__(str(error))
    self.rows, self.error = rows, error


def example_rows(records: List[Tuple[int, bytes]], path: str, max_seq_length: int
                 ) -> List[Tuple[int, np.ndarray]]:
  """(the offset after each record, its features as [3, max_seq_length] int32) of
  consecutive (offset, record) pairs of a file: decoded together when they share the
  common layout, else one by one, raising _PartlyDecoded (the rows before it, the error)
  at the first that is not pre-training data."""
  after = [offset + len(record) + 16 for offset, record in records]
  values = vectorised_int64_features([r for _, r in records], FEATURE_NAMES, max_seq_length)
  if values is not None:
    return list(zip(after, np.stack(values, axis=1).astype(np.int32)))
  rows = []
  for (offset, record), next_offset in zip(records, after):
    try:
      values = int64_features([record], FEATURE_NAMES, max_seq_length,
                              lambda _: f"{path} (record at byte offset {offset})")
    except DataError as e:
      raise _PartlyDecoded(rows, e) from None
    rows.append((next_offset, np.stack(values, axis=1)[0].astype(np.int32)))
  return rows


def _short(value: Any) -> str:
  text = repr(value)
  return text if len(text) < 80 else text[:77] + "..."


__all__ = ["PretrainingDataReader", "DataError", "FEATURE_NAMES"]
