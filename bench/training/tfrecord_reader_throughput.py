"""The TensorFlow-free pre-training reader alone against the tf.data pipeline, same run.

    python -m bench.training.tfrecord_reader_throughput [--examples 5000] [--seq-len 128]
        [--batch-size 128] [--batches 100] [--files 8]

Writes the synthetic TFRecords of bench/training/input_pipeline_throughput.py to a temporary
directory, then times, on the same files, in the training configuration (shuffles on):

- `data_io.pretraining.PretrainingDataReader` with both CRCs checked (google_crc32c, or
  the pure-Python fallback when it is not installed: the line says which), and without;
- `input_pipeline.input_fn` (tf.data: parallel interleave, parse and prefetch threads).

Prints sequences/s of each and the reader's ratio to tf.data. The reader is one Python
thread: its rate is per host, and what one accelerator step needs is set against it in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.training.input_pipeline_throughput import write_pretraining_data  # noqa: E402
from electra_tf2.data_io import input_pipeline  # noqa: E402
from electra_tf2.config.pretraining import resolve_pretraining_config  # noqa: E402
from electra_tf2.data_io import tfrecord  # noqa: E402
from electra_tf2.data_io.pretraining import PretrainingDataReader  # noqa: E402


def rate(batches, n: int, batch_size: int) -> float:
  """Sequences/s over n batches of an iterator, after 5 to fill its buffers."""
  for _ in range(5):
    next(batches)
  start = time.perf_counter()
  for _ in range(n):
    next(batches)["input_ids"].sum()
  return n * batch_size / (time.perf_counter() - start)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--examples", type=int, default=5000)
  parser.add_argument("--seq-len", type=int, default=128)
  parser.add_argument("--batch-size", type=int, default=128)
  parser.add_argument("--batches", type=int, default=100)
  parser.add_argument("--files", type=int, default=8)
  args = parser.parse_args()
  crc = tfrecord._crc32c_function()  # pylint: disable=protected-access
  crc_name = "google_crc32c" if crc is not tfrecord.crc32c_python else "pure-Python fallback"
  with tempfile.TemporaryDirectory() as tmp:
    data = write_pretraining_data(tmp, num_examples=args.examples, seq_len=args.seq_len,
                                  num_files=args.files)
    config = resolve_pretraining_config("electra_small", data, {"max_seq_length": args.seq_len})
    rates = {}
    for check_crc in (True, False):
      reader = PretrainingDataReader(config.pretrain_tfrecords, args.seq_len, args.batch_size,
                                     seed=config.seed, check_crc=check_crc)
      name = f"reader, CRC {'on (' + crc_name + ')' if check_crc else 'off'}"
      rates[name] = rate(reader, args.batches, args.batch_size)
    dataset = input_pipeline.input_fn(config, True, args.batch_size)
    tf_rate = rate(({k: v.numpy() for k, v in b.items()} for b in dataset), args.batches,
                   args.batch_size)
    for name, value in rates.items():
      print(f"{name}: {value:,.0f} sequences/s ({value / tf_rate:.3f}x tf.data)")
    print(f"tf.data input_fn: {tf_rate:,.0f} sequences/s (length {args.seq_len}, batch "
          f"{args.batch_size}, {args.files} files)")


if __name__ == "__main__":
  main()
