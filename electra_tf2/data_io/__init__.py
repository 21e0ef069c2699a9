"""Pre-training data read without TensorFlow (JAX and PyTorch machines).

- `tfrecord`: TFRecord framing with both masked CRC32C checks (a chunk of records at a
  time through a memory map), `tf.train.Example` decoded with protobuf from a descriptor
  defined in Python;
- `example_arrays`: the Examples of a batch decoded at once with numpy (protobuf for any
  layout other than the one TensorFlow writes);
- `pretraining`: `PretrainingDataReader`, the TensorFlow pipeline of
  `input_pipeline.input_fn` (host sharding, file shuffle, interleave, record shuffle,
  batches) with numpy, and a state that resumes it exactly;
- `background`: that reader in a worker process ahead of a trainer, with the state after
  each batch, and batches put on the devices ahead.
"""
