"""Faults proven harmless: two writers, SIGTERM and kill -9, a disk that fills or a permission
lost.

The oracle is the same run uninterrupted: what a fault leaves behind must
resume to it bit for bit, and files must be the old ones or the new ones whole.
"""

import errno
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from electra_tf2.utils import atomic_io
from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.training import finetuning as runner
from electra_tf2.training import tf_pretraining as pretraining
from tests.conftest import REPO_ROOT
from tests.test_pretraining import TINY, env, tiny_data

# The measured case of issue #27: a deterministic 60-step run, seq 64.
KILL_HPARAMS = {"debug": True, "vocab_size": 512, "train_batch_size": 8, "max_seq_length": 64,
                "num_train_steps": 60, "iterations_per_loop": 2, "save_checkpoints_steps": 6,
                "num_warmup_steps": 0, "learning_rate": 2e-3, "deterministic": True}


def all_tensors(model_dir: str) -> dict:
  """Every tensor of the latest checkpoint but the save count, the object graph and the
  input position (a variant, which no reader returns: the weights show where a run read)."""
  reader = tf.train.load_checkpoint(tf_checkpoint.latest_checkpoint(model_dir))
  return {name: reader.get_tensor(name)
          for name, dtype in reader.get_variable_to_dtype_map().items()
          if dtype != tf.variant and not name.startswith(("save_counter", "_CHECKPOINTABLE"))}


def assert_identical(a: dict, b: dict) -> None:
  assert a.keys() == b.keys() and len(a) > 100
  different = [k for k in a if not np.array_equal(a[k], b[k])]
  assert not different, different[:5]


def pretraining_command(data: str, hparams: dict) -> list:
  return [sys.executable, "run_pretraining.py", "--data-dir", data, "--model-name",
          "electra_small", "--log-every", "2", "--hparams", json.dumps(hparams)]


