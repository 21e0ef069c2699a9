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

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.common import sequences_per_second  # noqa: E402
from bench.training.input_pipeline_throughput import parse_args, synthetic_config  # noqa: E402
from electra_tf2.data_io import tfrecord  # noqa: E402
from electra_tf2.data_io.pretraining import PretrainingDataReader  # noqa: E402
from electra_tf2.data_io import input_pipeline  # noqa: E402


def main() -> None:
  args = parse_args(__doc__, examples=5000, batches=100)
  crc = tfrecord._crc32c_function()  # pylint: disable=protected-access
  crc_name = "google_crc32c" if crc is not tfrecord.crc32c_python else "pure-Python fallback"
  with tempfile.TemporaryDirectory() as tmp:
    config = synthetic_config(args, tmp)
    rates = {}
    for check_crc in (True, False):
      reader = PretrainingDataReader(config.pretrain_tfrecords, args.seq_len, args.batch_size,
                                     seed=config.seed, check_crc=check_crc)
      name = f"reader, CRC {'on (' + crc_name + ')' if check_crc else 'off'}"
      rates[name] = sequences_per_second(reader, args.batches, args.batch_size)
    tf_rate = sequences_per_second(iter(input_pipeline.input_fn(config, True, args.batch_size)),
                                   args.batches, args.batch_size)
    for name, value in rates.items():
      print(f"{name}: {value:,.0f} sequences/s ({value / tf_rate:.3f}x tf.data)")
    print(f"tf.data input_fn: {tf_rate:,.0f} sequences/s (length {args.seq_len}, batch "
          f"{args.batch_size}, {args.files} files)")


if __name__ == "__main__":
  main()
