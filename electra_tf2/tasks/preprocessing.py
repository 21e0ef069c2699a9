"""Featurised TFRecords with a metadata cache, and their datasets (official preprocessing.py).

`<preprocessed_data_dir>/<sorted task names joined by _>_<split>.tfrecord`
holds every feature of every task (defaults where a task lacks one) and is
padded to a multiple of the batch size with rows whose task_id is n_tasks
(they get zero loss and are skipped by the scorers). `.metadata` records
`n_examples` and, unlike the official code, the settings featurisation
depends on and the raw files' size and modification time, so a changed
max_seq_length or data file rebuilds the TFRecord instead of silently reusing
it. Training data is shuffled once when written (seeded) and again by
`shuffle(100)` in the input pipeline; `train_steps = int(n_examples //
batch_size * num_train_epochs)`, padding included.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from electra_tf2.utils.atomic_io import atomic_path, write_json_atomic
from electra_tf2.tasks.config import FinetuningConfig
from electra_tf2.tasks.task import (FeatureSpec, FinetuningDataError, Task,
                                       shared_feature_specs)

FORMAT_VERSION = 1


def _file_stamp(path: str) -> List[Any]:
  """[path, size, mtime]: a raw data file changes the cache key when it changes."""
  stat = os.stat(path)
  return [os.path.abspath(path), stat.st_size, stat.st_mtime_ns]


class Preprocessor:
  """Builds or reuses the TFRecords of a set of tasks and makes their datasets."""

  def __init__(self, config: FinetuningConfig, tasks: Sequence[Task]):
    self._config = config
    self._tasks = list(tasks)
    self._name_to_task = {task.name: task for task in tasks}
    self.feature_specs: List[FeatureSpec] = shared_feature_specs(config)
    for task in tasks:
      self.feature_specs += task.get_feature_specs()
    self._specs_by_name = {spec.name: spec for spec in self.feature_specs}
    if len(self._specs_by_name) != len(self.feature_specs):
      raise ValueError("two tasks declare the same feature")

  # -------------------------------------------------------------------------

  def prepare_train(self) -> Tuple[str, int]:
    """(tfrecord path, number of training steps: num_train_steps if set, else the official
    count of num_train_epochs)."""
    path, n_examples = self._serialize(self._tasks, True, "train")
    if self._config.num_train_steps is not None:
      return path, self._config.num_train_steps
    steps = int(n_examples // self._config.train_batch_size * self._config.num_train_epochs)
    return path, steps

  def prepare_predict(self, tasks: Sequence[Task], split: str, batch_size: int
                      ) -> Tuple[str, int]:
    """(tfrecord path, number of batches) of a dev/test split."""
    path, n_examples = self._serialize(tasks, False, split, batch_size)
    return path, n_examples // batch_size

  def _signature(self, tasks: Sequence[Task], split: str, batch_size: int) -> Dict[str, Any]:
    config = self._config
    return {"format_version": FORMAT_VERSION, "split": split,
            "tasks": [task.name for task in tasks], "task_names": list(config.task_names),
            "batch_size": batch_size, "max_seq_length": config.max_seq_length,
            "max_query_length": config.max_query_length, "doc_stride": config.doc_stride,
            "double_unordered": config.double_unordered,
            "do_lower_case": config.do_lower_case, "debug": config.debug,
            "max_examples_per_split": config.max_examples_per_split,
            "vocab_file": os.path.abspath(config.vocab_file),
            "features": [spec.name for spec in self.feature_specs],
            "data_files": [_file_stamp(task.split_path(split)) for task in tasks]}

  def _serialize(self, tasks: Sequence[Task], is_training: bool, split: str,
                 batch_size: Optional[int] = None) -> Tuple[str, int]:
    config = self._config
    batch_size = batch_size or config.train_batch_size
    name = "_".join(sorted(task.name for task in tasks)) + "_" + split
    prefix = os.path.join(config.preprocessed_data_dir, name)
    tfrecord_path, metadata_path = prefix + ".tfrecord", prefix + ".metadata"
    signature = self._signature(tasks, split, batch_size)
    if config.use_tfrecords_if_existing and os.path.isfile(metadata_path) \
        and os.path.isfile(tfrecord_path):
      with open(metadata_path, encoding="utf-8") as f:
        metadata = json.load(f)
      if metadata.get("signature") == signature:
        print(f"using the cached {tfrecord_path} ({metadata['n_examples']} records)", flush=True)
        return tfrecord_path, metadata["n_examples"]
    examples = []
    for task in tasks:
      task_examples = task.get_examples(split)
      if not task_examples:
        raise FinetuningDataError(f"task {task.name}: the {split} split has no examples")
      task.prepare(task_examples)
      examples += task_examples
    if is_training:
      random.Random(config.seed).shuffle(examples)
    print(f"writing {len(examples)} {split} examples of {name} to {tfrecord_path}", flush=True)
    with atomic_path(tfrecord_path) as tmp:
      n_examples = self._write(examples, is_training, tmp, batch_size)
    for task in tasks:
      task.release()
    write_json_atomic(metadata_path, {"n_examples": n_examples, "signature": signature},
                      indent=1)
    return tfrecord_path, n_examples

  def _write(self, examples: Sequence, is_training: bool, path: str, batch_size: int) -> int:
    n_records = 0
    with tf.io.TFRecordWriter(path) as writer:
      for index, example in enumerate(examples):
        task = self._name_to_task[example.task_name]
        for features in task.featurize(example, is_training,
                                       log=self._config.log_examples and index == 0):
          writer.write(self.make_tf_example(features).SerializeToString())
          n_records += 1
      while n_records % batch_size:
        writer.write(self.make_tf_example({"task_id": len(self._config.task_names)})
                     .SerializeToString())
        n_records += 1
    return n_records

  def make_tf_example(self, features: Mapping[str, Any]) -> tf.train.Example:
    """A tf.train.Example with every spec'd feature (defaults where missing)."""
    for key in features:
      if key not in self._specs_by_name:
        raise ValueError(f"unknown feature {key!r}")
    feature_map = {}
    for spec in self.feature_specs:
      values = features.get(spec.name)
      values = spec.default_values() if values is None else values
      values = np.asarray(values).reshape(-1)
      if spec.is_int_feature:
        feature = tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64)))
      else:
        feature = tf.train.Feature(float_list=tf.train.FloatList(
            value=values.astype(np.float32)))
      feature_map[spec.name] = feature
    return tf.train.Example(features=tf.train.Features(feature=feature_map))

  # -------------------------------------------------------------------------

  def dataset(self, path: str, is_training: bool, batch_size: int, seed: int = 0
              ) -> tf.data.Dataset:
    """Batches of int32/float32 features; training repeats and shuffles (buffer 100)."""
    parsing_spec = {spec.name: tf.io.FixedLenFeature(
        spec.shape, tf.int64 if spec.is_int_feature else tf.float32)
        for spec in self.feature_specs}

    def decode(records: tf.Tensor) -> Dict[str, tf.Tensor]:
      parsed = tf.io.parse_example(records, parsing_spec)
      return {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in parsed.items()}
    d = tf.data.TFRecordDataset(path)
    if is_training:
      d = d.repeat().shuffle(100, seed=seed)
    return d.batch(batch_size, drop_remainder=True).map(
        decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
