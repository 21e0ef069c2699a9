"""Run Python code in a subprocess where `import tensorflow` fails, as on a JAX or PyTorch
machine without it: a `sys.meta_path` finder refuses `tensorflow` and every package whose
name starts with it (tensorflow_text, ...)."""

import os
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT

BLOCKER = """
import sys

class _NoTensorFlow:
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0].startswith("tensorflow"):
      raise ImportError(f"{name} is blocked: this process runs without TensorFlow")
    return None

sys.meta_path.insert(0, _NoTensorFlow())
"""

CHECK_STILL_BLOCKED = """
assert not any(name.split(".")[0].startswith("tensorflow") for name in sys.modules), sorted(
    name for name in sys.modules if name.startswith("tensorflow"))
try:
  import tensorflow
except ImportError:
  pass
else:
  raise AssertionError("the blocker let tensorflow in")
"""


def run_without_tensorflow(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
  """Runs `code` (dedented) after the blocker, with this tree first on the path; then checks
  that no tensorflow module was loaded. Fails the test with the output on a non-zero exit."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [REPO_ROOT, os.path.join(REPO_ROOT, "tests"), os.environ.get("PYTHONPATH", "")]))
  script = BLOCKER + textwrap.dedent(code) + CHECK_STILL_BLOCKED
  result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
  assert result.returncode == 0, result.stdout + result.stderr
  return result
