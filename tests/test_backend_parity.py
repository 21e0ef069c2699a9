"""The model core gives TensorFlow's numbers on JAX and PyTorch (issue #39, item 3).

Same weights, same batch, and every random draw (masked positions, the [MASK]/keep
choice, the Gumbel noise) fed in: forward outputs within 1e-5, losses within 1e-5
relative, gradients within 1e-4 relative, and one official optimizer update within 1e-6,
for the ELECTRA, ELECTRIC and MLM objectives. TensorFlow runs in this process; JAX and
PyTorch each run tests/backend_parity.py in a subprocess where `tensorflow` cannot be
imported (tests/block_tensorflow.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import backend_parity
from conftest import at_xla_default_level

HERE = os.path.dirname(os.path.abspath(__file__))


def run_without_tensorflow(backend: str, *args: str, xla_default: bool = False
                           ) -> subprocess.CompletedProcess:
  env = dict(os.environ, KERAS_BACKEND=backend, ELECTRA_BLOCK_TENSORFLOW="1")
  env = at_xla_default_level(env) if xla_default else env
  return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                        timeout=600, cwd=os.path.dirname(HERE))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """The TensorFlow step of every objective, saved as the other backends' reference."""
  arrays = {}
  for objective in backend_parity.OBJECTIVES:
    arrays.update(backend_parity.flatten(objective, backend_parity.step(objective)))
  path = str(tmp_path_factory.mktemp("parity") / "tensorflow.npz")
  np.savez(path, **arrays)
  return path


def test_the_reference_is_a_real_step(reference):
  arrays = np.load(reference)
  for objective in backend_parity.OBJECTIVES:
    assert np.isfinite(arrays[f"{objective}/output/total_loss"])
    assert arrays[f"{objective}/output/masked_lm_weights"].sum() > 0
    assert any(np.abs(arrays[k]).max() > 0 for k in arrays.files
               if k.startswith(f"{objective}/update/"))
  # ELECTRA replaced some tokens, so the discriminator had something to learn.
  assert arrays["electra/output/disc_labels"].sum() > 0


def test_the_comparison_fails_on_other_weights(reference):
  """The oracle can fail: a perturbed reference is reported."""
  arrays = dict(np.load(reference))
  arrays["electra/output/total_loss"] = arrays["electra/output/total_loss"] * (1 + 1e-4)
  problems = backend_parity.compare("electra", arrays_file(arrays))
  assert problems and "total_loss" in problems[0]


def arrays_file(arrays):
  """An object with `.files` and item access, like np.load's."""
  class Arrays(dict):
    files = list(arrays)
  return Arrays(arrays)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_backend_matches_tensorflow_without_tensorflow(backend, reference):
  """(JAX at XLA's default optimisation level, as users' programs compile: tests/conftest.py
  lowers it for the rest of the suite.)"""
  result = run_without_tensorflow(backend, os.path.join(HERE, "backend_parity.py"), "check",
                                  reference, xla_default=backend == "jax")
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  assert f"{backend}: all agree" in result.stdout
