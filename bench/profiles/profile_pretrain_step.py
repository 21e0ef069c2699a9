"""Where the time of one pre-training step goes: TensorFlow profiler, by op type.

    python -m bench.profiles.profile_pretrain_step [--model-name electra_small] [--batch-size 32]
        [--steps 2] [--top 30] [--op Mul] [--mixed-precision mixed_bfloat16]
        [--jit-compile] [--json FILE]

Traces `--steps` steps of `PretrainingRun.train_step` (after a warm-up), then
prints the time per step of each op type and of the `--top` slowest op
instances (only those of type `--op`, if given). Times are summed over the
threads that ran the ops, so on 2 cores they add up to about twice the wall
time; compare op types with each other, and measure speed with
bench/training/pretrain_throughput.py. The op types are also summed by category (dot, elementwise,
reduce, gather or scatter, copy or transpose, random bits: bench/profiles/trace_summary.py), as
`bench/gpu/jax_pretrain_step.py --profile` sums the JAX step's instructions on the CPU.

On a GPU the trace also has a plane per device: for each of its lines (CUDA
streams, XLA modules and ops) it prints the busy time per step against the
step's wall time, and the events that took longest, grouped by name without
their numeric suffix (`fusion.12` counts as `fusion`). `--json FILE` writes
all of it compactly.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import re
import tempfile
import time
from typing import Any, Counter, Dict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from electra_tf2.config.pretraining import resolve_pretraining_config  # noqa: E402
from electra_tf2.training.options import RunOptions  # noqa: E402
from electra_tf2.training.tf_pretraining import PretrainingRun  # noqa: E402
from bench.common import add_step_flags, append_json, script_parser  # noqa: E402
from bench.training.pretrain_throughput import fake_features, time_steps  # noqa: E402
from bench.profiles import trace_summary  # noqa: E402


def read_space(xplane_file: str) -> xplane_pb2.XSpace:
  space = xplane_pb2.XSpace()
  with open(xplane_file, "rb") as f:
    space.ParseFromString(f.read())
  return space


def op_times(space: xplane_pb2.XSpace) -> Counter:
  """{(op name, op type): picoseconds} over every traced TensorFlow op event."""
  times = collections.Counter()
  for plane in space.planes:
    for line in plane.lines:
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        if ":" in name and "::" not in name and not name.startswith("EagerLocalExecute"):
          times[tuple(name.rsplit(":", 1))] += event.duration_ps
  return times


def device_lines(space: xplane_pb2.XSpace, steps: int, top: int) -> Dict[str, Any]:
  """Per device plane and line: busy ms per step and the `top` event kinds by ms per step
  (names without a trailing `.N` or `_N`)."""
  planes = {}
  for plane in space.planes:
    if not plane.name.startswith("/device:"):
      continue
    lines = {}
    for line in plane.lines:
      kinds = collections.Counter()
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        kinds[re.sub(r"[._]\d+$", "", name)] += event.duration_ps / 1e9 / steps
      if kinds:
        lines[line.name] = {"busy_ms": sum(kinds.values()),
                            "top": [[k, v] for k, v in kinds.most_common(top)]}
    planes[plane.name] = lines
  return planes


def print_device_lines(planes: Dict[str, Any], wall_ms: float) -> None:
  for plane, lines in planes.items():
    for line, summary in lines.items():
      print(f"{plane} {line}: busy {summary['busy_ms']:.2f} ms per step "
            f"({summary['busy_ms'] / wall_ms:.0%} of the step's {wall_ms:.2f} ms)")
      for name, value in summary["top"]:
        print(f"  {value:8.3f} ms  {name[:100]}")


def main() -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--model-name", default="electra_small")
  parser.add_argument("--batch-size", type=int, default=32)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--top", type=int, default=30)
  parser.add_argument("--op", default=None, help="list only instances of this op type")
  add_step_flags(parser, steps=2, rounds=None)
  args = parser.parse_args()

  config = resolve_pretraining_config(args.model_name, None, {
      **json.loads(args.hparams), "max_seq_length": args.seq_len,
      "train_batch_size": args.batch_size, "num_warmup_steps": 0})
  run = PretrainingRun(config, RunOptions(distribution_strategy="one_device",
                                          mixed_precision=args.mixed_precision,
                                          jit_compile=args.jit_compile))
  features = fake_features(config, args.batch_size)

  @tf.function
  def step():
    return run.train_step([features])["total_loss"]
  time_steps(step, 2)  # trace and warm up
  wall_ms = 1e3 * min(time_steps(step, args.steps) for _ in range(3))  # untraced
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    start = time.perf_counter()
    time_steps(step, args.steps)
    traced_ms = 1e3 * (time.perf_counter() - start) / args.steps
    tf.profiler.experimental.stop()
    space = read_space(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0])
  times = op_times(space)

  ms = {key: ps / 1e9 / args.steps for key, ps in times.items()}
  by_type = collections.Counter()
  for (_, op_type), value in ms.items():
    by_type[op_type] += value
  total = sum(by_type.values())
  print(f"step {wall_ms:.2f} ms untraced, {traced_ms:.2f} ms traced")
  print(f"op time {total:.1f} ms per step, summed over threads")
  for op_type, value in by_type.most_common(args.top):
    print(f"  {op_type:36s} {value:9.1f} ms {value / total:6.1%}")
  by_category = collections.Counter()
  for op_type, value in by_type.items():
    by_category[trace_summary.tf_op_category(op_type)] += value
  print("by category (bench/profiles/trace_summary.py's, as jax_pretrain_step.py --profile prints):")
  for category, value in by_category.most_common():
    print(f"  {category:36s} {value:9.1f} ms {value / total:6.1%}")
  print("slowest op instances:")
  instances = [(k, v) for k, v in sorted(ms.items(), key=lambda kv: -kv[1])
               if args.op is None or k[1] == args.op]
  for (name, op_type), value in instances[:args.top]:
    print(f"  {value:7.1f} ms  {op_type:20s} {name[-90:]}")
  planes = device_lines(space, args.steps, args.top)
  print_device_lines(planes, wall_ms)
  append_json(args.json, {
      "model": args.model_name, "hparams": json.loads(args.hparams), "batch": args.batch_size,
      "seq_len": args.seq_len, "precision": args.mixed_precision,
      "jit_compile": args.jit_compile, "step_ms": wall_ms, "traced_step_ms": traced_ms,
      "host_op_ms": total, "host_op_types": [[k, v] for k, v in by_type.most_common(args.top)],
      "host_op_categories": dict(by_category),
      "device_lines": planes})


if __name__ == "__main__":
  main()
