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
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.common import script_parser, sequences_per_second  # noqa: E402
from electra_tf2.data_io import input_pipeline  # noqa: E402
from electra_tf2.config.pretraining import (PretrainingConfig,  # noqa: E402
                                            resolve_pretraining_config)
from tests.fixtures import write_pretraining_data  # noqa: E402


def parse_args(doc: str, examples: int, batches: int) -> argparse.Namespace:
  """The flags of the input benches: the synthetic data's size and the batches timed."""
  parser = script_parser(doc, whole=False)
  parser.add_argument("--examples", type=int, default=examples)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--batch-size", type=int, default=128)
  parser.add_argument("--batches", type=int, default=batches)
  parser.add_argument("--files", type=int, default=8)
  return parser.parse_args()


def synthetic_config(args: argparse.Namespace, directory: str) -> PretrainingConfig:
  """electra_small's pre-training config on the tests' synthetic TFRecords (tests/fixtures.py)
  of --examples sequences of --seq-len in --files files, written to `directory`."""
  data = write_pretraining_data(directory, num_examples=args.examples, seq_len=args.seq_len,
                                num_files=args.files)
  return resolve_pretraining_config("electra_small", data, {"max_seq_length": args.seq_len})


def main() -> None:
  args = parse_args(__doc__, examples=20000, batches=300)
  with tempfile.TemporaryDirectory() as tmp:
    config = synthetic_config(args, tmp)
    for deterministic in (False, True):
      dataset = input_pipeline.input_fn(config, True, args.batch_size,
                                       deterministic=deterministic)
      rate = sequences_per_second(iter(dataset), args.batches, args.batch_size, warm_up=20)
      print(f"deterministic={deterministic}: {rate:,.0f} sequences/s "
            f"({rate * args.seq_len:,.0f} tokens/s) at batch {args.batch_size}")


if __name__ == "__main__":
  main()
