"""The pre-training input pipeline alone: sequences/s it can deliver.

    python -m bench.training.input_pipeline_throughput [--examples 20000] [--seq-len 128]
        [--batch-size 128] [--batches 300] [--files 8]

Writes synthetic TFRecords shaped like the data builder's output to a
temporary directory, then times `input_pipeline.input_fn` (the official
repeat/shuffle/interleave/shuffle/batch pipeline, parsed to int32) in the
training configuration and in the deterministic one. Compare the figure with
the training step's sequences/s (bench/training/pretrain_throughput.py): the pipeline
must be far faster so that it is never the bottleneck.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.common import REPO  # noqa: E402
from electra_tf2.data_io import input_pipeline  # noqa: E402
from electra_tf2.config.pretraining import resolve_pretraining_config  # noqa: E402


def write_pretraining_data(data_dir: str, **kwargs) -> str:
  """The tests' synthetic TFRecords (tests/fixtures.py, loaded from its file: the tests
  are not a package)."""
  spec = importlib.util.spec_from_file_location(
      "fixtures", os.path.join(REPO, "tests", "fixtures.py"))
  fixtures = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(fixtures)
  return fixtures.write_pretraining_data(data_dir, **kwargs)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--examples", type=int, default=20000)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--batch-size", type=int, default=128)
  parser.add_argument("--batches", type=int, default=300)
  parser.add_argument("--files", type=int, default=8)
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as tmp:
    data = write_pretraining_data(tmp, num_examples=args.examples, seq_len=args.seq_len,
                                  num_files=args.files)
    config = resolve_pretraining_config("electra_small", data, {"max_seq_length": args.seq_len})
    for deterministic in (False, True):
      dataset = input_pipeline.input_fn(config, True, args.batch_size,
                                       deterministic=deterministic)
      iterator = iter(dataset)
      for _ in range(20):  # fill the shuffle and prefetch buffers
        next(iterator)
      start = time.perf_counter()
      for _ in range(args.batches):
        next(iterator)["input_ids"].numpy()
      seconds = time.perf_counter() - start
      rate = args.batches * args.batch_size / seconds
      print(f"deterministic={deterministic}: {rate:,.0f} sequences/s "
            f"({rate * args.seq_len:,.0f} tokens/s) at batch {args.batch_size}")


if __name__ == "__main__":
  main()
