"""The pre-training and fine-tuning commands (absl flags), shared by `electra pretrain`,
`electra finetune`, run_pretraining.py and run_finetuning.py."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import Callable, List, Optional, Sequence

from absl import app, flags, logging

from electra_tf2.utils import errors
from electra_tf2.training import options


def define_run_flags(data_dir: str, model_name: str, defaults_file: str) -> None:
  """--data-dir, --model-name and --hparams (their help: what the directory holds, what
  the name names, the JSON of defaults), then --distribution-strategy, --tpu,
  --mixed-precision, --jit-compile and --log-every."""
  flags.DEFINE_string("data-dir", None, data_dir)
  flags.DEFINE_string("model-name", None, model_name)
  flags.DEFINE_string("hparams", "{}", "JSON object or .json file of hyperparameters "
                      f"(electra config show {defaults_file} lists them).")
  flags.DEFINE_enum("distribution-strategy", "auto", list(options.STRATEGIES),
                    "auto: a TPU if --tpu, all GPUs if several, else one device.")
  flags.DEFINE_string("tpu", None, "TPU name or grpc:// address.")
  flags.DEFINE_enum("mixed-precision", "float32", list(options.PRECISIONS),
                    "Compute dtype policy; mixed_float16 adds loss scaling.")
  flags.DEFINE_bool("jit-compile", False, "Compile the forward/backward pass with XLA.")
  flags.DEFINE_integer("log-every", None, "Steps between progress lines "
                       "(default: iterations_per_loop).")


class CommandLineError(errors.ElectraError, ValueError):
  """A flag that is missing, unknown or malformed, or a stray argument."""


def check_arguments(argv: List[str], required: Sequence[str] = ("data-dir", "model-name")
                    ) -> None:
  """Usage errors for stray arguments and missing required flags."""
  if len(argv) > 1:
    raise CommandLineError(f"unexpected arguments: {' '.join(argv[1:])} (--help lists the flags)")
  for name in required:
    if not flags.FLAGS[name].value:
      raise CommandLineError(f"--{name} is required (--help lists the flags)")
  data_dir = flags.FLAGS["data-dir"].value
  if "://" not in data_dir and not os.path.isdir(data_dir):
    raise CommandLineError(f"--data-dir {data_dir} does not exist (electra default-data or "
                           "electra build-data writes one)")


def _parse_flags(argv: List[str]) -> List[str]:
  """absl's flag parsing, its errors as one line and exit 2 (electra_tf2/utils/errors.py)."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    sys.exit(errors.report(CommandLineError(f"{e} (--help lists the flags)")))
  except SystemExit:  # absl exits 1 after printing --help; help asked for is no error
    if set(argv[1:]) & {"--help", "-h", "-?", "--helpshort", "--helpfull"}:
      sys.exit(0)
    raise


def run_options_from_flags():
  """The `RunOptions` that the flags of `define_run_flags` describe."""
  values = flags.FLAGS
  backend = "tensorflow"
  if "backend" in values:
    backend = values["backend"].value or _default_backend()
  kernel = values["attention-kernel"].value if "attention-kernel" in values else "official"
  if kernel != "official" and backend != "jax":
    raise errors.ElectraError(f"--attention-kernel {kernel} runs on the JAX trainer only: add "
                              "--backend jax, or leave the flag out")
  return options.RunOptions(
      distribution_strategy=values["distribution-strategy"].value, tpu=values.tpu,
      mixed_precision=values["mixed-precision"].value, jit_compile=values["jit-compile"].value,
      log_every=values["log-every"].value, backend=backend, attention_kernel=kernel,
      cluster=cluster_from_flags(backend))


# The flags that name the processes of a JAX run over several hosts (`electra pretrain`).
CLUSTER_FLAGS = ("coordinator-address", "num-processes", "process-id")


