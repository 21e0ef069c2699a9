"""Model directories read on JAX where TensorFlow is absent (tests/block_tensorflow.py):
a result or one line, never a traceback.

- `electra hf-export` of a portable (JAX-trained) directory writes the Hugging Face directory
  that hf-export on TensorFlow writes from the same weights in TensorFlow's format.
- `Discriminator.from_pretrained` of a TensorFlow-trained directory is refused in one line.
- `electra pretrain --backend jax` resuming: a damaged portable checkpoint is one line
  naming it; a missing sidecar says the input stream starts afresh; a directory of
  another shape names each differing size.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO_ROOT
from tests.fixtures import TINY_PRETRAINING, write_trained_model_dirs

pytestmark = pytest.mark.slow

BLOCKED = "import sys; sys.path.insert(0, 'tests'); import block_tensorflow; "


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
  pytest.importorskip("jax")
  return write_trained_model_dirs(str(tmp_path_factory.mktemp("trained")))


def run_on_jax(code: str, *args: str) -> subprocess.CompletedProcess:
  env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", PYTHONPATH=REPO_ROOT)
  return subprocess.run([sys.executable, "-c", BLOCKED + code, *args], cwd=REPO_ROOT, env=env,
                        capture_output=True, text=True, timeout=600)


def read_safetensors(path: str):
  from safetensors.numpy import load_file  # pylint: disable=g-import-not-at-top
  return load_file(path)


def test_hf_export_and_the_tensorflow_refusal_without_tensorflow(dirs, tmp_path):
  from electra_tf2.conversion import hf_export
  code = ("import electra_tf2, sys\n"
          "from electra_tf2.cli import commands\n"
          "try:\n"
          "  electra_tf2.Discriminator.from_pretrained(sys.argv[1])\n"
          "except electra_tf2.ElectraError as e:\n"
          "  print('refused:', e)\n"
          "sys.exit(commands.main(['hf-export', '--model-dir', sys.argv[2], '--output-dir', "
          "sys.argv[3]]))\n")
  on_jax = str(tmp_path / "hf_jax")
  result = run_on_jax(code, dirs["tensorflow"], dirs["portable"], on_jax)
  assert result.returncode == 0, result.stderr[-3000:]
  refusal = [line for line in result.stdout.splitlines() if line.startswith("refused:")]
  assert len(refusal) == 1 and "reads with TensorFlow" in refusal[0], result.stdout
  assert "KERAS_BACKEND=tensorflow" in refusal[0] and dirs["tensorflow"] in refusal[0]
  # The oracle: hf-export on TensorFlow, of the TensorFlow checkpoint the weights came from.
  on_tf = str(tmp_path / "hf_tf")
  assert hf_export.main(["--model-dir", dirs["tensorflow"], "--output-dir", on_tf]) == 0
  jax_tensors = read_safetensors(os.path.join(on_jax, "model.safetensors"))
  tf_tensors = read_safetensors(os.path.join(on_tf, "model.safetensors"))
  assert sorted(jax_tensors) == sorted(tf_tensors)
  for name, value in tf_tensors.items():
    np.testing.assert_array_equal(jax_tensors[name], value, err_msg=name)
  for name in ("config.json", "vocab.txt"):
    with open(os.path.join(on_jax, name), "rb") as a, open(os.path.join(on_tf, name), "rb") as b:
      assert a.read() == b.read(), name


def resume_on_jax(dirs, model_dir: str, **hparams) -> subprocess.CompletedProcess:
  code = ("from electra_tf2.cli import commands\n"
          "sys.exit(commands.main(sys.argv[1:]))\n")
  values = dict(TINY_PRETRAINING, model_dir=model_dir, **hparams)
  return run_on_jax(code, "pretrain", "--backend", "jax", "--data-dir", dirs["data"],
                    "--model-name", "electra_small", "--hparams", json.dumps(values))


def test_jax_resume_of_a_damaged_or_other_directory(dirs, tmp_path):
  damaged = shutil.copytree(dirs["portable"], str(tmp_path / "damaged"))
  npz = os.path.join(damaged, "portable-2.npz")
  with open(npz, "r+b") as f:
    f.truncate(os.path.getsize(npz) // 2)
  result = resume_on_jax(dirs, damaged)
  assert result.returncode == 2, result.stderr[-3000:]
  assert result.stderr.strip().splitlines() == [
      f"error: {npz} cannot be read (File is not a zip file): resume from an earlier "
      "checkpoint or delete it"]

  no_sidecar = shutil.copytree(dirs["portable"], str(tmp_path / "no_sidecar"))
  os.remove(os.path.join(no_sidecar, "portable-2.json"))
  result = resume_on_jax(dirs, no_sidecar)
  assert result.returncode == 0, result.stderr[-3000:]
  sidecar = os.path.join(no_sidecar, "portable-2.json")
  assert (f"the input stream starts afresh ({sidecar}, which holds the input position, is "
          "missing or lacks it)") in result.stdout.splitlines()

  wider = dict(TINY_PRETRAINING["model_hparam_overrides"], hidden_size=48, num_hidden_layers=2)
  result = resume_on_jax(dirs, dirs["portable"], model_hparam_overrides=wider)
  assert result.returncode == 2, result.stderr[-3000:]
  message = result.stderr.strip().splitlines()[-1]
  assert "encoder hidden_size 32 there, 48 now" in message, message
  assert "encoder num_hidden_layers 1 there, 2 now" in message, message


def test_a_portable_directory_loads_on_pytorch_as_on_tensorflow(dirs):
  """docs/keras.md's backend table: a JAX-trained (portable) directory loads on PyTorch
  without TensorFlow, with TensorFlow's probabilities (JAX: tests/test_jax_pretraining.py)."""
  pytest.importorskip("torch")
  import electra_tf2  # pylint: disable=g-import-not-at-top
  texts = ["w1 w2 w3 w4", "w5 w6"]
  code = ("import json, numpy as np, electra_tf2\n"
          f"out = electra_tf2.Discriminator.from_pretrained({dirs['portable']!r}).predict("
          f"{texts!r}, verbose=0)\n"
          "print(json.dumps(np.asarray(out['replaced_probability']).tolist()))\n")
  env = dict(os.environ, KERAS_BACKEND="torch", PYTHONPATH=REPO_ROOT)
  result = subprocess.run([sys.executable, "-c", BLOCKED + code], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  on_torch = np.array(json.loads(result.stdout.strip().splitlines()[-1]))
  on_tf = electra_tf2.Discriminator.from_pretrained(dirs["portable"]).predict(texts, verbose=0)
  np.testing.assert_allclose(on_torch, np.asarray(on_tf["replaced_probability"]), atol=1e-6)
