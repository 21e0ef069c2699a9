"""An `ElectraPretrainer`'s weights (and its optimizer's slots) as arrays by official name.

What a portable checkpoint (electra_tf2/checkpoints/portable.py) holds, on every Keras
backend: `<official name>` for each pre-trainer variable, `<official name>/adam_m` and
`/adam_v` for AdamWeightDecay's slots, `global_step`; Keras state variables that have no
official name (the dropout seed generators) go by Keras path into the checkpoint's state.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np
from keras import ops

from electra_tf2.networks import variable_names
from electra_tf2.checkpoints.portable import PortableCheckpointError

GLOBAL_STEP = "global_step"


def _numpy(variable) -> np.ndarray:
  return np.asarray(ops.convert_to_numpy(variable))


def arrays_of(model, optimizer=None, global_step: int = 0) -> Tuple[Dict[str, np.ndarray],
                                                                   Dict[str, Any]]:
  """(arrays by official name, Keras state variables by path as lists) of `model`."""
  arrays = {name: _numpy(v) for name, v in variable_names.pretrainer_variable_map(model).items()}
  if optimizer is not None:
    arrays.update({name: _numpy(v) for name, v in optimizer.slot_variables_by_official_name()
                   .items()})
  arrays[GLOBAL_STEP] = np.asarray(global_step, np.int64)
  state = {v.path: _numpy(v).tolist() for v in model.non_trainable_variables}
  return arrays, {"keras_state": state}


def assign(model, arrays: Dict[str, np.ndarray], optimizer=None,
           state: Optional[Dict[str, Any]] = None, where: str = "the checkpoint") -> bool:
  """Assigns `arrays` (from `arrays_of`) to `model` (and the optimizer's slots, when
  the arrays hold them); returns whether they did. One line naming what does not fit."""
  names = variable_names.pretrainer_variable_map(model)
  missing = [name for name in names if name not in arrays]
  if missing:
    raise PortableCheckpointError(f"{where} lacks {len(missing)} variables of this model "
                                  f"(e.g. {missing[0]}): it holds another model")
  for name, variable in names.items():
    _assign(variable, arrays[name], name, where)
  slots_present = False
  if optimizer is not None:
    slots = optimizer.slot_variables_by_official_name()
    slots_present = all(name in arrays for name in slots)
    if slots_present:
      for name, variable in slots.items():
        _assign(variable, arrays[name], name, where)
  for variable in model.non_trainable_variables:
    saved = (state or {}).get("keras_state", {}).get(variable.path)
    if saved is not None and np.shape(saved) == tuple(variable.shape):
      # Dropout seed states; another backend's (other dtype) start the streams afresh.
      try:
        variable.assign(np.asarray(saved, dtype=variable.dtype))
      except (OverflowError, ValueError):
        pass
  return slots_present


def _assign(variable, value: np.ndarray, name: str, where: str) -> None:
  if tuple(variable.shape) != value.shape:
    raise PortableCheckpointError(f"{where}: {name} has shape {value.shape}, this model "
                                  f"{tuple(variable.shape)}: it holds another model")
  variable.assign(value.astype(variable.dtype))


def global_step_of(arrays: Dict[str, np.ndarray]) -> int:
  return int(arrays.get(GLOBAL_STEP, 0))
