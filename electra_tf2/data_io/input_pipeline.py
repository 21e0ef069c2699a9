"""Pre-training inputs: the TFRecord pipeline (official pretrain/pretrain_data.py).

The TFRecords hold only `input_ids`, `input_mask` and `segment_ids`
(`[batch, seq_len]` int32 once parsed); masking happens in the graph.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional

import tensorflow as tf

from electra_tf2.data_io.pretraining import CYCLE_LENGTH, FEATURE_NAMES, SHUFFLE_BUFFER
from electra_tf2.data_io.tfrecord import DataError, tfrecord_files


# ---------------------------------------------------------------------------
# TFRecord input pipeline (official pretrain_data.get_input_fn)
# ---------------------------------------------------------------------------

# The official pipeline reads CYCLE_LENGTH files at once, one record from each in
# turn, then shuffles SHUFFLE_BUFFER records (pretrain/pretrain_data.py:52-64); the
# constants live with the pipeline's TensorFlow-free twin, data_io/pretraining.py.
OFFICIAL_NUM_SHARDS = 1000  # what the official builder always writes


def check_tfrecords(patterns: str, max_seq_length: int) -> List[str]:
  """Fails early, with one clear line, on data the training step would choke on.

  Checks that the patterns match files, that the first file holds a record,
  and that its features exist with length max_seq_length.
  """
  files = tfrecord_files(patterns)
  if not files:
    raise DataError(f"no pre-training TFRecords match {patterns}: build them with "
                    "data_prep/build_pretraining_dataset.py or set pretrain_tfrecords")
  first = files[0]
  try:
    record = next(iter(tf.data.TFRecordDataset(first).take(1)), None)
  except (tf.errors.DataLossError, tf.errors.OpError) as e:
    raise DataError(f"{first} is not a readable TFRecord file: {e.message.splitlines()[0]}"
                    ) from None
  if record is None:
    raise DataError(f"{first} holds no records; rebuild the pre-training data")
  example = tf.train.Example.FromString(record.numpy())
  for name in FEATURE_NAMES:
    if name not in example.features.feature:
      raise DataError(f"{first} has no feature {name!r}: it is not ELECTRA pre-training data")
    length = len(example.features.feature[name].int64_list.value)
    if length != max_seq_length:
      raise DataError(f"{first}: feature {name} has length {length} but max_seq_length is "
                      f"{max_seq_length}; pass --hparams '{{\"max_seq_length\": {length}}}' or "
                      "rebuild the data with --max-seq-length")
  return files


def estimated_num_examples(files: List[str]) -> int:
  """The number of records in `files`, from their sizes and the first 100 records' sizes."""
  sizes = [len(r.numpy()) + 16 for r in tf.data.TFRecordDataset(files[0]).take(100)]  # + CRCs
  if not sizes:
    return 0
  return round(sum(tf.io.gfile.stat(f).length for f in files) / (sum(sizes) / len(sizes)))


def mixing_warning(files: List[str], batch_size: int) -> Optional[str]:
  """One line when the files are too few for the official pipeline to mix the data.

  The builder writes consecutive examples to the files in turn, so record k of
  every file comes from the same stretch of the corpus. The pipeline reads
  CYCLE_LENGTH files side by side and shuffles SHUFFLE_BUFFER records, so one
  batch holds about r = (batch + 100) / 4 consecutive records of each file it
  reads: a stretch of about r x (number of files) consecutive examples. When that
  stretch is shorter than the data set, training walks through the corpus nearly
  in order (one book, one passage at a time). No warning from the official
  1000 files on: a corpus that needs more is large enough for each stretch to
  hold many documents. See docs/data_prep.md.
  """
  if len(files) >= OFFICIAL_NUM_SHARDS:
    return None
  examples = estimated_num_examples(files)
  per_file = (batch_size + SHUFFLE_BUFFER) / min(CYCLE_LENGTH, len(files))
  stretch = per_file * len(files)
  if stretch >= examples:
    return None
  wanted = min(OFFICIAL_NUM_SHARDS, math.ceil(examples / per_file))
  return (f"warning: {len(files)} pre-training TFRecord files for about {examples:,} examples: "
          f"a batch of {batch_size} covers only about {round(stretch):,} consecutive examples, "
          "so training sees the corpus nearly in order. Rebuild the data with --num-shards "
          f"{wanted} or more (the official builder writes {OFFICIAL_NUM_SHARDS}); see "
          "docs/data_prep.md")


