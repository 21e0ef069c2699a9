"""What the backend-neutral tests share: the Keras backend in use, marks for the tests that
only make sense on one backend, and tensor <-> numpy conversion through `keras.ops`."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, List, Optional

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


def float64():
  """A context in which float64 tensors stay float64 (JAX: `enable_x64`; no-op elsewhere)."""
  if BACKEND == "jax":
    import jax.experimental  # pylint: disable=g-import-not-at-top
    return jax.experimental.enable_x64()
  return contextlib.nullcontext()


def gradients(loss_fn: Callable, *args: np.ndarray) -> List[np.ndarray]:
  """The gradients of the scalar `loss_fn(*tensors)` with respect to each of its arguments
  (given as numpy arrays), by the backend's automatic differentiation."""
  if BACKEND == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    xs = [tf.convert_to_tensor(a) for a in args]
    with tf.GradientTape() as tape:
      tape.watch(xs)
      loss = loss_fn(*xs)
    return [numpy(g) for g in tape.gradient(loss, xs)]
  if BACKEND == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    grads = jax.grad(loss_fn, argnums=tuple(range(len(args))))(*[tensor(a) for a in args])
    return [numpy(g) for g in grads]
  if BACKEND == "torch":
    import torch  # pylint: disable=g-import-not-at-top
    xs = [tensor(a).detach().requires_grad_(True) for a in args]
    return [numpy(g) for g in torch.autograd.grad(loss_fn(*xs), xs)]
  raise NotImplementedError(f"no gradients for the {BACKEND} backend")
