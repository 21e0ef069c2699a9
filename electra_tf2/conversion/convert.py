r"""Official TF1 ELECTRA checkpoints in and out.

  electra convert to-tf2 --checkpoint electra_small/ \
      --model-name electra_small_released --output-dir DATA/models/electra_small
  electra convert to-tf2-finetuned --checkpoint mnli_ckpt/ \
      --data-dir DATA --model-name electra_small --task mnli
  electra convert to-official --model-dir DATA/models/electra_small \
      --output-dir electra_small_tf1
  electra convert from-hf --hf-dir electra-small-discriminator \
      --output-dir DATA/models/electra_small_hf

Variables are matched by their official names (variable_names.py; read and written by
name in checkpoints/official.py), strictly by default; what was loaded, ignored or
missing goes to conversion_report.json.
Notes: docs/design.md#checkpoint-conversion.
"""

from __future__ import annotations

import argparse
import os
from typing import Dict, Mapping, Optional, Sequence

import tensorflow as tf

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.utils.atomic_io import copy_file_atomic
from electra_tf2.checkpoints import describe as describe_lib
from electra_tf2.checkpoints import portable
from electra_tf2.checkpoints.directories import (
    PRETRAIN_CONFIG_FILE, VOCAB_FILE, is_finetuned_model_dir, locate)
from electra_tf2.checkpoints.official import (
    ConversionError, assign_from_checkpoint, checkpoint_architecture, checkpoint_layout,
    checkpoint_shapes, official_tensors, read_global_step, resolve_checkpoint_path,
    write_official_checkpoint)
from electra_tf2.checkpoints.report import (
    DEFAULT_IGNORE, REPORT_FILE, ConversionReport, notice, write_report)
from electra_tf2.config.pretraining import PretrainingConfig, resolve_pretraining_config
from electra_tf2.utils.errors import command
from electra_tf2.config.hparams import ConfigError
from electra_tf2.models.model_directory import write_model_dir
from electra_tf2.utils.run_lock import hold

# The presets of the released "++" checkpoints (their shapes differ from the paper's presets).
RELEASED_PRESETS = ("electra_small_released", "electra_base_released", "electra_large_released")


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def pretrainer_from_official(checkpoint_path: str, config: PretrainingConfig,
                             strict: bool = True, ignore: Sequence[str] = DEFAULT_IGNORE):
  """An `ElectraPretrainer(config)` with the weights of an official pre-training checkpoint.

  Returns `(model, report)`.
  """
  from electra_tf2.models.pretrainer import ElectraPretrainer  # TF-heavy; imported on use
  checkpoint_path = resolve_checkpoint_path(checkpoint_path)
  if strict:
    check_released_preset(checkpoint_path, config)
  model = ElectraPretrainer.from_pretraining_config(config)
  return model, _assign_official(model, config, checkpoint_path, strict, ignore)


