"""Choosing a `tf.distribute` strategy and the mixed-precision policy.

`--distribution-strategy`:
  auto                   a TPU if --tpu is given, else all visible GPUs with
                         MirroredStrategy when there are several, else one device;
  one_device             the first GPU, else the CPU;
  mirrored               all local GPUs (or the logical CPUs of a test);
  multi_worker_mirrored  the cluster described by the TF_CONFIG environment variable;
  tpu                    the TPU named by --tpu (or the local one).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Iterator, Optional

import keras
import tensorflow as tf

from electra_tf2.errors import ElectraError

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


class DistributionError(ElectraError, ValueError):
  """A strategy that cannot be built here; the message says what to change."""


def get_strategy(name: str = "auto", tpu: Optional[str] = None) -> tf.distribute.Strategy:
  """Builds the strategy named by --distribution-strategy (see module docstring)."""
  if name not in STRATEGIES:
    raise DistributionError(f"--distribution-strategy {name!r} is unknown: use one of "
                            f"{', '.join(STRATEGIES)}")
  if name == "auto":
    if tpu:
      name = "tpu"
    elif len(tf.config.list_logical_devices("GPU")) > 1:
      name = "mirrored"
    else:
      name = "one_device"
  if name == "tpu":
    try:
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or "")
      tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError) as e:
      where = f"--tpu {tpu!r}" if tpu else "no --tpu was given and this machine has no local TPU"
      raise DistributionError(f"--distribution-strategy tpu: cannot reach a TPU ({where}: "
                              f"{str(e).splitlines()[0]}); pass --tpu with a Cloud TPU name "
                              "or grpc:// address, or pick another strategy") from None
    return tf.distribute.TPUStrategy(resolver)
  if name == "multi_worker_mirrored":
    if "TF_CONFIG" not in os.environ:
      raise DistributionError("--distribution-strategy multi_worker_mirrored needs the "
                              "TF_CONFIG environment variable describing the cluster")
    try:
      json.loads(os.environ["TF_CONFIG"])
    except json.JSONDecodeError as e:
      raise DistributionError(f"TF_CONFIG is not valid JSON: {e.msg}") from None
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "mirrored":
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
    return tf.distribute.MirroredStrategy(devices)
  gpus = tf.config.list_logical_devices("GPU")
  return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


@contextlib.contextmanager
def precision_policy(name: str = "float32") -> Iterator[None]:
  """Keras' dtype policy `name` while the models are built, the previous one after.

  Layers keep the policy they were built with. mixed_float16 also needs loss
  scaling (the training driver wraps the optimizer); mixed_bfloat16 does not.
  """
  if name not in PRECISIONS:
    raise DistributionError(f"--mixed-precision {name!r} is unknown: use one of "
                            f"{', '.join(PRECISIONS)}")
  previous = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(previous)


@contextlib.contextmanager
def op_determinism(enabled: bool) -> Iterator[None]:
  """TensorFlow's deterministic kernels within the block when `enabled`
  (a process-wide switch, turned back off after it if it was off)."""
  from tensorflow.python.framework import config as tf_config  # the only way to turn it off
  was_enabled = tf_config.is_op_determinism_enabled()
  if enabled and not was_enabled:
    tf.config.experimental.enable_op_determinism()
  try:
    yield
  finally:
    if enabled and not was_enabled:
      tf_config.disable_op_determinism()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
  """Whether this process writes logs, summaries and final results."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    return True
  task_type, task_id = resolver.task_type, resolver.task_id
  return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0)


def checkpoint_dir(strategy: tf.distribute.Strategy, model_dir: str) -> str:
  """Where this process saves checkpoints: `model_dir` on the chief.

  Every other worker saves (its own iterator state included) under
  `model_dir/worker_<type>_<id>`, so it never writes over the chief's files.
  """
  if is_chief(strategy):
    return model_dir
  resolver = strategy.cluster_resolver
  return os.path.join(model_dir, f"worker_{resolver.task_type}_{resolver.task_id}")
