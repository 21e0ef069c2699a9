"""Where the time of one pre-training step goes: TensorFlow profiler, by op type.

    python bench/profile_pretrain_step.py [--model-name electra_small] [--batch-size 32]
        [--steps 2] [--top 30] [--op Mul]

Traces `--steps` steps of `PretrainingRun.train_step` (after a warm-up), then
prints the time per step of each op type and of the `--top` slowest op
instances (only those of type `--op`, if given). Times are summed over the
threads that ran the ops, so on 2 cores they add up to about twice the wall
time; compare op types with each other, and measure speed with
bench/pretrain_throughput.py.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import tempfile
from typing import Counter

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from electra_tf2.config import resolve_pretraining_config  # noqa: E402
from electra_tf2.training.driver import RunOptions  # noqa: E402
from electra_tf2.training.pretraining import PretrainingRun  # noqa: E402
from pretrain_throughput import fake_features, time_steps  # noqa: E402


def op_times(xplane_file: str) -> Counter:
  """{(op name, op type): picoseconds} over every traced TensorFlow op event."""
  space = xplane_pb2.XSpace()
  with open(xplane_file, "rb") as f:
    space.ParseFromString(f.read())
  times = collections.Counter()
  for plane in space.planes:
    for line in plane.lines:
      for event in line.events:
        name = plane.event_metadata[event.metadata_id].name
        if ":" in name and "::" not in name and not name.startswith("EagerLocalExecute"):
          times[tuple(name.rsplit(":", 1))] += event.duration_ps
  return times


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--model-name", default="electra_small")
  parser.add_argument("--batch-size", type=int, default=32)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--steps", type=int, default=2)
  parser.add_argument("--top", type=int, default=30)
  parser.add_argument("--op", default=None, help="list only instances of this op type")
  args = parser.parse_args()

  config = resolve_pretraining_config(args.model_name, None, {
      "max_seq_length": args.seq_len, "train_batch_size": args.batch_size,
      "num_warmup_steps": 0})
  run = PretrainingRun(config, RunOptions(distribution_strategy="one_device"))
  features = fake_features(config, args.batch_size)

  @tf.function
  def step():
    return run.train_step([features])["total_loss"]
  time_steps(step, 2)  # trace and warm up
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    time_steps(step, args.steps)
    tf.profiler.experimental.stop()
    times = op_times(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0])

  ms = {key: ps / 1e9 / args.steps for key, ps in times.items()}
  by_type = collections.Counter()
  for (_, op_type), value in ms.items():
    by_type[op_type] += value
  total = sum(by_type.values())
  print(f"op time {total:.1f} ms per step, summed over threads")
  for op_type, value in by_type.most_common(args.top):
    print(f"  {op_type:36s} {value:9.1f} ms {value / total:6.1%}")
  print("slowest op instances:")
  instances = [(k, v) for k, v in sorted(ms.items(), key=lambda kv: -kv[1])
               if args.op is None or k[1] == args.op]
  for (name, op_type), value in instances[:args.top]:
    print(f"  {value:7.1f} ms  {op_type:20s} {name[-90:]}")


if __name__ == "__main__":
  main()
