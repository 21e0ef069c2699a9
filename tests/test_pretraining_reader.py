"""The TensorFlow-free pre-training reader (electra_tf2/data_io/) against tf.data.

Oracles: TensorFlow's own TFRecord writer and `tf.train.Example` (the bytes and the
parsed values), `input_pipeline.input_fn` (the same batches in the same order with the
shuffles off; the same examples with them on), the published CRC32C check value, and the
batches and states of the reader before its records were decoded a chunk at a time with
numpy (protobuf record by record, main at 8f327a1), recorded as digests.
"""

import hashlib
import json
import os
import types
from collections import Counter

import numpy as np
import pytest

from fixtures import write_pretraining_data
from no_tensorflow import run_without_tensorflow

tf = pytest.importorskip("tensorflow")

from electra_tf2.data_io import input_pipeline  # noqa: E402
from electra_tf2.data_io import tfrecord  # noqa: E402
from electra_tf2.data_io.pretraining import PretrainingDataReader  # noqa: E402
from electra_tf2.data_io.tfrecord import DataError  # noqa: E402

SEQ = 16


def make_data(tmp_path, num_examples, num_files, name="data", bert_ids=False):
  """Examples of SEQ ids: under 64 (one varint byte each), or with `bert_ids` over BERT's
  30,522 words (up to 3 bytes)."""
  data_dir = str(tmp_path / name)
  write_pretraining_data(data_dir, num_examples=num_examples, seq_len=SEQ,
                         vocab_size=30522 if bert_ids else 64, num_files=num_files,
                         bert_ids=bert_ids)
  return os.path.join(data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord*")


def tf_batches(pattern, batch_size, num_batches, shuffle, hosts=1, host=0, seed=3):
  config = types.SimpleNamespace(pretrain_tfrecords=pattern, max_seq_length=SEQ, seed=seed)
  context = tf.distribute.InputContext(num_input_pipelines=hosts, input_pipeline_id=host)
  dataset = input_pipeline.input_fn(config, True, batch_size, context if hosts > 1 else None,
                                    deterministic=True, shuffle=shuffle)
  return [{k: v.numpy() for k, v in batch.items()} for batch in dataset.take(num_batches)]


def reader(pattern, batch_size, shuffle, hosts=1, host=0, seed=3, **kwargs):
  return PretrainingDataReader(pattern, SEQ, batch_size, seed=seed, process_index=host,
                               process_count=hosts, shuffle=shuffle, **kwargs)


def take(iterator, n):
  return [next(iterator) for _ in range(n)]


def rows(batches):
  """The examples of `batches` as hashable rows (ids, mask and segments side by side)."""
  return [tuple(np.concatenate([b["input_ids"][i], b["input_mask"][i], b["segment_ids"][i]]))
          for b in batches for i in range(len(b["input_ids"]))]


def test_crc32c_and_the_record_framing_are_tensorflow_s(tmp_path, monkeypatch):
  assert tfrecord.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
  assert tfrecord.crc32c_python(b"123456789") == 0xE3069283
  records = [b"", b"x", os.urandom(1000), tfrecord.int64_example({"a": [1, -2, 2**40]})]
  ours, theirs = tmp_path / "ours.tfrecord", tmp_path / "tf.tfrecord"
  tfrecord.write_records(str(ours), records)
  with tf.io.TFRecordWriter(str(theirs)) as writer:
    for record in records:
      writer.write(record)
  assert ours.read_bytes() == theirs.read_bytes()
  monkeypatch.setattr(tfrecord, "_crc32c_function", lambda: tfrecord.crc32c_python)
  assert [r for _, r in tfrecord.read_records(str(theirs))] == records  # the fallback CRC


def test_examples_decode_as_tf_train_example(tmp_path):
  pattern = make_data(tmp_path, 6, 1)
  path = tfrecord.tfrecord_files(pattern)[0]
  spec = {n: tf.io.FixedLenFeature([SEQ], tf.int64) for n in input_pipeline.FEATURE_NAMES}
  for (_, record), tf_record in zip(tfrecord.read_records(path), tf.data.TFRecordDataset(path)):
    assert record == tf_record.numpy()
    want = tf.io.parse_single_example(tf_record, spec)
    got = tfrecord.parse_int64_features([record], input_pipeline.FEATURE_NAMES, SEQ, str)
    for name, value in zip(input_pipeline.FEATURE_NAMES, got):
      np.testing.assert_array_equal(value[0], want[name].numpy())
  features = {"input_ids": [3, -1, 2**40], "x": []}
  example = tf.train.Example(features=tf.train.Features(feature={
      k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in features.items()}))
  # (a map's order in protobuf's default serialization can differ between processes)
  assert tfrecord.int64_example(features) == example.SerializeToString(deterministic=True)
  values = [0, 1, 127, 128, 30521, 2**40, -1, -2**63, 2**63 - 1]  # 1 to 10 varint bytes
  records = [tfrecord.int64_example({"a": values}), tfrecord.int64_example({"a": values[::-1]})]
  got = tfrecord.parse_int64_features(records, ["a"], len(values), str)[0]
  assert got.tolist() == [values, values[::-1]]


@pytest.mark.parametrize("num_examples,num_files,hosts,batch_size,bert_ids", [
    (23, 5, 1, 4, False),   # uneven files, 4 read at once
    (23, 5, 2, 3, False),   # files shared out between 2 hosts
    (10, 1, 2, 2, False),   # fewer files than hosts: records shared out
    (9, 3, 1, 5, False),    # batches across epochs
    (700, 3, 1, 32, True),  # ids of 1 to 3 varint bytes; files longer than a chunk
])
def test_same_batches_in_the_same_order_as_tf_data_without_shuffling(
    tmp_path, num_examples, num_files, hosts, batch_size, bert_ids):
  pattern = make_data(tmp_path, num_examples, num_files, bert_ids=bert_ids)
  num_batches = 3 * num_examples // batch_size  # about 3 epochs
  for host in range(hosts):
    want = tf_batches(pattern, batch_size, num_batches, False, hosts, host)
    got = take(reader(pattern, batch_size, False, hosts, host), num_batches)
    for i, (a, b) in enumerate(zip(got, want)):
      for name in b:
        assert a[name].dtype == np.int32 and a[name].shape == (batch_size, SEQ)
        np.testing.assert_array_equal(a[name], b[name], err_msg=f"host {host} batch {i} {name}")


def test_same_examples_as_tf_data_with_shuffling(tmp_path):
  """One epoch (repeat=False) holds every example once; the repeated shuffled streams of
  both pipelines hold the data set's examples only, each about as often, in another order
  than without shuffling, and each seed its own."""
  pattern = make_data(tmp_path, 48, 6)
  spec = {n: tf.io.FixedLenFeature([SEQ], tf.int64) for n in input_pipeline.FEATURE_NAMES}
  every = Counter(rows([tf.io.parse_example(tf.stack(list(tf.data.TFRecordDataset(
      tfrecord.tfrecord_files(pattern)))), spec)]))
  assert len(every) == 48
  epoch = rows(reader(pattern, 8, True, repeat=False))
  assert Counter(epoch) == every
  epochs, deviation = 5, {"tf.data": [], "ours": []}
  for seed in range(4):
    tf.random.set_seed(0)  # tf.data's stream depends on the global seed too (set elsewhere)
    for name, stream in (("tf.data", rows(tf_batches(pattern, 8, epochs * 6, True, seed=seed))),
                         ("ours", rows(take(reader(pattern, 8, True, seed=seed), epochs * 6)))):
      counts = Counter(stream)
      # Each example about 5 times: the record shuffle's buffer (100) holds two epochs of
      # this data, so one example's copies of neighbouring epochs can come out together or
      # late.
      assert set(counts) == set(every) and 2 <= min(counts.values()) <= max(counts.values()) <= 8
      deviation[name].append(sum(abs(counts[r] - epochs) for r in every))
  # The shuffles cross epochs as much in both (measured: 40.5 and 38.5 on average).
  assert 0.75 < np.mean(deviation["ours"]) / np.mean(deviation["tf.data"]) < 1.33, deviation
  first = rows(take(reader(pattern, 8, True), 6))
  assert first != rows(take(reader(pattern, 8, False), 6))
  assert first == rows(take(reader(pattern, 8, True), 6))
  assert first != rows(take(reader(pattern, 8, True, seed=4), 6))


@pytest.mark.parametrize("shuffle,hosts,num_files", [(True, 1, 5), (False, 1, 5),
                                                     (True, 2, 1), (True, 2, 4)])
def test_a_restored_state_gives_the_following_batches(tmp_path, shuffle, hosts, num_files):
  pattern = make_data(tmp_path, 29, num_files)
  for stop in (1, 4, 9):  # mid-epoch, at about an epoch, later
    original = reader(pattern, 3, shuffle, hosts, hosts - 1)
    take(original, stop)
    state = json.loads(json.dumps(original.state()))
    following = take(original, 8)
    resumed = reader(pattern, 3, shuffle, hosts, hosts - 1)
    resumed.restore(state)
    assert rows(take(resumed, 8)) == rows(following), stop
  with pytest.raises(DataError, match="another seed"):
    reader(pattern, 3, shuffle, hosts, hosts - 1, seed=9).restore(state)


def test_corrupt_and_bad_files_are_one_line_naming_file_and_offset(tmp_path):
  pattern = make_data(tmp_path, 4, 1)
  path = tfrecord.tfrecord_files(pattern)[0]
  data = bytearray(open(path, "rb").read())
  second = 16 + int.from_bytes(data[:8], "little")  # offset of the second record

  def error_of(content, **kwargs):
    with open(path, "wb") as f:
      f.write(content)
    with pytest.raises(DataError) as info:
      next(reader(pattern, 4, False, **kwargs))
    assert "\n" not in str(info.value) and path in str(info.value)
    return str(info.value)

  flipped = bytearray(data)
  flipped[second + 20] ^= 1
  assert f"corrupt record at byte offset {second} (data CRC mismatch)" in error_of(flipped)
  flipped = bytearray(data)
  flipped[second + 2] ^= 1
  assert f"byte offset {second} (length CRC mismatch)" in error_of(flipped)
  assert f"truncated record at byte offset {second}" in error_of(data[:second + 30])
  assert "truncated record header" in error_of(data[:second + 5])
  assert "not a tf.train.Example" in error_of(data[:second + 20] + b"\xff" + data[
      second + 21:], check_crc=False)
  with open(path, "wb") as f:
    f.write(data)
  with pytest.raises(DataError, match="has length 16 but max_seq_length is 8"):
    next(PretrainingDataReader(pattern, 8, 1))
  with pytest.raises(DataError, match="no pre-training TFRecords match"):
    PretrainingDataReader(str(tmp_path / "none*"), SEQ, 1)
  open(path, "wb").close()
  with pytest.raises(DataError, match="hold no records"):
    next(reader(pattern, 1, True))


def test_reads_with_tensorflow_blocked(tmp_path):
  pattern = make_data(tmp_path, 20, 3)
  expected = reader(pattern, 4, True, hosts=2, host=1)
  take(expected, 2)
  state = expected.state()
  want = [int(b["input_ids"].sum()) for b in take(expected, 3)]
  result = run_without_tensorflow(f"""
    import json
    from electra_tf2.data_io.pretraining import PretrainingDataReader
    reader = PretrainingDataReader({pattern!r}, {SEQ}, 4, seed=3, process_index=1,
                                   process_count=2)
    reader.restore(json.loads({json.dumps(state)!r}))
    print([int(next(reader)["input_ids"].sum()) for _ in range(3)])
  """)
  assert result.stdout.strip() == str(want)


def digest(batches):
  sha = hashlib.sha256()
  for batch in batches:
    for name in input_pipeline.FEATURE_NAMES:
      sha.update(np.ascontiguousarray(batch[name], np.int32).tobytes())
  return sha.hexdigest()[:16]


@pytest.mark.parametrize("num_examples,num_files,hosts,host,want", [
    (48, 6, 1, 0, ("38604340fcc7924e", "27114aa7b9fb9860", "dc4f159c6faa6cc2")),
    (48, 6, 2, 1, ("0ca9553695dd2d68", "a4c3330403715b37", "9f526fd949f0b75e")),
    (29, 1, 1, 0, ("2f2af0fd216fb589", "5f1b94214c57cdb5", "36587aca37a6b835")),
    (29, 1, 2, 1, ("f8ed635521e2d5fe", "299e2e38401996df", "529bfbcc64989701")),
])
def test_the_shuffled_stream_and_its_state_are_the_previous_reader_s(
    tmp_path, num_examples, num_files, hosts, host, want):
  """The digests of 7 batches, the state after them (files left out: their paths) and
  20 batches more, as the reader that decoded record by record with protobuf gave them:
  the same shuffles, and checkpoints saved by it resume here."""
  pattern = make_data(tmp_path, num_examples, num_files)
  stream = reader(pattern, 5, True, hosts, host)
  first = take(stream, 7)
  state = stream.state()
  state.pop("files")
  state_digest = hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:16]
  assert (digest(first), digest(take(stream, 20)), state_digest) == want


