"""The command-line flags shared by run_pretraining.py and run_finetuning.py."""

from __future__ import annotations

from absl import flags

from electra_tf2.training import distribution


def define_run_flags() -> None:
  """--distribution-strategy, --tpu, --mixed-precision, --jit-compile, --log-every."""
  flags.DEFINE_enum("distribution-strategy", "auto", list(distribution.STRATEGIES),
                    "auto: a TPU if --tpu, all GPUs if several, else one device.")
  flags.DEFINE_string("tpu", None, "TPU name or grpc:// address.")
  flags.DEFINE_enum("mixed-precision", "float32", list(distribution.PRECISIONS),
                    "Compute dtype policy; mixed_float16 adds loss scaling.")
  flags.DEFINE_bool("jit-compile", False, "Compile the forward/backward pass with XLA.")
  flags.DEFINE_integer("log-every", None, "Steps between progress lines "
                       "(default: iterations_per_loop).")


def run_options_from_flags():
  """The `RunOptions` that the flags of `define_run_flags` describe."""
  from electra_tf2.training.pretraining_loop import RunOptions  # TensorFlow-heavy import
  values = flags.FLAGS
  return RunOptions(
      distribution_strategy=values["distribution-strategy"].value, tpu=values.tpu,
      mixed_precision=values["mixed-precision"].value, jit_compile=values["jit-compile"].value,
      log_every=values["log-every"].value)
