"""`electra pretrain --backend jax` over several processes (issue #58 item 3), tested here: two
processes on 127.0.0.1 (`--coordinator-address`, `--num-processes 2`, `--process-id`; and
`--distributed auto` under a SLURM environment), one CPU device each, their collectives
through gloo (JAX's default for CPU processes).

Oracles: one process with the same two devices, uninterrupted, fed the global batches the
two processes read (the batches of the readers of processes 0 and 1 of 2, side by side):
a two-process run stopped by SIGTERM to both, then by kill -9 of one, then resumed, ends
with its weights, Adam slots, input positions and every step's losses, bit for bit; the
exit codes and the one-line messages are the user's.

The processes write to files (two pipes read one after the other can fill); each launcher
imports tests/jax_cache_every_process.py, so that process 1 too finds its compiled step in
the shared compilation cache.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from electra_tf2.checkpoints import portable
from electra_tf2.training import multihost
from tests.conftest import REPO_ROOT
from tests.test_jax_pretraining import (HPARAMS, accents_kept_data, command, jax_env, metrics,
                                        train)
from tests.test_pretraining import tiny_data

# Saves every 3 steps: a SIGTERM after step 2 stops at 3 or 4, and a kill two steps after the
# resume leaves a checkpoint of the stop or of step 6 to resume from. One micro-batch a step
# (half the program to compile; accumulation: tests/test_jax_pretraining.py).
STEPS = {"num_train_steps": 10, "save_checkpoints_steps": 3, "gradient_accumulation_steps": 1}
LAUNCHER = ("import runpy, sys; sys.path.insert(0, 'tests'); import block_tensorflow, "
            "jax_cache_every_process; sys.argv = ['electra'] + sys.argv[1:]; "
            "runpy.run_module('electra_tf2', run_name='__main__')")
# One process reading as the two do: the readers of processes 0 and 1 of 2, their batches
# side by side (process 0's rows first, as its device comes first), read in this process.
ORACLE = """
import runpy, sys
sys.path.insert(0, "tests")
import block_tensorflow
import numpy as np
from electra_tf2.data_io.pretraining import PretrainingDataReader
from electra_tf2.training import jax_pretraining

class Hosts:
  def __init__(self, files, max_seq_length, batch_size, seed, process_index, process_count):
    assert (process_index, process_count) == (0, 1)
    self.readers = [PretrainingDataReader(files, max_seq_length, batch_size // 2, seed=seed,
                                          process_index=i, process_count=2) for i in range(2)]

  def state(self):
    return [reader.state() for reader in self.readers]

  def __next__(self):
    batches = [next(reader) for reader in self.readers]
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}

class InProcess:
  def __init__(self, reader):
    self.reader = reader

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    pass

  def __iter__(self):
    return self

  def __next__(self):
    return next(self.reader), self.reader.state()

jax_pretraining.PretrainingDataReader = Hosts
jax_pretraining.BackgroundReader = InProcess
sys.argv = ["electra"] + sys.argv[1:]
runpy.run_module("electra_tf2", run_name="__main__")
"""


def free_port(low: int = 0, high: int = 0) -> int:
  """A port nobody listens on (any, or one in [low, high))."""
  for _ in range(200):
    with socket.socket() as s:
      try:
        s.bind(("127.0.0.1", random.randrange(low, high) if high else 0))
      except OSError:
        continue
      return s.getsockname()[1]
  raise RuntimeError("no free port")


class Processes:
  """The processes of one launch, their stdout and stderr in files; any still running when
  the block ends are killed."""

  def __init__(self, directory, name: str, commands: list, envs: list):
    self.files = [(os.path.join(directory, f"{name}-{i}.out"),
                   os.path.join(directory, f"{name}-{i}.err")) for i in range(len(commands))]
    self.popens = []
    for (out, err), argv, env in zip(self.files, commands, envs):
      with open(out, "w") as o, open(err, "w") as e:
        self.popens.append(subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=o, stderr=e))

  def out(self, i: int) -> str:
    with open(self.files[i][0], encoding="utf-8") as f:
      return f.read()

  def err(self, i: int) -> str:
    with open(self.files[i][1], encoding="utf-8") as f:
      return f.read()

  def wait_for(self, i: int, text: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while text not in self.out(i):
      assert self.popens[i].poll() is None, (text, self.out(i)[-2000:], self.err(i)[-3000:])
      assert time.monotonic() < deadline, (text, self.out(i)[-2000:])
      time.sleep(0.1)

  def wait(self, timeout: float = 300) -> list:
    return [p.wait(timeout=timeout) for p in self.popens]

  def assert_done(self) -> None:
    codes = self.wait()
    for i, code in enumerate(codes):
      assert code == 0, (i, self.out(i)[-2000:], self.err(i)[-4000:])

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    for p in self.popens:
      if p.poll() is None:
        p.kill()
        p.wait()


def launch(directory, name: str, data: str, model_dir: str, cache: str, slurm: bool = False
           ) -> Processes:
  """Processes 0 and 1 of `electra pretrain --backend jax` on 127.0.0.1: named by the flags,
  or with `slurm` by a SLURM job's environment and `--distributed auto`."""
  argv = command(data, model_dir, **STEPS)
  argv[2] = LAUNCHER
  if not slurm:
    port = free_port()
    return Processes(directory, name, [
        argv + ["--coordinator-address", f"127.0.0.1:{port}", "--num-processes", "2",
                "--process-id", str(i)] for i in range(2)], [jax_env(cache)] * 2)
  # JAX's SLURM detection: the coordinator on the step's first node, port 61440 + id % 4096.
  job = free_port(61440, 65536) - 61440
  envs = [dict(jax_env(cache), SLURM_JOB_ID=str(job), SLURM_STEP_NODELIST="127.0.0.1",
               SLURM_NTASKS="2", SLURM_PROCID=str(i), SLURM_LOCALID=str(i)) for i in range(2)]
  return Processes(directory, name, [argv + ["--distributed", "auto"]] * 2, envs)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  """(the tiny data set, a compilation cache): two TFRecord files, one for each process."""
  root = tmp_path_factory.mktemp("multihost")
  return accents_kept_data(root), str(root / "jax_cache")


