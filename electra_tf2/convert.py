r"""Official TF1 ELECTRA checkpoints in and out.

  electra convert to-tf2 --checkpoint electra_small/ \
      --model-name electra_small_released --output-dir DATA/models/electra_small
  electra convert to-tf2-finetuned --checkpoint mnli_ckpt/ \
      --data-dir DATA --model-name electra_small --task mnli
  electra convert to-official --model-dir DATA/models/electra_small \
      --output-dir electra_small_tf1
  electra convert from-hf --hf-dir electra-small-discriminator \
      --output-dir DATA/models/electra_small_hf

Variables are matched by their official names (variable_names.py), strictly by
default; what was loaded, ignored or missing goes to conversion_report.json.
Notes: docs/design.md#checkpoint-conversion.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple


import numpy as np
import tensorflow as tf

from electra_tf2 import checkpoint_files, model_directory, variable_names
from electra_tf2.atomic_io import (copy_file_atomic, write_json_atomic,
                                   write_text_atomic)
from electra_tf2.config import PretrainingConfig, resolve_pretraining_config
from electra_tf2.hparams import ConfigError
from electra_tf2.errors import ElectraError, command
from electra_tf2.run_lock import hold

# Checkpoint variables that are never model weights: the step, Adam's slots, and the
# scalar `generator_predictions/temperature` of the released checkpoints (which the
# published code no longer creates; Hugging Face's and gluon-nlp's converters skip it too).
DEFAULT_IGNORE = (r"^global_step$", r"/adam_[mv]$", r"^generator_predictions/temperature$")
GLOBAL_STEP = "global_step"
# Key of the step in our checkpoints (run_pretraining.py and to-tf2 both save it).
OUR_GLOBAL_STEP_KEY = "global_step/.ATTRIBUTES/VARIABLE_VALUE"
REPORT_FILE = "conversion_report.json"
# The presets of the released "++" checkpoints (their shapes differ from the paper's presets).
RELEASED_PRESETS = ("electra_small_released", "electra_base_released", "electra_large_released")
VOCAB_FILE = "vocab.txt"

Shape = Tuple[int, ...]


class ConversionError(ElectraError, ValueError):
  """A checkpoint that does not fit the model; the message holds the report."""


@dataclasses.dataclass
class ConversionReport:
  """How the variables of one checkpoint and one model matched, name by name.

  loaded: model variables found with the same shape (official names).
  missing: model variables absent from the checkpoint.
  shape_mismatches: `(name, checkpoint shape, model shape)`.
  ignored: checkpoint variables matching the ignore list.
  unused: other checkpoint variables the model has no place for.
  """
  checkpoint: str
  loaded: List[str]
  missing: List[str]
  shape_mismatches: List[Tuple[str, Shape, Shape]]
  ignored: List[str]
  unused: List[str]

  @property
  def complete(self) -> bool:
    """Every model variable was found with its shape."""
    return not self.missing and not self.shape_mismatches

  @property
  def ok(self) -> bool:
    """Strict success: complete, and nothing in the checkpoint was left over."""
    return self.complete and not self.unused

  def to_dict(self) -> Dict[str, Any]:
    return dataclasses.asdict(self)

  def one_line(self, max_names: int = 3) -> str:
    """The problems in one line: missing, misshapen and unused names (a few of each)."""
    parts = []
    if self.missing:
      parts.append(f"{len(self.missing)} missing ({', '.join(self.missing[:max_names])})")
    if self.shape_mismatches:
      parts.append(f"{len(self.shape_mismatches)} of the wrong shape (" + ", ".join(
          f"{name}: {list(ckpt)} instead of {list(model)}"
          for name, ckpt, model in self.shape_mismatches[:max_names]) + ")")
    if self.unused:
      parts.append(f"{len(self.unused)} unused ({', '.join(self.unused[:max_names])})")
    return f"{self.checkpoint}: " + "; ".join(parts or ["every tensor used"])

  def summary(self, max_names: int = 20) -> str:
    """A few lines for a person; names are listed for every problem."""
    def names(items: Sequence[str]) -> str:
      shown = ", ".join(items[:max_names])
      return shown + (f", ... ({len(items) - max_names} more)" if len(items) > max_names else "")

    lines = [f"checkpoint {self.checkpoint}",
             f"  model variables loaded: {len(self.loaded)} of "
             f"{len(self.loaded) + len(self.missing) + len(self.shape_mismatches)}",
             f"  checkpoint variables ignored (step, optimizer slots, ...): {len(self.ignored)}"]
    if self.missing:
      lines.append(f"  MISSING from the checkpoint ({len(self.missing)}): {names(self.missing)}")
    for name, ckpt_shape, model_shape in self.shape_mismatches[:max_names]:
      lines.append(f"  SHAPE MISMATCH {name}: checkpoint {list(ckpt_shape)}, "
                   f"model {list(model_shape)}")
    if len(self.shape_mismatches) > max_names:
      lines.append(f"  ... {len(self.shape_mismatches) - max_names} more shape mismatches")
    if self.unused:
      lines.append(f"  UNUSED checkpoint variables ({len(self.unused)}): {names(self.unused)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def resolve_checkpoint_path(path: str) -> str:
  """A checkpoint prefix from a prefix or a directory.

  A directory gives its latest checkpoint (the `checkpoint` state file), or
  its only `*.index` file (the released zips hold one checkpoint).
  """
  if tf.io.gfile.isdir(path):
    latest = checkpoint_files.latest_checkpoint(path, strict=False)
    if latest:
      return latest
    found = checkpoint_files.existing_checkpoints(path)
    if len(found) != 1:
      raise ConversionError(f"{path}: expected one checkpoint (*.index), found {len(found)}; "
                            "pass the checkpoint prefix, e.g. DIR/model.ckpt-1000000")
    return found[0]
  if not tf.io.gfile.exists(path + ".index"):
    raise ConversionError(f"{path} is neither a directory nor a checkpoint prefix "
                          f"({path}.index does not exist)")
  return path


def checkpoint_shapes(checkpoint_path: str) -> Dict[str, Shape]:
  """`{name: shape}` of every variable of a (TF1 or TF2) checkpoint."""
  reader = tf.train.load_checkpoint(checkpoint_path)
  return {name: tuple(shape) for name, shape in reader.get_variable_to_shape_map().items()}


def is_ignored(name: str, ignore: Sequence[str] = DEFAULT_IGNORE) -> bool:
  return any(re.search(pattern, name) for pattern in ignore)


def match_variables(variable_map: Mapping[str, Any], checkpoint_path: str,
                    ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Compares a `{official name: variable}` map with a checkpoint's names and shapes."""
  return match_shapes(variable_map, checkpoint_shapes(checkpoint_path), checkpoint_path, ignore)


