"""One JAX pre-training run over several processes (hosts): joining, agreeing, failing.

`electra pretrain --backend jax --coordinator-address HOST:PORT --num-processes N
--process-id I` (or `--distributed auto`: JAX's cluster detection, SLURM, Open MPI, TPU
pods) starts process I of N; `initialize` joins them (`jax.distributed.initialize`;
processes of CPU devices run their collectives through gloo, JAX's default) before JAX
computes anything. Then:

- every process reads its own shard of the TFRecords (data_io/pretraining.py: files by
  process index where there are enough, else records) and puts its rows of the global
  batch on its devices;
- `stop_agreed`: a SIGTERM to any process (JAX's preemption notice) stops every process
  after the same step, which they save together;
- `gather_json`: every process's input position, gathered at each save; process 0 writes
  the checkpoint with all of them (`own_reader_state` gives each its own on resume);
- `failing_together`: when a process dies, the others end with one line naming it instead
  of waiting in JAX's shutdown barrier (for a dead process: 100 s, then an abort with
  JAX's fatal log). A dead process shows as a failed collective (gloo: "Connection closed
  by peer" at once); the survivors then call the roll (`ROLL_CALL_SECONDS`) and name the
  processes that do not answer.

What JAX 0.6 does itself, and this module cannot change: where process 0 dies, its
coordination service goes with it, and JAX ends every other process at once with its own
fatal log ("Terminating process because the JAX distributed service detected fatal
errors ... the leader task was preempted/died"; its client's callback is not settable from
Python). A process that hangs without dying, or a host that vanishes without closing its
connections, is found by JAX's heartbeats (10 s x 10), which end the others the same way.

jax is imported inside the functions: this module imports without it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from electra_tf2.training.options import Cluster
from electra_tf2.utils import errors

# How long survivors of a failed collective wait for each other's answer to the roll call.
ROLL_CALL_SECONDS = 10
_ROLL_CALL_KEY = "electra_tf2/roll_call/"
# The exit code of a process of several that ends with an error (None while it runs):
# `_exit_at_once` ends the process with it before JAX's shutdown barrier; and the run's
# model directory, for the message of a lost process.
_ending: Dict[str, Any] = {"code": None, "model_dir": None}


class MultihostError(errors.ElectraError, RuntimeError):
  """The processes of a run that cannot start or go on together."""


def initialize(cluster: Optional[Cluster]) -> None:
  """Joins the run's processes (nothing without a cluster); one line if JAX cannot."""
  if cluster is None:
    return
  import jax  # pylint: disable=g-import-not-at-top
  given = {"coordinator_address": cluster.coordinator_address,
           "num_processes": cluster.num_processes, "process_id": cluster.process_id}
  given = {k: v for k, v in given.items() if v is not None}
  try:
    jax.distributed.initialize(**(given if cluster.auto else
                                  dict(given, cluster_detection_method="deactivate")))
  except (RuntimeError, ValueError, TypeError) as e:
    reason = (str(e).splitlines() or [type(e).__name__])[0][:300]
    if cluster.auto:
      raise MultihostError(
          f"--distributed auto: JAX found no cluster to join ({reason}): run inside a SLURM, "
          "Open MPI or TPU pod job, or give --coordinator-address, --num-processes and "
          "--process-id") from None
    raise MultihostError(
        f"process {cluster.process_id} of {cluster.num_processes} could not join the run at "
        f"--coordinator-address {cluster.coordinator_address} ({reason}): start every "
        "process with the same --coordinator-address and --num-processes, each its own "
        "--process-id, process 0 on the coordinator's host") from None
  atexit.register(_exit_at_once)  # after jax's own handlers: runs before them
  print(f"process {jax.process_index()} of {jax.process_count()} joined the run "
        f"({jax.local_device_count()} of its {jax.device_count()} devices here)", flush=True)


def _end_lost(lost: List[int], reason: str) -> None:
  """Prints the one line of a run that lost processes `lost` and ends this process at once
  (its input worker ends with it, its run lock goes with it)."""
  import jax  # pylint: disable=g-import-not-at-top
  message = lost_message(lost, jax.process_index(), jax.process_count(), reason,
                         _ending.get("model_dir"))
  print(f"error: {message}", file=sys.stderr, flush=True)
  sys.stdout.flush()
  os._exit(errors.EXIT_ERROR)  # pylint: disable=protected-access


def lost_message(lost: List[int], me: int, count: int, reason: str,
                 model_dir: Optional[str] = None) -> str:
  """The one line of a run that lost processes `lost` (process `me` of `count` says it)."""
  names = ", ".join(str(i) for i in lost)
  role = " (the coordinator)" if lost == [0] else ""
  reason = " ".join((reason.splitlines() or [""])[0].split())[:240]
  where = f" in {model_dir}" if model_dir else ""
  return (f"process{'es' if len(lost) > 1 else ''} {names} of {count}{role} stopped "
          f"answering ({reason}): process {me} stops too; start all {count} processes again "
          f"to resume from the last checkpoint{where}")


