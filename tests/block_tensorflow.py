"""Makes `import tensorflow` (and the packages built on it) fail, as if it were not installed.

tests/conftest.py calls `install()` when ELECTRA_BLOCK_TENSORFLOW=1, before any test module
is imported: tests/test_backends.py runs the backend-neutral tests that way under
KERAS_BACKEND=jax and torch, so a TensorFlow import left in the model core fails there.

Each blocked name is set to None in `sys.modules`: `import tensorflow` then raises
ModuleNotFoundError, and `importlib.util.find_spec("tensorflow")` returns None, which is
what libraries that probe for TensorFlow (torch._dynamo, Keras) see when it is absent. (A
`sys.meta_path` finder cannot make `find_spec` return None: it can only raise, which
breaks those probes, or defer to the next finder, which finds the installed package.)
"""

from __future__ import annotations

import sys

ENV_VAR = "ELECTRA_BLOCK_TENSORFLOW"
BLOCKED = ("tensorflow", "tf_keras", "tensorflow_text", "tensorflow_hub", "official")


def install() -> None:
  """Blocks BLOCKED; raises RuntimeError if one of them was imported already."""
  loaded = sorted(name for name in sys.modules
                  if name.split(".", 1)[0] in BLOCKED and sys.modules[name] is not None)
  if loaded:
    raise RuntimeError(f"{ENV_VAR}=1, but {loaded[:3]} were imported before the blocker")
  for name in BLOCKED:
    sys.modules[name] = None  # type: ignore[assignment]