def match_shapes(variable_map: Mapping[str, Any], shapes: Mapping[str, Shape], source: str,
                 ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Compares a `{official name: variable}` map with `{name: shape}` of a source's tensors."""
  loaded, missing, mismatches = [], [], []
  for name in sorted(variable_map):
    model_shape = tuple(variable_map[name].shape)
    if name not in shapes:
      missing.append(name)
    elif shapes[name] != model_shape:
      mismatches.append((name, shapes[name], model_shape))
    else:
      loaded.append(name)
  rest = sorted(set(shapes) - set(variable_map))
  ignored = [name for name in rest if is_ignored(name, ignore)]
  unused = [name for name in rest if not is_ignored(name, ignore)]
  return ConversionReport(source, loaded, missing, mismatches, ignored, unused)


def assign_from_checkpoint(variable_map: Mapping[str, Any], checkpoint_path: str,
                           strict: bool = True, allow_unused: bool = False,
                           ignore: Sequence[str] = DEFAULT_IGNORE) -> ConversionReport:
  """Assigns every matching checkpoint value to its model variable.

  Args:
    variable_map: `{official name: keras.Variable}`.
    checkpoint_path: a checkpoint prefix (TF1 official names).
    strict: raise `ConversionError` (nothing assigned) unless every model
      variable is found with its shape and, unless `allow_unused`, every other
      checkpoint variable is ignored. Not strict: assign what matches.
    allow_unused: other checkpoint variables are expected (loading one part,
      such as the encoder, of a larger checkpoint).
    ignore: regexes (`re.search`) of checkpoint names that are not weights.
  """
  report = match_variables(variable_map, checkpoint_path, ignore)
  if strict and not (report.complete if allow_unused else report.ok):
    raise ConversionError("the checkpoint does not fit the model (strict conversion):\n"
                          + report.summary())
  reader = tf.train.load_checkpoint(checkpoint_path)
  for name in report.loaded:
    variable = variable_map[name]
    variable.assign(np.asarray(reader.get_tensor(name), dtype=variable.dtype))
  return report


def read_global_step(checkpoint_path: str) -> int:
  """A checkpoint's step: its `global_step` (official, or ours), else the N of `ckpt-N`, else 0."""
  reader = tf.train.load_checkpoint(checkpoint_path)
  for key in (GLOBAL_STEP, OUR_GLOBAL_STEP_KEY):
    if reader.has_tensor(key):
      return int(reader.get_tensor(key))
  suffix = checkpoint_path.rsplit("-", 1)[-1]
  return int(suffix) if suffix.isdigit() else 0


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def official_tensors(variable_map: Mapping[str, Any]) -> Dict[str, np.ndarray]:
  """`{official name: value}` of a variable map."""
  return {name: np.asarray(variable.numpy()) for name, variable in variable_map.items()}


def write_official_checkpoint(output_dir: str, tensors: Mapping[str, np.ndarray],
                              global_step: int = 0) -> str:
  """Writes `output_dir/model.ckpt-<global_step>` under the given names.

  Adds `global_step` (int64) and the `checkpoint` state file, so that
  `tf.train.latest_checkpoint(output_dir)` (the official fine-tuning's
  `init_from_checkpoint(model_dir)`) finds it. Returns the prefix.
  """
  if GLOBAL_STEP in tensors:
    raise ValueError("global_step is written from the global_step argument")
  tf.io.gfile.makedirs(output_dir)
  basename = f"model.ckpt-{global_step}"
  prefix = os.path.join(output_dir, basename)
  names = sorted(tensors) + [GLOBAL_STEP]
  values = [tf.constant(tensors[name]) for name in names[:-1]]
  values.append(tf.constant(global_step, tf.int64))
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=values)
  write_text_atomic(os.path.join(output_dir, "checkpoint"),
                    f'model_checkpoint_path: "{basename}"\n'
                    f'all_model_checkpoint_paths: "{basename}"\n')
  return prefix


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

  path: one of our model directories (its latest checkpoint) or a `ckpt-N`
  prefix in one, or an official checkpoint (a released model's directory or a
  `model.ckpt-N` prefix). Only weights are read: no step, no optimizer slots.
  Returns the checkpoint prefix read.
  """
  prefix = resolve_checkpoint_path(path)
  if any(name.endswith("/.ATTRIBUTES/VARIABLE_VALUE") for name in checkpoint_shapes(prefix)):
    saved = os.path.join(os.path.dirname(prefix), model_directory.PRETRAIN_CONFIG_FILE)
    hint = f": pass the --model-name and hparams of {saved}"
    if tf.io.gfile.exists(saved):
      name = model_directory.read_saved_pretraining_config(os.path.dirname(prefix),
                                                           ("model_name",))["model_name"]
      hint = f": it holds a {name} model (see {saved}); pass --model-name {name}"
    checkpoint_files.restore(tf.train.Checkpoint(model=model), prefix, partial=True,
                             match_existing=True, mismatch_hint=hint)
  else:
    check_released_preset(prefix, config)
    _assign_official(model, config, prefix)
  return prefix


def checkpoint_layout(names: Sequence[str]) -> str:
  """The layout of a checkpoint's names: "finetuning" (`task_specific/...`) or "pretraining"."""
  return "finetuning" if any(n.startswith("task_specific/") for n in names) else "pretraining"


