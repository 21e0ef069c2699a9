"""Fine-tunes a pre-trained ELECTRA on GLUE, SQuAD 1.1/2.0, MRQA or chunking.

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

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags, logging  # noqa: E402

from electra_tf2.training import cli  # noqa: E402

cli.define_run_flags("Directory with finetuning_data/, vocab.txt and models/.",
                     "The pre-trained model: DIR/models/<model-name>.",
                     "finetuning_defaults.json")
flags.DEFINE_string("task", None, "Task name(s), comma-separated (cola, sst, mrpc, sts, qqp, "
                    "mnli, qnli, rte, wnli, squad, squadv1, newsqa, naturalqs, triviaqa, "
                    "searchqa, chunk); the same as task_names in --hparams.")
flags.adopt_module_key_flags(cli)
FLAGS = flags.FLAGS


def main(argv):
  cli.check_arguments(argv)
  logging.set_verbosity(logging.WARNING)
  # Imported after the flag checks: TensorFlow is slow to load.
  from electra_tf2.finetune import config as config_lib, runner  # noqa: E402
  config = config_lib.resolve_finetuning_config(
      FLAGS["model-name"].value, FLAGS["data-dir"].value, FLAGS.hparams, FLAGS.task)
  runner.run_finetuning(config, cli.run_options_from_flags())


if __name__ == "__main__":
  cli.run(main)
