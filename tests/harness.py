"""One check for every layer, head and model (keras-hub's TestCase is the example).

`check_layer(make, call, inputs)` runs, on a freshly made instance:

1. the config round trip: `from_config(get_config())` rebuilds the same layer, which,
   given the weights, computes the same outputs;
2. the save/load round trip: a `tf.train.Checkpoint` of its weights restores into a
   fresh instance with the same outputs;
3. a one-step train on dummy data: every trainable variable gets a finite gradient of
   a loss of the outputs, and one clipped SGD step lowers that loss;
4. mixed precision: built under mixed_bfloat16, it computes in bfloat16, keeps float32
   variables and gives finite outputs of the same shapes.
"""

import os
import tempfile
from typing import Any, Callable, Dict

import keras
import numpy as np
import tensorflow as tf

from electra_tf2.training import distribution

Outputs = Dict[str, tf.Tensor]


def _float_outputs(outputs: Any) -> Outputs:
  if isinstance(outputs, dict):
    return {k: v for k, v in outputs.items() if v.dtype.is_floating}
  return {"output": outputs}


def _loss(outputs: Outputs) -> tf.Tensor:
  """A scalar of the outputs: `total_loss` when the layer has one, else a mean square."""
  if "total_loss" in outputs:
    return outputs["total_loss"]
  return tf.add_n([tf.reduce_mean(tf.square(tf.cast(v, tf.float32)))
                   for v in outputs.values()])


def _assert_same(a: Outputs, b: Outputs, what: str) -> None:
  assert a.keys() == b.keys(), what
  for name in a:
    np.testing.assert_allclose(np.asarray(a[name], np.float32), np.asarray(b[name], np.float32),
                               rtol=1e-5, atol=1e-5, err_msg=f"{what}: {name}")


def check_layer(make: Callable[[], keras.layers.Layer],
                call: Callable[[keras.layers.Layer, Any, bool], Any], inputs: Any,
                learning_rate: float = 1e-2, train_with_training: bool = False) -> None:
  """make() builds the layer (with its variables); call(layer, inputs, training) runs it.

  train_with_training: the training step calls with training=True (a layer whose
  training path uses other variables, without dropout); default training=False,
  which keeps the loss comparable before and after the step.
  """
  keras.utils.set_random_seed(0)
  layer = make()
  outputs = _float_outputs(call(layer, inputs, False))
  assert outputs and all(np.isfinite(v.numpy()).all() for v in outputs.values())

  # 1. config round trip
  config = layer.get_config()
  clone = type(layer).from_config(config)
  call(clone, inputs, False)  # builds whatever the constructor left unbuilt
  assert clone.get_config() == config
  assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in layer.weights]
  for target, source in zip(clone.weights, layer.weights):
    target.assign(source)
  _assert_same(outputs, _float_outputs(call(clone, inputs, False)), "from_config")

  # 2. save/load round trip
  path = tf.train.Checkpoint(layer=layer).write(
      os.path.join(tempfile.mkdtemp(), type(layer).__name__))
  keras.utils.set_random_seed(1)
  fresh = make()
  tf.train.Checkpoint(layer=fresh).read(path).assert_existing_objects_matched()
  _assert_same(outputs, _float_outputs(call(fresh, inputs, False)), "checkpoint")

  # 3. one training step on dummy data
  variables = layer.trainable_variables
  assert variables, "nothing to train"
  with tf.GradientTape() as tape:
    loss = _loss(_float_outputs(call(layer, inputs, train_with_training)))
  grads = tape.gradient(loss, variables)
  for variable, grad in zip(variables, grads):
    assert grad is not None, f"no gradient for {variable.path}"
    assert np.isfinite(tf.convert_to_tensor(grad).numpy()).all(), variable.path
  # Clipped to global norm 1 as the official optimizer does (model/optimization.py:62), so that
  # one step of a freshly initialised model, whose gradients can be large, stays local.
  grads, _ = tf.clip_by_global_norm([tf.convert_to_tensor(g) for g in grads], 1.0)
  keras.optimizers.SGD(learning_rate).apply_gradients(zip(grads, variables))
  assert float(_loss(_float_outputs(call(layer, inputs, train_with_training)))) < float(loss)
  call(layer, inputs, True)  # the training path runs too (dropout and the like)

  # 4. mixed precision
  with distribution.precision_policy("mixed_bfloat16"):
    mixed = make()
  mixed_outputs = _float_outputs(call(mixed, inputs, False))
  assert mixed.compute_dtype == "bfloat16"
  assert all(str(v.dtype) == "float32" for v in mixed.weights if "int" not in str(v.dtype))
  assert mixed_outputs.keys() == outputs.keys()
  for name, value in mixed_outputs.items():
    assert value.shape == outputs[name].shape, name
    assert np.isfinite(tf.cast(value, tf.float32).numpy()).all(), name
