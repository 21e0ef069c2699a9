"""ELECTRA for TensorFlow 2 and Keras 3.

    import electra_tf2

    config = electra_tf2.PretrainingConfig.from_preset(
        "electra_small", data_dir="DATA", num_train_steps=1000)
    electra_tf2.pretrain(config)                      # = electra pretrain --data-dir DATA ...
    model = electra_tf2.load_pretrainer("DATA/models/electra_small")
    electra_tf2.finetune(electra_tf2.FinetuningConfig.from_preset(
        "electra_small", "DATA", "rte"))              # = electra finetune ... --task rte
    scorer = electra_tf2.TextScorer.load("DATA/models/electra_small")
    print(scorer.score(["The chef drank the meal."])[0].words)

Each public class's docstring has a runnable example (tests/test_public_api.py runs them).

The names below are imported on first use, so `import electra_tf2` (and the
`electra` command's start-up) does not load TensorFlow.
"""

import importlib

from electra_tf2.models import keras_classes as _keras_classes

# Public name -> the module that defines it.
_EXPORTS = {
    # configs
    "PretrainingConfig": "electra_tf2.config.pretraining",
    "FinetuningConfig": "electra_tf2.tasks.config",
    "BertConfig": "electra_tf2.config.encoder",
    "RunOptions": "electra_tf2.training.options",
    # models
    "Encoder": "electra_tf2.networks.encoder",
    "ElectraPretrainer": "electra_tf2.models.pretrainer",
    "load_pretrainer": "electra_tf2.models.model_directory",
    # running
    "pretrain": "electra_tf2.training.tf_pretraining",
    "finetune": "electra_tf2.training.finetuning",
    # Keras models on raw text (docs/keras.md)
    "Discriminator": "electra_tf2.models.discriminator",
    "TextClassifier": "electra_tf2.models.text_classifier",
    "TokenClassifier": "electra_tf2.models.token_classifier",
    "QuestionAnswerer": "electra_tf2.models.question_answerer",
    "squad_dataset": "electra_tf2.models.question_answerer",
    # .tflite files on raw text (docs/deploy.md)
    "LiteRTModel": "electra_tf2.litert.model",
    # scoring text
    "TextScorer": "electra_tf2.scoring.scorer",
    # errors
    "ElectraError": "electra_tf2.utils.errors",
}
# Public names that are another name of a module's function.
_ALIASES = {"load_pretrainer": "restore_pretrainer", "pretrain": "run_pretraining",
            "finetune": "run_finetuning"}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


# `keras.models.load_model` finds our classes without their modules being imported first.
_keras_classes.install()


def __getattr__(name):
  if name not in _EXPORTS:
    raise AttributeError(f"module 'electra_tf2' has no attribute {name!r}")
  value = getattr(importlib.import_module(_EXPORTS[name]), _ALIASES.get(name, name))
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(__all__))
