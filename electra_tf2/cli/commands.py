"""The `electra` command (also `python -m electra_tf2`): one subcommand per stage.

  electra build-vocab   --corpus-dir DIR --output vocab.txt --vocab-size 30522
  electra build-data    --corpus-dir DIR --vocab-file vocab.txt --output-dir OUT
                        [--runner DirectRunner|DataflowRunner|...: the Apache Beam builder]
  electra pretrain      --data-dir DIR --model-name electra_small [--hparams ...]
  electra finetune      --data-dir DIR --model-name NAME --task squad
  electra convert       to-tf2 | to-official | from-hf ...
  electra export        --model-dir DIR --kind discriminator --output-dir OUT
                        [--format litert --quantize dynamic-int8 --output model.tflite]
  electra predict       --model model.tflite|SAVEDMODEL --input texts.txt --output out.jsonl
  electra hf-export     --model-dir DIR --output-dir OUT
  electra score         file | rerank | show --model-dir DIR ...
  electra config        show [pretraining_defaults | finetuning_defaults | electra_small ...]
  electra params        [electra_small ...]
  electra flops         [electra_small ...]

`electra SUBCOMMAND --help` describes each. Every subcommand follows the exit-code
rule of electra_tf2/utils/errors.py: 0 done, 2 a usage or input error in one line,
130 interrupted, 1 a bug (with its traceback).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import Callable, Dict, Optional, Sequence, Tuple

from electra_tf2.utils import errors

# name: (module, what it does). Each module has `main(argv) -> int`; pretrain and
# finetune are absl commands in electra_tf2.cli.training.
SUBCOMMANDS: Dict[str, Tuple[str, str]] = {
    "build-vocab": ("electra_tf2.data_prep.build_vocab",
                    "learn a WordPiece vocab.txt from a corpus"),
    "build-data": ("electra_tf2.data_prep.build_pretraining_dataset",
                   "corpus -> pre-training TFRecords (--runner: with Apache Beam)"),
    "build-openwebtext-data": ("electra_tf2.data_prep.build_openwebtext_pretraining_dataset",
                               "OpenWebText-style archives -> pre-training TFRecords"),
    "default-data": ("electra_tf2.data_prep.default_corpus",
                     "the embedded default corpus -> vocab and TFRecords (no download)"),
    "pretrain": ("electra_tf2.cli.training", "pre-train (or evaluate) ELECTRA"),
    "finetune": ("electra_tf2.cli.training",
                 "fine-tune on GLUE, SQuAD, MRQA or chunking, and evaluate"),
    "convert": ("electra_tf2.conversion.convert",
                "official TF1 checkpoints <-> model directories; from-hf: a Hugging Face "
                "directory -> model directory"),
    "export": ("electra_tf2.serving.export",
               "a TF SavedModel (or with --format litert a .tflite) that takes raw text"),
    "predict": ("electra_tf2.serving.predict",
                "a text file through a .tflite or SavedModel -> JSON lines"),
    "hf-export": ("electra_tf2.conversion.hf_export", "a Hugging Face directory (safetensors)"),
    "score": ("electra_tf2.cli.score",
              "replaced-token scores of texts with the discriminator"),
    "config": ("electra_tf2.cli.config_show",
               "show the packaged presets and defaults (what --hparams accepts)"),
    "params": ("electra_tf2.models.param_counts", "parameter counts by official scope"),
    "flops": ("electra_tf2.pretraining.flops", "pre-training FLOPs, counted as the paper"),
}
BEAM_MODULE = "electra_tf2.data_prep.beam_pretraining"
# The subcommands that need TensorFlow whatever their flags, and what for; each says so in
# one line before it writes anything where TensorFlow is absent. pretrain (the backend its
# --backend names) and finetune check after their usage and config mistakes
# (electra_tf2/cli/training.py); predict where its model is a SavedModel.
NEEDS_TENSORFLOW: Dict[str, str] = {
    "build-vocab": "tensorflow-text's WordPiece learner",
    "build-data": "the in-graph tokenizer and TFRecords",
    "build-openwebtext-data": "the in-graph tokenizer and TFRecords",
    "default-data": "the in-graph tokenizer and TFRecords",
    "convert": "TensorFlow checkpoints",
    "export": "SavedModels and the TFLite converter",
    "score": "the in-graph scorer",
}


def _usage() -> str:
  width = max(len(name) for name in SUBCOMMANDS)
  lines = [f"  {name:<{width}}  {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
  return ("usage: electra SUBCOMMAND [--help] [flags]\n\nELECTRA for TensorFlow 2: "
          "pre-training, fine-tuning, conversion, export and scoring.\n\nsubcommands:\n"
          + "\n".join(lines) + "\n\n`electra SUBCOMMAND --help` describes each.")


def subcommand_main(name: str, argv: Sequence[str]) -> Callable[[], int]:
  """The function that runs subcommand `name` on `argv` and returns its exit code."""
  prog = f"electra {name}"
  if name in NEEDS_TENSORFLOW and not set(argv) & {"-h", "--help"}:
    try:
      errors.require_tensorflow(f"{prog} ({NEEDS_TENSORFLOW[name]})")
    except errors.MissingTensorFlowError as missing:
      return functools.partial(errors.report, missing)
  if name in ("pretrain", "finetune"):
    from electra_tf2.cli import training as cli  # pylint: disable=g-import-not-at-top
    command = cli.pretrain if name == "pretrain" else cli.finetune
    return lambda: command(list(argv), prog) or 0
  module_name = SUBCOMMANDS[name][0]
  if name == "build-data" and any(a == "--runner" or a.startswith("--runner=") for a in argv):
    module_name = BEAM_MODULE
  return _module_main(module_name, prog, argv)


def _module_main(module_name: str, prog: str, argv: Sequence[str]) -> Callable[[], int]:
  sys.argv[0] = prog  # argparse's prog: what --help and usage errors print
  try:
    module = importlib.import_module(module_name)
  except ImportError as e:
    if module_name != BEAM_MODULE:
      raise
    message = (f"apache-beam is not installed ({e}): run bash scripts/setup.sh beam "
               "(or pip install 'electra-tf2[beam]')")
    return lambda: errors.report(errors.ElectraError(message))
  return lambda: module.main(list(argv))


def main(argv: Optional[Sequence[str]] = None) -> int:
  """`electra SUBCOMMAND ...`; returns the exit code."""
  argv = list(sys.argv[1:] if argv is None else argv)
  if not argv or argv[0] in ("-h", "--help", "help"):
    print(_usage())
    return 0
  name, rest = argv[0], argv[1:]
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # a command's quiet default
  if name not in SUBCOMMANDS:
    print(f"error: unknown subcommand {name!r}: use one of {', '.join(SUBCOMMANDS)} "
          "(electra --help)", file=sys.stderr)
    return 2
  return subcommand_main(name, rest)()
