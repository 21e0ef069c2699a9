"""The pre-training reader in its worker process (electra_tf2/data_io/background.py).

Oracle: the same `PretrainingDataReader` run in the test's own process (its batches and
its `state()` after each); the worker's end is observed from outside (its process id).
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import REPO_ROOT
from fixtures import write_pretraining_data

from electra_tf2.data_io import tfrecord
from electra_tf2.data_io.background import BackgroundReader, put_ahead
from electra_tf2.data_io.pretraining import PretrainingDataReader
from electra_tf2.data_io.tfrecord import DataError

SEQ = 16


@pytest.fixture
def pattern(tmp_path):
  write_pretraining_data(str(tmp_path), num_examples=37, seq_len=SEQ, num_files=3)
  return os.path.join(str(tmp_path), "pretrain_tfrecords", "pretrain_data.tfrecord*")


def reader(pattern, **kwargs):
  return PretrainingDataReader(pattern, SEQ, 4, seed=5, process_index=1, process_count=2,
                               **kwargs)


def test_the_worker_gives_the_reader_s_batches_and_states_from_where_it_was(pattern):
  here, there = reader(pattern), reader(pattern)
  for _ in range(3):  # the worker starts from the state the reader is in
    next(here), next(there)
  with BackgroundReader(there, depth=2) as background:
    for _ in range(25):  # several epochs
      batch, state = next(background)
      want = next(here)
      assert batch.keys() == want.keys()
      for name, value in want.items():
        assert batch[name].dtype == np.int32
        np.testing.assert_array_equal(batch[name], value)
      assert state == here.state()
  epoch = list(reader(pattern, repeat=False))  # this host's file: 12 records, 3 batches
  with BackgroundReader(reader(pattern, repeat=False)) as background:
    got = [batch for batch, _ in background]  # the worker's stream ends too
  assert len(got) == len(epoch) == 3
  for a, b in zip(got, epoch):
    np.testing.assert_array_equal(a["input_ids"], b["input_ids"])


def test_a_damaged_record_reaches_the_trainer_as_one_line(pattern):
  path = tfrecord.tfrecord_files(pattern)[1]
  data = bytearray(open(path, "rb").read())
  data[40] ^= 1
  with open(path, "wb") as f:
    f.write(bytes(data))
  with BackgroundReader(reader(pattern, shuffle=False)) as background:
    with pytest.raises(DataError) as info:
      for _ in range(20):
        next(background)
  assert "\n" not in str(info.value) and path in str(info.value)
  assert "corrupt record at byte offset 0" in str(info.value)


def test_a_dead_worker_is_reported_not_waited_for(pattern):
  background = BackgroundReader(reader(pattern), depth=1)
  next(background)
  os.kill(background._process.pid, signal.SIGKILL)  # pylint: disable=protected-access
  start = time.monotonic()
  with pytest.raises(DataError, match=r"the input reader process died \(exit code -9\)"):
    for _ in range(10):
      next(background)
  assert time.monotonic() - start < 30
  background.close()


def test_the_worker_ends_when_the_trainer_is_killed(pattern):
  """kill -9 of the process that started it: the worker, blocked on a full pipe, ends."""
  script = ("import sys, time; from electra_tf2.data_io.background import BackgroundReader; "
            "from electra_tf2.data_io.pretraining import PretrainingDataReader; "
            f"b = BackgroundReader(PretrainingDataReader({pattern!r}, {SEQ}, 4)); next(b); "
            "print(b._process.pid, flush=True); time.sleep(300)")
  trainer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=REPO_ROOT))
  worker = int(trainer.stdout.readline())
  trainer.send_signal(signal.SIGKILL)
  trainer.wait()
  deadline = time.monotonic() + 30
  while time.monotonic() < deadline and _running(worker):
    time.sleep(0.2)
  assert not _running(worker)


def _running(pid: int) -> bool:
  """Whether `pid` runs (a zombie, dead but not yet reaped by init, does not)."""
  try:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
      return f.read().split(")")[-1].split()[0] != "Z"
  except FileNotFoundError:
    return False


def test_put_ahead_puts_each_batch_before_the_steps_ahead_of_it_take_theirs():
  events = []

  def put(batch):
    events.append(f"put {batch}")
    return batch * 10

  for batch, rest in put_ahead(((i, f"state {i}") for i in range(5)), put, ahead=2):
    events.append(f"step {batch} {rest}")
  assert events == ["put 0", "put 1", "put 2", "step 0 state 0", "put 3", "step 10 state 1",
                    "put 4", "step 20 state 2", "step 30 state 3", "step 40 state 4"]
