"""What the backend-neutral tests share: the Keras backend in use, marks for the tests that
only make sense on one backend, and tensor <-> numpy conversion through `keras.ops`."""

from __future__ import annotations

from typing import Any, Optional

import keras
import numpy as np
import pytest
from keras import ops

BACKEND = keras.backend.backend()

tf_only = pytest.mark.skipif(BACKEND != "tensorflow",
                             reason="TensorFlow-specific (tf.function, XLA, tf.random streams, "
                                    "IndexedSlices or tf.distribute)")
jax_only = pytest.mark.skipif(BACKEND != "jax", reason="JAX-specific (jax.jit)")


def tensor(value: Any, dtype: Optional[str] = None):
  """A tensor of the current backend from a numpy array or nested list."""
  return ops.convert_to_tensor(value, dtype)


def numpy(value: Any) -> np.ndarray:
  """A backend tensor (or variable) as a numpy array."""
  return np.asarray(ops.convert_to_numpy(value))


def dtype_name(value: Any) -> str:
  """The standard dtype name ("int32", "float32", ...) of a backend tensor."""
  return keras.backend.standardize_dtype(value.dtype)