def define_cluster_flags() -> None:
  """--distributed, --coordinator-address, --num-processes and --process-id (--backend jax)."""
  flags.DEFINE_enum("distributed", None, ["auto"],
                    "auto: join the processes of a run over several hosts as JAX detects them "
                    "(SLURM, Open MPI, TPU pods: jax.distributed.initialize()); --backend jax.")
  flags.DEFINE_string("coordinator-address", None,
                      "HOST:PORT of process 0 (a free port there), the same on every process "
                      "of a run over several hosts; --backend jax (docs/pretraining_jax.md).")
  flags.DEFINE_integer("num-processes", None, "Processes of the run (one per host, or per GPU); "
                       "--backend jax.", lower_bound=1)
  flags.DEFINE_integer("process-id", None, "This process's index, 0 to --num-processes - 1; "
                       "--backend jax.", lower_bound=0)


def cluster_from_flags(backend: str) -> Optional[options.Cluster]:
  """The processes the flags of `define_cluster_flags` name (None: one process); one line
  for flags that cannot go together."""
  values = flags.FLAGS
  if "distributed" not in values:
    return None
  given = [name for name in CLUSTER_FLAGS if values[name].value is not None]
  auto = values.distributed == "auto"
  if not given and not auto:
    return None
  named = f"--{given[0]}" if given else "--distributed auto"
  if backend != "jax":
    raise CommandLineError(f"{named}: a run over several processes is --backend jax's; the "
                           "TensorFlow trainer spans hosts with --distribution-strategy "
                           "multi_worker_mirrored and TF_CONFIG")
  missing = [f"--{name}" for name in CLUSTER_FLAGS if name not in given]
  if missing and not auto:
    raise CommandLineError(f"{named} needs {' and '.join(missing)} too (every process the same "
                           "--coordinator-address and --num-processes, its own --process-id), "
                           "or --distributed auto to let JAX detect the cluster")
  count, index = values["num-processes"].value, values["process-id"].value
  if count is not None and index is not None and index >= count:
    raise CommandLineError(f"--process-id {index} must be below --num-processes {count}")
  address = values["coordinator-address"].value
  if address is not None and not re.fullmatch(r"[^\s:]+:\d+|\[[0-9a-fA-F:]+\]:\d+", address):
    raise CommandLineError(f"--coordinator-address {address}: give HOST:PORT (process 0's "
                           "host and a free port there)")
  return options.Cluster(address, count, index, auto)


_TASK_HELP = ("Task name(s), comma-separated (cola, sst, mrpc, sts, qqp, mnli, qnli, rte, wnli, "
              "squad, squadv1, newsqa, naturalqs, triviaqa, searchqa, chunk); the same as "
              "task_names in --hparams.")


def pretrain(argv: Sequence[str], prog: str) -> None:
  """`prog --data-dir DIR --model-name NAME [--hparams ...]`: pre-trains or evaluates."""
  usage = (f"Pre-trains (or evaluates) ELECTRA.\n\n  {prog} --data-dir DIR --model-name "
           "electra_small [--hparams JSON|FILE]\n\nDIR holds pretrain_tfrecords/ and vocab.txt; "
           "the model goes to DIR/models/<model-name>.")
  define_run_flags(
      "Directory with pretrain_tfrecords/ and vocab.txt.",
      "A preset (electra_small, electra_base, ... : electra_tf2/config/presets) or a path to a preset "
      ".json; also names DIR/models/<model-name>.", "pretraining_defaults")
  flags.DEFINE_enum("backend", None, list(options.BACKENDS),
                    "Keras backend: tensorflow (tf.distribute) or jax (one compiled step, no "
                    "TensorFlow needed; docs/pretraining_jax.md). Default: jax where "
                    "KERAS_BACKEND=jax, else tensorflow.")
  flags.DEFINE_enum("attention-kernel", "official", list(options.ATTENTION_KERNELS),
                    "With --backend jax on a GPU: cudnn runs the attention and its dropout in "
                    "cuDNN's fused kernel (bfloat16; other dropout masks, so a resume is not "
                    "bit-identical: electra_tf2/layers/fused_attention.py).")
  define_cluster_flags()

  def main(args: List[str]) -> None:
    logging.set_verbosity(logging.WARNING)  # progress lines are printed; TF's chatter is not
    check_arguments(args)
    # The config first: its mistakes are reported before TensorFlow loads.
    run_options = run_options_from_flags()
    use_backend(run_options.backend)
    from electra_tf2.config.pretraining import resolve_pretraining_config
    config = resolve_pretraining_config(flags.FLAGS["model-name"].value,
                                        flags.FLAGS["data-dir"].value, flags.FLAGS.hparams)
    require_backend(run_options.backend)
    if run_options.backend == "jax":
      from electra_tf2.training import jax_pretraining  # pylint: disable=g-import-not-at-top
      jax_pretraining.train(config, run_options)
      return
    from electra_tf2.training import (  # pylint: disable=g-import-not-at-top
        tf_pretraining as pretraining)
    pretraining.run_pretraining(config, run_options)
  run(main, argv, prog, usage)


