"""Pre-training under tf.distribute: two logical CPUs (MirroredStrategy) equal one device,
and two MultiWorkerMirroredStrategy processes agree. Apart from tests/test_pretraining.py
so that CI's workers (pytest-xdist, one file each) run these two long tests beside it.
"""

import json
import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

from electra_tf2.utils import run_lock
from tests.conftest import REPO_ROOT
from tests.test_pretraining import (NO_DROPOUT, TINY, checkpoint_weights, env, run_script,
                                    tiny_data)


# ---------------------------------------------------------------------------
# tf.distribute
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_mirrored_two_cpus_matches_one_device(tmp_path):
  """Two replicas of 4 = one device over two micro-batches of 4 (same rows, seeds)."""
  data = tiny_data(tmp_path)
  hparams = dict(TINY, num_train_steps=4, iterations_per_loop=2,
                 model_hparam_overrides=NO_DROPOUT)
  out = run_script(f"""
      import json
      import numpy as np
      import tensorflow as tf
      cpu = tf.config.list_physical_devices("CPU")[0]
      tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
      from electra_tf2.networks import variable_names
      from electra_tf2.config.pretraining import resolve_pretraining_config
      from electra_tf2.training.options import RunOptions
      from electra_tf2.training.tf_pretraining import PretrainingRun
      # The uniform generator's word-embedding gradient is sparse (IndexedSlices):
      # concatenated across micro-batches, all-reduced across replicas. One strategy
      # object serves both mirrored runs (two would reuse each other's collective keys).
      strategies = {{"one_device": tf.distribute.OneDeviceStrategy("/cpu:0"),
                    "mirrored": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])}}
      for generator in ({{}}, {{"uniform_generator": True}}):
        weights = []
        for strategy, accumulation in (("one_device", 2), ("mirrored", 1)):
          hp = dict(json.loads({json.dumps(json.dumps(hparams))}), **generator,
                    gradient_accumulation_steps=accumulation,
                    model_dir={str(tmp_path)!r} + "/" + strategy + str(len(generator)))
          run = PretrainingRun(resolve_pretraining_config("electra_small", {data!r}, hp),
                               RunOptions(distribution_strategy=strategy),
                               strategies[strategy])
          assert run.num_replicas == (2 if strategy == "mirrored" else 1)
          run.train()
          weights.append({{n: v.numpy() for n, v in
                          variable_names.pretrainer_variable_map(run.model).items()}})
        diff = max(float(np.abs(weights[0][n] - weights[1][n]).max()) for n in weights[0])
        print("MAXDIFF", diff)
  """)
  diffs = [float(part.split()[0]) for part in out.split("MAXDIFF")[1:]]
  assert len(diffs) == 2 and max(diffs) <= 1e-5, diffs


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def run_two_workers(data: str, hparams: dict) -> list:
  """run_pretraining.py as two MultiWorkerMirroredStrategy workers on 127.0.0.1; their stdout."""
  workers = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
  processes = []
  for index in range(2):
    worker_env = env()
    worker_env["TF_CONFIG"] = json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
    processes.append(subprocess.Popen(
        [sys.executable, "run_pretraining.py", "--data-dir", data, "--model-name",
         "electra_small", "--distribution-strategy", "multi_worker_mirrored",
         "--hparams", json.dumps(hparams)],
        env=worker_env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True))
  try:
    outputs = [p.communicate(timeout=240) for p in processes]
  finally:
    for p in processes:
      p.kill()
  for p, (out, err) in zip(processes, outputs):
    assert p.returncode == 0, err[-4000:]
  return [out for out, _ in outputs]


def assert_workers_agree(model_dir: str, step: int) -> None:
  chief = checkpoint_weights(model_dir)
  worker = checkpoint_weights(os.path.join(model_dir, "worker_worker_1"))
  assert chief.keys() == worker.keys() and len(chief) > 50
  for name in chief:
    np.testing.assert_array_equal(chief[name], worker[name], err_msg=name)
  summary = json.load(open(os.path.join(model_dir, "pretrain_summary.json")))
  assert summary["num_replicas"] == 2 and summary["step"] == step


@pytest.mark.slow
def test_multi_worker_mirrored_two_processes(tmp_path):
  data = tiny_data(tmp_path, num_files=2)
  model_dir = str(tmp_path / "mw")
  hparams = dict(TINY, num_train_steps=4, iterations_per_loop=2, model_dir=model_dir)
  run_two_workers(data, hparams)
  assert_workers_agree(model_dir, 4)
  # Each process held the run lock of its own directory, and released it on exit.
  for directory in (model_dir, os.path.join(model_dir, "worker_worker_1")):
    assert open(run_lock.lock_path(directory)).read() == ""
  # A worker that lost its checkpoints (or joined later) resumes from the
  # chief's, with a fresh input stream, so the replicas stay identical.
  shutil.rmtree(os.path.join(model_dir, "worker_worker_1"))
  chief_out, worker_out = run_two_workers(data, dict(hparams, num_train_steps=6))
  assert "the input stream starts afresh" not in chief_out
  assert ("the input stream starts afresh (this worker has no checkpoint of its own)"
          in worker_out)
  assert_workers_agree(model_dir, 6)
