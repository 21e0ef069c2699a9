"""TFRecord files and `tf.train.Example` records in pure Python (no TensorFlow).

A TFRecord file is a sequence of records, each (TensorFlow's
core/lib/io/record_writer.cc)::

  uint64 length (little endian) | uint32 masked_crc32c(length bytes)
  byte   data[length]           | uint32 masked_crc32c(data)

masked_crc(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32), c = crc32c(x).
CRC32C comes from `google_crc32c` when it is importable, else from a table-driven
pure-Python loop (about 100 times slower: a few MB/s).

`Example` messages are built from a descriptor written here (the layout of
tensorflow/core/example/{example,feature}.proto) in a private descriptor pool, so
neither TensorFlow nor protoc is needed and TensorFlow's own classes are not disturbed.
"""

from __future__ import annotations

import functools
import glob
import mmap
import os
import struct
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.utils.atomic_io import is_remote
from electra_tf2.utils.errors import ElectraError, import_tensorflow

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")


class DataError(ElectraError, ValueError):
  """Missing, empty, corrupt or mismatched pre-training data; the message names the file."""


# -- CRC32C -------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _crc_table() -> Tuple[int, ...]:
  table = []
  for byte in range(256):
    crc = byte
    for _ in range(8):
      crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)  # Castagnoli, reflected
    table.append(crc)
  return tuple(table)


def crc32c_python(data: bytes) -> int:
  """CRC32C (Castagnoli) of `data`, one table lookup per byte."""
  table, crc = _crc_table(), 0xFFFFFFFF
  for byte in data:
    crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  return crc ^ 0xFFFFFFFF


@functools.lru_cache(maxsize=None)
def _crc32c_function():
  try:
    import google_crc32c  # pylint: disable=g-import-not-at-top
  except ImportError:
    return crc32c_python
  return google_crc32c.value


def crc32c(data: bytes) -> int:
  """CRC32C of `data`: google_crc32c's when importable, else `crc32c_python`."""
  return _crc32c_function()(data)


def masked_crc32c(data: bytes) -> int:
  """The CRC a TFRecord stores: crc32c rotated right by 15 bits plus 0xa282ead8."""
  return _masked(crc32c(data))


# -- records ------------------------------------------------------------------


def _masked(crc: int) -> int:
  return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def record_in(buffer, start: int, path: str, offset: int, crc: Optional[Callable] = None
              ) -> Optional[bytes]:
  """The record framed at `buffer[start:]` (file byte `offset`), None at the buffer's end;
  both CRCs checked with `crc` (crc32c) unless it is None. A short or corrupt record is a
  DataError naming path and offset."""
  if start == len(buffer):
    return None
  if start + 12 > len(buffer):
    raise DataError(f"{path}: truncated record header at byte offset {offset}: the file is "
                    "cut short; rebuild it or remove it")
  length, length_crc = _HEADER.unpack_from(buffer, start)
  if crc is not None and _masked(crc(buffer[start:start + 8])) != length_crc:
    raise DataError(f"{path}: corrupt record at byte offset {offset} (length CRC mismatch); "
                    "rebuild the file or remove it")
  stop = start + 12 + length
  if stop + 4 > len(buffer):
    raise DataError(f"{path}: truncated record at byte offset {offset}: the file is cut "
                    "short; rebuild it or remove it")
  data = bytes(buffer[start + 12:stop])
  if crc is not None and _masked(crc(data)) != _FOOTER.unpack_from(buffer, stop)[0]:
    raise DataError(f"{path}: corrupt record at byte offset {offset} (data CRC mismatch); "
                    "rebuild the file or remove it")
  return data


def read_record(f, path: str, offset: int, check_crc: bool = True) -> Optional[bytes]:
  """The record at byte `offset` of the open binary file `f` (positioned there), or None
  at the end of the file (`record_in` on what the file holds there)."""
  buffer = f.read(12)
  if len(buffer) == 12:
    buffer += f.read(_HEADER.unpack(buffer)[0] + 4)
  return record_in(buffer, 0, path, offset, _crc32c_function() if check_crc else None)