def checkpoint_architecture(shapes: Mapping[str, Shape]) -> Dict[str, int]:
  """The encoder sizes that an official pre-training checkpoint's shapes imply."""
  arch = {}
  for scope in ("electra", "generator"):
    key = f"{scope}/encoder/layer_0/attention/self/query/kernel"
    if key in shapes:
      arch[f"{scope} hidden"] = shapes[key][-1]
      arch[f"{scope} layers"] = len({n.split("/")[2] for n in shapes
                                     if n.startswith(f"{scope}/encoder/layer_")})
  if "electra/embeddings/word_embeddings" in shapes:
    arch["vocab"], arch["embedding size"] = shapes["electra/embeddings/word_embeddings"]
  return arch


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


def write_model_dir(model, config: PretrainingConfig, output_dir: str,
                    global_step: int = 0) -> str:
  """Saves an `ElectraPretrainer` as a model directory; returns the `ckpt-N` prefix.

  The layout is run_pretraining.py's: `pretrain_config.json` and `ckpt-<step>`
  of `tf.train.Checkpoint(model=..., global_step=...)`, so
  `electra_tf2.model_directory.restore_pretrainer` and fine-tuning load it as is.
  """
  tf.io.gfile.makedirs(output_dir)
  write_json_atomic(os.path.join(output_dir, model_directory.PRETRAIN_CONFIG_FILE),
                    config.replace(model_dir=output_dir).to_dict())
  step = tf.Variable(global_step, dtype=tf.int64, trainable=False, name="global_step")
  checkpoint = tf.train.Checkpoint(model=model, global_step=step)
  manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=None,
                                       checkpoint_name="ckpt")
  return manager.save(checkpoint_number=global_step)


