"""Importing this module makes `import tensorflow` (and the packages built on it) fail, as if
it were not installed (`install()`, run once at import).

tests/conftest.py imports it when ELECTRA_BLOCK_TENSORFLOW=1, before any test module is
imported: tests/test_backends.py runs the backend-neutral tests that way under
KERAS_BACKEND=jax and torch, so a TensorFlow import left in the model core fails there.
tests/no_tensorflow.py, backend_parity.py, keras_backends.py and test_jax_pretraining.py
import it first in their subprocesses.

Each blocked name is set to None in `sys.modules`: `import tensorflow` then raises
ModuleNotFoundError, and `importlib.util.find_spec("tensorflow")` returns None, which is
what libraries that probe for TensorFlow (torch._dynamo, which Keras' PyTorch backend
imports) see when it is absent. (A `sys.meta_path` finder cannot make `find_spec` return
None: it can only raise, which breaks those probes, or defer to the next finder, which finds
the installed package.)
"""

from __future__ import annotations

import pkgutil
import sys
from typing import List

ENV_VAR = "ELECTRA_BLOCK_TENSORFLOW"
PREFIX = "tensorflow"  # tensorflow, tensorflow_text, tensorflow_hub, ...
OTHERS = ("tf_keras", "official")  # built on TensorFlow under other names


def is_blocked(module_name: str) -> bool:
  """Whether `module_name` (dotted) belongs to a blocked top-level package."""
  top = module_name.split(".", 1)[0]
  return top.startswith(PREFIX) or top in OTHERS


def blocked_names() -> List[str]:
  """The top-level names to block: the installed ones that `is_blocked`, and the usual ones."""
  installed = {module.name for module in pkgutil.iter_modules() if is_blocked(module.name)}
  return sorted(installed | {PREFIX, *OTHERS})


def install() -> None:
  """Blocks `blocked_names()`; raises RuntimeError if one of them was imported already."""
  loaded = sorted(name for name, module in sys.modules.items()
                  if is_blocked(name) and module is not None)
  if loaded:
    raise RuntimeError(f"{ENV_VAR}=1, but {loaded[:3]} were imported before the blocker")
  for name in blocked_names():
    sys.modules[name] = None  # type: ignore[assignment]


install()
