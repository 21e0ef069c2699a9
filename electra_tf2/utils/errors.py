"""One error base and one exit-code rule for every command.

Every error a user can cause (a bad flag value, config, file or model
directory) is an `ElectraError`; its message is one line that names the file,
flag or field and says what to do. Every command (the `electra` subcommands and
the scripts that are the same commands) runs its main through `run_command`
(argparse commands) or `cli.training.run` (the absl ones, pretrain and
finetune), which print such errors as `error: <message>` and exit:

  0    done;
  2    a usage error (argparse/absl) or an `ElectraError`, an OSError or a
       diverged training run, reported in one line;
  130  interrupted (Ctrl-C) outside a training loop's own stop handling;
  1    anything else: a bug, shown with its traceback.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from typing import Callable, Optional, Sequence

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


class ElectraError(Exception):
  """An error in the user's input; the message is one line saying what to change.

  >>> import electra_tf2
  >>> try:
  ...   electra_tf2.PretrainingConfig.from_preset("electra_small", num_train_step=10)
  ... except electra_tf2.ElectraError as error:
  ...   print(error)
  --hparams: unknown hparam 'num_train_step' (did you mean 'num_train_steps'?); `electra config show pretraining_defaults` lists every hparam (electra_tf2/config/presets/pretraining_defaults.json)
  """


# What a command reports in one line: ours, the file system's, and a run whose loss diverged.
REPORTED = (ElectraError, OSError, FloatingPointError)


def report(error: BaseException,
           interrupted: str = "interrupted (what was written before now is kept)") -> int:
  """Prints the one-line message of a reported error (or `interrupted` for a
  KeyboardInterrupt); returns the exit code."""
  if isinstance(error, KeyboardInterrupt):
    print(interrupted, file=sys.stderr)
    return EXIT_INTERRUPTED
  # One line, whatever a file name or field value in the message holds.
  message = str(error).replace("\r", "\\r").replace("\n", "\\n")
  print(f"error: {message}", file=sys.stderr)
  return EXIT_ERROR


def run_command(main: Callable[[Optional[Sequence[str]]], Optional[int]],
                argv: Optional[Sequence[str]] = None) -> int:
  """Runs `main(argv)` under the exit-code rule; returns the code."""
  try:
    return main(argv) or 0
  except (*REPORTED, KeyboardInterrupt) as e:
    return report(e)


def command(main: Callable[[Optional[Sequence[str]]], Optional[int]]
            ) -> Callable[[Optional[Sequence[str]]], int]:
  """Decorates a command's `main(argv)` so that it runs under the exit-code rule."""
  @functools.wraps(main)
  def run(argv: Optional[Sequence[str]] = None) -> int:
    return run_command(main, argv)
  return run


class MissingTensorFlowError(ElectraError, ImportError):
  """A feature that needs TensorFlow, used where it is not installed."""


_INSTALL_TENSORFLOW = ("pip install 'tensorflow>=2.20,<2.21' 'tensorflow-text>=2.20,<2.21' "
                       "(bash scripts/setup.sh installs the whole pinned set)")


def missing_tensorflow(what: str) -> MissingTensorFlowError:
  """The one-line error for `what`, which needs TensorFlow where it is not installed."""
  return MissingTensorFlowError(
      f"{what} needs TensorFlow, which is not installed here: {_INSTALL_TENSORFLOW}")


def require_tensorflow(what: str) -> None:
  """Raises `missing_tensorflow(what)` where TensorFlow or tensorflow-text cannot be found,
  without importing either (a command checks this before it writes anything)."""
  if any(importlib.util.find_spec(name) is None for name in ("tensorflow", "tensorflow_text")):
    raise missing_tensorflow(what)


def import_tensorflow(what: str):
  """The `tensorflow` module, imported where `what` needs it (a JAX or PyTorch machine may
  lack it); one line naming the install where it is absent."""
  try:
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise missing_tensorflow(what) from None
  return tf
