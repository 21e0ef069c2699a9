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

from electra_tf2.utils.errors import ElectraError
from electra_tf2.training.options import PRECISIONS, STRATEGIES


class DistributionError(ElectraError, ValueError):
  """A strategy that cannot be built here; the message says what to change."""


def strategy_for(config, options) -> tf.distribute.Strategy:
  """The strategy of a run: the flags, or the official TPU hparams when `use_tpu` is set.

  Args:
    config: a resolved config (its use_tpu, tpu_name, tpu_zone, gcp_project,
      tpu_job_name and num_tpu_cores: configure_pretraining.py:87-92).
    options: the run's `RunOptions` (--distribution-strategy, --tpu).
  """
  name, tpu = options.distribution_strategy, options.tpu
  if not config.use_tpu:
    return get_strategy(name, tpu)
  if name not in ("auto", "tpu"):
    raise DistributionError(f"\"use_tpu\": true in --hparams asks for a TPU but "
                            f"--distribution-strategy is {name}: drop one of them")
  if tpu and config.tpu_name and tpu != config.tpu_name:
    raise DistributionError(f"--tpu {tpu} and \"tpu_name\": {config.tpu_name} name different "
                            "TPUs: give one of them")
  return get_strategy("tpu", tpu or config.tpu_name, zone=config.tpu_zone,
                      project=config.gcp_project, job_name=config.tpu_job_name,
                      num_cores=config.num_tpu_cores)


def get_strategy(name: str = "auto", tpu: Optional[str] = None, *, zone: Optional[str] = None,
                 project: Optional[str] = None, job_name: Optional[str] = None,
                 num_cores: Optional[int] = None) -> tf.distribute.Strategy:
  """Builds the strategy named by --distribution-strategy (see module docstring); zone,
  project, job name and the expected core count only concern a TPU."""
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
      resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
          tpu=tpu or "", zone=zone, project=project, job_name=job_name or "worker")
      tf.config.experimental_connect_to_cluster(resolver)
      tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, OSError, ImportError, tf.errors.OpError) as e:
      where = f"--tpu {tpu!r}" if tpu else "no --tpu was given and this machine has no local TPU"
      raise DistributionError(f"--distribution-strategy tpu: cannot reach a TPU ({where}: "
                              f"{str(e).splitlines()[0]}); pass --tpu with a Cloud TPU name "
                              "or grpc:// address, or pick another strategy") from None
    strategy = tf.distribute.TPUStrategy(resolver)
    if num_cores and strategy.num_replicas_in_sync != num_cores:
      raise DistributionError(f"num_tpu_cores is {num_cores} but the TPU has "
                              f"{strategy.num_replicas_in_sync} cores: set num_tpu_cores to "
                              f"{strategy.num_replicas_in_sync}")
    return strategy
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
