"""Portable checkpoints: a model directory's weights as `.npz`, read and written without TensorFlow.

`portable-<step>.npz` holds arrays by official checkpoint name (the pre-trainer's
variables, `<name>/adam_m` and `<name>/adam_v` Adam slots, `global_step`), and
`portable-<step>.json` what else a resumed run needs (the input position, the
Keras state variables by path). The JAX trainer writes only these; every
TensorFlow tool reads them where they are newer than the directory's `ckpt-N`
(checkpoints/directories.py `newest_checkpoint`), and `electra convert to-portable` writes one
from a TensorFlow run so that JAX can continue it.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
import zlib
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from electra_tf2.utils.atomic_io import atomic_path, write_json_atomic
from electra_tf2.utils.errors import ElectraError

PREFIX = "portable-"
_NAME = re.compile(r"^portable-(\d+)\.npz$")


class PortableCheckpointError(ElectraError, ValueError):
  """A portable checkpoint that is missing, damaged or of another model."""


def path_for(model_dir: str, step: int) -> str:
  """`model_dir/portable-<step>.npz`."""
  return os.path.join(model_dir, f"{PREFIX}{step}.npz")


def state_path(path: str) -> str:
  """The `.json` beside the `.npz` at `path`: what else a resumed run needs."""
  return path[:-len(".npz")] + ".json"


def is_portable(path: Optional[str]) -> bool:
  return bool(path) and _NAME.match(os.path.basename(path)) is not None


def step_of(path: str) -> int:
  return int(_NAME.match(os.path.basename(path)).group(1))


def all_checkpoints(model_dir: str) -> List[str]:
  """Every complete portable checkpoint of `model_dir`, oldest first."""
  if not os.path.isdir(model_dir):
    return []
  paths = [os.path.join(model_dir, name) for name in os.listdir(model_dir) if _NAME.match(name)]
  return sorted(paths, key=step_of)


def latest(model_dir: str) -> Optional[str]:
  """The portable checkpoint of the highest step in `model_dir`, or None."""
  paths = all_checkpoints(model_dir)
  return paths[-1] if paths else None


def save(model_dir: str, step: int, arrays: Dict[str, np.ndarray], state: Dict[str, Any],
         keep: Optional[int] = None) -> str:
  """Writes `portable-<step>.json` then `.npz` (each under a temporary name, then renamed:
  the `.npz` marks a complete checkpoint); keeps it and the `keep` - 1 newest others (one
  of a lower step than a checkpoint already there included). Returns the `.npz`."""
  os.makedirs(model_dir, exist_ok=True)
  path = path_for(model_dir, step)
  write_json_atomic(state_path(path), dict(state, global_step=step))
  with atomic_path(path) as tmp:
    with open(tmp, "wb") as f:
      np.savez(f, **arrays)
  if keep:
    others = [p for p in all_checkpoints(model_dir) if p != path]
    for old in others[:max(0, len(others) - (keep - 1))]:
      for name in (old, state_path(old)):
        if os.path.exists(name):
          os.remove(name)
  return path


def load(path: str) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
  """(arrays by name, state) of a portable checkpoint; one line if it cannot be read."""
  return _read(path, _read_arrays), _read(state_path(path), _read_state)


def _read(path: str, read):
  """`read(path)`; a damaged file (truncated, bit-flipped, not what it should be) in one line."""
  try:
    return read(path)
  except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as e:
    reason = (str(e).splitlines() or [""])[0] or type(e).__name__
    raise PortableCheckpointError(f"{path} cannot be read ({reason}): resume from an earlier "
                                  "checkpoint or delete it") from None


def _read_arrays(path: str) -> Dict[str, np.ndarray]:
  with np.load(path, allow_pickle=False) as data:
    return {name: data[name] for name in data.files}


def _read_state(path: str) -> Dict[str, Any]:
  """The `.json` state ({} where it is missing: the weights are whole without it)."""
  if not os.path.exists(path):
    return {}
  with open(path, encoding="utf-8") as f:
    state = json.load(f)
  if not isinstance(state, dict):
    raise ValueError(f"a JSON object expected, got {type(state).__name__}")
  return state