def _exit_at_once() -> None:
  """At exit, a process of several that ended with an error ends without JAX's shutdown
  barrier, which would wait for every process (for a dead one: 100 s, then an abort)."""
  if _ending["code"] is not None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_ending["code"])  # pylint: disable=protected-access


def several() -> bool:
  """Whether this run has several processes (after `initialize`)."""
  import jax  # pylint: disable=g-import-not-at-top
  return jax.process_count() > 1


@contextlib.contextmanager
def failing_together(model_dir: str) -> Iterator[None]:
  """Within the block, in a run of several processes: an error ends this process at
  exit without JAX's shutdown barrier (`_exit_at_once`, with the error's exit code), and
  a failed collective whose peers do not answer the roll call ends it with one line
  naming them (`_end_lost`)."""
  if not several():
    yield
    return
  _ending["model_dir"] = model_dir
  try:
    yield
  except KeyboardInterrupt:
    _ending["code"] = errors.EXIT_INTERRUPTED
    raise
  except errors.REPORTED:
    _ending["code"] = errors.EXIT_ERROR
    raise
  except Exception as error:  # pylint: disable=broad-except
    _ending["code"] = 1  # a bug: its traceback, then exit 1
    lost = roll_call() if _is_runtime_failure(error) else []
    if lost:
      _end_lost(lost, str(error))
    raise


def _is_runtime_failure(error: BaseException) -> bool:
  """An error of JAX's runtime (a collective, a transfer, the coordination service):
  XlaRuntimeError, or the ValueError carrying a status ("UNKNOWN: Gloo all-reduce
  failed: ... Connection closed by peer") that a failed gloo collective raises."""
  import jax  # pylint: disable=g-import-not-at-top
  return isinstance(error, jax.errors.JaxRuntimeError) or (
      isinstance(error, (ValueError, RuntimeError))
      and re.match(r"[A-Z_]+: ", str(error)) is not None)


def roll_call(seconds: float = ROLL_CALL_SECONDS) -> List[int]:
  """The processes that do not answer within `seconds` (each survivor answers through the
  coordination service's key-value store); [0] where the coordinator itself is gone; []
  where this JAX has no client to ask."""
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src import distributed as jax_distributed  # pylint: disable=g-import-not-at-top
  # The coordination service's client (jax 0.6 gives no public handle on it).
  client = getattr(getattr(jax_distributed, "global_state", None), "client", None)
  if client is None:
    return []
  me, count = jax.process_index(), jax.process_count()
  try:
    client.key_value_set(f"{_ROLL_CALL_KEY}{me}", "here")
  except Exception:  # pylint: disable=broad-except
    return [0]  # the coordination service (process 0's) is gone
  lost, deadline = [], time.monotonic() + seconds
  for other in (i for i in range(count) if i != me):
    try:
      client.blocking_key_value_get(f"{_ROLL_CALL_KEY}{other}",
                                    max(1, int(1000 * (deadline - time.monotonic()))))
    except Exception:  # pylint: disable=broad-except
      lost.append(other)
  return lost


def stop_agreed(step: int) -> bool:
  """Whether every process stops after `step`: once any has had a SIGTERM (JAX's
  preemption notice, which JAX's own handler takes), all agree on the step after the
  furthest one's. Called after every step, by every process."""
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  if not multihost_utils.reached_preemption_sync_point(step):
    return False
  print(f"a process received SIGTERM: saving a checkpoint and stopping at step {step} "
        "(every process)", flush=True)
  return True


def gather_json(value: Any) -> List[Any]:
  """`value` (JSON-able) of every process, by process index; a collective: every process
  calls it at the same point. Sent as the UTF-8 bytes of its JSON, padded to the longest:
  `[processes, longest]` uint8."""
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  data = np.frombuffer(json.dumps(value, sort_keys=True).encode("utf-8"), np.uint8)
  sizes = np.asarray(multihost_utils.process_allgather(np.int32(data.size))).reshape(-1)
  padded = np.zeros(int(sizes.max()), np.uint8)
  padded[:data.size] = data
  rows = np.asarray(multihost_utils.process_allgather(padded))
  return [json.loads(bytes(row[:size]).decode("utf-8")) for row, size in zip(rows, sizes)]


def own_reader_state(extra: Dict[str, Any], index: int, count: int, path: str
                     ) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
  """(process `index`'s input position in a checkpoint's `extra`, None) or (None, the
  line saying why its stream starts afresh): `readers` holds every process's position
  by index (a run of several), `reader` process 0's (every run). A checkpoint of another
  number of processes starts every stream afresh: its shards are other files."""
  readers = extra.get("readers")
  saved = len(readers) if isinstance(readers, list) else int("reader" in extra)
  if not saved:
    return None, (f"the input stream starts afresh ({path}, which holds the input position, "
                  "is missing or lacks it)")
  if saved != count:
    return None, (f"the input streams start afresh: {path} holds the input positions of "
                  f"{saved} process{'es' if saved > 1 else ''}, this run has {count}")
  return (readers[index] if isinstance(readers, list) else extra["reader"]), None
