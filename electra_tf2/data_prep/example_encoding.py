"""Example encoding: (segment A, segment B) -> serialized tf.train.Example bytes.

The official features (build_pretraining_dataset.py:97-114), written straight
to protobuf bytes without building protos.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Dict, List


def varint(n: int) -> bytes:
  """The protobuf base-128 encoding of a non-negative int."""
  out = bytearray()
  while True:
    byte = n & 0x7F
    n >>= 7
    if n:
      out.append(byte | 0x80)
    else:
      out.append(byte)
      return bytes(out)


def _len_field(tag: int, payload: bytes) -> bytes:
  return bytes((tag,)) + varint(len(payload)) + payload


class ExampleEncoder:
  """[CLS] A [SEP] (B [SEP]) -> the official features, as serialized tf.train.Example bytes.

  input_ids = [CLS] A [SEP] (+ B [SEP]), segment ids 0 for the first part and
  1 for B [SEP], input_mask 1 on real tokens, all int64 [max_length],
  zero-padded (official _make_tf_example). The bytes equal
  tf.train.Example(...).SerializeToString(deterministic=True) for the same
  features: map entries in key order. (Plain SerializeToString() may order a
  protobuf map any way, so the official bytes were never reproducible; the
  parsed examples are what must match.)
  """

  def __init__(self, vocab_size: int, max_length: int, cls_id: int, sep_id: int):
    self.max_length = max_length
    self.cls_id = cls_id
    self.sep_id = sep_id
    self._varints = [varint(i) for i in range(max(vocab_size, 16 * max_length + 64))]
    # input_mask and segment_ids hold 0/1 only: one byte per value, so their
    # fields have a fixed length and a constant header.
    def fixed_field_prefix(key: bytes) -> bytes:
      packed_len = max_length
      inner_len = 1 + len(varint(packed_len)) + packed_len
      feature_len = 1 + len(varint(inner_len)) + inner_len
      entry_len = len(_len_field(0x0A, key)) + 1 + len(varint(feature_len)) + feature_len
      return (b"\x0a" + varint(entry_len) + _len_field(0x0A, key) + b"\x12"
              + varint(feature_len) + b"\x1a" + varint(inner_len) + b"\x0a"
              + varint(packed_len))
    self._mask_prefix = fixed_field_prefix(b"input_mask")
    self._segment_prefix = fixed_field_prefix(b"segment_ids")
    self._ids_key = _len_field(0x0A, b"input_ids")

  def features(self, first: List[int], second: List[int]) -> Dict[str, List[int]]:
    """The three feature lists, each [max_length]."""
    input_ids = [self.cls_id] + first + [self.sep_id]
    segment_ids = [0] * len(input_ids)
    if second:
      input_ids += second + [self.sep_id]
      segment_ids += [1] * (len(second) + 1)
    input_mask = [1] * len(input_ids)
    pad = self.max_length - len(input_ids)
    return {"input_ids": input_ids + [0] * pad, "input_mask": input_mask + [0] * pad,
            "segment_ids": segment_ids + [0] * pad}

  def encode(self, first: List[int], second: List[int]) -> bytes:
    """The serialized tf.train.Example of features(first, second)."""
    v = self._varints
    n_first = len(first) + 2
    ids = [self.cls_id] + first
    ids.append(self.sep_id)
    if second:
      ids += second
      ids.append(self.sep_id)
    n = len(ids)
    zeros = b"\x00" * (self.max_length - n)
    packed_ids = b"".join(itemgetter(*ids)(v)) + zeros
    inner = b"\x0a" + v[len(packed_ids)] + packed_ids
    feature = b"\x1a" + v[len(inner)] + inner
    entry = self._ids_key + b"\x12" + v[len(feature)] + feature
    features = b"".join([b"\x0a", v[len(entry)], entry,
                         self._mask_prefix, b"\x01" * n, zeros,
                         self._segment_prefix, b"\x00" * n_first, b"\x01" * (n - n_first), zeros])
    return b"\x0a" + v[len(features)] + features