# ---------------------------------------------------------------------------
# One writer
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_two_pretraining_runs_on_one_model_dir_three_seconds_apart(tmp_path):
  """Issue #27's measured case: the second run is refused with the holder's line."""
  data = tiny_data(tmp_path)
  hparams = dict(TINY, num_train_steps=100000, iterations_per_loop=2,
                 save_checkpoints_steps=100000, model_dir=str(tmp_path / "model"))
  runs = []
  for _ in range(2):
    runs.append(subprocess.Popen(pretraining_command(data, hparams), env=env(), cwd=REPO_ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    time.sleep(3)
  try:
    deadline = time.time() + 240
    while all(p.poll() is None for p in runs) and time.time() < deadline:
      time.sleep(0.5)
    refused = next(p for p in runs if p.poll() is not None)
    holder = runs[1 - runs.index(refused)]
    err = refused.stderr.read()
    assert refused.returncode == 2, err[-3000:]
    line = err.strip().splitlines()[-1]  # (TensorFlow may log before it)
    assert "Traceback" not in err
    assert line.startswith(f"error: {hparams['model_dir']}: another run writes here: host "
                           f"{socket.gethostname()} PID {holder.pid} ("), err
    assert "run_pretraining.py" in line and ", started 20" in line
    holder.send_signal(signal.SIGTERM)  # the holder saves and stops cleanly
    assert holder.wait(timeout=120) == 0
  finally:
    for p in runs:
      p.kill()
      p.communicate()


# ---------------------------------------------------------------------------
# kill -9
# ---------------------------------------------------------------------------


def interrupt_with_sigterm(command: list) -> dict:
  """Runs `command`, SIGTERMs it once training is under way; its summary (it saved first)."""
  process = subprocess.Popen(command, env=env(), cwd=REPO_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
  deadline = time.time() + 180
  for line in process.stdout:  # stop once training is under way
    if line.startswith("step 4/") or time.time() > deadline:
      break
  process.send_signal(signal.SIGTERM)
  process.stdout.read()
  assert process.wait(timeout=120) == 0
  hparams = json.loads(command[command.index("--hparams") + 1])
  with open(os.path.join(hparams["model_dir"], "pretrain_summary.json")) as f:
    return json.load(f)


@pytest.mark.slow
def test_sigterm_then_kill_9_at_random_moments_then_resume_equals_the_uninterrupted_run(
    tmp_path):
  """One run stopped by SIGTERM (it saves and exits 0), then reruns killed at random
  moments, then one to the end: bit for bit the uninterrupted run."""
  data = tiny_data(tmp_path, seq_len=64)
  whole, parts = str(tmp_path / "whole"), str(tmp_path / "parts")
  subprocess.run(pretraining_command(data, dict(KILL_HPARAMS, model_dir=whole)), env=env(),
                 cwd=REPO_ROOT, check=True, capture_output=True, timeout=300)
  command = pretraining_command(data, dict(KILL_HPARAMS, model_dir=parts))
  summary = interrupt_with_sigterm(command)
  assert summary["stopped_early"] and 4 <= summary["saved_step"] < 60
  rng = random.Random(27)
  kills, taken_over = 0, 0
  while True:
    err = open(tmp_path / f"stderr{kills}", "w+")  # pylint: disable=consider-using-with
    process = subprocess.Popen(command, env=env(), cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=err, text=True)
    if kills < 2:  # killed at a random moment once training is under way
      for line in process.stdout:
        taken_over += "is dead" in line  # the run lock of the killed run
        if line.startswith("step "):
          break
      time.sleep(rng.uniform(0.0, 3.0))
      process.send_signal(signal.SIGKILL)
      if process.wait(timeout=60) == -signal.SIGKILL:
        kills += 1
        continue  # (a run that ended before the signal is the last one)
    final = process.stdout.read()
    taken_over += "is dead" in final
    code = process.wait(timeout=300)
    err.seek(0)
    assert code == 0, err.read()[-2000:]
    break
  # Each rerun took over the killed run's lock, but maybe not for a run killed after it had
  # finished (its lock released or not yet, as it was exiting): the rerun then finds nothing
  # to train.
  finished_before_its_kill = "nothing to train" in final
  assert kills >= 1 and kills - finished_before_its_kill <= taken_over <= kills
  summary = json.load(open(os.path.join(parts, "pretrain_summary.json")))
  assert summary["step"] == 60
  assert_identical(all_tensors(whole), all_tensors(parts))


# ---------------------------------------------------------------------------
# A write that fails mid-checkpoint
# ---------------------------------------------------------------------------


def fail_on_call(module, name: str, call: int, error: Exception, monkeypatch) -> None:
  """Makes the `call`-th call (1-based) of `module.name` raise `error`."""
  original, calls = getattr(module, name), []

  def failing(*args, **kwargs):
    calls.append(1)
    if len(calls) == call:
      raise error
    return original(*args, **kwargs)
  monkeypatch.setattr(module, name, failing)


FAILURES = {
    # The data shards are written, then their merge into ckpt-N.index/.data fails.
    "no space while writing the data": (
        "tensorflow.python.ops.gen_io_ops", "merge_v2_checkpoints",
        tf.errors.ResourceExhaustedError(None, None, "ckpt-8_temp/part-00000-of-00001.data-"
                                         "00000-of-00001; No space left on device")),
    # The checkpoint is complete, then the `checkpoint` state file cannot be written.
    "permission lost for the state file": (
        "tensorflow.python.lib.io.file_io", "atomic_write_string_to_file",
        tf.errors.PermissionDeniedError(None, None, "checkpoint.tmp; Permission denied")),
}


CHECKPOINTED = dict(TINY, num_train_steps=8, iterations_per_loop=2, save_checkpoints_steps=4)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
  """The data and the final tensors of an 8-step run that nothing interrupts."""
  tmp_path = tmp_path_factory.mktemp("uninterrupted")
  data = tiny_data(tmp_path)
  config = resolve_pretraining_config("electra_small", data, dict(
      CHECKPOINTED, model_dir=str(tmp_path / "model")))
  pretraining.run_pretraining(config)
  return data, all_tensors(config.model_dir)


@pytest.mark.parametrize("failure", [
    "no space while writing the data",
    pytest.param("permission lost for the state file", marks=pytest.mark.slow)])
def test_failed_checkpoint_write_keeps_the_previous_one_and_the_rerun_resumes(
    tmp_path, monkeypatch, failure, capsys, uninterrupted):
  import importlib
  module_name, function, error = FAILURES[failure]
  data, expected = uninterrupted
  config = resolve_pretraining_config("electra_small", data, dict(
      CHECKPOINTED, model_dir=str(tmp_path / "faulty")))
  with monkeypatch.context() as patch:
    fail_on_call(importlib.import_module(module_name), function, 2, error, patch)
    with pytest.raises(tf_checkpoint.CheckpointWriteError) as stopped:
      pretraining.run_pretraining(config)
  message = str(stopped.value)
  assert "\n" not in message and "ckpt-4 is the latest" in message
  assert "run the same command again to resume" in message
  model_dir = config.model_dir
  assert tf_checkpoint.latest_checkpoint(model_dir).endswith("ckpt-4")
  assert not tf.io.gfile.glob(os.path.join(model_dir, "ckpt-8*"))  # nothing half-written
  assert all_tensors(model_dir)  # the previous checkpoint loads
  capsys.readouterr()
  pretraining.run_pretraining(config)
  assert f"resumed from {model_dir}/ckpt-4 at step 4" in capsys.readouterr().out
  assert_identical(expected, all_tensors(model_dir))


# ---------------------------------------------------------------------------
# The fine-tuning writers under the same failure
# ---------------------------------------------------------------------------


class FailingFile:
  """A text file whose writes fail with `errno` once `budget` characters are written
  (the characters before it reach the disk: a real half-written file)."""

  def __init__(self, f, code: int, budget: int):
    self.f, self.code, self.budget = f, code, budget

  def write(self, text: str) -> int:
    if len(text) > self.budget:
      self.f.write(text[:self.budget])
      self.f.flush()
      raise OSError(self.code, os.strerror(self.code))
    self.budget -= len(text)
    return self.f.write(text)

  def __getattr__(self, name):
    return getattr(self.f, name)

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.f.close()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES])
@pytest.mark.parametrize("failing_write", [1, 2])
def test_finetuning_results_are_old_or_new_whole_after_a_failed_write(
    tmp_path, monkeypatch, code, failing_write):
  from types import SimpleNamespace
  results = tmp_path / "results"
  config = SimpleNamespace(results_txt=str(results / "t_results.txt"),
                           results_json=str(results / "t_results.json"),
                           model_name="m", task_names=["rte"])
  runner.write_results(config, [{"rte": {"accuracy": 50.0}}], [1])
  old = {p: open(p).read() for p in (config.results_txt, config.results_json)}
  calls = []

  def failing_open(path, mode="r", **kwargs):
    f = open(path, mode, **kwargs)  # pylint: disable=unspecified-encoding
    calls.append(path)
    return FailingFile(f, code, 10) if len(calls) == failing_write else f
  monkeypatch.setattr(atomic_io, "open", failing_open, raising=False)
  trials = [{"rte": {"accuracy": 50.0}}, {"rte": {"accuracy": 75.0}}]
  with pytest.raises(OSError) as error:
    runner.write_results(config, trials, [1, 2])
  assert error.value.errno == code
  monkeypatch.undo()
  assert sorted(os.listdir(results)) == ["t_results.json", "t_results.txt"]  # no temp left
  after = {p: open(p).read() for p in old}
  runner.write_results(config, trials, [1, 2])  # what a successful write gives
  new = {p: open(p).read() for p in old}
  # results_txt is written first: whole and new if only the second write failed; the
  # file whose write failed is the old one, whole.
  assert after[config.results_txt] == (new if failing_write == 2 else old)[config.results_txt]
  assert after[config.results_json] == old[config.results_json] != new[config.results_json]


# ---------------------------------------------------------------------------
# The data builder under the same failure
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("error", [
    tf.errors.ResourceExhaustedError(None, None, "No space left on device"),
    OSError(errno.EACCES, "Permission denied")])
def test_data_builder_leaves_the_output_as_it_was_after_a_failed_write(tmp_path, monkeypatch,
                                                                      error):
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  from electra_tf2.data_prep.common import DataPrepError
  from tests.fixtures import WORD_VOCAB, write_vocab
  vocab = str(tmp_path / "vocab.txt")
  write_vocab(vocab)
  words = [w for w in WORD_VOCAB if w.isalpha()]
  rng = random.Random(0)
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("".join(" ".join(rng.choice(words) for _ in range(12)) + ("\n\n" if i % 5
                    else "\n") for i in range(300)))
  out = tmp_path / "out"
  cfg = BuildConfig(inputs=[str(corpus)], vocab_file=vocab, output_dir=str(out),
                    max_seq_length=32, num_shards=3, seed=0, progress=False)
  build_pretraining_data(cfg, log=lambda s: None)
  before = {p.name: p.read_bytes() for p in out.iterdir()}
  corpus.write_text(corpus.read_text() * 2)  # a new build would change every shard
  real_writer = tf.io.TFRecordWriter

  class FailingWriter:
    """Writes 5 records (a real half-written temporary shard), then fails."""

    def __init__(self, path):
      self.writer, self.count = real_writer(path), 0

    def write(self, record):
      self.count += 1
      if self.count > 5:
        self.writer.flush()
        raise error
      self.writer.write(record)

    def close(self):
      self.writer.close()
  monkeypatch.setattr(tf.io, "TFRecordWriter", FailingWriter)
  with pytest.raises(DataPrepError) as failed:
    build_pretraining_data(cfg, log=lambda s: None)
  message = str(failed.value)
  assert "\n" not in message and f"nothing in {out} was changed" in message
  assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temp, no change
  monkeypatch.undo()
  from electra_tf2.utils import run_lock
  held = run_lock._acquire_local(run_lock.lock_path(str(out)))  # pylint: disable=protected-access
  try:  # another build holds the output: refused before anything is read or written
    with pytest.raises(run_lock.RunLockError, match=f"{out}: another run writes here"):
      build_pretraining_data(cfg, log=lambda s: None)
  finally:
    os.close(held)
  assert {p.name: p.read_bytes() for p in out.iterdir()} == before
