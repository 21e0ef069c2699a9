"""Pre-training data read without TensorFlow (JAX and PyTorch machines).

- `tfrecord`: TFRecord framing with both masked CRC32C checks, `tf.train.Example`
  decoded with protobuf from a descriptor defined in Python;
- `pretraining`: `PretrainingDataReader`, the TensorFlow pipeline of
  `input_pipeline.input_fn` (host sharding, file shuffle, interleave, record shuffle,
  batches) with numpy, and a state that resumes it exactly.
"""
