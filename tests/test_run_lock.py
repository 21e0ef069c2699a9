"""The run lock: one writer per directory, dead holders taken over, leases for remote dirs."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from electra_tf2.utils import run_lock
from electra_tf2.utils.atomic_io import write_text_atomic
from electra_tf2.utils.run_lock import RunLockError
from tests.conftest import REPO_ROOT

HOLD_SCRIPT = """
import sys, time
from electra_tf2.utils import errors, run_lock
def main(argv):
  start_at = float(argv[1])
  time.sleep(max(0.0, start_at - time.time()))
  with run_lock.hold(argv[0]):
    print("HOLDING", flush=True)
    time.sleep(float(argv[2]))
sys.exit(errors.run_command(main, sys.argv[1:]))
"""


def env():
  return dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def holder(directory: str, start_at: float, seconds: float) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-c", HOLD_SCRIPT, directory, str(start_at),
                           str(seconds)], env=env(), cwd=REPO_ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def test_lock_file_is_a_hidden_sibling(tmp_path):
  assert run_lock.lock_path(str(tmp_path / "models" / "m")) == str(tmp_path / "models" / ".m.lock")
  assert run_lock.lock_path(str(tmp_path / "out") + "/") == str(tmp_path / ".out.lock")
  assert run_lock.lock_path("gs://b/models/m") == "gs://b/models/.m.lock"


def test_second_writer_is_refused_with_one_line_naming_the_holder(tmp_path):
  directory = str(tmp_path / "model")
  with run_lock.hold(directory) as path:
    with run_lock.hold(directory):  # re-entrant in one process
      pass
    # Another open file description is what another process would have.
    with pytest.raises(RunLockError) as error:
      run_lock._acquire_local(path)  # pylint: disable=protected-access
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{directory}: another run writes here")
    record = json.load(open(path))
    for part in (f"host {socket.gethostname()}", f"PID {os.getpid()}", record["started"],
                 record["command"]):
      assert part in message
  assert open(path).read() == ""  # a clean exit leaves nothing to take over
  with run_lock.hold(directory):
    pass


def test_is_alive_tells_a_dead_or_reused_pid(tmp_path):
  me = json.loads(json.dumps(run_lock._holder_record()))  # pylint: disable=protected-access
  assert run_lock.is_alive(me)
  assert not run_lock.is_alive(dict(me, pid_start=str(int(me["pid_start"]) + 1)))  # reused
  dead = subprocess.Popen(["sleep", "30"])
  dead.kill()
  dead.wait()
  assert not run_lock.is_alive(dict(me, pid=dead.pid, pid_start=None))
  assert run_lock.is_alive(dict(me, host="another-host", pid=dead.pid))  # cannot tell: alive


def test_lock_without_flock_checks_the_recorded_pid(tmp_path, monkeypatch, capsys):
  import errno
  import fcntl

  def no_flock(fd, op):
    raise OSError(errno.ENOLCK, "No locks available")
  monkeypatch.setattr(fcntl, "flock", no_flock)
  directory = str(tmp_path / "model")
  path = run_lock.lock_path(directory)
  me = run_lock._holder_record()  # pylint: disable=protected-access
  with open(path, "w") as f:
    json.dump(me, f)
  with pytest.raises(RunLockError, match=f"PID {os.getpid()}"):
    run_lock._acquire_local(path)  # pylint: disable=protected-access
  with open(path, "w") as f:
    json.dump(dict(me, pid_start="1"), f)  # this PID, but another process's start time
  os.close(run_lock._acquire_local(path))  # pylint: disable=protected-access
  assert "is dead" in capsys.readouterr().out


def test_remote_directory_gets_a_lease_with_expiry(capsys):
  directory = f"ram://leases{time.time_ns()}/model"
  path = run_lock.lock_path(directory)
  with run_lock.hold(directory, lease_seconds=60):
    out = capsys.readouterr().out
    assert "is remote: guarded by the lease" in out and "not by a lock" in out
    with pytest.raises(RunLockError, match="another run holds the lease"):
      run_lock._acquire_remote(path, 60)  # pylint: disable=protected-access
  # A lease whose holder stopped renewing it is taken over, with one line saying so.
  stale = dict(run_lock._holder_record(),  # pylint: disable=protected-access
               token="x", renewed=time.time() - 61)
  write_text_atomic(path, json.dumps(stale))
  with run_lock.hold(directory, lease_seconds=60):
    assert "taking over the lease" in capsys.readouterr().out


def test_heartbeat_renews_the_lease():
  directory = f"ram://heartbeat{time.time_ns()}/model"
  path = run_lock.lock_path(directory)
  with run_lock.hold(directory, lease_seconds=0.4):
    first = run_lock._read_lease(path)["renewed"]  # pylint: disable=protected-access
    time.sleep(0.5)
    assert run_lock._read_lease(path)["renewed"] > first  # pylint: disable=protected-access
    with pytest.raises(RunLockError):  # renewed, so still held after lease_seconds
      run_lock._acquire_remote(path, 0.4)  # pylint: disable=protected-access


@pytest.mark.slow
def test_two_processes_race_for_one_directory(tmp_path):
  directory = str(tmp_path / "model")
  start_at = time.time() + 3  # both are imported and waiting by then
  racers = [holder(directory, start_at, 4) for _ in range(2)]
  outputs = [p.communicate(timeout=60) for p in racers]
  codes = sorted(p.returncode for p in racers)
  assert codes == [0, 2], outputs
  winner = next(p for p in racers if p.returncode == 0)
  _, err = outputs[racers.index(next(p for p in racers if p.returncode == 2))]
  assert err.count("\n") == 1 and "Traceback" not in err
  assert err.startswith(f"error: {directory}: another run writes here: host "
                        f"{socket.gethostname()} PID {winner.pid} (")


@pytest.mark.slow
def test_lock_of_a_killed_process_is_taken_over(tmp_path, capsys):
  directory = str(tmp_path / "model")
  process = holder(directory, 0, 60)
  assert process.stdout.readline() == "HOLDING\n"
  process.send_signal(signal.SIGKILL)
  process.wait()
  with run_lock.hold(directory):
    out = capsys.readouterr().out
  assert out.startswith(f"taking over the run lock {run_lock.lock_path(directory)}: its "
                        f"holder host {socket.gethostname()} PID {process.pid} (")
  assert out.rstrip().endswith("is dead") and out.count("\n") == 1
