"""`tf.train.Example` records of int64 features decoded a batch at a time with numpy.

The records `electra build-data` writes (TensorFlow's serialization of
tensorflow/core/example/{example,feature}.proto) all have one layout::

  Example   0x0a len Features
  Features  (0x0a len FeatureEntry) per feature, in any order
  Entry     0x0a keylen key | 0x12 len Feature
  Feature   0x1a len Int64List
  Int64List 0x0a len varint...    (one packed field)

`int64_features` walks that layout for every record of a batch at once: each step
(a tag, a length, a key) is one numpy operation over the batch, not one Python call
per record, and the packed values of all records are decoded together. A record of
another layout (unpacked values, other fields, a missing or empty feature, damage)
sends the batch to `tfrecord.parse_int64_features` (protobuf, record by record),
which decodes what protobuf accepts and refuses the rest in one line naming the
record: the values are the same either way.
"""

from __future__ import annotations

import functools
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.data_io.tfrecord import parse_int64_features

_PAD = 16  # zero bytes around the batch: reads just past its ends stay in bounds


class _Mismatch(Exception):
  """A record is not of the common layout (the protobuf path decides what it is)."""


def _expect(condition: np.ndarray) -> None:
  if not np.all(condition):
    raise _Mismatch()


def _lengths_at(buffer: np.ndarray, pos: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """The varint (a length, at most 5 bytes) at each of `pos`, and the positions after it."""
  value = buffer[pos].astype(np.int64)
  going = value >= 0x80
  if not going.any():  # one byte each: the common case
    return value, pos + 1
  value &= 0x7F
  size = np.ones(len(pos), np.int64)
  for k in range(1, 5):
    size += going
    byte = buffer[pos + k].astype(np.int64)
    value += np.where(going, (byte & 0x7F) << (7 * k), 0)
    going &= byte >= 0x80
    if not going.any():
      return value, pos + size
  raise _Mismatch()


def _key_at(buffer: np.ndarray, pos: np.ndarray, keys: Sequence[bytes]) -> int:
  """Which of `keys` the string field (0x0a len bytes) at every one of `pos` holds: the
  first record's key, which every record must hold there."""
  length = int(buffer[pos[0] + 1])
  key = buffer[pos[0] + 2:pos[0] + 2 + length].tobytes()
  if key not in keys:
    raise _Mismatch()
  field = np.frombuffer(bytes([0x0A, length]) + key, np.uint8)
  _expect(buffer[pos[:, None] + np.arange(len(field))] == field)
  return keys.index(key)


def _payloads(buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              keys: Sequence[bytes]) -> Tuple[np.ndarray, np.ndarray]:
  """[len(keys), records] start and length of each record's packed values per key (the
  features in the same order in every record)."""
  where = np.zeros((len(keys), len(starts)), np.int64)
  size = np.zeros((len(keys), len(starts)), np.int64)
  _expect(buffer[starts] == 0x0A)
  length, pos = _lengths_at(buffer, starts + 1)
  _expect(pos + length == ends)
  seen = set()
  for _ in keys:
    _expect(buffer[pos] == 0x0A)
    length, pos = _lengths_at(buffer, pos + 1)
    entry_end = pos + length
    _expect(entry_end <= ends)
    key = _key_at(buffer, pos, keys)
    if key in seen:
      raise _Mismatch()
    seen.add(key)
    pos = pos + 2 + len(keys[key])
    for tag in (0x12, 0x1A, 0x0A):  # Feature, Int64List, its packed values
      _expect(buffer[pos] == tag)
      length, pos = _lengths_at(buffer, pos + 1)
      _expect(pos + length == entry_end)
    where[key], size[key] = pos, length
    pos = entry_end
  _expect(pos == ends)
  return where, size


def _values(buffer: np.ndarray, ends: Callable[[], np.ndarray], where: np.ndarray,
            size: np.ndarray, length: int) -> np.ndarray:
  """The packed varints of each record ([records, length]) in the spans `where[i]:where[i]
  + size[i]` of `buffer`, each of which must hold exactly `length` varints and end on one.
  `ends()` gives the positions of every byte under 0x80 in `buffer` (varints' last bytes)."""
  if np.all(size == length):  # one byte each (masks, segments): the bytes are the values
    values = buffer[where[:, None] + np.arange(length)]
    _expect(values < 0x80)
    return values
  ends = ends()
  first = np.searchsorted(ends, where)
  stop = np.searchsorted(ends, where + size)
  _expect((stop - first == length) & (ends[np.maximum(stop - 1, 0)] == where + size - 1))
  last = ends[first[:, None] + np.arange(length)]
  # A byte of 0x80 or more belongs to the varint that ends after it; the byte before a span
  # (its length's last byte) is under 0x80, so no varint reaches back out of its span.
  values = _short_varints(buffer, last)
  return values if values is not None else _long_varints(buffer, last)


def _short_varints(buffer: np.ndarray, last: np.ndarray) -> Optional[np.ndarray]:
  """The varints ending at `last` when none is longer than 4 bytes (else None), from the
  4 bytes up to each end read as one little-endian uint32: the 7-bit groups packed into
  28 bits, then shifted right past the groups of bytes that belong to earlier varints."""
  count = len(buffer) // 4 - 1
  words = np.empty(4 * count, np.uint32)  # words[p]: the uint32 at byte p
  for shift in range(4):
    words[shift::4] = np.frombuffer(buffer, "<u4", count, shift)
  word = words[last - 3]
  flags = word & np.uint32(0x80808080)
  if np.any((flags == 0x808080) & (buffer[last - 4] >= 0x80)):  # a fifth byte
    return None
  packed = ((word & np.uint32(0x7F)) | ((word >> np.uint32(1)) & np.uint32(0x3F80))
            | ((word >> np.uint32(2)) & np.uint32(0x1FC000))
            | ((word >> np.uint32(3)) & np.uint32(0xFE00000)))
  continued = (flags >> np.uint32(23)).astype(np.uint8)  # byte last-1 continues into last
  before = continued & (flags >> np.uint32(15)).astype(np.uint8)
  extra = continued + before + (before & (flags >> np.uint32(7)).astype(np.uint8))
  return (packed >> (np.uint32(21) - np.uint32(7) * extra)).astype(np.int32)


def _long_varints(buffer: np.ndarray, last: np.ndarray) -> np.ndarray:
  """The varints ending at `last`, of any length up to 10 bytes, as int64: going back
  from each last byte, every earlier byte of a varint is its next 7 lower bits (bits past
  the 64th dropped, as protobuf drops them)."""
  values = (buffer[last] & 0x7F).astype(np.uint64)
  going = buffer[last - 1] >= 0x80
  for k in range(1, 10):
    if not going.any():
      break
    part = (buffer[last - k] & 0x7F).astype(np.uint64)
    values = np.where(going, (values << np.uint64(7)) | part, values)
    going &= buffer[last - k - 1] >= 0x80
  _expect(~going)  # longer than 10 bytes: not protobuf
  return values.view(np.int64)


def int64_features(records: Sequence[bytes], names: Sequence[str], length: int,
                   where: Callable[[int], str]) -> List[np.ndarray]:
  """`tfrecord.parse_int64_features(records, names, length, where)`, a batch at a time."""
  values = vectorised_int64_features(records, names, length)
  if values is None:
    return parse_int64_features(records, names, length, where)
  return [value.astype(np.int64) for value in values]


def vectorised_int64_features(records: Sequence[bytes], names: Sequence[str], length: int
                              ) -> Optional[List[np.ndarray]]:
  """The features `names` of `records` ([len(records), length] each, of an integer type
  that holds them: uint8, int32 or int64) when every record has the common layout, else
  None."""
  sizes = np.fromiter(map(len, records), np.int64, len(records))
  ends = np.cumsum(sizes)
  buffer = np.frombuffer(bytes(_PAD) + b"".join(records) + bytes(_PAD), np.uint8)
  keys = [name.encode() for name in names]
  try:
    where, size = _payloads(buffer, ends - sizes + _PAD, ends + _PAD, keys)
    ends = functools.lru_cache(None)(lambda: np.flatnonzero(buffer < 0x80))
    return [_values(buffer, ends, where[i], size[i], length) for i in range(len(keys))]
  except (_Mismatch, IndexError):  # IndexError: a length past the batch's end
    return None
