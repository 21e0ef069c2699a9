"""A command that needs what is not installed says so in one line before it writes anything.

Each subcommand that needs TensorFlow, run where TensorFlow is absent (tests/block_tensorflow.py),
and `pretrain --backend jax` where jax is absent: exit 2, one line naming what to install,
and its output path untouched (`default-data` used to write its corpus first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from electra_tf2.cli import commands
from tests.conftest import REPO_ROOT

# Each command with flags that name an output under OUT (the commands whose output is a
# flag; convert, score and finetune read before they write).
ARGS = {
    "build-vocab": ["--corpus-dir", "CORPUS", "--output", "OUT/vocab.txt", "--vocab-size", "100"],
    "build-data": ["--corpus-dir", "CORPUS", "--vocab-file", "VOCAB", "--output-dir", "OUT"],
    "build-openwebtext-data": ["--data-dir", "OUT"],
    "default-data": ["--data-dir", "OUT"],
    "finetune": ["--data-dir", "OUT", "--model-name", "electra_small", "--task", "cola"],
    "convert": ["to-tf2", "--checkpoint", "OUT/x", "--output-dir", "OUT"],
    "export": ["--model-dir", "OUT", "--output-dir", "OUT/exported"],
    "score": ["file", "--model-dir", "OUT", "--input", "OUT/in.txt"],
    "pretrain": ["--backend", "tensorflow", "--data-dir", "OUT", "--model-name", "electra_small"],
}

# Runs `electra NAME ARGS` for each of sys.argv[1]'s JSON {name: args} in this process with
# the modules of sys.argv[2] (comma-separated) absent; prints {name: [exit code, stderr]}.
_RUN = """
import contextlib, io, json, sys
sys.path.insert(0, "tests")
blocked = [name for name in sys.argv[2].split(",") if name]
if "tensorflow" in blocked:
  import block_tensorflow  # noqa: F401
for name in blocked:
  sys.modules[name] = None
from electra_tf2.cli import commands
results = {}
for name, args in json.loads(sys.argv[1]).items():
  err = io.StringIO()
  with contextlib.redirect_stderr(err):
    try:
      code = commands.main([name] + args)
    except SystemExit as e:
      code = e.code
  results[name] = [code, err.getvalue()]
print(json.dumps(results))
"""


def run_absent(runs, blocked, env=None):
  result = subprocess.run(
      [sys.executable, "-c", _RUN, json.dumps(runs), ",".join(blocked)], cwd=REPO_ROOT,
      env=dict(os.environ, PYTHONPATH=REPO_ROOT, **(env or {})), capture_output=True,
      text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def assert_one_line(code, stderr, *words):
  lines = stderr.strip().splitlines()
  assert code == 2 and len(lines) == 1, (code, stderr[-2000:])
  assert lines[0].startswith("error: ") and all(w in lines[0] for w in words), lines[0]


def test_every_command_that_needs_tensorflow_says_so_before_writing(tmp_path):
  out = tmp_path / "out"
  (tmp_path / "corpus").mkdir()
  (tmp_path / "corpus" / "a.txt").write_text("some text\n")
  names = sorted(set(commands.NEEDS_TENSORFLOW) | {"pretrain", "finetune"})
  runs = {name: [str(out) + a[3:] if a.startswith("OUT") else
                 str(tmp_path / "corpus") if a == "CORPUS" else a for a in ARGS[name]]
          for name in names}
  (tmp_path / "out").mkdir()  # finetune's and pretrain's --data-dir must exist
  absl = ("pretrain", "finetune")  # one absl command a process (each defines its flags)
  results = run_absent({k: v for k, v in runs.items() if k not in absl}, ["tensorflow"],
                       {"KERAS_BACKEND": "jax"})
  for name in absl:
    results.update(run_absent({name: runs[name]}, ["tensorflow"], {"KERAS_BACKEND": "jax"}))
  for name in names:
    assert_one_line(*results[name], "needs TensorFlow", "pip install 'tensorflow")
  assert not os.listdir(out)  # default-data wrote its corpus there first
  # predict: a SavedModel needs TensorFlow (a .tflite does not), said in one line.
  (tmp_path / "saved").mkdir()
  (tmp_path / "saved" / "saved_model.pb").write_bytes(b"")
  predicted = run_absent({"predict": [
      "--model", str(tmp_path / "saved"), "--input", str(tmp_path / "corpus" / "a.txt"),
      "--output", str(out / "p.jsonl")]}, ["tensorflow"], {"KERAS_BACKEND": "jax"})
  assert_one_line(*predicted["predict"], "a SavedModel", "needs TensorFlow")
  assert not os.listdir(out)
  # Help still works without TensorFlow, and no other command is refused.
  help_only = run_absent({"default-data": ["--help"], "params": ["electra_small"]},
                         ["tensorflow"], {"KERAS_BACKEND": "jax"})
  assert [code for code, _ in help_only.values()] == [0, 0], help_only


def test_backend_jax_without_jax_is_one_line(tmp_path):
  results = run_absent({"pretrain": ["--backend", "jax", "--data-dir", str(tmp_path),
                                     "--model-name", "electra_small"]}, ["jax", "jaxlib"])
  assert_one_line(*results["pretrain"], "--backend jax", "pip install 'electra-tf2[jax]'")
  assert not os.listdir(tmp_path)


@pytest.mark.parametrize("keras_backend", ["tensorflow", "jax"])
def test_pretrain_help_names_one_default_backend(keras_backend):
  result = subprocess.run([sys.executable, "-m", "electra_tf2", "pretrain", "--help"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT, KERAS_BACKEND=keras_backend))
  assert result.returncode == 0, result.stderr[-2000:]
  text = result.stdout + result.stderr
  block = text[text.index("--backend:"):]
  block = block[:block.index("\n  --", 1)]
  assert "Default: jax where KERAS_BACKEND=jax, else tensorflow." in " ".join(block.split())
  assert "(default:" not in block, block  # absl's own default line, which said otherwise
