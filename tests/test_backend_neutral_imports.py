"""Which modules import without TensorFlow: all but the TensorFlow-only ones listed here.

A JAX or PyTorch machine may have no TensorFlow. There, every module of the package
imports (in a subprocess with TensorFlow made absent, tests/block_tensorflow.py, on the
JAX and the PyTorch Keras backends) except those in TENSORFLOW_ONLY, each named with what
it needs TensorFlow for; the list is exact, so a module that stops needing TensorFlow
leaves it. A function of a backend-neutral module that needs TensorFlow says so in one
line (`errors.import_tensorflow`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

# Module (or package prefix) -> what it needs TensorFlow for.
TENSORFLOW_ONLY = {
    **{f"electra_tf2.text.{name}": "the in-graph WordPiece/SentencePiece tokenizer "
       "(tensorflow-text) and its packing, windows and spans as TensorFlow ops"
       for name in ("tokenizer", "packing", "windows", "tagging", "sentencepiece", "kinds",
                    "qa_windows", "qa_spans", "litert_tokenizer")},
    "electra_tf2.data_io.input_pipeline": "tf.data, the TensorFlow trainer's input",
    **{f"electra_tf2.tasks.{name}": "featurisation to TFRecords with the in-graph tokenizer"
       for name in ("classification", "preprocessing", "qa", "qa_decoding", "tagging")},
    **{f"electra_tf2.litert.{name}": "the TFLite converter"
       for name in ("convert", "mediapipe", "qa")},
    "electra_tf2.models.question_answerer": "string tensors and the answer search in the "
                                            "graph (the tensorflow Keras backend only)",
    "electra_tf2.conversion.convert": "official TF1 checkpoints (tf.train)",
    "electra_tf2.scoring.graph": "the in-graph scoring of SavedModels",
    "electra_tf2.scoring.scorer": "the in-graph scoring of SavedModels",
    "electra_tf2.cli.score": "the scorer",
    "electra_tf2.serving.export": "SavedModels",
    **{f"electra_tf2.training.{name}": "tf.distribute and the TensorFlow training loop"
       for name in ("distribution", "finetuning", "tf_pretraining")},
}

_WALK = """
import importlib, json, pathlib, sys
sys.path.insert(0, "tests")
import block_tensorflow  # noqa: F401  (TensorFlow absent from here on)
import electra_tf2
root = pathlib.Path(electra_tf2.__file__).parent
failed = {}
for path in sorted(root.rglob("*.py")):
  parts = path.relative_to(root.parent).with_suffix("").parts
  name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
  if parts[-1] == "__main__":
    continue
  try:
    importlib.import_module(name)
  except Exception as e:  # pylint: disable=broad-except
    failed[name] = type(e).__name__ + ": " + str(e).splitlines()[0][:200]
print(json.dumps(failed))
"""


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_module_but_the_tensorflow_only_ones_imports_without_tensorflow(backend):
  if importlib.util.find_spec(backend) is None:
    pytest.skip(f"needs {backend} for KERAS_BACKEND={backend} (pip install {backend})")
  env = dict(os.environ, KERAS_BACKEND=backend, CUDA_VISIBLE_DEVICES="",
             PYTHONPATH=REPO_ROOT)
  result = subprocess.run([sys.executable, "-c", _WALK], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  failed = json.loads(result.stdout.strip().splitlines()[-1])
  assert sorted(failed) == sorted(TENSORFLOW_ONLY), failed
  assert all("tensorflow" in why or "BackendError" in why for why in failed.values()), failed


def test_a_tensorflow_need_of_a_neutral_module_is_one_line(tmp_path):
  """Writing a TensorFlow checkpoint from a backend-neutral module, without TensorFlow."""
  script = ("import sys; sys.path.insert(0, 'tests'); import block_tensorflow\n"
            "from electra_tf2.models import model_directory\n"
            "from electra_tf2.utils import errors\n"
            "try:\n"
            f"  model_directory.write_model_dir(None, None, {str(tmp_path / 'out')!r})\n"
            "except errors.ElectraError as e:\n"
            "  sys.exit(errors.report(e))\n")
  env = dict(os.environ, KERAS_BACKEND="jax", CUDA_VISIBLE_DEVICES="", PYTHONPATH=REPO_ROOT)
  result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 2, result.stderr[-2000:]
  assert result.stderr.strip().splitlines() == [
      f"error: writing the model directory {tmp_path / 'out'} needs TensorFlow, which is not "
      "installed here: pip install 'tensorflow>=2.20,<2.21' 'tensorflow-text>=2.20,<2.21' "
      "(bash scripts/setup.sh installs the whole pinned set)"]
  assert not (tmp_path / "out").exists()  # nothing written before the refusal