def _write_report(report: ConversionReport, output_dir: str) -> None:
  write_json_atomic(os.path.join(output_dir, REPORT_FILE), report.to_dict(), sort_keys=False)


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
  _write_report(report, output_dir)
  return report


def export_official_checkpoint(model_dir: str, output_dir: str,
                               checkpoint_path: Optional[str] = None) -> str:
  """Our model directory -> `output_dir/model.ckpt-<step>` in the official layout.

  Every trainable variable under its official name, plus `global_step` (the
  step of our checkpoint). Returns the written prefix.
  """
  checkpoint_path = checkpoint_path or checkpoint_files.latest_checkpoint(model_dir)
  model = model_directory.restore_pretrainer(model_dir, checkpoint_path)
  step = read_global_step(checkpoint_path)
  return write_official_checkpoint(
      output_dir, official_tensors(variable_names.pretrainer_variable_map(model)), step)


def is_finetuned_model_dir(model_dir: str) -> bool:
  """Whether `model_dir` is a fine-tuned model directory (finetuning_models/<tasks>_model_<t>)."""
  from electra_tf2.finetune import model as finetune_model
  return tf.io.gfile.exists(os.path.join(model_dir, finetune_model.MODEL_CONFIG_FILE))


def finetuned_from_official(checkpoint_path: str, config, head_specs: Sequence[Mapping],
                            strict: bool = True, ignore: Sequence[str] = DEFAULT_IGNORE):
  """A `FinetuningModel` with the weights of an official fine-tuning checkpoint.

  Args:
    checkpoint_path: an official checkpoint with `electra/` and `task_specific/<task>/`.
    config: the resolved `FinetuningConfig` (encoder shape).
    head_specs: one `Task.head_spec()` per task, in task-id order.

  Returns `(model, report)`.
  """
  from electra_tf2.finetune import model as finetune_model
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
  `electra_tf2.finetune.model.load_finetuned_model` and the SavedModel export
  load it.
  """
  from electra_tf2.finetune import model as finetune_model
  checkpoint_path = resolve_checkpoint_path(checkpoint_path)
  model, report = finetuned_from_official(checkpoint_path, config, head_specs, strict, ignore)
  finetune_model.save_model_files(model, config, output_dir)
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), output_dir,
                                       max_to_keep=None, checkpoint_name="ckpt")
  manager.save(checkpoint_number=read_global_step(checkpoint_path))
  _write_report(report, output_dir)
  return report


def export_official_finetuned(model_dir: str, output_dir: str,
                              checkpoint_path: Optional[str] = None) -> str:
  """A fine-tuned model directory -> the official fine-tuning layout.

  `electra/...` plus `task_specific/<task>/...`, and `global_step` (the N of ckpt-N).
  """
  from electra_tf2.finetune import model as finetune_model
  checkpoint_path = checkpoint_path or checkpoint_files.latest_checkpoint(model_dir)
  model, _ = finetune_model.load_finetuned_model(model_dir, checkpoint_path)
  return write_official_checkpoint(output_dir, official_tensors(model.variable_map()),
                                   read_global_step(checkpoint_path))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
                                   description="\n\n".join(__doc__.split("\n\n")[:2]),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  sub = parser.add_subparsers(dest="command", required=True)
  to_tf2 = sub.add_parser("to-tf2", help="official TF1 pre-training checkpoint -> model dir")
  to_tf2.add_argument("--checkpoint", required=True,
                      help="official checkpoint prefix, or its directory (e.g. the unzipped "
                           "electra_small/)")
  to_tf2.add_argument("--model-name", required=True,
                      help="config preset: electra_small_released, electra_base_released, "
                           "electra_large_released (the released ++ models), another preset, "
                           "or a preset .json")
  to_tf2.add_argument("--hparams", default="{}",
                      help="JSON object or .json file of hyperparameters over the preset")
  to_tf2.add_argument("--output-dir", default=None,
                      help="model directory to write (default DATA_DIR/models/MODEL_NAME)")
  to_tf2.add_argument("--data-dir", default=None,
                      help="data directory: sets the default output and vocab paths as "
                           "run_pretraining.py does")
  to_tf2.add_argument("--vocab-file", default=None,
                      help="vocabulary to copy into the model dir (default: vocab.txt beside "
                           "the checkpoint, if any)")
  to_tf2.add_argument("--no-strict", dest="strict", action="store_false",
                      help="load what matches instead of failing on missing, misshapen or "
                           "unused variables")
  to_tf2.add_argument("--ignore", action="append", default=[],
                      help="extra regex of checkpoint variables to ignore (repeatable)")
  finetuned = sub.add_parser(
      "to-tf2-finetuned", help="official TF1 fine-tuning checkpoint (electra/ + "
      "task_specific/) -> fine-tuned model dir")
  finetuned.add_argument("--checkpoint", required=True, help="official checkpoint prefix or dir")
  finetuned.add_argument("--data-dir", required=True,
                         help="data directory, as for run_finetuning.py")
  finetuned.add_argument("--model-name", required=True,
                         help="pre-trained model name (DATA_DIR/models/MODEL_NAME), as for "
                              "run_finetuning.py: it sets the encoder size")
  finetuned.add_argument("--task", required=True, help="the checkpoint's task(s), comma-separated "
                         "in the order they were trained")
  finetuned.add_argument("--hparams", default="{}",
                         help="fine-tuning hyperparameters, as for run_finetuning.py")
  finetuned.add_argument("--output-dir", default=None,
                         help="fine-tuned model directory (default the config's trial 1 dir, "
                              "DATA_DIR/models/MODEL_NAME/finetuning_models/<tasks>_model_1)")
  finetuned.add_argument("--no-strict", dest="strict", action="store_false",
                         help="load what matches instead of failing")
  finetuned.add_argument("--ignore", action="append", default=[],
                         help="extra regex of checkpoint variables to ignore (repeatable)")
  from_hf = sub.add_parser("from-hf", help="Hugging Face ELECTRA directory (config.json + "
                           "safetensors or pytorch_model.bin) -> model dir")
  from_hf.add_argument("--hf-dir", required=True,
                       help="directory written by save_pretrained (ElectraForPreTraining, "
                            "ElectraForMaskedLM, ElectraModel or a fine-tuned ELECTRA)")
  from_hf.add_argument("--output-dir", required=True, help="model directory to write")
  from_hf.add_argument("--no-strict", dest="strict", action="store_false",
                       help="load what matches (a missing head stays random) instead of "
                            "failing")
  to_official = sub.add_parser("to-official", help="model dir (pre-trained or fine-tuned) -> "
                               "official TF1 checkpoint")
  to_official.add_argument("--model-dir", required=True,
                           help="model directory: pre-trained (pretrain_config.json + ckpt-N) "
                                "or fine-tuned (model_config.json + ckpt-N)")
  to_official.add_argument("--checkpoint", default=None,
                           help="a ckpt-N prefix in it (default the latest)")
  to_official.add_argument("--output-dir", required=True,
                           help="directory for model.ckpt-<step> and its checkpoint file")
  return parser


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
    print(f"wrote {output_dir} ({model_directory.PRETRAIN_CONFIG_FILE}, "
          f"{os.path.basename(tf.train.latest_checkpoint(output_dir))}, {REPORT_FILE})")
  elif args.command == "to-tf2-finetuned":
    from electra_tf2.finetune import config as finetune_config, task_builder
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
    from electra_tf2 import hf_import
    with hold(args.output_dir):
      report = hf_import.convert_directory(args.hf_dir, args.output_dir, args.strict)
    print(report.summary())
    if hf_import.notice(report):
      print(hf_import.notice(report))
    print(f"wrote {args.output_dir}")
  else:
    export = (export_official_finetuned if is_finetuned_model_dir(args.model_dir)
              else export_official_checkpoint)
    with hold(args.output_dir):
      prefix = export(args.model_dir, args.output_dir, args.checkpoint)
    print(f"wrote {prefix} ({len(tf.train.list_variables(prefix))} variables)")
  return 0
