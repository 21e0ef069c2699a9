"""Fine-tunes a pre-trained ELECTRA on GLUE, SQuAD 1.1/2.0, MRQA or chunking; the same as
`electra finetune`.

  python run_finetuning.py --data-dir DIR --model-name NAME --task squad
  python run_finetuning.py --data-dir DIR --model-name NAME --task cola,mrpc
  python run_finetuning.py --data-dir DIR --model-name NAME \\
      --hparams '{"task_names": ["rte"], "num_trials": 10}'   (or --hparams my.json)

DIR holds finetuning_data/<task>/ (the official layout), vocab.txt and the
pre-trained model DIR/models/NAME (written by run_pretraining.py). Results go
to DIR/models/NAME/results/, fine-tuned models to
DIR/models/NAME/finetuning_models/. Hyperparameters: configs/finetuning_defaults.json
and docs/finetuning.md.
"""

import sys

from electra_tf2.cli import training as cli

if __name__ == "__main__":
  cli.finetune(sys.argv[1:], "run_finetuning.py")
