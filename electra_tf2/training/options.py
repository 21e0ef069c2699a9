"""The run's command-line choices that are not model hyperparameters, and the stop signal.

TensorFlow-free, so that `electra pretrain --backend jax` parses its flags and
`StopRequested` works where TensorFlow is absent.
"""

from __future__ import annotations

import dataclasses
import signal
from typing import Optional

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
BACKENDS = ("tensorflow", "jax")
ATTENTION_KERNELS = ("official", "cudnn")


@dataclasses.dataclass
class Cluster:
  """The JAX processes (hosts) of one run, as `jax.distributed.initialize` names them.

  coordinator_address: `HOST:PORT` of process 0's coordination service.
  num_processes, process_id: the number of processes and this one's index.
  auto: JAX's own cluster detection (SLURM, Open MPI, TPU pods) fills in what is not given.
  """
  coordinator_address: Optional[str] = None
  num_processes: Optional[int] = None
  process_id: Optional[int] = None
  auto: bool = False


@dataclasses.dataclass
class RunOptions:
  """Command-line choices that are not hyperparameters of the model.

  backend: the Keras backend of pre-training ("tensorflow": tf.distribute, the default;
  "jax": electra_tf2/training/jax_pretraining.py, one compiled step, no TensorFlow needed).
  attention_kernel: "official" (the model's ops) or "cudnn" (JAX on a GPU, bfloat16: the
  attention and its dropout in cuDNN's fused kernel, electra_tf2/layers/fused_attention.py).
  cluster: the processes of a JAX run over several hosts (electra_tf2/training/multihost.py);
  None: one process.

  >>> RunOptions(mixed_precision="mixed_bfloat16", jit_compile=True).distribution_strategy
  'auto'
  """
  distribution_strategy: str = "auto"
  tpu: Optional[str] = None
  mixed_precision: str = "float32"
  jit_compile: bool = False
  log_every: Optional[int] = None  # steps between progress lines; default iterations_per_loop
  backend: str = "tensorflow"
  attention_kernel: str = "official"
  cluster: Optional[Cluster] = None


class StopRequested:
  """Turns SIGTERM/SIGINT into a flag the loop checks between compiled chunks."""

  def __init__(self):
    self.signum = None
    self._announced = False
    self._previous = {}

  def __enter__(self):
    for sig in (signal.SIGTERM, signal.SIGINT):
      try:
        self._previous[sig] = signal.signal(sig, self._handle)
      except ValueError:  # not the main thread: signals stay with their owner
        pass
    return self

  def _handle(self, signum, frame):
    # Only a flag here: a print from a handler that interrupted the loop's own
    # progress print fails ("reentrant call") and would end the run with an error.
    if self.signum is not None:  # a second signal: stop at once
      raise KeyboardInterrupt
    self.signum = signum

  @property
  def requested(self) -> bool:
    """Whether a signal came; the first read after it says so on stdout."""
    if self.signum is not None and not self._announced:
      self._announced = True
      print(f"received signal {self.signum}: saving a checkpoint and stopping", flush=True)
    return self.signum is not None

  def __exit__(self, *exc):
    for sig, handler in self._previous.items():
      signal.signal(sig, handler)