def _assign_official(model, config: PretrainingConfig, checkpoint_path: str, strict: bool = True,
                     ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  try:
    return assign_from_checkpoint(variable_names.pretrainer_variable_map(model),
                                  checkpoint_path, strict=strict, ignore=ignore)
  except ConversionError as e:
    raise ConversionError(f"{e}\n{_config_hint(checkpoint_path, config)}") from None


def load_pretrainer_weights(model, config: PretrainingConfig, path: str) -> str:
  """Copies the weights at `path` into `model`, an `ElectraPretrainer` of `config`.

  path: one of our pre-trained model directories (its latest checkpoint) or a
  `ckpt-N` prefix in one, or an official pre-training checkpoint (a released
  model's directory or a `model.ckpt-N` prefix); checkpoints/describe.py tells
  which. Only weights are read: no step, no optimizer slots. Returns the
  checkpoint prefix read.
  """
  kind = describe_lib.kind_of(path)
  if kind == "pretrained":
    source = describe_lib.describe(path)
    prefix = model_directory.checkpoint_of(source.model_dir, source.checkpoint)
    name = source.pretraining_config.model_name
    saved = os.path.join(source.model_dir, PRETRAIN_CONFIG_FILE)
    hint = f": it holds a {name} model (see {saved}); pass --model-name {name}"
    model_directory.restore_weights(model, prefix, hint)
    return prefix
  if kind == "official":
    prefix = resolve_checkpoint_path(path)
    check_released_preset(prefix, config)
    _assign_official(model, config, prefix)
    return prefix
  raise ConversionError(f"init_checkpoint {path} is {describe_lib.KIND_NAMES[kind]}: give "
                        "a pre-trained model directory or an official pre-training checkpoint "
                        "(electra convert from-hf turns a Hugging Face directory into one)")


def config_architecture(config: PretrainingConfig) -> Dict[str, int]:
  """`checkpoint_architecture` of the checkpoint a config's model writes."""
  disc = config.bert_config
  arch = {"electra hidden": disc.hidden_size, "electra layers": disc.num_hidden_layers}
  if config.uses_generator_encoder:
    gen = config.generator_bert_config
    arch.update({"generator hidden": gen.hidden_size, "generator layers": gen.num_hidden_layers})
  arch.update({"vocab": config.vocab_size, "embedding size": config.resolved_embedding_size})
  return arch


def check_released_preset(checkpoint_path: str, config: PretrainingConfig) -> None:
  """One-line ConversionError when the checkpoint holds the shapes of a released model
  (RELEASED_PRESETS) and the config another (a paper preset for a "++" model: electra#105)."""
  found = checkpoint_architecture(checkpoint_shapes(checkpoint_path))
  ours = config_architecture(config)
  if found == ours:
    return
  for preset in RELEASED_PRESETS:
    if found == config_architecture(resolve_pretraining_config(preset)):
      differ = ", ".join(f"{key} {value} there, {ours.get(key)} in {config.model_name}"
                         for key, value in found.items() if ours.get(key) != value)
      raise ConversionError(f"{checkpoint_path} holds a released model with the shapes of the "
                            f"{preset} preset ({differ}): use --model-name {preset}")


def _config_hint(checkpoint_path: str, config: PretrainingConfig) -> str:
  """What the checkpoint's shapes say about the model it holds."""
  shapes = checkpoint_shapes(checkpoint_path)
  if checkpoint_layout(list(shapes)) == "finetuning":
    return ("hint: this is a fine-tuning checkpoint (task_specific/...): convert it with "
            "`electra convert to-tf2-finetuned`")
  arch = checkpoint_architecture(shapes)
  parts = [f"{scope} hidden {arch[scope + ' hidden']} x {arch[scope + ' layers']} layers"
           for scope in ("electra", "generator") if scope + " hidden" in arch]
  if "vocab" in arch:
    parts.append(f"embedding size {arch['embedding size']}, vocab {arch['vocab']}")
  disc = config.bert_config
  ours = (f"the config ({config.model_name}) has electra hidden {disc.hidden_size} x "
          f"{disc.num_hidden_layers} layers")
  if config.uses_generator_encoder:
    gen = config.generator_bert_config
    ours += f", generator hidden {gen.hidden_size} x {gen.num_hidden_layers} layers"
  ours += f", embedding size {config.resolved_embedding_size}, vocab {config.vocab_size}"
  return (f"hint: the checkpoint has {', '.join(parts) or 'no ELECTRA encoder'}; {ours}. The "
          "released models convert with --model-name electra_{small,base,large}_released.")


def convert_official_checkpoint(checkpoint_path: str, config: PretrainingConfig,
                                output_dir: str, strict: bool = True,
                                ignore: Sequence[str] = DEFAULT_IGNORE,
                                vocab_file: Optional[str] = None) -> ConversionReport:
  """Official pre-training checkpoint -> our model directory.

  Also writes `conversion_report.json` and copies the vocabulary (`vocab_file`,
  else a `vocab.txt` beside the checkpoint, as in the released zips) into
  `output_dir`, recording it as the config's `vocab_file`.
  """
  checkpoint_path = resolve_checkpoint_path(checkpoint_path)
  if vocab_file is None:
    beside = os.path.join(os.path.dirname(checkpoint_path), VOCAB_FILE)
    vocab_file = beside if tf.io.gfile.exists(beside) else None
  target = os.path.join(output_dir, VOCAB_FILE)
  if vocab_file is not None:
    config = config.replace(vocab_file=target)
  model, report = pretrainer_from_official(checkpoint_path, config, strict, ignore)
  tf.io.gfile.makedirs(output_dir)
  if vocab_file is not None and os.path.abspath(vocab_file) != os.path.abspath(target):
    copy_file_atomic(vocab_file, target)
  write_model_dir(model, config, output_dir, read_global_step(checkpoint_path))
  write_report(report, output_dir)
  return report


def export_official_checkpoint(model_dir: str, output_dir: str,
                               checkpoint_path: Optional[str] = None) -> str:
  """Our model directory -> `output_dir/model.ckpt-<step>` in the official layout.

  Every trainable variable under its official name, plus `global_step` (the
  step of our checkpoint). Returns the written prefix.
  """
  locate(model_dir)  # one line if it is no model directory
  found = describe_lib.describe(model_dir)
  checkpoint_path = model_directory.checkpoint_of(model_dir, checkpoint_path or found.checkpoint)
  model = model_directory.restore_pretrainer(model_dir, checkpoint_path,
                                             found.pretraining_config)
  step = (portable.step_of(checkpoint_path) if portable.is_portable(checkpoint_path)
          else read_global_step(checkpoint_path))
  prefix = write_official_checkpoint(
      output_dir, official_tensors(variable_names.pretrainer_variable_map(model)), step)
  _copy_vocab(found.vocab_file, output_dir)
  return prefix


def _copy_vocab(vocab: Optional[str], output_dir: str) -> None:
  """The vocabulary of our model directory (`vocab`) beside the official checkpoint written
  from it (as in the released zips), if it has one."""
  if vocab is not None:
    copy_file_atomic(vocab, os.path.join(output_dir, VOCAB_FILE))


def finetuned_from_official(checkpoint_path: str, config, head_specs: Sequence[Mapping],
                            strict: bool = True, ignore: Sequence[str] = DEFAULT_IGNORE):
  """A `FinetuningModel` with the weights of an official fine-tuning checkpoint.

  Args:
    checkpoint_path: an official checkpoint with `electra/` and `task_specific/<task>/`.
    config: the resolved `FinetuningConfig` (encoder shape).
    head_specs: one `Task.head_spec()` per task, in task-id order.

  Returns `(model, report)`.
  """
  from electra_tf2.models import finetuning as finetune_model
  checkpoint_path = resolve_checkpoint_path(checkpoint_path)
  model = finetune_model.build_model(config, head_specs)
  report = assign_from_checkpoint(model.variable_map(), checkpoint_path, strict=strict,
                                  ignore=ignore)
  return model, report


def convert_official_finetuned(checkpoint_path: str, config, head_specs: Sequence[Mapping],
                               output_dir: str, strict: bool = True,
                               ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Official fine-tuning checkpoint -> a fine-tuned model directory.

  The directory is what run_finetuning.py writes (`ckpt-<step>`,
  model_config.json, finetuning_config.json), so
  `electra_tf2.models.finetuning.load_finetuned_model` and the SavedModel export
  load it.
  """
  from electra_tf2.models import finetuning as finetune_model
  checkpoint_path = resolve_checkpoint_path(checkpoint_path)
  model, report = finetuned_from_official(checkpoint_path, config, head_specs, strict, ignore)
  finetune_model.save_model_files(model, config, output_dir)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), output_dir,
                                       max_to_keep=None, checkpoint_name="ckpt")
  manager.save(checkpoint_number=read_global_step(checkpoint_path))
  write_report(report, output_dir)
  return report


def export_official_finetuned(model_dir: str, output_dir: str,
                              checkpoint_path: Optional[str] = None) -> str:
  """A fine-tuned model directory -> the official fine-tuning layout.

  `electra/...` plus `task_specific/<task>/...`, and `global_step` (the N of ckpt-N).
  """
  from electra_tf2.models import finetuning as finetune_model
  checkpoint_path = checkpoint_path or tf_checkpoint.latest_checkpoint(model_dir)
  model, _ = finetune_model.load_finetuned_model(model_dir, checkpoint_path)
  prefix = write_official_checkpoint(output_dir, official_tensors(model.variable_map()),
                                     read_global_step(checkpoint_path))
  _copy_vocab(describe_lib.describe(model_dir).vocab_file, output_dir)
  return prefix


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
                                   description="\n\n".join(__doc__.split("\n\n")[:2]),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  sub = parser.add_subparsers(dest="command", required=True)
  for add in (_add_to_tf2, _add_to_tf2_finetuned, _add_from_hf_and_keras_hub,
              _add_to_official, _add_to_portable):
    add(sub)
  return parser


def _add_to_tf2(sub) -> None:
  """`convert to-tf2`: an official TF1 pre-training checkpoint -> a model directory."""
  parser = sub.add_parser("to-tf2", help="official TF1 pre-training checkpoint -> model dir")
  parser.add_argument("--checkpoint", required=True,
                      help="official checkpoint prefix, or its directory (e.g. the unzipped "
                           "electra_small/)")
  parser.add_argument("--model-name", required=True,
                      help="config preset: electra_small_released, electra_base_released, "
                           "electra_large_released (the released ++ models), another preset, "
                           "or a preset .json")
  parser.add_argument("--hparams", default="{}",
                      help="JSON object or .json file of hyperparameters over the preset")
  parser.add_argument("--output-dir", default=None,
                      help="model directory to write (default DATA_DIR/models/MODEL_NAME)")
  parser.add_argument("--data-dir", default=None,
                      help="data directory: sets the default output and vocab paths as "
                           "run_pretraining.py does")
  parser.add_argument("--vocab-file", default=None,
                      help="vocabulary to copy into the model dir (default: vocab.txt beside "
                           "the checkpoint, if any)")
  parser.add_argument("--no-strict", dest="strict", action="store_false",
                      help="load what matches instead of failing on missing, misshapen or "
                           "unused variables")
  parser.add_argument("--ignore", action="append", default=[],
                      help="extra regex of checkpoint variables to ignore (repeatable)")


def _add_to_tf2_finetuned(sub) -> None:
  """`convert to-tf2-finetuned`: an official TF1 fine-tuning checkpoint -> a fine-tuned one."""
  parser = sub.add_parser(
      "to-tf2-finetuned", help="official TF1 fine-tuning checkpoint (electra/ + "
      "task_specific/) -> fine-tuned model dir")
  parser.add_argument("--checkpoint", required=True, help="official checkpoint prefix or dir")
  parser.add_argument("--data-dir", required=True,
                      help="data directory, as for run_finetuning.py")
  parser.add_argument("--model-name", required=True,
                      help="pre-trained model name (DATA_DIR/models/MODEL_NAME), as for "
                           "run_finetuning.py: it sets the encoder size")
  parser.add_argument("--task", required=True, help="the checkpoint's task(s), comma-separated "
                      "in the order they were trained")
  parser.add_argument("--hparams", default="{}",
                      help="fine-tuning hyperparameters, as for run_finetuning.py")
  parser.add_argument("--output-dir", default=None,
                      help="fine-tuned model directory (default the config's trial 1 dir, "
                           "DATA_DIR/models/MODEL_NAME/finetuning_models/<tasks>_model_1)")
  parser.add_argument("--no-strict", dest="strict", action="store_false",
                      help="load what matches instead of failing")
  parser.add_argument("--ignore", action="append", default=[],
                      help="extra regex of checkpoint variables to ignore (repeatable)")


def _add_from_hf_and_keras_hub(sub) -> None:
  """`convert from-hf` and `convert from-keras-hub`: another library's ELECTRA directory
  -> a model directory."""
  sources = {
      "from-hf": ("Hugging Face ELECTRA directory (config.json + safetensors or "
                  "pytorch_model.bin) -> model dir", "--hf-dir",
                  "directory written by save_pretrained (ElectraForPreTraining, "
                  "ElectraForMaskedLM, ElectraModel or a fine-tuned ELECTRA)"),
      "from-keras-hub": ("keras-hub ELECTRA preset -> model dir (hidden_act gelu_tanh; the "
                         "keras-hub extra)", "--preset",
                         "preset directory (ElectraBackbone.save_to_preset)")}
  parsers = {}
  for name, (help_, flag, flag_help) in sources.items():
    parsers[name] = sub.add_parser(name, help=help_)
    parsers[name].add_argument(flag, required=True, help=flag_help)
    parsers[name].add_argument("--output-dir", required=True, help="model directory to write")
  parsers["from-hf"].add_argument("--no-strict", dest="strict", action="store_false",
                                  help="load what matches (a missing head stays random) "
                                       "instead of failing")


def _add_to_official(sub) -> None:
  """`convert to-official`: a model directory -> an official TF1 checkpoint."""
  parser = sub.add_parser("to-official", help="model dir (pre-trained or fine-tuned) -> "
                          "official TF1 checkpoint")
  parser.add_argument("--model-dir", required=True,
                      help="model directory: pre-trained (pretrain_config.json + ckpt-N) "
                           "or fine-tuned (model_config.json + ckpt-N)")
  parser.add_argument("--checkpoint", default=None,
                      help="a ckpt-N prefix in it (default the latest)")
  parser.add_argument("--output-dir", required=True,
                      help="directory for model.ckpt-<step> and its checkpoint file")


def _add_to_portable(sub) -> None:
  """`convert to-portable`: a TensorFlow run's checkpoint -> portable-<step>.npz."""
  parser = sub.add_parser(
      "to-portable", help="a TensorFlow run's model dir -> portable-<step>.npz beside its "
      "checkpoints (weights, Adam slots, step), which `electra pretrain --backend jax` resumes")
  parser.add_argument("--model-dir", required=True,
                      help="pre-trained model directory (pretrain_config.json + ckpt-N)")
  parser.add_argument("--checkpoint", default=None,
                      help="a ckpt-N prefix in it (default the latest)")


def write_portable_checkpoint(model_dir: str, checkpoint_path: Optional[str] = None) -> str:
  """A TensorFlow `ckpt-N` of a pre-training run as `portable-N.npz` in `model_dir`
  (electra_tf2/checkpoints/portable.py): weights, Adam slots and step. Returns its path."""
  from electra_tf2.models import optimization  # pylint: disable=g-import-not-at-top
  from electra_tf2.pretraining import (  # pylint: disable=g-import-not-at-top
      state as pretraining_state)
  from electra_tf2.models.pretrainer import ElectraPretrainer  # pylint: disable=g-import-not-at-top
  config = model_directory.load_pretraining_config(model_dir)
  prefix = checkpoint_path or tf_checkpoint.latest_checkpoint(model_dir)
  if prefix is None or portable.is_portable(prefix):
    raise ConversionError(f"{model_dir} holds no TensorFlow checkpoint (ckpt-N.index) to convert")
  model = ElectraPretrainer.from_pretraining_config(config)
  optimizer = optimization.pretraining_optimizer(config, model)
  optimizer.build(model.trainable_variables)
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  tf_checkpoint.restore(tf.train.Checkpoint(model=model, optimizer=optimizer, global_step=step),
                           prefix, partial=True, match_existing=True,
                           mismatch_hint=f": it is not the model that {PRETRAIN_CONFIG_FILE} "
                                         "describes")
  arrays, extra = pretraining_state.arrays_of(model, optimizer, int(step.numpy()))
  return portable.save(model_dir, int(step.numpy()), arrays, dict(extra, backend="tensorflow"))


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  args = _parser().parse_args(argv)
  if args.command == "to-tf2":
    config = resolve_pretraining_config(args.model_name, args.data_dir, args.hparams)
    output_dir = args.output_dir or config.model_dir
    if output_dir is None:
      raise ConfigError("pass --output-dir (or --data-dir for DATA_DIR/models/MODEL_NAME)")
    with hold(output_dir):
      report = convert_official_checkpoint(
          args.checkpoint, config, output_dir, strict=args.strict,
          ignore=tuple(DEFAULT_IGNORE) + tuple(args.ignore), vocab_file=args.vocab_file)
    print(report.summary())
    print(f"wrote {output_dir} ({PRETRAIN_CONFIG_FILE}, "
          f"{os.path.basename(tf.train.latest_checkpoint(output_dir))}, {REPORT_FILE})")
  elif args.command == "to-tf2-finetuned":
    from electra_tf2.tasks import config as finetune_config, task_builder
    config = finetune_config.resolve_finetuning_config(args.model_name, args.data_dir,
                                                       args.hparams, args.task)
    head_specs = [task.head_spec() for task in task_builder.get_tasks(config)]
    output_dir = args.output_dir or config.trial_model_dir(1)
    with hold(output_dir):
      report = convert_official_finetuned(args.checkpoint, config, head_specs, output_dir,
                                          strict=args.strict,
                                          ignore=tuple(DEFAULT_IGNORE) + tuple(args.ignore))
    print(report.summary())
    print(f"wrote {output_dir}")
  elif args.command == "from-hf":
    from electra_tf2.conversion import hf_import  # pylint: disable=g-import-not-at-top
    with hold(args.output_dir):
      report = hf_import.convert_directory(args.hf_dir, args.output_dir, args.strict)
    print(report.summary())
    if notice(report):
      print(notice(report))
    print(f"wrote {args.output_dir}")
  elif args.command == "from-keras-hub":
    from electra_tf2.conversion import keras_hub  # pylint: disable=g-import-not-at-top
    with hold(args.output_dir):
      report = keras_hub.convert_preset(args.preset, args.output_dir)
    print(report.summary())
    print(f"notice: {', '.join(n for n in report.missing)}: not in a keras-hub preset, at "
          "their initialisation")
    print(f"wrote {args.output_dir}")
  elif args.command == "to-portable":
    with hold(args.model_dir):
      print(f"wrote {write_portable_checkpoint(args.model_dir, args.checkpoint)}")
  else:
    export = (export_official_finetuned if is_finetuned_model_dir(args.model_dir)
              else export_official_checkpoint)
    with hold(args.output_dir):
      prefix = export(args.model_dir, args.output_dir, args.checkpoint)
    print(f"wrote {prefix} ({len(tf.train.list_variables(prefix))} variables)")
  return 0
