"""Run Python code in a subprocess where `import tensorflow` fails, as on a JAX or PyTorch
machine without it: tests/block_tensorflow.py blocks `tensorflow` and every package whose
name starts with it (tensorflow_text, ...)."""

import os
import subprocess
import sys
import textwrap

from conftest import REPO_ROOT

BLOCKER = """
import sys

import block_tensorflow
"""

CHECK_STILL_BLOCKED = """
loaded = sorted(name for name, module in sys.modules.items()
                if block_tensorflow.is_blocked(name) and module is not None)
assert not loaded, loaded
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
