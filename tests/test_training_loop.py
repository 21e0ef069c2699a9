"""The shared training loop speaks early, and a run refuses a vocabulary of another size
before it builds anything.

- With `log_first_step` (the JAX trainer's compiled step), the first progress line comes
  after the run's first step and says how long it took, compiling included; then lines come
  at the logging interval, and the ETA leaves that first step out.
- A `vocab_size` other than the vocabulary file's is one line, on the JAX trainer as on the
  TensorFlow one, before the model directory is written.
"""

from __future__ import annotations

import io
import os

import pytest

from electra_tf2.text.vocab import VocabError
from electra_tf2.training import loop as loop_lib
from electra_tf2.training.progress import ProgressLogger
from tests.fixtures import write_pretraining_data


def run_loop(start: int, num_steps: int, log_every: int, first_step_seconds: float,
             monkeypatch, log_first_step: bool = True):
  """Runs a loop whose first step takes `first_step_seconds` (on a fake clock) and the
  others 1 s; (the chunk sizes asked for, the progress lines)."""
  clock = {"now": 1000.0}
  monkeypatch.setattr("electra_tf2.training.progress.time.time", lambda: clock["now"])
  chunks = []

  def run_steps(n):
    clock["now"] += n - 1 + (first_step_seconds if not chunks else 1)
    chunks.append(n)
    return n

  stream = io.StringIO()
  progress = ProgressLogger(num_steps, start, None, 8, stream=stream)
  loop = loop_lib.Loop(run_steps=run_steps, losses_of=lambda pending: {"total_loss": 1.0},
                       save=lambda step: None, learning_rate=lambda step: 0.0, where="dir",
                       sync_every_chunk=False)
  schedule = loop_lib.Schedule(start, num_steps, 1000, log_every, 1000, 4, log_first_step)
  loop_lib.run_training_loop(loop, schedule, progress)
  return chunks, stream.getvalue().splitlines()


def test_the_first_line_comes_after_the_first_step_with_its_compile_time(monkeypatch):
  chunks, lines = run_loop(0, 450, 200, first_step_seconds=41.0, monkeypatch=monkeypatch)
  assert chunks == [1, 199, 200, 50]
  assert [line.split(" ", 2)[1] for line in lines] == ["1/450", "200/450", "400/450",
                                                       "450/450"]
  assert lines[0].endswith("| first step 41.0s, compiling included")
  assert not any("first step" in line for line in lines[1:])
  # Step 200: 199 steps of 1 s after the first; the ETA of the 250 left is at 1 step/s.
  assert "ETA 4m10s" in lines[1]  # with the first step counted: 5m00s


def test_a_resumed_run_logs_its_own_first_step(monkeypatch):
  chunks, lines = run_loop(400, 450, 200, first_step_seconds=5.0, monkeypatch=monkeypatch)
  assert chunks == [1, 49]
  assert lines[0].startswith("step 401/450") and "first step 5.0s" in lines[0]


def test_without_log_first_step_lines_come_at_the_interval_only(monkeypatch):
  chunks, lines = run_loop(0, 450, 200, 41.0, monkeypatch, log_first_step=False)
  assert chunks == [200, 200, 50]
  assert [line.split(" ", 2)[1] for line in lines] == ["200/450", "400/450", "450/450"]


@pytest.mark.parametrize("vocab_size", [30522, 100])
def test_the_jax_trainer_refuses_another_vocab_size_before_writing(tmp_path, vocab_size):
  from electra_tf2.config.pretraining import resolve_pretraining_config
  from electra_tf2.training import jax_pretraining
  data = write_pretraining_data(str(tmp_path / "data"), num_examples=8, vocab_size=512,
                                bert_ids=False)
  model_dir = tmp_path / "model"
  config = resolve_pretraining_config("electra_small", data, {
      "vocab_size": vocab_size, "model_dir": str(model_dir), "debug": True})
  with pytest.raises(VocabError) as raised:
    jax_pretraining.train(config)
  message = str(raised.value)
  assert "\n" not in message and "vocab.txt has 512 tokens" in message
  assert f"vocab_size={vocab_size}" in message and '"vocab_size": 512' in message
  assert not os.path.exists(model_dir)
