"""The model core's semantic tests on the JAX and PyTorch Keras backends, without TensorFlow.

CI's main run uses the TensorFlow backend. Here the backend-neutral test files run again in a
subprocess under KERAS_BACKEND=jax and torch with TensorFlow unimportable
(ELECTRA_BLOCK_TENSORFLOW=1, tests/block_tensorflow.py): every oracle must hold on each
backend's kernels and random streams, and a TensorFlow import left in the model core fails.
The TensorFlow-only tests skip there; the JAX-only ones (jax.jit) run only here in CI.
Run one file on one backend by hand the same way:

    KERAS_BACKEND=jax ELECTRA_BLOCK_TENSORFLOW=1 python -m pytest -q tests/test_layers.py
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

FILES = ["tests/test_pretrain_helpers.py", "tests/test_objectives.py", "tests/test_layers.py",
         "tests/test_encoder.py", "tests/test_optimization.py"]
# On JAX each new shape compiles (an eager op is an XLA program), so the JAX run leaves the
# encoder's non-GELU activations (Keras' own relu, tanh, linear) to the other backends' runs.
SELECTION = {"jax": ["-k", "not (official_activation and not gelu)"], "torch": []}
# The reasons of backend_marks' skips: any other skip (a missing dependency, say) fails.
BACKEND_SKIP_REASONS = ("TensorFlow-specific", "JAX-specific")


def _env(**extra: str) -> dict:
  env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", **extra)
  env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p)
  return env


def test_blocker_makes_tensorflow_unimportable():
  """With ELECTRA_BLOCK_TENSORFLOW=1, conftest blocks TensorFlow before anything imports it,
  and what probes for it (`importlib.util.find_spec`) finds nothing."""
  script = ("import importlib.util, runpy\n"
            "runpy.run_path('tests/conftest.py')\n"
            "assert importlib.util.find_spec('tensorflow') is None\n"
            "try:\n"
            "  import tensorflow\n"
            "except ModuleNotFoundError:\n"
            "  print('BLOCKED')\n")
  result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, env=_env(ELECTRA_BLOCK_TENSORFLOW="1"))
  assert result.returncode == 0 and result.stdout.strip() == "BLOCKED", result.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_model_core_tests_pass_on_backend_without_tensorflow(backend):
  if importlib.util.find_spec(backend) is None:
    pytest.skip(f"needs {backend} for KERAS_BACKEND={backend} (pip install {backend}; "
                "constraints.txt pins the CPU build of torch)")
  command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:xdist", "-m", "not slow",
             *SELECTION[backend], *FILES]
  result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
                          env=_env(KERAS_BACKEND=backend, ELECTRA_BLOCK_TENSORFLOW="1"))
  output = result.stdout + result.stderr
  assert result.returncode == 0, output[-8000:]
  passed = re.search(r"(\d+) passed", output)
  assert passed and int(passed.group(1)) >= 100, output[-3000:]
  skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", output, re.MULTILINE)
  others = [reason for reason in skips if not reason.startswith(BACKEND_SKIP_REASONS)]
  assert not others, others
