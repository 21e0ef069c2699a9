"""What Keras users pass to fit, evaluate and predict, as the tensors Keras reads.

Keras takes numbers from Python lists and numpy arrays, not strings: a list of
str stops inside Keras ("Unrecognized data type") and so does a numpy array of
str ("Invalid dtype: str..."). For the models on raw text, `keras_arguments`
turns
- x: a list or 1-D numpy array of str or bytes, or a tuple (or list) of two of them
  (pairs; questions and contexts), into the model's inputs: `to_inputs` of the
  checked texts (object arrays), which is tf.string tensors on TensorFlow and the
  tokenizer's id features on the other backends (models/text_model.py);
- y and sample_weight: lists into numpy arrays (the model's `prepare_labels` may
  reshape them: TokenClassifier pads tag lists, QuestionAnswerer reads spans);
- validation_data: `(x, y)` or `(x, y, sample_weight)` the same way;
so that Keras batches, shuffles and weights them as it does arrays. What Keras
would stop on deep inside (an empty list, a text that is not a string, lengths
that differ) is one line naming the argument. Datasets, tensors, generators
and `keras.utils.PyDataset`s pass unchanged, and so do dicts of token-id features.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.utils.errors import ElectraError

# The checked texts of x (one object array per column) -> the model's inputs.
ToInputs = Callable[[Tuple[np.ndarray, ...]], Any]


class InputDataError(ElectraError, ValueError):
  """Data passed to fit, evaluate or predict that the model cannot read; one line naming it."""


def bind(method: Callable, args: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
  """The arguments of a call to the Keras `method` (fit, evaluate, predict) by name."""
  arguments = dict(inspect.signature(method).bind_partial(None, *args, **kwargs).arguments)
  arguments.pop(next(iter(arguments)))  # self
  arguments.update(arguments.pop("kwargs", {}))
  return arguments


def keras_arguments(arguments: Dict[str, Any], n_texts: Tuple[int, ...],
                    prepare_labels: Callable[[Any, str, Any], Any],
                    to_inputs: ToInputs) -> Dict[str, Any]:
  """`arguments` (from `bind`) with x, y, sample_weight and validation_data converted.

  n_texts: how many texts a row may have (1, 2 or both); prepare_labels(y, name, x)
  converts the labels (`numbers` by default), given the converted x; to_inputs makes
  the model's inputs of the checked text columns.
  """
  arguments = dict(arguments)
  names = {"x": "x", "y": "y", "sample_weight": "sample_weight"}
  converted = convert(*(arguments.get(k) for k in names), n_texts, prepare_labels, names,
                      to_inputs)
  arguments.update({k: v for k, v in zip(names, converted) if k in arguments or v is not None})
  validation = arguments.get("validation_data")
  if isinstance(validation, (tuple, list)) and len(validation) in (2, 3):
    padded = tuple(validation) + (None,) * (3 - len(validation))
    names = {k: f"validation_data[{i}]" for i, k in enumerate(names)}
    arguments["validation_data"] = convert(*padded, n_texts, prepare_labels, names,
                                           to_inputs)[:len(validation)]
  return arguments


def convert(x, y, sample_weight, n_texts: Tuple[int, ...],
            prepare_labels: Callable[[Any, str, Any], Any], names: Dict[str, str],
            to_inputs: ToInputs):
  """(x, y, sample_weight) as Keras reads them (see the module docstring)."""
  x = texts(x, names["x"], n_texts)
  if isinstance(x, tuple) and all(isinstance(t, np.ndarray) for t in x):
    x = to_inputs(x)
  rows = n_rows(x)
  if y is not None:
    y = prepare_labels(y, names["y"], x)
    _check_rows(y, rows, names["y"], names["x"])
  if sample_weight is not None:
    sample_weight = numbers(sample_weight, names["sample_weight"])
    _check_rows(sample_weight, rows, names["sample_weight"], names["x"])
  return x, y, sample_weight


def _passes(value) -> bool:
  """Data Keras reads itself: tensors, datasets, generators, PyDatasets, dicts, None."""
  return value is None or not isinstance(value, (list, tuple, np.ndarray))


def string_tensor_values(value) -> Optional[np.ndarray]:
  """The texts of a 1-D tf.string tensor as an object array; None for anything else.
  (Only TensorFlow makes such tensors: without it loaded, nothing is one.)"""
  tf = sys.modules.get("tensorflow")
  if tf is None or not tf.is_tensor(value) or value.dtype != tf.string or \
      value.shape.rank != 1:
    return None
  return value.numpy().astype(object)


def texts(x, name: str, n_texts: Tuple[int, ...]):
  """A list/array of strings -> `(column,)`, two of them (pairs) -> `(column_a, column_b)`:
  object arrays of str/bytes, checked. Tensors, datasets and the rest pass as they are."""
  if isinstance(x, (str, bytes)):
    raise InputDataError(f"{name} is one string, not a list of texts: give a list, e.g. "
                         f"[{x!r:.40}]")
  if _passes(x):
    return x
  if isinstance(x, (tuple, list)) and len(x) == 2 and all(
      isinstance(t, (list, tuple, np.ndarray)) or _is_tensor(t) for t in x):
    if 2 not in n_texts:
      raise InputDataError(f"{name}: this model takes one text per row, not a pair of lists")
    a, b = (_column(t, f"{name}[{i}]") for i, t in enumerate(x))
    rows_a, rows_b = n_rows(a), n_rows(b)
    if None not in (rows_a, rows_b) and rows_a != rows_b:
      raise InputDataError(f"{name}: its two lists have {rows_a} and {rows_b} rows; give as "
                           "many of each")
    if isinstance(a, np.ndarray) != isinstance(b, np.ndarray):  # a list and a tensor
      a, b = (string_tensor_values(t) if _is_tensor(t) else t for t in (a, b))
    return a, b
  if 1 not in n_texts:
    raise InputDataError(f"{name}: this model takes a pair of lists (a tuple of two lists "
                         "of strings), not a single list")
  return (_column(x, name),)


def _is_tensor(value) -> bool:
  return not isinstance(value, (list, tuple, np.ndarray)) and hasattr(value, "shape")


def _column(values, name: str):
  """A list or 1-D array of str/bytes as an object array `[n]` (a tensor as it is); one
  line on anything else."""
  if _is_tensor(values):
    return values
  if isinstance(values, np.ndarray):
    if values.ndim != 1:
      raise InputDataError(f"{name}: expected a 1-D array of strings, got shape {values.shape}")
    if values.dtype.kind not in "USO":
      raise InputDataError(f"{name}: expected strings, got a numpy array of {values.dtype}")
    values = values.tolist()
  if not isinstance(values, (list, tuple)):
    raise InputDataError(f"{name}: expected a list of strings, got {type(values).__name__}")
  if not values:
    raise InputDataError(f"{name} is empty: give at least one text")
  for i, value in enumerate(values):
    if not isinstance(value, (str, bytes)):
      raise InputDataError(f"{name}[{i}] is {type(value).__name__} {value!r:.40}, not a string")
    if isinstance(value, str):
      try:
        value.encode("utf-8")
      except UnicodeEncodeError:
        raise InputDataError(f"{name} holds a str that is not valid Unicode (a lone "
                             "surrogate)") from None
  column = np.empty(len(values), dtype=object)
  column[:] = values
  return column


def numbers(values, name: str, dtype=None) -> np.ndarray:
  """Labels or weights as a numeric numpy array; one line on strings, None or ragged rows."""
  if _passes(values):
    return values
  if isinstance(values, (list, tuple)) and not values:
    raise InputDataError(f"{name} is empty")
  try:
    array = np.asarray(values)
  except ValueError:
    raise InputDataError(f"{name}: rows of different lengths") from None
  if array.dtype.kind in "USO" and array.size and all(
      isinstance(v, (str, bytes)) for v in array.flat):
    first = array.flat[0]
    if all(_is_number(v) for v in array.flat):
      raise InputDataError(f"{name} holds numbers as strings ({first!r}, as csv.reader gives "
                           f"them): convert them, e.g. {name} = [int(v) for v in {name}]")
    raise InputDataError(f"{name} holds strings ({first!r}): give class ids 0, 1, ... as "
                         f"numbers, e.g. {name} = [names.index(v) for v in {name}] with names "
                         "the class names in id order")
  if array.dtype.kind not in "biuf":
    raise InputDataError(f"{name}: expected numbers, got values of type "
                         f"{type(array.flat[0]).__name__ if array.size else array.dtype.name}")
  return array if dtype is None else array.astype(dtype)


def _is_number(value) -> bool:
  try:
    float(value)
  except ValueError:
    return False
  return True


def n_rows(value) -> Optional[int]:
  """Rows of a tensor/array (of the first of a tuple); None when unknown (datasets)."""
  if isinstance(value, (tuple, list)) and value:
    return n_rows(value[0])
  if isinstance(value, dict) and value:
    return n_rows(next(iter(value.values())))
  shape = getattr(value, "shape", None)
  return None if shape is None or not len(shape) else int(shape[0])


def _check_rows(value, rows: Optional[int], name: str, x_name: str) -> None:
  count = n_rows(value)
  if None not in (rows, count) and rows != count:
    raise InputDataError(f"{name} has {count} rows but {x_name} has {rows}; give one per text")
