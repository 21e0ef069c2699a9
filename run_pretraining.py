"""Pre-trains (or evaluates) ELECTRA.

  python run_pretraining.py --data-dir DIR --model-name electra_small \
      [--hparams '{"num_train_steps": 1000}' | --hparams my_hparams.json] \
      [--distribution-strategy auto] [--mixed-precision float32] [--jit-compile]

DIR holds pretrain_tfrecords/pretrain_data.tfrecord* and vocab.txt; the model
goes to DIR/models/<model-name>. Model names are the presets in configs/.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags, logging  # noqa: E402

from electra_tf2 import config as config_lib  # noqa: E402
from electra_tf2.training import cli  # noqa: E402

cli.define_run_flags(
    "Directory with pretrain_tfrecords/ and vocab.txt.",
    "A preset of configs/ (electra_small, electra_base, ...) or a path to a preset .json; "
    "also names DIR/models/<model-name>.", "pretraining_defaults.json")
flags.adopt_module_key_flags(cli)
FLAGS = flags.FLAGS


def main(argv):
  logging.set_verbosity(logging.WARNING)  # progress lines are printed; TF's INFO chatter is not
  cli.check_arguments(argv)
  from electra_tf2.training import pretraining  # noqa: E402  (after flag errors, TF is slow)
  config = config_lib.resolve_pretraining_config(
      FLAGS["model-name"].value, FLAGS["data-dir"].value, FLAGS.hparams)
  pretraining.run_pretraining(config, cli.run_options_from_flags())


if __name__ == "__main__":
  cli.run(main)
