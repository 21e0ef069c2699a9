"""Fine-tuning configuration: configs/finetuning_*.json resolved the official way.

The single place where `--model-name`, `--task` and `--hparams` become the
final `FinetuningConfig`. Resolution follows configure_finetuning.py:30-166:

  1. defaults (configs/finetuning_defaults.json);
  2. paths from --data-dir, --model-name and the user's task_names (the official
     code computes them before applying the user's values);
  3. the pre-trained model's model_size (DIR/models/<NAME>/pretrain_config.json,
     port: the official code makes the user repeat it);
  4. user hparams;
  5. single-task defaults (configs/finetuning_rules.json "single_task"; only
     when exactly one task is trained);
  6. model-size defaults ("model_size": large -> lr 5e-5, decay 0.9; small ->
     embedding_size 128);
  7. debug overrides ("debug");
  8. the pre-trained model's embedding_size and vocab_size (port);
  9. user hparams again, so user values win;
 10. derived: the encoder `bert_config` (the pre-trained model's shape plus
     model_hparam_overrides; without a pre-trained model the size table and,
     in debug mode, the official 3-layer debug encoder);
 11. checks: unknown keys, wrong types and inconsistent values raise
     ConfigError with a message that names the key.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from electra_tf2.config.pretraining import ENCODER_HPARAMS, saved_bert_config

from electra_tf2.config.encoder import BertConfig, check_model_overrides, get_bert_config
from electra_tf2.tasks import registry
from electra_tf2.text import vocab as vocab_lib

from electra_tf2.config.hparams import (
    ConfigError, ResolvedConfig, check_hparams, check_optimizer_hparams, check_seed,
    check_tpu_hparams, parse_hparams, read_config)

from electra_tf2.checkpoints.directories import (PRETRAIN_CONFIG_FILE, model_dir_of,
                                                 read_saved_pretraining_config)
from electra_tf2.text.description import DESCRIPTION_FILE, read_description

# Port hparams added after fine-tuned directories were first written (their files lack them).
ADDED_HPARAMS = ("num_train_steps", "strip_accents")
_DERIVED = ("encoder_config", "bert_config", "model_name", "data_dir", "pretrained_model_dir")
LOSS_REDUCTIONS = ("sum", "mean")
GLUE_TASKS = ("cola", "mrpc", "mnli", "sst", "rte", "qnli", "qqp", "sts", "wnli")


def schema() -> Dict[str, Dict[str, Any]]:
  """Every hyperparameter: default, type, nullable, path, doc."""
  return read_config("finetuning_defaults.json")


def rules() -> Dict[str, Any]:
  """Per-task, per-size and debug defaults (configs/finetuning_rules.json)."""
  return read_config("finetuning_rules.json")


def known_tasks() -> List[str]:
  """The registered tasks (electra_tf2/tasks/registry.py)."""
  return registry.task_names()


# ---------------------------------------------------------------------------
# The resolved configuration
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FinetuningConfig(ResolvedConfig):
  """The resolved fine-tuning configuration, frozen.

  Every hparam of configs/finetuning_defaults.json (configure_finetuning.py:32-128
  plus the port's), `model_name`, `data_dir`, `pretrained_model_dir` and the
  resolved `encoder_config`. Build it with `resolve_finetuning_config`;
  `from_dict` rebuilds a saved one. Path attributes are templates:
  `raw_data_dir` holds "{task}", the QA files "{task}", `test_predictions`
  "{task}", "{split}" and "{trial}"; the methods below fill them in.

  >>> config = FinetuningConfig.from_preset("electra_small", "DATA", "rte", num_trials=3)
  >>> config.learning_rate, config.layerwise_lr_decay, config.init_checkpoint
  (0.0001, 0.8, 'DATA/models/electra_small')
  """
  debug: bool
  log_examples: bool
  num_trials: int
  do_train: bool
  do_eval: bool
  keep_all_models: bool
  model_size: str
  task_names: List[str]
  model_hparam_overrides: Dict[str, Any]
  embedding_size: Optional[int]
  vocab_size: int
  do_lower_case: bool
  learning_rate: float
  weight_decay_rate: float
  layerwise_lr_decay: float
  num_train_epochs: float
  warmup_proportion: float
  save_checkpoints_steps: int
  iterations_per_loop: int
  use_tfrecords_if_existing: bool
  write_test_outputs: bool
  n_writes_test: int
  max_seq_length: int
  train_batch_size: int
  eval_batch_size: int
  predict_batch_size: int
  double_unordered: bool
  max_query_length: int
  doc_stride: int
  n_best_size: int
  max_answer_length: int
  answerable_classifier: bool
  answerable_uses_start_logits: bool
  answerable_weight: float
  joint_prediction: bool
  beam_size: int
  qa_na_threshold: float
  raw_data_dir: str
  vocab_file: str
  init_checkpoint: Optional[str]
  model_dir: str
  results_txt: str
  results_json: str
  qa_eval_file: str
  qa_preds_file: str
  qa_na_file: str
  preprocessed_data_dir: str
  test_predictions: str
  seed: int
  loss_reduction: str
  fix_layerwise_lr_off_by_one: bool
  max_examples_per_split: Optional[int]
  # derived and resolved
  model_name: str
  data_dir: str
  pretrained_model_dir: Optional[str]
  encoder_config: BertConfig
  num_train_steps: Optional[int] = None  # port; last, with a default: older saved configs lack it
  strip_accents: Optional[bool] = None  # port; as num_train_steps

  @classmethod
  def from_preset(cls, model_name: str, data_dir: str, tasks: Union[str, Sequence[str]],
                  **hparams) -> "FinetuningConfig":
    """Fine-tuning `DATA/models/<model_name>` on `tasks` (e.g. "rte" or ["cola", "mrpc"]),
    with `hparams` on top, resolved as `resolve_finetuning_config` does."""
    return resolve_finetuning_config(model_name, data_dir, hparams, tasks)

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> "FinetuningConfig":
    """Rebuilds a saved config (older files call the encoder `bert_config`)."""
    values = dict(values)
    encoder = values.pop("encoder_config", None) or values.pop("bert_config")
    values["encoder_config"] = BertConfig(**encoder)
    return cls(**values)

  @property
  def tasks_str(self) -> str:
    return ",".join(self.task_names)

  def task_data_dir(self, task: str) -> str:
    return self.raw_data_dir.format(task=task)

  def qa_eval_path(self, task: str) -> str:
    return self.qa_eval_file.format(task=task)

  def qa_preds_path(self, task: str) -> str:
    return self.qa_preds_file.format(task=task)

  def qa_na_path(self, task: str) -> str:
    return self.qa_na_file.format(task=task)

  def test_predictions_path(self, task: str, split: str, trial: int) -> str:
    return self.test_predictions.format(task=task, split=split, trial=trial)

  def glue_submission_dir(self, trial: int) -> str:
    return os.path.join(os.path.dirname(self.test_predictions), f"glue_{trial}")

  def trial_model_dir(self, trial: int) -> str:
    return f"{self.model_dir}_{trial}"

  def trial_seed(self, trial: int) -> int:
    return self.seed + trial - 1


# ---------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------


def _check_types(values: Mapping[str, Any], spec: Mapping[str, Dict[str, Any]],
                 source: str) -> None:
  derived = {key: "derived (from --model-name, --data-dir or the pre-trained model) and "
                  "cannot be set" for key in _DERIVED}
  check_hparams(values, spec, source, derived, "finetuning_defaults")


def read_pretrained_config(model_dir: Optional[str]) -> Optional[Dict[str, Any]]:
  """The saved pre-training config of `model_dir`, or None if there is none."""
  if model_dir is None:
    return None
  if not os.path.isfile(os.path.join(model_dir, PRETRAIN_CONFIG_FILE)):
    return None
  return read_saved_pretraining_config(model_dir, ENCODER_HPARAMS)


def check_task_names(names: Sequence[str]) -> None:
  """ConfigError unless `names` are known tasks, each named once."""
  known = known_tasks()
  if not names:
    raise ConfigError("task_names is empty: name at least one task")
  for name in names:
    if not isinstance(name, str) or name not in known:
      close = difflib.get_close_matches(name, known, n=1) if isinstance(name, str) else []
      guess = f" (did you mean {close[0]!r}?)" if close else ""
      raise ConfigError(f"unknown task {name!r}{guess}: use one of {', '.join(known)}")
  if len(set(names)) != len(names):
    raise ConfigError(f"task_names {names} names a task twice")


def _single_task_defaults(task: str) -> Dict[str, Any]:
  for rule in rules()["single_task"]:
    if (task in rule.get("tasks", ()) or rule.get("otherwise")
        or any(part in task for part in rule.get("name_contains", ()))):
      return rule["values"]
  return {}


def _parse_task_flag(tasks: Union[None, str, Sequence[str]]) -> Optional[List[str]]:
  if tasks is None:
    return None
  if isinstance(tasks, str):
    tasks = [t.strip() for t in tasks.split(",")]
  names = [t for t in tasks if t]
  if not names:
    raise ConfigError("--task is empty: give one or more task names separated by commas")
  return names


def resolve_finetuning_config(model_name: str, data_dir: str,
                              hparams: Union[None, str, Mapping[str, Any]] = None,
                              tasks: Union[None, str, Sequence[str]] = None
                              ) -> FinetuningConfig:
  """Builds the final fine-tuning config the way configure_finetuning.py does.

  Args:
    model_name: the pre-trained model's directory name under DIR/models/.
    data_dir: DIR (finetuning_data/, models/, vocab.txt).
    hparams: user values (dict, JSON string or .json path); they win over everything.
    tasks: the --task flag ("cola,mrpc" or a list); it sets task_names.

  Raises:
    ConfigError: unknown task or hparam, wrong type, inconsistent values.
  """
  spec = schema()
  user = _user_values(hparams, tasks, spec)
  values = _defaults_and_paths(spec, user, model_name, data_dir)
  # 3. the pre-trained model's size
  init_checkpoint = user.get("init_checkpoint", values["init_checkpoint"])
  source = model_dir_of(init_checkpoint) if init_checkpoint else None
  pretrained = read_pretrained_config(source)
  if pretrained is not None:
    values["model_size"] = pretrained["model_size"]
  # 4.-7. user values, single-task, size and debug defaults
  values.update(user)
  the_rules = rules()
  if len(values["task_names"]) == 1:
    values.update(_single_task_defaults(values["task_names"][0]))
  values.update(the_rules["model_size"].get(values["model_size"], {}))
  if values["debug"]:
    values.update(the_rules["debug"])
  # 8. the pre-trained model's embedding and vocabulary sizes
  if pretrained is not None:
    values["embedding_size"] = pretrained["embedding_size"]
    values["vocab_size"] = pretrained["vocab_size"]
  values["strip_accents"] = _pretrained_strip_accents(source, values["do_lower_case"])
  # 9. user values win
  values.update(user)

  values["model_name"] = model_name
  values["data_dir"] = data_dir
  values["pretrained_model_dir"] = source if pretrained is not None else None
  _check_consistency(values, pretrained, source)
  check_tpu_hparams(values, spec, "--hparams")
  values["encoder_config"] = _encoder_config(values, pretrained).to_dict()
  return _check_max_seq_length(FinetuningConfig.from_dict(values), pretrained, source)


def _user_values(hparams: Union[None, str, Mapping[str, Any]],
                 tasks: Union[None, str, Sequence[str]], spec: Mapping[str, Any]
                 ) -> Dict[str, Any]:
  """The user's values: --hparams, with --task as its task_names; types and tasks checked."""
  user = parse_hparams(hparams)
  _check_types(user, spec, "--hparams")
  if not all(isinstance(name, str) for name in user.get("task_names", ())):
    raise ConfigError(f"--hparams: task_names must be a list of task names, got "
                      f"{user['task_names']!r}")
  task_flag = _parse_task_flag(tasks)
  if task_flag is not None:
    if "task_names" in user and list(user["task_names"]) != task_flag:
      raise ConfigError(f"--task {','.join(task_flag)} disagrees with --hparams task_names "
                        f"{user['task_names']}: give the tasks once")
    user["task_names"] = task_flag
  check_task_names(user.get("task_names", spec["task_names"]["default"]))
  return user


def _defaults_and_paths(spec: Mapping[str, Any], user: Mapping[str, Any], model_name: str,
                        data_dir: str) -> Dict[str, Any]:
  """Steps 1-2: the defaults, with the paths filled in from the data directory, the model
  name and the user's task_names (officially computed before the user's values apply)."""
  values = {k: copy.deepcopy(v["default"]) for k, v in spec.items()}
  pretrained_dir = os.path.join(data_dir, "models", model_name)
  tasks_str = ",".join(user.get("task_names", values["task_names"]))
  fill = {"data_dir": data_dir, "pretrained_dir": pretrained_dir, "tasks": tasks_str,
          "debug_suffix": "-debug" if user.get("debug") else "",
          "task": "{task}", "split": "{split}", "trial": "{trial}"}
  for key, entry in spec.items():
    if entry.get("path"):
      values[key] = entry["default"].format(**fill)
  if not os.path.isfile(values["vocab_file"]):
    values["vocab_file"] = vocab_lib.default_vocab_file(data_dir)
  return values


def _check_max_seq_length(config: FinetuningConfig, pretrained: Optional[Mapping[str, Any]],
                          source: Optional[str]) -> FinetuningConfig:
  """config, if its max_seq_length fits the encoder's position embeddings."""
  if config.max_seq_length > config.encoder_config.max_position_embeddings:
    limit = config.encoder_config.max_position_embeddings
    whose = f"{source}'s" if pretrained is not None else "the encoder's"
    raise ConfigError(f"max_seq_length {config.max_seq_length} exceeds {whose} "
                      f"max_position_embeddings {limit}: pass --hparams "
                      f"'{{\"max_seq_length\": {limit}}}' or less")
  return config


def _pretrained_strip_accents(model_dir: Optional[str], do_lower_case: bool
                              ) -> Optional[bool]:
  """The accent stripping of the pre-trained model's tokenizer description, where it
  has one with this casing; None (the official rule) otherwise."""
  if model_dir is None or not os.path.isfile(os.path.join(model_dir, DESCRIPTION_FILE)):
    return None
  description = read_description(model_dir)
  return description.strip_accents if description.do_lower_case == do_lower_case else None


def _encoder_config(values: Mapping[str, Any], pretrained: Optional[Mapping[str, Any]]
                    ) -> BertConfig:
  """The pre-trained discriminator's shape, else the size table (debug-shrunk in debug)."""
  overrides = dict(values["model_hparam_overrides"])
  check_model_overrides(overrides)
  if pretrained is None:
    bert = get_bert_config(values)
  else:
    bert = saved_bert_config(pretrained)
    shape = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "vocab_size", "max_position_embeddings", "type_vocab_size")
    for key in shape:
      if key in overrides and overrides[key] != getattr(bert, key):
        raise ConfigError(f"model_hparam_overrides: {key}={overrides[key]} differs from the "
                          f"pre-trained model's {getattr(bert, key)}")
    bert = bert.replace(**overrides)
  bert.validate("encoder config (model_size/model_hparam_overrides)")
  return bert


