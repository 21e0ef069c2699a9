r"""Pre-trains (or evaluates) ELECTRA; the same as `electra pretrain`.

  python run_pretraining.py --data-dir DIR --model-name electra_small \
      [--hparams '{"num_train_steps": 1000}' | --hparams my_hparams.json] \
      [--distribution-strategy auto] [--mixed-precision float32] [--jit-compile]

DIR holds pretrain_tfrecords/pretrain_data.tfrecord* and vocab.txt; the model
goes to DIR/models/<model-name>. Model names are the presets in configs/.
"""

import sys

from electra_tf2.cli import training as cli

if __name__ == "__main__":
  cli.pretrain(sys.argv[1:], "run_pretraining.py")
