"""A double-array trie in the darts-clone layout, which tensorflow-text's kernels read.

tensorflow-text's FastBertNormalizer (and FastWordpieceTokenizer) models hold a
darts-clone trie: a uint32 array where the child of node `i` on byte `c` is
node `i ^ offset(unit[i]) ^ c` if that unit's label is `c`, and a node with a
value has a leaf child on byte 0 whose unit is `value | 0x80000000`
(tensorflow_text/core/kernels/darts_clone_trie_wrapper.h). `build_trie` writes
that layout for a set of byte-string keys, so that we can build a normalizer
model of our own (electra_tf2/text/litert_tokenizer.py).

Each node's children sit at `base ^ c` for a base no other node uses, so a
lookup that follows a byte the node has no child for lands on a unit of another
label (or an empty one) and fails, as in darts-clone.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

_LEAF = 0x80000000
_HAS_LEAF = 0x100
_EXTENSION = 0x200
_MAX_VALUE = 0x7FFFFFFF


def _encode_offset(offset: int) -> int:
  """The unit bits that hold `offset` (bits 10-30, or 10-30 << 8 with bit 9)."""
  if offset < 1 << 21:
    return offset << 10
  if offset % 256 or offset >= 1 << 29:
    raise ValueError(f"darts trie offset {offset} cannot be encoded")
  return (offset >> 8) << 10 | _EXTENSION


def build_trie(items: Dict[bytes, int]) -> np.ndarray:
  """{key: value} -> the darts-clone unit array (uint32). Keys are non-empty and hold
  no NUL byte; values are in [0, 2**31)."""
  root: dict = {}
  for key, value in items.items():
    if not key or b"\0" in key or not 0 <= value <= _MAX_VALUE:
      raise ValueError(f"bad darts trie entry {key!r}: {value}")
    node = root
    for byte in key:
      node = node.setdefault(byte, {})
    node[None] = value
  units = np.zeros(1 << 16, np.uint32)
  used = np.zeros(1 << 16, bool)
  used[0] = True  # the root
  bases = set()
  stack = [(0, root)]
  while stack:
    node_id, node = stack.pop()
    labels = np.array(sorted(0 if k is None else k for k in node), np.int64)
    base = _find_base(labels, used, bases)
    bases.add(base)
    top = base ^ 255 | 255
    if top >= len(used):  # room for any label of this base
      grow = max(top + 1, 2 * len(used)) - len(used)
      used = np.concatenate([used, np.zeros(grow, bool)])
      units = np.concatenate([units, np.zeros(grow, np.uint32)])
    units[node_id] |= _encode_offset(node_id ^ base) | (_HAS_LEAF if None in node else 0)
    used[base ^ labels] = True
    for key, child in node.items():
      if key is None:
        units[base] = child | _LEAF
      else:
        units[base ^ key] = key
        stack.append((base ^ key, child))
  return units[:np.flatnonzero(used)[-1] + 1]


def _find_base(labels: np.ndarray, used: np.ndarray, bases: set) -> int:
  """The first base (not taken) whose slots for `labels` are all free."""
  size = len(used)
  lo = int(np.argmin(used))  # the first free slot
  while lo < size:
    free = np.flatnonzero(~used[lo:lo + 4096]) + lo
    candidates = free ^ labels[0]
    slots = candidates[:, None] ^ labels[None, :]
    clash = (slots == 0) | np.where(slots < size, used[np.minimum(slots, size - 1)], False)
    for base in candidates[~clash.any(axis=1)]:
      if int(base) not in bases:
        return int(base)
    lo += 4096
  base = (size | 255) + 1  # past every slot in use: all free
  while base in bases:
    base += 256
  return base