def _check_consistency(values: Mapping[str, Any], pretrained: Optional[Mapping[str, Any]],
                       source: Optional[str]) -> None:
  """Rejects values that the official code would silently misuse."""
  check_task_names(values["task_names"])
  sizes = read_config("model_sizes.json")["sizes"]
  if values["model_size"] not in sizes:
    raise ConfigError(f"model_size {values['model_size']!r} is unknown: use one of "
                      f"{', '.join(sizes)}")
  if pretrained is not None:
    where = os.path.join(source, PRETRAIN_CONFIG_FILE)
    for key in ("model_size", "embedding_size", "vocab_size"):
      if values[key] != pretrained[key]:
        raise ConfigError(f"{key}={values[key]!r} differs from the pre-trained model's "
                          f"{pretrained[key]!r} ({where}); leave it unset")
  if values["num_trials"] == 0:
    raise ConfigError("num_trials must be non-zero (negative loops forever)")
  check_seed(values["seed"])
  check_optimizer_hparams(values)
  if not (values["do_train"] or values["do_eval"]):
    raise ConfigError("do_train and do_eval are both false: nothing to do")
  if values["loss_reduction"] not in LOSS_REDUCTIONS:
    raise ConfigError(f"loss_reduction must be one of {', '.join(LOSS_REDUCTIONS)}, "
                      f"got {values['loss_reduction']!r}")
  for key in ("max_seq_length", "train_batch_size", "eval_batch_size", "predict_batch_size",
              "iterations_per_loop", "save_checkpoints_steps", "max_query_length",
              "doc_stride", "n_best_size", "max_answer_length", "beam_size", "vocab_size"):
    if values[key] < 1:
      raise ConfigError(f"{key} must be >= 1, got {values[key]}")
  if values["num_train_epochs"] <= 0:
    raise ConfigError(f"num_train_epochs must be > 0, got {values['num_train_epochs']}")
  if values["num_train_steps"] is not None and values["num_train_steps"] < 1:
    raise ConfigError(f"num_train_steps must be >= 1 or null (null: num_train_epochs), got "
                      f"{values['num_train_steps']}")
  if not 0.0 <= values["warmup_proportion"] <= 1.0:
    raise ConfigError(f"warmup_proportion must be in [0, 1], got {values['warmup_proportion']}")
  if values["max_examples_per_split"] is not None and values["max_examples_per_split"] < 1:
    raise ConfigError("max_examples_per_split must be >= 1 or null")
  if values["embedding_size"] is not None and values["embedding_size"] < 1:
    raise ConfigError(f"embedding_size must be >= 1 or null, got {values['embedding_size']}")
  if any(registry.registered(name).head == "qa" for name in values["task_names"]):
    if values["max_seq_length"] - values["max_query_length"] - 3 < 1:
      raise ConfigError(f"max_seq_length {values['max_seq_length']} leaves no room for the "
                        f"document after max_query_length {values['max_query_length']} + 3")
    if values["joint_prediction"] and values["beam_size"] > values["max_seq_length"]:
      raise ConfigError(f"beam_size {values['beam_size']} exceeds max_seq_length "
                        f"{values['max_seq_length']}")
  templates = {"raw_data_dir": ("task",), "qa_eval_file": ("task",), "qa_preds_file": ("task",),
               "qa_na_file": ("task",), "test_predictions": ("task", "split", "trial")}
  for key, placeholders in templates.items():
    for name in placeholders:
      if "{" + name + "}" not in values[key]:
        raise ConfigError(f"{key} must contain the placeholder {{{name}}}, got {values[key]!r}")
    try:
      values[key].format(**{name: "x" for name in placeholders})
    except (KeyError, IndexError, ValueError):
      raise ConfigError(f"{key} {values[key]!r} may only use the placeholders "
                        f"{', '.join('{' + n + '}' for n in placeholders)}") from None
