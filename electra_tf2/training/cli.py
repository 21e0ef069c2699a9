"""The command-line flags shared by run_pretraining.py and run_finetuning.py."""

from __future__ import annotations

import sys
from typing import Callable, List, Sequence

from absl import app, flags

from electra_tf2 import errors
from electra_tf2.training import distribution


def define_run_flags(data_dir: str, model_name: str, defaults_file: str) -> None:
  """--data-dir, --model-name and --hparams (their help: what the directory holds, what
  the name names, the JSON of defaults), then --distribution-strategy, --tpu,
  --mixed-precision, --jit-compile and --log-every."""
  flags.DEFINE_string("data-dir", None, data_dir)
  flags.DEFINE_string("model-name", None, model_name)
  flags.DEFINE_string("hparams", "{}", "JSON object or .json file of hyperparameters "
                      f"(see configs/{defaults_file}).")
  flags.DEFINE_enum("distribution-strategy", "auto", list(distribution.STRATEGIES),
                    "auto: a TPU if --tpu, all GPUs if several, else one device.")
  flags.DEFINE_string("tpu", None, "TPU name or grpc:// address.")
  flags.DEFINE_enum("mixed-precision", "float32", list(distribution.PRECISIONS),
                    "Compute dtype policy; mixed_float16 adds loss scaling.")
  flags.DEFINE_bool("jit-compile", False, "Compile the forward/backward pass with XLA.")
  flags.DEFINE_integer("log-every", None, "Steps between progress lines "
                       "(default: iterations_per_loop).")


def check_arguments(argv: List[str], required: Sequence[str] = ("data-dir", "model-name")
                    ) -> None:
  """Usage errors for stray arguments and missing required flags."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  for name in required:
    if not flags.FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")


def run_options_from_flags():
  """The `RunOptions` that the flags of `define_run_flags` describe."""
  from electra_tf2.training.driver import RunOptions  # TensorFlow-heavy import
  values = flags.FLAGS
  return RunOptions(
      distribution_strategy=values["distribution-strategy"].value, tpu=values.tpu,
      mixed_precision=values["mixed-precision"].value, jit_compile=values["jit-compile"].value,
      log_every=values["log-every"].value)


def run(main: Callable[[List[str]], None]) -> None:
  """absl's `app.run(main)` under the exit-code rule of electra_tf2/errors.py: a
  reported error is one line (exit 2); a Ctrl-C that the training loop does not
  handle itself (during start-up, or a second one) is one line and exit 130."""
  try:
    app.run(main)
  except (*errors.REPORTED, KeyboardInterrupt) as e:
    sys.exit(errors.report(e, "interrupted (checkpoints saved before now are kept)"))
