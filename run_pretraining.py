"""Pre-trains (or evaluates) ELECTRA.

  python run_pretraining.py --data-dir DIR --model-name electra_small \
      [--hparams '{"num_train_steps": 1000}' | --hparams my_hparams.json] \
      [--distribution-strategy auto] [--mixed-precision float32] [--jit-compile]

DIR holds pretrain_tfrecords/pretrain_data.tfrecord* and vocab.txt; the model
goes to DIR/models/<model-name>. Model names are the presets in configs/.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging  # noqa: E402

from electra_tf2 import config as config_lib  # noqa: E402
from electra_tf2.training import cli, distribution  # noqa: E402

flags.DEFINE_string("data-dir", None, "Directory with pretrain_tfrecords/ and vocab.txt.")
flags.DEFINE_string("model-name", None, "A preset of configs/ (electra_small, electra_base, ...)"
                    " or a path to a preset .json; also names DIR/models/<model-name>.")
flags.DEFINE_string("hparams", "{}", "JSON object or .json file of hyperparameters "
                    "(see configs/pretraining_defaults.json).")
cli.define_run_flags()
flags.adopt_module_key_flags(cli)
FLAGS = flags.FLAGS


def main(argv):
  logging.set_verbosity(logging.WARNING)  # progress lines are printed; TF's INFO chatter is not
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  for name in ("data-dir", "model-name"):
    if not FLAGS[name].value:
      raise app.UsageError(f"--{name} is required")
  from electra_tf2 import checkpoints, pretrain_data, vocab  # noqa: E402  (after flag errors, TF is slow)
  from electra_tf2.training import pretraining_loop  # noqa: E402
  try:
    config = config_lib.resolve_pretraining_config(
        FLAGS["model-name"].value, FLAGS["data-dir"].value, FLAGS.hparams)
    options = cli.run_options_from_flags()
    pretraining_loop.run_pretraining(config, options)
  except (config_lib.ConfigError, checkpoints.ModelDirectoryError, pretrain_data.DataError,
          vocab.VocabError, distribution.DistributionError, FloatingPointError, OSError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  cli.run(main)
