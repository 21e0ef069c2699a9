"""TensorBoard event files written without TensorFlow (scalars only).

An event file is a TFRecord file (electra_tf2/data_io/tfrecord.py's framing) of
`Event` protocol buffers (tensorflow/core/util/event.proto): the first holds
`file_version` "brain.Event:2", each later one a `Summary` of `simple_value`
scalars. The messages are encoded here by hand: five fields, no protoc.
TensorBoard reads the files as it reads `tf.summary`'s.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from typing import Mapping

from electra_tf2.data_io.tfrecord import masked_crc32c
from electra_tf2.data_prep.example_encoding import varint


def _field(number: int, payload: bytes) -> bytes:
  """A length-delimited field (wire type 2)."""
  return varint(number << 3 | 2) + varint(len(payload)) + payload


def event(step: int, wall_time: float, scalars: Mapping[str, float] = None,
          file_version: str = None) -> bytes:
  """One serialized `Event`: wall_time (1, double), step (2, int64), file_version (3),
  summary (5) of `Value`s with tag (1) and simple_value (2, float)."""
  message = b"\x09" + struct.pack("<d", wall_time) + b"\x10" + varint(step)
  if file_version is not None:
    message += _field(3, file_version.encode())
  if scalars:
    values = b"".join(_field(1, _field(1, tag.encode()) + b"\x15" + struct.pack("<f", value))
                      for tag, value in scalars.items())
    message += _field(5, values)
  return message


class EventWriter:
  """Appends scalar summaries to `directory/events.out.tfevents.<time>.<host>`."""

  def __init__(self, directory: str):
    os.makedirs(directory, exist_ok=True)
    now = time.time()
    self.path = os.path.join(directory, f"events.out.tfevents.{int(now)}.{socket.gethostname()}")
    self._file = open(self.path, "ab")  # pylint: disable=consider-using-with
    self._write(event(0, now, file_version="brain.Event:2"))

  def _write(self, record: bytes) -> None:
    header = struct.pack("<Q", len(record))
    self._file.write(header + struct.pack("<I", masked_crc32c(header)) + record
                     + struct.pack("<I", masked_crc32c(record)))

  def scalars(self, step: int, values: Mapping[str, float]) -> None:
    self._write(event(step, time.time(), {k: float(v) for k, v in values.items()}))
    self._file.flush()

  def close(self) -> None:
    self._file.close()
