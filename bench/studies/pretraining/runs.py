"""Running the study's scripts: logging, time limits."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import List, Optional

from bench import common


class TimeLimit(Exception):
  """The --time-limit is reached; rerunning the command resumes."""


def log(message: str) -> None:
  common.log(message, tag="study")


def run(command: List[str], deadline: Optional[float] = None, cpu_only: bool = False) -> None:
  """Runs a script of the repository (`command`, from its root); at `deadline` (a time.time()),
  SIGTERM (training then saves a checkpoint and stops) and TimeLimit."""
  log("+ " + " ".join(command))
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  if cpu_only:
    env["CUDA_VISIBLE_DEVICES"] = ""
  process = subprocess.Popen(command, cwd=common.REPO, env=env)
  try:
    remaining = None if deadline is None else max(1.0, deadline - time.time())
    code = process.wait(timeout=remaining)
  except subprocess.TimeoutExpired:
    process.send_signal(signal.SIGTERM)
    process.wait()
    raise TimeLimit() from None
  if code:
    raise subprocess.CalledProcessError(code, command)