class RecordCursor:
  """The records of a TFRecord file from byte `offset` on, through a memory map, `chunk`
  at a time: `take()` gives the next [(offset, data), ...], [] at the end. Both CRCs of
  each record are checked as its chunk is read; a damaged record raises its DataError when
  the records before it have been taken."""

  def __init__(self, path: str, offset: int = 0, check_crc: bool = True, chunk: int = 256):
    self.path, self.chunk = path, chunk
    self._crc = _crc32c_function() if check_crc else None
    with open(path, "rb") as f:
      size = os.fstat(f.fileno()).st_size
      self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    self._scan = offset
    self._error: Optional[DataError] = None

  def take(self) -> List[Tuple[int, bytes]]:
    if self._error is not None:
      raise self._error
    buffer, offset, records = self._map if self._map is not None else b"", self._scan, []
    for _ in range(self.chunk):
      try:
        data = record_in(buffer, offset, self.path, offset, self._crc)
      except DataError as e:
        self._error = e
        if not records:
          raise
        break
      if data is None:
        break
      records.append((offset, data))
      offset += len(data) + 16
    self._scan = offset
    return records

  def close(self) -> None:
    if self._map is not None:
      self._map.close()
      self._map = None


def read_records(path: str, offset: int = 0, check_crc: bool = True
                 ) -> Iterator[Tuple[int, bytes]]:
  """(byte offset, data) of each record of a TFRecord file, from byte `offset` on."""
  cursor = RecordCursor(path, offset, check_crc)
  try:
    while True:
      records = cursor.take()
      if not records:
        return
      yield from records
  finally:
    cursor.close()


def write_records(path: str, records: Iterable[bytes]) -> None:
  """A TFRecord file of `records` (for tests and tools; the data builder uses TensorFlow's)."""
  with open(path, "wb") as f:
    for data in records:
      header = struct.pack("<Q", len(data))
      f.write(header + _FOOTER.pack(masked_crc32c(header)) + data
              + _FOOTER.pack(masked_crc32c(data)))


def tfrecord_files(patterns: str) -> List[str]:
  """The sorted files matching comma-separated glob patterns, unfinished writes (`*.tmp`,
  `*.tmp-*`) left out; local patterns with `glob`, remote ones (gs://) with
  `tf.io.gfile`."""
  files: List[str] = []
  for pattern in patterns.split(","):
    pattern = pattern.strip()
    if is_remote(pattern):
      files.extend(import_tensorflow(f"reading {pattern}").io.gfile.glob(pattern))
    elif pattern:
      files.extend(glob.glob(pattern))
  return finished_files(files)


def finished_files(files: Sequence[str]) -> List[str]:
  """`files` sorted and deduplicated, the data builder's unfinished writes left out."""
  return sorted(set(f for f in files if not f.endswith(".tmp") and ".tmp-" not in f))


# -- tf.train.Example -------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def example_class():
  """The `tensorflow.Example` message class (example.proto, feature.proto), made here."""
  from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # pylint: disable=g-import-not-at-top
  field = descriptor_pb2.FieldDescriptorProto
  proto = descriptor_pb2.FileDescriptorProto(
      name="electra_tf2/data_io/example.proto", package="tensorflow", syntax="proto3")

  def message(name, fields, parent=None):
    added = (parent.nested_type if parent else proto.message_type).add(name=name)
    for number, (field_name, kind, label, type_name, oneof) in enumerate(fields, start=1):
      added.field.add(name=field_name, number=number, type=kind, label=label,
                      **({"type_name": type_name} if type_name else {}),
                      **({"oneof_index": 0} if oneof else {}))
    return added

  repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
  message("BytesList", [("value", field.TYPE_BYTES, repeated, None, False)])
  message("FloatList", [("value", field.TYPE_FLOAT, repeated, None, False)])
  message("Int64List", [("value", field.TYPE_INT64, repeated, None, False)])
  feature = message("Feature", [
      ("bytes_list", field.TYPE_MESSAGE, optional, ".tensorflow.BytesList", True),
      ("float_list", field.TYPE_MESSAGE, optional, ".tensorflow.FloatList", True),
      ("int64_list", field.TYPE_MESSAGE, optional, ".tensorflow.Int64List", True)])
  feature.oneof_decl.add(name="kind")
  features = message("Features", [("feature", field.TYPE_MESSAGE, repeated,
                                   ".tensorflow.Features.FeatureEntry", False)])
  entry = message("FeatureEntry", [
      ("key", field.TYPE_STRING, optional, None, False),
      ("value", field.TYPE_MESSAGE, optional, ".tensorflow.Feature", False)], parent=features)
  entry.options.map_entry = True
  message("Example", [("features", field.TYPE_MESSAGE, optional, ".tensorflow.Features",
                       False)])
  pool = descriptor_pool.DescriptorPool()
  pool.Add(proto)
  return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.Example"))


