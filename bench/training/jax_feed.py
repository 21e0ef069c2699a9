"""Is the JAX trainer fed? Its compiled step on a batch held on the device against the
same step fed as `electra pretrain --backend jax` feeds it, in one process, one compile.

    KERAS_BACKEND=jax python -m bench.training.jax_feed --data "DIR/pretrain_data.tfrecord-*"
        [--model-name electra_small] [--hparams JSON] [--seq-len 64] [--batch 128]
        [--mixed-precision mixed_bfloat16] [--seconds 15] [--trainer-steps N] [--json FILE]

The question: does the pure-Python reader
(`electra_tf2/data_io/pretraining.py`) keep a GPU fed? Rows, each run for --seconds after
its warm-up, sequences/s:

- `reader`: `next(reader)` alone (records read, CRCs checked, Examples decoded);
- `reader+put`: the same, each batch copied to the device and waited for;
- `step (batch on device)`: the jit-compiled step (the trainer's `step_function`) on one
  batch already on the device: the step's own speed (`dispatch_ms`: the time a call takes
  to return);
- `trainer loop`: `step_function(state, run.put(next(reader)), step)` as the trainer's
  loop runs it (`read_ms` and `dispatch_ms` per step, measured apart: where the read
  overlaps the device's step, a step takes as long as the row above; where it does not,
  the read's time longer);
- `trainer loop, prefetch thread`: the same with the next batches read and put on the
  device by a thread ahead of the step (two batches ahead);
- `... switch interval 0.2 ms`: the same with Python's thread switch interval at 0.2 ms
  instead of 5 ms (`sys.setswitchinterval`), so the step's thread gets the interpreter
  back soon after the device finishes;
- `..., step number on device`: rows that pass the step number (the dropout and sampling
  seeds' counter) as a scalar put on the device ahead, not as a numpy scalar that the
  call copies to the device: whether that copy makes the call wait for the last step;
- with `--trainer-steps N`: `electra pretrain --backend jax` itself
  (`training.jax_pretraining.train`, its own compile) for N steps on a temporary model
  directory, its last progress interval's sequences/s.

The ratio of each row to the step's own speed says how much of the device the feed uses.
ELECTRA_BLOCK_TENSORFLOW=1 makes `import tensorflow` fail (the GPU machine has none).
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench import common
from bench.gpu import gpu_report
from bench.gpu import jax_pretrain_step

STEP_NUMBERS = 4096


def parse_args(argv=None) -> argparse.Namespace:
  parser = common.script_parser(__doc__, whole=False)
  parser.add_argument("--data", required=True,
                      help="the pre-training TFRecords (comma-separated glob patterns)")
  parser.add_argument("--model-name", default="electra_small")
  parser.add_argument("--hparams", default="{}", help="JSON hparams over the preset's")
  parser.add_argument("--seq-len", type=int, default=64)
  parser.add_argument("--batch", type=int, default=128)
  parser.add_argument("--mixed-precision", default="mixed_bfloat16")
  parser.add_argument("--seconds", type=float, default=15.0, help="per row")
  parser.add_argument("--trainer-steps", type=int, default=0,
                      help="also run the trainer itself for this many steps (a multiple of 4)")
  parser.add_argument("--json", default=None, help="append the result as one JSON line")
  return parser.parse_args(argv)


def timed(label: str, seconds: float, batch: int, one: Callable[[], Dict[str, float]],
          finish: Callable[[], None] = lambda: None) -> Dict[str, Any]:
  """Calls `one` (a step; it returns its own split in seconds) for `seconds` after three
  warm-up calls, then `finish` (waits for the device): sequences/s and the mean split."""
  for _ in range(3):
    one()
  finish()
  parts: Dict[str, float] = {}
  count, start = 0, time.perf_counter()
  while time.perf_counter() - start < seconds:
    for key, value in one().items():
      parts[key] = parts.get(key, 0.0) + value
    count += 1
  finish()
  elapsed = time.perf_counter() - start
  row = {"row": label, "steps": count, "seq_per_s": count * batch / elapsed,
         "ms_per_step": 1e3 * elapsed / count}
  row.update({f"{k}_ms": 1e3 * v / count for k, v in parts.items()})
  common.log(f"{label}: {row['seq_per_s']:.0f} seq/s, {row['ms_per_step']:.2f} ms a step "
             + " ".join(f"{k}_ms {1e3 * v / count:.2f}" for k, v in parts.items()), tag="feed")
  return row


class Prefetcher:
  """Reads and puts batches on the device in a thread, `depth` ahead of the consumer."""

  def __init__(self, reader, put: Callable, depth: int = 2):
    self._queue: "queue.Queue" = queue.Queue(maxsize=depth)
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._fill, args=(reader, put), daemon=True)
    self._thread.start()

  def _fill(self, reader, put) -> None:
    for batch in reader:
      placed = put(batch)
      while not self._stop.is_set():
        try:
          self._queue.put(placed, timeout=0.1)
          break
        except queue.Full:
          continue
      if self._stop.is_set():
        return

  def next(self):
    return self._queue.get()

  def close(self) -> None:
    self._stop.set()
    self._thread.join()


def measure(args: argparse.Namespace) -> Dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top

  from electra_tf2.data_io.pretraining import PretrainingDataReader
  from electra_tf2.training.jax_pretraining import JaxPretrainingRun
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.training.options import RunOptions
  overrides = {"max_seq_length": args.seq_len, "train_batch_size": args.batch,
               "num_warmup_steps": 0, "pretrain_tfrecords": args.data}
  config = resolve_pretraining_config(args.model_name, None,
                                      {**overrides, **json.loads(args.hparams)})
  run = JaxPretrainingRun(config, RunOptions(backend="jax",
                                             mixed_precision=args.mixed_precision))

  def new_reader():
    return PretrainingDataReader(config.pretrain_tfrecords, config.max_seq_length,
                                 args.batch, seed=config.seed)

  def put(batch):
    return jax_pretrain_step.device_batch(run, batch)

  reader = new_reader()
  state = [run.state(), None]  # the state, and the one the last step took
  step = [0]
  start = time.perf_counter()
  state[0], losses, _ = run.step_function(state[0], put(next(reader)), np.int32(0))
  jax.block_until_ready(losses)
  compile_seconds = time.perf_counter() - start
  common.log(f"first step (compilation) {compile_seconds:.1f} s", tag="feed")

  # Step numbers put on the device ahead of the rows that pass one instead of a numpy scalar
  # (which the call copies to the device each step).
  numbers = [jax.device_put(np.int32(i)) for i in range(STEP_NUMBERS)]

  def finish():
    jax.block_until_ready(state[0])

  def step_on(features, number_on_device: bool) -> float:
    t = time.perf_counter()
    number = (numbers[step[0] % STEP_NUMBERS] if number_on_device else np.int32(step[0]))
    # As JaxPretrainingRun.step: the donated state dropped a step later.
    state[1], (state[0], _, _) = state[0], run.step_function(state[0], features, number)
    step[0] += 1
    return time.perf_counter() - t

  def read_only():
    t = time.perf_counter()
    next(reader)
    return {"read": time.perf_counter() - t}

  def read_put():
    t = time.perf_counter()
    batch = next(reader)
    r = time.perf_counter()
    jax.block_until_ready(put(batch))
    return {"read": r - t, "put": time.perf_counter() - r}

  held = put(next(reader))

  def on_device(number_on_device: bool):
    return lambda: {"dispatch": step_on(held, number_on_device)}

  def trainer_loop(number_on_device: bool):
    def one():
      t = time.perf_counter()
      batch = run.put(next(reader))
      read = time.perf_counter() - t
      return {"read": read, "dispatch": step_on(batch, number_on_device)}
    return one

  def row(label, one, wait=finish):
    return timed(label, args.seconds, args.batch, one, wait)
  rows: List[Dict[str, Any]] = [
      row("reader", read_only, lambda: None), row("reader+put", read_put, lambda: None),
      row("step (batch on device)", on_device(False)),
      row("step (batch on device), step number on device", on_device(True)),
      row("trainer loop", trainer_loop(False)),
      row("trainer loop, step number on device", trainer_loop(True))]
  switch = sys.getswitchinterval()
  for label, interval, number_on_device in (
      ("trainer loop, prefetch thread", switch, False),
      ("... switch interval 0.2 ms", 2e-4, False),
      ("... switch interval 0.2 ms, step number on device", 2e-4, True)):
    sys.setswitchinterval(interval)
    prefetcher = Prefetcher(new_reader(), put)
    try:
      def prefetched(number_on_device=number_on_device):
        t = time.perf_counter()
        batch = prefetcher.next()
        return {"wait": time.perf_counter() - t, "dispatch": step_on(batch, number_on_device)}
      rows.append(row(label, prefetched))
    finally:
      prefetcher.close()
      sys.setswitchinterval(switch)
  if args.trainer_steps:
    rows.append(trainer_row(config, args))
  device_speed = rows[2]["seq_per_s"]
  for row in rows:
    row["of_step"] = row["seq_per_s"] / device_speed
  device = jax.devices()[0]
  return {"model": args.model_name, "hparams": json.loads(args.hparams),
          "seq_len": args.seq_len, "batch": args.batch, "precision": args.mixed_precision,
          "vocab_size": config.vocab_size, "compile_seconds": compile_seconds,
          "device": f"{device.platform}: {device.device_kind}", "jax": jax.__version__,
          "rows": rows}


def trainer_row(config, args: argparse.Namespace) -> Dict[str, Any]:
  """`training.jax_pretraining.train` for --trainer-steps steps: its last interval."""
  import dataclasses  # pylint: disable=g-import-not-at-top

  from electra_tf2.training import (  # pylint: disable=g-import-not-at-top
      jax_pretraining as pretraining)
  from electra_tf2.training.options import RunOptions
  steps = args.trainer_steps
  with tempfile.TemporaryDirectory() as model_dir:
    trainer_config = dataclasses.replace(
        config, model_dir=model_dir, num_train_steps=steps, save_checkpoints_steps=steps,
        iterations_per_loop=max(1, steps // 4), keep_checkpoint_max=1)
    summary = pretraining.train(trainer_config, RunOptions(
        backend="jax", mixed_precision=args.mixed_precision))
  seq_per_s = summary["last_throughput"]["sequences_per_sec"]
  common.log(f"trainer: {seq_per_s:.0f} seq/s in its last interval of {steps // 4} steps",
             tag="feed")
  return {"row": "electra pretrain --backend jax (last interval)", "steps": steps // 4,
          "seq_per_s": seq_per_s, "ms_per_step": 1e3 * args.batch / seq_per_s}


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
  args = parse_args(argv)
  common.block_tensorflow_if_asked()
  result = measure(args)
  print(f"\non {result['device']}, JAX {result['jax']}:")
  print("\n".join(gpu_report.feed({"feed": {"status": "ok", "data": [result]}})[2:]))
  common.append_json(args.json, result)
  return result


if __name__ == "__main__":
  main()