def corrupt_data_error(patterns: str, error: tf.errors.DataLossError) -> DataError:
  """A DataError naming the corrupt files, for a DataLossError met while training.

  The error TensorFlow raises from inside the input pipeline does not say which
  file is damaged, so the files of `patterns` are read through, up to the
  first damaged one.
  """
  print("a pre-training file is damaged; reading the files to find it ...", flush=True)
  what = f"{patterns} ({error.message.splitlines()[0]})"
  for path in tfrecord_files(patterns):
    try:
      for _ in tf.data.TFRecordDataset(path):
        pass
    except tf.errors.OpError as e:
      what = f"{path} ({e.message.splitlines()[0]})"
      break
  return DataError(f"corrupt pre-training data: {what}. Rebuild or remove the damaged file; "
                   "a re-run resumes from the last checkpoint")


def _parse_batch(records: tf.Tensor, max_seq_length: int) -> Dict[str, tf.Tensor]:
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in FEATURE_NAMES}
  parsed = tf.io.parse_example(records, spec)
  return {name: tf.cast(value, tf.int32) for name, value in parsed.items()}


def input_fn(config, is_training: bool, batch_size: int,
             input_context: Optional[tf.distribute.InputContext] = None,
             deterministic: bool = False, shuffle: bool = True) -> tf.data.Dataset:
  """The official pipeline: files -> repeat -> shuffle -> interleave -> shuffle(100) -> batch.

  Args:
    config: needs pretrain_tfrecords, max_seq_length and seed.
    is_training: training reads files in arbitrary ("sloppy") order unless
      `deterministic`; evaluation always reads deterministically.
    batch_size: the batch size of one replica (one micro-batch).
    input_context: from `distribute_datasets_from_function`; each input
      pipeline (worker) reads its own shard of the files, or of the records
      when there are fewer files than workers.
    deterministic: a fixed read order, so runs and resumed runs see the same stream.
    shuffle: the file and record shuffles (official); False reads in a fixed order, the
      one `data_io.pretraining.PretrainingDataReader(shuffle=False)` reproduces.

  Returns:
    Batches of {"input_ids", "input_mask", "segment_ids"}: `[batch_size, max_seq_length]` int32.
  """
  files = tfrecord_files(config.pretrain_tfrecords)
  num_pipelines = input_context.num_input_pipelines if input_context else 1
  pipeline_id = input_context.input_pipeline_id if input_context else 0
  shard_files = num_pipelines > 1 and len(files) >= num_pipelines
  dataset = tf.data.Dataset.from_tensor_slices(files)
  if shard_files:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  n_files = len(files) // num_pipelines if shard_files else len(files)
  seed = config.seed * 1009 + pipeline_id
  dataset = dataset.repeat()
  if shuffle:
    dataset = dataset.shuffle(max(n_files, 1), seed=seed)
  cycle_length = min(CYCLE_LENGTH, n_files)
  dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=cycle_length,
                               num_parallel_calls=cycle_length,
                               deterministic=deterministic or not is_training)
  if num_pipelines > 1 and not shard_files:
    dataset = dataset.shard(num_pipelines, pipeline_id)
  if shuffle:
    dataset = dataset.shuffle(SHUFFLE_BUFFER, seed=seed)
  dataset = dataset.batch(batch_size, drop_remainder=True)
  dataset = dataset.map(lambda records: _parse_batch(records, config.max_seq_length),
                        num_parallel_calls=tf.data.AUTOTUNE,
                        deterministic=deterministic or not is_training)
  return dataset.prefetch(tf.data.AUTOTUNE)
