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
rule of electra_tf2/errors.py: 0 done, 2 a usage or input error in one line,
130 interrupted, 1 a bug (with its traceback).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Dict, Optional, Sequence, Tuple

from electra_tf2 import errors

# name: (module, what it does). Each module has `main(argv) -> int`; pretrain and
# finetune are absl commands in electra_tf2.training.cli.
SUBCOMMANDS: Dict[str, Tuple[str, str]] = {
    "build-vocab": ("electra_tf2.data_prep.build_vocab",
                    "learn a WordPiece vocab.txt from a corpus"),
    "build-data": ("electra_tf2.data_prep.build_pretraining_dataset",
                   "corpus -> pre-training TFRecords (--runner: with Apache Beam)"),
    "build-openwebtext-data": ("electra_tf2.data_prep.build_openwebtext_pretraining_dataset",
                               "OpenWebText-style archives -> pre-training TFRecords"),
    "default-data": ("electra_tf2.data_prep.default_corpus",
                     "the embedded default corpus -> vocab and TFRecords (no download)"),
    "pretrain": ("electra_tf2.training.cli", "pre-train (or evaluate) ELECTRA"),
    "finetune": ("electra_tf2.training.cli",
                 "fine-tune on GLUE, SQuAD, MRQA or chunking, and evaluate"),
    "convert": ("electra_tf2.conversion.convert",
                "official TF1 checkpoints <-> model directories; from-hf: a Hugging Face "
                "directory -> model directory"),
    "export": ("electra_tf2.serving.export",
               "a TF SavedModel (or with --format litert a .tflite) that takes raw text"),
    "predict": ("electra_tf2.serving.predict",
                "a text file through a .tflite or SavedModel -> JSON lines"),
    "hf-export": ("electra_tf2.conversion.hf_export", "a Hugging Face directory (safetensors)"),
    "score": ("electra_tf2.scoring.cli",
              "replaced-token scores of texts with the discriminator"),
    "config": ("electra_tf2.config_show",
               "show the packaged presets and defaults (what --hparams accepts)"),
    "params": ("electra_tf2.param_counts", "parameter counts by official scope"),
    "flops": ("electra_tf2.flops", "pre-training FLOPs, counted as the paper"),
}
BEAM_MODULE = "electra_tf2.data_prep.beam_pretraining"
# The command modules' old paths, aliases since they moved
# (docs/design.md#layers-which-module-may-import-which).
MOVED_COMMAND_MODULES: Dict[str, str] = {
    "electra_tf2.convert": "convert", "electra_tf2.export": "export",
    "electra_tf2.predict": "predict", "electra_tf2.hf_export": "hf-export",
}
# `python -m <module>` for the modules that were commands before the `electra` command
# (at their old paths too): each runs as its subcommand. `python -m` on any other module
# of the package is refused in one line (run_module_as_main); the packages with a
# __main__.py run it.
MODULE_COMMANDS: Dict[str, str] = {
    **{module: name for name, (module, _) in SUBCOMMANDS.items()
       if module != "electra_tf2.training.cli"},
    **MOVED_COMMAND_MODULES,
    BEAM_MODULE: "build-data",
    "electra_tf2.commands": "",
}
RUNNABLE_PACKAGES = ("electra_tf2", "electra_tf2.__main__", "electra_tf2.scoring",
                     "electra_tf2.scoring.__main__")


def _usage() -> str:
  width = max(len(name) for name in SUBCOMMANDS)
  lines = [f"  {name:<{width}}  {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
  return ("usage: electra SUBCOMMAND [--help] [flags]\n\nELECTRA for TensorFlow 2: "
          "pre-training, fine-tuning, conversion, export and scoring.\n\nsubcommands:\n"
          + "\n".join(lines) + "\n\n`electra SUBCOMMAND --help` describes each.")


def subcommand_main(name: str, argv: Sequence[str]) -> Callable[[], int]:
  """The function that runs subcommand `name` on `argv` and returns its exit code."""
  prog = f"electra {name}"
  if name in ("pretrain", "finetune"):
    from electra_tf2.training import cli  # pylint: disable=g-import-not-at-top
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


def module_being_run(orig_argv: Sequence[str]) -> Optional[str]:
  """MODULE of `python [options] -m MODULE ...` (the interpreter's own argv), else None."""
  for index, arg in enumerate(orig_argv[1:], 1):
    if arg == "-m":
      return orig_argv[index + 1] if index + 1 < len(orig_argv) else None
    if arg.startswith("-m"):
      return arg[2:]
  return None


def _is_source_module(module: str) -> bool:
  """Whether electra_tf2.a.b names a module or package file here (nothing is imported)."""
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)), *module.split(".")[1:])
  return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def run_module_as_main(module: Optional[str], argv: Sequence[str]) -> None:
  """`python -m electra_tf2.<module> ARGV`: runs a command module as its subcommand and
  exits; any other module exits 2 with one line naming the command to use. Returns for
  the runnable packages and for modules outside electra_tf2.

  electra_tf2/__init__.py calls it while `python -m` locates the module (sys.argv[0]
  is "-m" then), before the module itself is imported.
  """
  if (module is None or not module.startswith("electra_tf2.") or module in RUNNABLE_PACKAGES
      or not _is_source_module(module)):
    return  # runpy runs it, or says that there is no such module
  if module in MODULE_COMMANDS:
    name = MODULE_COMMANDS[module]
    if not name:
      sys.exit(main(argv))
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(_module_main(module, f"electra {name}", argv)())
  hint = ("electra pretrain / electra finetune" if module == "electra_tf2.training.cli"
          else "electra convert from-hf" if module.endswith(".hf_import")
          else "electra --help (the subcommands)")
  sys.exit(errors.report(errors.ElectraError(
      f"python -m {module}: {module} is a library module, not a command; use {hint}")))


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
