"""Fine-tuning tasks by name: `register_task(name, head, load)` adds one.

A task is known by its name (`--task`, `task_names`), the kind of head its
`head_spec()` builds (a kind registered with electra_tf2/models/heads.py's
`register_head`) and `load`, a function returning its factory
`(FinetuningConfig, CachedTokenizer) -> Task` (a `Task` subclass, or a function
making one). `load` runs only when a task is built, so config resolution lists
and checks the names without importing the task's modules (nor TensorFlow).
The built-in tasks are registered in electra_tf2/tasks/task_builder.py, which the
package's `__init__` imports.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List

from electra_tf2.config.hparams import ConfigError


@dataclasses.dataclass(frozen=True)
class RegisteredTask:
  """A task's registration: name, head kind and the loader of its factory."""
  name: str
  head: str
  load: Callable[[], Callable[..., Any]]


_TASKS: Dict[str, RegisteredTask] = {}


def register_task(name: str, head: str, load: Callable[[], Callable[..., Any]]
                  ) -> RegisteredTask:
  """Makes `name` a fine-tuning task; ValueError if the name is taken."""
  if name in _TASKS:
    raise ValueError(f"task {name!r} is registered already")
  _TASKS[name] = RegisteredTask(name, head, load)
  return _TASKS[name]


def task_names() -> List[str]:
  """Every registered task, in registration order."""
  return list(_TASKS)


def registered(name: str) -> RegisteredTask:
  """The registration of `name`; ConfigError naming the known tasks if there is none."""
  if name not in _TASKS:
    raise ConfigError(f"unknown task {name!r}: use one of {', '.join(_TASKS)}")
  return _TASKS[name]
