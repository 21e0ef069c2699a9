"""Stateless random draws from a `[2]` int seed, on the TensorFlow, JAX and PyTorch backends.

The pre-training model draws its masked positions, the 85/10/5 choice of each
slot and the generator's Gumbel noise from seeds it is handed, so that a step
is a pure function of (weights, batch, seed): resumable bit for bit, and one
compiled program on JAX. `keras.random` takes an int or a stateful
`SeedGenerator`, not a seed tensor, so this module goes to each backend's own
stateless generator:

- TensorFlow: `tf.random.stateless_*` and `stateless_split` (the streams of
  every earlier release of this library: TensorFlow results are unchanged);
- JAX: the threefry key whose two words are the seed (`jax.random`);
- PyTorch (eager): a `torch.Generator` seeded from the two words.

The backends' streams differ, so the same seed draws other positions on each;
every stream follows the same distributions (tests/test_backends.py).
"""

from __future__ import annotations

from typing import List, Sequence

import keras
import numpy as np

_INT32_MAX = 2**31 - 1


def _backend() -> str:
  backend = keras.backend.backend()
  if backend not in ("tensorflow", "jax", "torch"):
    raise NotImplementedError(f"electra_tf2 draws random numbers on the tensorflow, jax and "
                              f"torch backends, not {backend!r}: set KERAS_BACKEND")
  return backend


def fresh_seed():
  """A new `[2]` int32 seed from the backend's global generator (not inside a JAX jit)."""
  backend = _backend()
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.random.uniform([2], minval=tf.int32.min, maxval=tf.int32.max, dtype=tf.int32)
  return keras.ops.convert_to_tensor(np.random.randint(0, _INT32_MAX, size=2, dtype=np.int32))


def _jax_key(seed):
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  data = jax.lax.bitcast_convert_type(jnp.asarray(seed).astype(jnp.int32), jnp.uint32)
  return jax.random.wrap_key_data(data, impl="threefry2x32")


def _torch_generator(seed):
  import torch  # pylint: disable=g-import-not-at-top
  from keras.src.backend.torch.core import get_device  # pylint: disable=g-import-not-at-top
  first, second = (int(v) & 0xFFFFFFFF for v in np.asarray(keras.ops.convert_to_numpy(seed)))
  generator = torch.Generator(device=get_device())
  generator.manual_seed((first << 32) | second)
  return generator


def split(seed, num: int) -> List:
  """`num` new `[2]` seeds derived from `seed` (TensorFlow: `stateless_split`)."""
  backend = _backend()
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.unstack(tf.random.experimental.stateless_split(tf.convert_to_tensor(seed), num))
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    data = jax.random.key_data(jax.random.split(_jax_key(seed), num))
    data = jax.lax.bitcast_convert_type(data, jnp.int32)
    return [data[i] for i in range(num)]
  words = [int(v) & 0xFFFFFFFF for v in np.asarray(keras.ops.convert_to_numpy(seed))]
  children = np.random.default_rng(words).integers(0, _INT32_MAX, size=(num, 2), dtype=np.int32)
  return [keras.ops.convert_to_tensor(child) for child in children]


def uniform(shape: Sequence, seed):
  """float32 draws from U[0, 1) of `shape` (TensorFlow: `stateless_uniform`)."""
  backend = _backend()
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.random.stateless_uniform(shape, seed=tf.convert_to_tensor(seed))
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    return jax.random.uniform(_jax_key(seed), tuple(shape), dtype="float32")
  import torch  # pylint: disable=g-import-not-at-top
  from keras.src.backend.torch.core import get_device  # pylint: disable=g-import-not-at-top
  return torch.rand(tuple(int(d) for d in shape), generator=_torch_generator(seed),
                    device=get_device(), dtype=torch.float32)


def categorical(logits, num_samples: int, seed):
  """`[batch, num_samples]` int32 draws, with replacement, from softmax(logits `[batch, n]`).

  A logit of -inf is never drawn. TensorFlow: `stateless_categorical`.
  """
  backend = _backend()
  if backend == "tensorflow":
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.random.stateless_categorical(logits, num_samples, seed=tf.convert_to_tensor(seed),
                                           dtype=tf.int32)
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    batch = logits.shape[0]
    draws = jax.random.categorical(_jax_key(seed), logits, axis=-1, shape=(num_samples, batch))
    return draws.T.astype("int32")
  import torch  # pylint: disable=g-import-not-at-top
  weights = torch.nan_to_num(torch.softmax(logits.float(), dim=-1), nan=0.0)
  # A row with no mass (its draws are discarded by the caller) draws uniformly.
  weights = torch.where(weights.sum(-1, keepdim=True) > 0, weights, torch.ones_like(weights))
  return torch.multinomial(weights, num_samples, replacement=True,
                           generator=_torch_generator(seed)).to(torch.int32)