def _default_backend() -> str:
  return "jax" if os.environ.get("KERAS_BACKEND") == "jax" else "tensorflow"


def require_backend(backend: str) -> None:
  """One line naming what to install where `backend` is not installed (checked after the
  usage and config mistakes, before anything is written)."""
  if backend == "tensorflow":
    errors.require_tensorflow("--backend tensorflow (tf.distribute and tf.data)")
  elif importlib.util.find_spec(backend) is None:  # jax: the extra of the same name
    raise errors.ElectraError(
        f"--backend {backend} needs {backend}, which is not installed here: pip install "
        f"'electra-tf2[{backend}]' (a GPU or TPU machine installs its own {backend} build)")


def use_backend(backend: str) -> None:
  """Selects the Keras backend before Keras is imported; one line if it is too late."""
  if "keras" in sys.modules:
    import keras  # pylint: disable=g-import-not-at-top
    if keras.backend.backend() != backend:
      raise errors.ElectraError(f"--backend {backend}: Keras was already imported on the "
                                f"{keras.backend.backend()} backend; set KERAS_BACKEND={backend} "
                                "before Python starts")
    return
  os.environ["KERAS_BACKEND"] = backend


def finetune(argv: Sequence[str], prog: str) -> None:
  """`prog --data-dir DIR --model-name NAME --task TASKS`: fine-tunes and evaluates."""
  usage = (f"Fine-tunes a pre-trained ELECTRA and evaluates it.\n\n  {prog} --data-dir DIR "
           "--model-name NAME --task squad [--hparams JSON|FILE]\n\nDIR holds "
           "finetuning_data/<task>/, vocab.txt and the pre-trained DIR/models/NAME.")
  define_run_flags("Directory with finetuning_data/, vocab.txt and models/.",
                   "The pre-trained model: DIR/models/<model-name>.", "finetuning_defaults")
  flags.DEFINE_string("task", None, _TASK_HELP)

  def main(args: List[str]) -> None:
    check_arguments(args)
    logging.set_verbosity(logging.WARNING)
    # The config first: its mistakes are reported before TensorFlow loads.
    from electra_tf2.tasks import config as config_lib  # pylint: disable=g-import-not-at-top
    config = config_lib.resolve_finetuning_config(
        flags.FLAGS["model-name"].value, flags.FLAGS["data-dir"].value, flags.FLAGS.hparams,
        flags.FLAGS.task)
    errors.require_tensorflow("electra finetune (tf.data and the TensorFlow training loop)")
    from electra_tf2.training import finetuning as runner  # pylint: disable=g-import-not-at-top
    runner.run_finetuning(config, run_options_from_flags())
  run(main, argv, prog, usage)


def run(main: Callable[[List[str]], None], argv: Sequence[str], prog: str, usage: str) -> None:
  """absl's `app.run(main)` on `argv` under the exit-code rule of electra_tf2/utils/errors.py: a
  reported error is one line (exit 2); a Ctrl-C that the training loop does not
  handle itself (during start-up, or a second one) is one line and exit 130.

  `prog` names the command in --help, which prints `usage` and the flags defined here.
  """
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # a command's quiet default
  sys.argv[0] = prog
  sys.modules["__main__"].__doc__ = usage  # what absl's --help prints first
  for flag in flags.FLAGS.flags_by_module_dict().get(__name__, []):
    flags.FLAGS.register_key_flag_for_module(prog, flag)
  try:
    app.run(main, argv=[prog, *argv], flags_parser=_parse_flags)
  except (*errors.REPORTED, KeyboardInterrupt) as e:
    sys.exit(errors.report(e, "interrupted (checkpoints saved before now are kept)"))