def _packed_payload(serialized: bytes) -> bytes:
  """The varints of a serialized Int64List (one packed field 1: tag, length, varints)."""
  if not serialized:
    return b""
  index, length, shift = 1, 0, 0
  while True:  # the length varint after the tag byte 0x0a
    byte = serialized[index]
    length |= (byte & 0x7F) << shift
    index, shift = index + 1, shift + 7
    if byte < 0x80:
      return serialized[index:index + length]


def decode_varints(buffer: np.ndarray) -> np.ndarray:
  """Every base-128 varint of a uint8 buffer (ending on a varint's last byte) as int64
  (bits past the 64th of an over-long varint dropped, as protobuf drops them)."""
  ends = np.flatnonzero(buffer < 0x80)
  if not len(ends):
    return np.zeros(0, np.int64)
  starts = np.concatenate([[0], ends[:-1] + 1])
  size = ends - starts + 1
  values = (buffer[starts] & 0x7F).astype(np.uint64)
  for k in range(1, min(int(size.max()), 10)):
    part = (buffer[np.minimum(starts + k, ends)] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    values |= np.where(size > k, part, np.uint64(0))
  return values.view(np.int64)


def parse_int64_features(records: Sequence[bytes], names: Sequence[str], length: int,
                         where: Callable[[int], str]) -> List[np.ndarray]:
  """The int64 features `names` of serialized Examples, each `[len(records), length]`
  int64. Each record is parsed by protobuf; the values of a batch are then decoded from
  their packed varints at once with numpy (protobuf's repeated fields cost about 10 us per
  feature to convert). A record that is no Example, lacks a feature or has another length
  is a DataError naming `where(i)` of record i."""
  message = example_class()
  payloads: List[List[bytes]] = [[] for _ in names]
  for i, record in enumerate(records):
    example = message()
    try:
      example.ParseFromString(record)
    except Exception:  # protobuf's DecodeError, by backend  # pylint: disable=broad-except
      raise DataError(f"{where(i)} is not a tf.train.Example: rebuild the data") from None
    features = example.features.feature
    for name, column in zip(names, payloads):
      feature = features.get(name)
      if feature is None:
        raise DataError(f"{where(i)} has no feature {name!r}: it is not ELECTRA "
                        "pre-training data")
      column.append(_packed_payload(feature.int64_list.SerializeToString()))
  values = []
  for name, column in zip(names, payloads):
    buffer = np.frombuffer(b"".join(column), np.uint8)
    sizes = np.fromiter(map(len, column), np.int64, len(column))
    last_bytes = np.concatenate([[0], np.cumsum(buffer < 0x80)])
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    counts = last_bytes[bounds[1:]] - last_bytes[bounds[:-1]]
    if np.any(counts != length):
      i = int(np.flatnonzero(counts != length)[0])
      raise DataError(f"{where(i)}: feature {name} has length {counts[i]} but max_seq_length "
                      f"is {length}; pass --hparams '{{\"max_seq_length\": {counts[i]}}}' or "
                      "rebuild the data with --max-seq-length")
    values.append(decode_varints(buffer).reshape(len(records), length))
  return values


def int64_example(features: Dict[str, Sequence[int]]) -> bytes:
  """A serialized Example of int64 features (for tests and tools), its feature map in key
  order (protobuf's deterministic serialization: the same bytes in every process)."""
  example = example_class()()
  for name, values in features.items():
    example.features.feature[name].int64_list.value.extend(int(v) for v in values)
  return example.SerializeToString(deterministic=True)
