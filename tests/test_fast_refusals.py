"""Usage mistakes and --help are answered before TensorFlow is imported (#44).

Each command runs in a subprocess whose import system refuses TensorFlow (the sys.meta_path
finder of tests/block_tensorflow.py; Keras imports it too): a command that imported it would
fail with that ImportError instead of its one-line answer. No timer: the import is what costs the seconds.
"""

import os
import subprocess
import sys

import pytest

from no_tensorflow import BLOCKER
from tests.conftest import REPO_ROOT

COMMAND = BLOCKER + """
from electra_tf2.cli import commands
sys.exit(commands.main(sys.argv[1:]))
"""


def electra(*args):
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [REPO_ROOT, os.path.join(REPO_ROOT, "tests"), os.environ.get("PYTHONPATH", "")]))
  return subprocess.run([sys.executable, "-c", COMMAND, *args], env=env, cwd=REPO_ROOT,
                        capture_output=True, text=True, timeout=120)


def test_the_hook_catches_a_tensorflow_import():
  result = electra("export", "--help")  # argparse commands import their modules first
  assert result.returncode == 1 and "import tensorflow as tf" in result.stderr


@pytest.mark.parametrize("args,code,line", [
    (["finetune", "--help"], 0, None),
    (["pretrain", "--help"], 0, None),
    (["config", "show", "debug"], 0, None),
    (["finetune", "--data-dir", "{data}", "--model-name", "electra_small", "--task", "sst2"],
     2, "error: unknown task 'sst2' (did you mean 'sst'?): use one of "),
    (["finetune", "--data-dir", "{data}", "--model-name", "electra_small", "--task", "sst",
      "--hparams", '{"num_train_epoch": 1}'],
     2, "error: --hparams: unknown hparam 'num_train_epoch' (did you mean 'num_train_epochs'?)"),
    (["pretrain", "--data-dir", "{data}", "--model-name", "electra_small", "--hparams",
      '{"learning_rate": "fast"}'], 2, "error: --hparams: learning_rate must be of type float"),
    (["pretrain", "--data-dir", "{data}", "--model-name", "electra_smal"],
     2, "error: unknown model name 'electra_smal'"),
    (["finetune", "--data-dir", "{data}/missing", "--model-name", "electra_small", "--task",
      "sst"], 2, "error: --data-dir {data}/missing does not exist"),
    (["finetune", "--data-dir", "{data}", "--model-name", "electra_small", "--task", "sst",
      "--hparams", "{data}/missing.json"], 2, "error: cannot read config file {data}/missing"),
    (["pretrain", "--data-dir", "{data}", "--model-name", "electra_small", "--backend",
      "tensorflow", "--attention-kernel", "cudnn"],
     2, "error: --attention-kernel cudnn runs on the JAX trainer only: add --backend jax"),
    (["pretrain", "--data-dir", "{data}", "--model-name", "electra_small", "--bogus"],
     2, "error: Unknown command line flag 'bogus'"),
])
def test_refused_or_helped_before_tensorflow_loads(tmp_path, args, code, line):
  result = electra(*(a.replace("{data}", str(tmp_path)) for a in args))
  assert result.returncode == code, result.stderr[-2000:]
  if line is not None:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line.replace("{data}", str(tmp_path)))