def packed_field(number, values):
  payload = b"".join(varint(v % 2**64) for v in values)
  return varint(number << 3 | 2) + varint(len(payload)) + payload


def varint(value):
  out = b""
  while value >= 0x80:
    out += bytes([value & 0x7F | 0x80])
    value >>= 7
  return out + bytes([value])


def message_field(number, body):
  return varint(number << 3 | 2) + varint(len(body)) + body


def example_bytes(features, packed=True):
  """A serialized tf.train.Example written by hand: int64 features, packed or not."""
  entries = b""
  for name, values in features.items():
    if packed:
      int64_list = packed_field(1, values)
    else:
      int64_list = b"".join(varint(1 << 3) + varint(v % 2**64) for v in values)
    feature = message_field(3, int64_list)
    entries += message_field(1, message_field(1, name.encode()) + message_field(2, feature))
  return message_field(1, entries)


def test_batches_of_any_layout_decode_as_tf_io_parse_example():
  """Values of 1 to 10 varint bytes (negatives), features in another order, an extra
  feature, unpacked values: `int64_features` (numpy a batch at once, protobuf where the
  layout is not the common one) gives what TensorFlow's parser gives."""
  from electra_tf2.data_io import example_arrays  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(0)
  values = [0, 1, 127, 128, 30521, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**40, -1, -2**63,
            2**63 - 1, 16383, 16384]
  names = ["input_ids", "input_mask"]
  spec = {n: tf.io.FixedLenFeature([len(values)], tf.int64) for n in names}

  def features(i):
    return {"input_ids": list(rng.permutation(values)), "input_mask": [i % 2] * len(values)}

  common = [example_bytes(features(i)) for i in range(9)]
  batches = {
      "common": common,
      "another order": common[:3] + [example_bytes(dict(reversed(features(9).items())))],
      "all in another order": [example_bytes(dict(reversed(features(i).items())))
                               for i in range(5)],
      "an extra feature": common[:3] + [example_bytes(dict(features(9), extra=[5]))],
      "unpacked": common[:3] + [example_bytes(features(9), packed=False)],
  }
  for label, records in batches.items():
    want = tf.io.parse_example(tf.constant(records), spec)
    got = example_arrays.int64_features(records, names, len(values), str)
    for name, value in zip(names, got):
      assert value.dtype == np.int64
      np.testing.assert_array_equal(value, want[name].numpy(), err_msg=f"{label} {name}")
  for label in ("common", "all in another order"):
    assert example_arrays.vectorised_int64_features(batches[label], names,
                                                    len(values)) is not None
  assert example_arrays.vectorised_int64_features(batches["unpacked"], names,
                                                  len(values)) is None


def test_a_damaged_record_is_refused_when_the_stream_reaches_it(tmp_path):
  """The records before a damaged one come out as batches (as from the previous reader);
  the next batch is refused in one line naming the file and the offset."""
  pattern = make_data(tmp_path, 6, 1)
  path = tfrecord.tfrecord_files(pattern)[0]
  offsets = [offset for offset, _ in tfrecord.read_records(path)]
  want = tf_batches(pattern, 1, 3, False)
  data = bytearray(open(path, "rb").read())
  data[offsets[3] + 20] ^= 1
  with open(path, "wb") as f:
    f.write(bytes(data))
  stream = reader(pattern, 1, False)
  assert rows(take(stream, 3)) == rows(want)
  with pytest.raises(DataError) as info:
    next(stream)
  message = str(info.value)
  assert "\n" not in message and path in message
  assert f"corrupt record at byte offset {offsets[3]} (data CRC mismatch)" in message