@pytest.fixture(scope="module")
def oracle(data, tmp_path_factory):
  """One process with two devices, uninterrupted, reading as the two processes do: its
  model directory."""
  data_dir, cache = data
  model_dir = str(tmp_path_factory.mktemp("oracle") / "model")
  argv = command(data_dir, model_dir, **STEPS)
  argv[2] = ORACLE
  result = subprocess.run(argv, env=jax_env(cache, devices=2), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
  return model_dir


@pytest.fixture(scope="module")
def chain(data, tmp_path_factory):
  """Two processes stopped by SIGTERM to both, resumed, stopped by kill -9 of process 1,
  resumed (JAX's SLURM detection this time) to the end: (model dir, the launches by name
  and the checkpoint the kill left, the stopped run's summary, seconds from the kill to
  process 0's end)."""
  data_dir, cache = data
  directory = str(tmp_path_factory.mktemp("chain"))
  parts = os.path.join(directory, "model")
  launches = {}
  with launch(directory, "stopped", data_dir, parts, cache) as launches["stopped"]:
    for i in range(2):
      launches["stopped"].wait_for(i, "step 2/")
    for p in launches["stopped"].popens:
      p.send_signal(signal.SIGTERM)
    launches["stopped"].assert_done()
  stopped = json.load(open(os.path.join(parts, "pretrain_summary.json")))
  with launch(directory, "killed", data_dir, parts, cache) as launches["killed"]:
    launches["killed"].wait_for(0, f"step {stopped['saved_step'] + 2}/")
    launches["killed"].popens[1].kill()
    killed = time.monotonic()
    launches["killed"].popens[0].wait(timeout=120)
    ended = time.monotonic() - killed
  launches["last checkpoint"] = portable.load(portable.latest(parts))
  with launch(directory, "resumed", data_dir, parts, cache, slurm=True) as launches["resumed"]:
    launches["resumed"].assert_done()
  return parts, launches, stopped, ended


def loss_rows(model_dir: str) -> dict:
  """{step: its losses} of train_metrics.jsonl (a step run again after a kill: its last)."""
  return {row["step"]: {k: row[k] for k in ("total_loss", "mlm_loss", "disc_loss")}
          for row in metrics(model_dir)}


@pytest.mark.slow
def test_sigterm_to_both_stops_both_at_one_step_and_kill_9_of_one_is_one_line(chain):
  parts, launches, stopped, ended = chain
  stopping = [[line for line in launches["stopped"].out(i).splitlines()
               if "saving a checkpoint" in line] for i in range(2)]
  assert stopping[0] == stopping[1] and len(stopping[0]) == 1, stopping
  assert stopped["stopped_early"] and 2 <= stopped["saved_step"] < 8
  assert f"stopping at step {stopped['saved_step']} " in stopping[0][0]
  killed = launches["killed"]
  assert killed.popens[0].returncode == 2 and ended < multihost.ROLL_CALL_SECONDS + 30, ended
  errors = [line for line in killed.err(0).splitlines() if line.startswith("error:")]
  assert len(errors) == 1 and "Traceback" not in killed.err(0), killed.err(0)[-3000:]
  assert errors[0].startswith("error: process 1 of 2 stopped answering ("), errors
  assert errors[0].endswith("process 0 stops too; start all 2 processes again to resume from "
                            f"the last checkpoint in {parts}")
  # The checkpoint the kill left is whole: the resumed run started from it.
  _, state = launches["last checkpoint"]
  assert len(state["readers"]) == 2
  for i in range(2):
    out = launches["resumed"].out(i)
    assert f"process {i} of 2 joined the run (1 of its 2 devices here)" in out
    assert f"resumed from {portable.path_for(parts, state['global_step'])}" in out
    assert "step 10/10 (100.0%)" in out


@pytest.mark.slow
def test_two_processes_end_as_one_process_reading_the_same_batches_bit_for_bit(chain, oracle):
  """The stopped, killed and resumed two-process run against one process uninterrupted:
  the same weights, Adam slots and losses at every step, bit for bit (the two devices'
  program is the same; a sum of two values is the same whichever process holds each), and
  each process's input position is that process's reader's."""
  parts = chain[0]
  assert_same_checkpoint(oracle, parts)
  one, two = loss_rows(oracle), loss_rows(parts)
  assert one.keys() == two.keys() == set(range(1, 11)) and one == two
  assert one[10]["total_loss"] < one[1]["total_loss"]  # it learns
  # Process 0 wrote the directory: the checkpoints, the summary.
  assert [portable.step_of(p) for p in portable.all_checkpoints(parts)][-3:] == [6, 9, 10]
  summary = json.load(open(os.path.join(parts, "pretrain_summary.json")))
  assert (summary["processes"], summary["devices"], summary["step"]) == (2, 2, 10)
  _, state = portable.load(portable.latest(parts))
  assert [[os.path.basename(f) for f in reader["files"]] for reader in state["readers"]] == [
      ["pretrain_data.tfrecord-0-of-2"], ["pretrain_data.tfrecord-1-of-2"]]
  assert state["reader"] == state["readers"][0]


def assert_same_checkpoint(oracle: str, parts: str) -> None:
  import numpy as np  # pylint: disable=g-import-not-at-top
  arrays_a, state_a = portable.load(portable.latest(oracle))
  arrays_b, state_b = portable.load(portable.latest(parts))
  assert portable.latest(parts).endswith("portable-10.npz") and len(arrays_a) > 100
  assert arrays_a.keys() == arrays_b.keys()
  different = [k for k in arrays_a if not np.array_equal(arrays_a[k], arrays_b[k])]
  assert not different, different[:5]
  assert state_a["keras_state"] == state_b["keras_state"]
  assert state_a["reader"] == state_b["readers"]  # the oracle's: both processes' readers


@pytest.mark.slow
def test_a_checkpoint_of_two_processes_resumed_by_one_starts_the_streams_afresh(
    data, chain, oracle, tmp_path):
  """One process (the oracle's program: two devices, 10 steps) resumes step 9 of the two."""
  data_dir, cache = data
  one = str(tmp_path / "one")
  shutil.copytree(chain[0], one)
  for name in (portable.path_for(one, 10), portable.state_path(portable.path_for(one, 10))):
    os.remove(name)
  stdout = train(data_dir, one, cache, devices=2, **STEPS)
  assert (f"the input streams start afresh: {one}/portable-9.json holds the input positions "
          "of 2 processes, this run has 1") in stdout
  assert "resumed from" in stdout and "step 10/10" in stdout


def test_each_process_restores_its_own_input_position():
  """`own_reader_state` of the checkpoints of one process (`reader`) and of several
  (`readers`, by process index); another count starts afresh in one line naming both."""
  one = {"reader": {"seed": 0}}
  several = {"reader": {"seed": 0}, "readers": [{"seed": 0}, {"seed": 1}, {"seed": 2}]}
  assert multihost.own_reader_state(one, 0, 1, "p.json") == ({"seed": 0}, None)
  assert multihost.own_reader_state(several, 2, 3, "p.json") == ({"seed": 2}, None)
  assert multihost.own_reader_state(several, 0, 2, "p.json") == (None, (
      "the input streams start afresh: p.json holds the input positions of 3 processes, "
      "this run has 2"))
  assert multihost.own_reader_state(one, 1, 2, "p.json") == (None, (
      "the input streams start afresh: p.json holds the input positions of 1 process, "
      "this run has 2"))
  assert multihost.own_reader_state({}, 0, 1, "p.json")[1].startswith(
      "the input stream starts afresh (p.json, which holds the input position, is missing")


@pytest.mark.slow
def test_a_dead_coordinator_ends_the_other_processes_at_once(tmp_path):
  """What JAX 0.6 does where process 0 dies (multihost.py says why it stays JAX's): the
  other process is ended within seconds by JAX itself (its fatal log, exit 134), not left
  waiting; before that, `gather_json` gave every process's value by process index."""
  script = ("import sys, time; import numpy as np; sys.path.insert(0, '.')\n"
            "from electra_tf2.training import multihost, options\n"
            "index, port = int(sys.argv[1]), sys.argv[2]\n"
            "multihost.initialize(options.Cluster(f'127.0.0.1:{port}', 2, index))\n"
            "import jax\n"
            "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
            "mesh = Mesh(np.array(jax.devices()), ('rows',))\n"
            "rows = jax.make_array_from_process_local_data(NamedSharding(mesh, P('rows')), "
            "np.full((1, 2), index, np.float32))\n"
            "total = jax.jit(lambda x: x.sum(), out_shardings=NamedSharding(mesh, P()))\n"
            "with multihost.failing_together('/nowhere'):\n"
            "  print(multihost.gather_json({'process': index}), flush=True)\n"
            "  while True:\n"
            "    print(float(total(rows)), flush=True); time.sleep(0.05)\n")
  port = free_port()
  env = {k: v for k, v in jax_env("").items() if k != "JAX_COMPILATION_CACHE_DIR"}
  with Processes(str(tmp_path), "tiny", [[sys.executable, "-c", script, str(i), str(port)]
                                         for i in range(2)], [env] * 2) as processes:
    for i in range(2):
      processes.wait_for(i, "2.0\n", timeout=120)
      assert "[{'process': 0}, {'process': 1}]" in processes.out(i)
    processes.popens[0].kill()
    killed = time.monotonic()
    code = processes.popens[1].wait(timeout=60)
    ended = time.monotonic() - killed
    assert code == -signal.SIGABRT and ended < 10, (code, ended)
    assert "JAX distributed service detected fatal errors" in processes.err(1)


@pytest.mark.parametrize("flags,message", [
    (["--backend", "tensorflow", "--num-processes", "2", "--process-id", "0",
      "--coordinator-address", "127.0.0.1:1234"],
     "--coordinator-address: a run over several processes is --backend jax's; the TensorFlow "
     "trainer spans hosts with --distribution-strategy multi_worker_mirrored and TF_CONFIG"),
    (["--backend", "jax", "--num-processes", "2"],
     "--num-processes needs --coordinator-address and --process-id too"),
    (["--backend", "jax", "--num-processes", "2", "--process-id", "2",
      "--coordinator-address", "127.0.0.1:1234"],
     "--process-id 2 must be below --num-processes 2"),
    (["--backend", "jax", "--num-processes", "2", "--process-id", "0",
      "--coordinator-address", "127.0.0.1"],
     "--coordinator-address 127.0.0.1: give HOST:PORT"),
    (["--backend", "jax", "--num-processes", "0"], "--num-processes"),
    (["--backend", "jax", "--distributed", "auto"],
     "--distributed auto: JAX found no cluster to join (coordinator_address should be defined.)"
     ": run inside a SLURM, Open MPI or TPU pod job"),
])
def test_the_cluster_flags_refuse_in_one_line(tmp_path, flags, message):
  data_dir = tiny_data_dir(tmp_path)
  env = {k: v for k, v in jax_env(str(tmp_path / "cache")).items()
         if not k.startswith(("SLURM_", "OMPI_", "JAX_COORDINATOR"))}
  result = subprocess.run(
      [sys.executable, "-m", "electra_tf2", "pretrain", "--data-dir", data_dir, "--model-name",
       "electra_small", "--hparams", json.dumps(dict(HPARAMS, model_dir=str(tmp_path / "m"))),
       *flags], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 2 and len(lines) == 1, result.stderr[-3000:]
  assert lines[0].startswith("error: ") and message in lines[0], lines
  assert not os.path.exists(tmp_path / "m")


def tiny_data_dir(tmp_path) -> str:
  """A data directory as the flags check it (it exists; --distributed auto reads the vocab)."""
  return tiny_data(tmp_path, num_examples=8)
