"""What is at a path: the one place that tells the kinds of ELECTRA checkpoint apart.

  from electra_tf2.checkpoints.describe import describe
  describe("DATA/models/electra_small")  # Description(kind="pretrained", ...)

Kinds (`KINDS`), detected from the files, in this order:
- "savedmodel": a TF SavedModel (`saved_model.pb`);
- "keras_hub": a keras-hub ELECTRA preset (`config.json` of a keras-hub backbone,
  checkpoints/keras_hub.py);
- "huggingface": a Hugging Face directory (`config.json`, checkpoints/huggingface.py);
- "pretrained": our pre-trained model directory (`pretrain_config.json` + `ckpt-N`),
  or a `ckpt-N` prefix inside one;
- "finetuned": our fine-tuned model directory (`model_config.json` + `ckpt-N`);
- "official" / "official_finetuned": an official TF1 checkpoint (a prefix, or a
  directory holding one), recognised by its variable names (`electra/...`;
  `task_specific/<task>/...` for fine-tuned ones).

Nothing is built or restored: configs and checkpoint indexes are read. Weights by
official name: models/sources.py.
"""

from __future__ import annotations

import dataclasses
import glob
import os
from typing import Any, Dict, Optional, Tuple

from electra_tf2.checkpoints import tf_checkpoint
from electra_tf2.utils.atomic_io import exists, is_remote, isdir
from electra_tf2.checkpoints import directories, huggingface, keras_hub, official, portable
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError, MissingTensorFlowError
from electra_tf2.text.description import TokenizerDescription, read_description

KINDS = ("savedmodel", "keras_hub", "huggingface", "pretrained", "finetuned", "official",
         "official_finetuned")
# What each kind is, for messages: "<path> is <KIND_NAMES[kind]>".
KIND_NAMES = {"savedmodel": "a SavedModel", "keras_hub": "a keras-hub preset",
              "huggingface": "a Hugging Face directory",
              "pretrained": "a pre-trained model directory",
              "finetuned": "a fine-tuned model directory",
              "official": "an official pre-training checkpoint",
              "official_finetuned": "an official fine-tuning checkpoint"}
SAVED_MODEL_FILE = "saved_model.pb"


# Kinds read with TensorFlow (tf.train checkpoints): on the tensorflow Keras backend only.
TENSORFLOW_KINDS = ("pretrained", "finetuned", "official", "official_finetuned")


class UnknownCheckpointError(ElectraError, ValueError):
  """A path that holds none of the kinds of checkpoint."""


class TensorFlowCheckpointError(ElectraError, ValueError):
  """A TensorFlow checkpoint asked for on another Keras backend."""


def _keras_on_tensorflow() -> bool:
  import keras  # pylint: disable=g-import-not-at-top
  return keras.backend.backend() == "tensorflow"


def _needs_tensorflow(path: str, what: str) -> TensorFlowCheckpointError:
  import keras  # pylint: disable=g-import-not-at-top
  return TensorFlowCheckpointError(
      f"{path} is {what}, which reads with TensorFlow: load it with the tensorflow Keras "
      f"backend (KERAS_BACKEND=tensorflow), not {keras.backend.backend()}; on "
      f"{keras.backend.backend()}, load a Hugging Face directory (`electra hf-export` writes "
      "one) or a .keras / .weights.h5 file saved there")


@dataclasses.dataclass(frozen=True)
class Description:
  """An ELECTRA checkpoint, described.

  kind: one of KINDS.
  checkpoint: the checkpoint prefix to read (None for a SavedModel, a Hugging
    Face directory, or one of our directories with no checkpoint yet).
  model_dir: our model directory (pretrained, finetuned), else None.
  bert_config, embedding_size: the encoder's shape (None for a SavedModel).
  vocab_file, do_lower_case: the tokenizer (vocab_file None when there is none).
  tasks: the fine-tuned heads' tasks, in id order (official: name order).
  pretraining_config: our pre-trained directory's `PretrainingConfig`.
  finetuning_values: our fine-tuned directory's finetuning_config.json.
  model_config: our fine-tuned directory's model_config.json (its heads).
  architecture: a Hugging Face directory's class (`architectures[0]`; None when config.json
    names none: huggingface.read_directory tells it from the weights' names).
  tokenizer: the directory's tokenizer description (tokenizer_description.json, checked
    against the vocabulary; derived from the vocabulary for directories without one).
  strip_accents: a Hugging Face directory's tokenizer_config.json value (None: the
    official rule, stripped when lowercasing); `tokenizer` says what is used.
  """
  path: str
  kind: str
  checkpoint: Optional[str] = None
  model_dir: Optional[str] = None
  bert_config: Optional[BertConfig] = None
  embedding_size: Optional[int] = None
  vocab_file: Optional[str] = None
  do_lower_case: bool = True
  tasks: Tuple[str, ...] = ()
  pretraining_config: Any = None
  finetuning_values: Optional[Dict[str, Any]] = None
  model_config: Optional[Dict[str, Any]] = None
  architecture: Optional[str] = None
  tokenizer: Optional[TokenizerDescription] = None
  strip_accents: Optional[bool] = None


def kind_of(path: str) -> str:
  """The kind of checkpoint at `path` (KINDS); UnknownCheckpointError if none."""
  if not (exists(path) or exists(path + ".index")):
    raise UnknownCheckpointError(f"{path} does not exist: give a model directory, a checkpoint "
                                 "prefix, a Hugging Face directory or a SavedModel")
  if exists(os.path.join(path, SAVED_MODEL_FILE)):
    return "savedmodel"
  if not is_remote(path) and keras_hub.is_preset(path):
    return "keras_hub"
  if isdir(path) and exists(os.path.join(path, huggingface.CONFIG_FILE)):
    return "huggingface"
  model_dir = directories.model_dir_of(path)
  if exists(os.path.join(model_dir, directories.PRETRAIN_CONFIG_FILE)):
    return "pretrained"
  if directories.is_finetuned_model_dir(model_dir):
    return "finetuned"
  if not _keras_on_tensorflow():
    if exists(path + ".index") or (not is_remote(path) and glob.glob(
        os.path.join(glob.escape(path), "*.index"))):
      raise _needs_tensorflow(path, "a TensorFlow checkpoint (an official one?)")
    raise UnknownCheckpointError(
        f"{path} is no ELECTRA checkpoint that loads without TensorFlow: expected a Hugging "
        "Face directory (config.json)")
  names = _official_names(path)
  if official.WORD_EMBEDDINGS in names:
    return ("official_finetuned" if official.checkpoint_layout(list(names)) == "finetuning"
            else "official")
  raise UnknownCheckpointError(
      f"{path} is no ELECTRA checkpoint: expected a Hugging Face directory (config.json), a "
      f"model directory ({directories.PRETRAIN_CONFIG_FILE} or "
      f"{directories.MODEL_CONFIG_FILE}), an official TF1 checkpoint (prefix or directory) "
      f"or a SavedModel ({SAVED_MODEL_FILE})")


def _portable(path: str, kind: str) -> bool:
  """Whether `path` is a pre-trained directory whose checkpoint is portable (read without
  TensorFlow); not where it holds TensorFlow checkpoints and TensorFlow is absent."""
  try:
    return kind == "pretrained" and portable.is_portable(directories.locate(path).checkpoint_path)
  except MissingTensorFlowError:
    return False


def describe(path: str, model_name: Optional[str] = None) -> Description:
  """The `Description` of the checkpoint at `path`.

  model_name: an official checkpoint's preset (e.g. electra_base_released), for
  the number of attention heads and the lowercasing its shapes do not give.
  """
  kind = kind_of(path)
  if kind in TENSORFLOW_KINDS and not _keras_on_tensorflow() and not _portable(path, kind):
    raise _needs_tensorflow(path, KIND_NAMES[kind])
  if kind == "savedmodel":
    return Description(path, kind)
  if kind == "keras_hub":
    found = _keras_hub(path)
  elif kind == "huggingface":
    found = _huggingface(path)
  elif kind == "pretrained":
    found = _pretrained(path)
  elif kind == "finetuned":
    found = _finetuned(path)
  else:
    found = _official(path, kind, model_name)
  directory = found.model_dir or (path if os.path.isdir(path) else os.path.dirname(path))
  tokenizer = read_description(directory, found.vocab_file, found.do_lower_case,
                               found.strip_accents)
  if tokenizer is None:
    return found
  # The vocabulary the description was checked against (the one beside it first).
  vocab = tokenizer.vocab_file if os.path.exists(tokenizer.vocab_file) else found.vocab_file
  return dataclasses.replace(found, tokenizer=tokenizer, vocab_file=vocab)


def _huggingface(path: str) -> Description:
  config = huggingface.read_config(path)
  bert, embedding_size = huggingface.encoder_shape(
      config, os.path.join(path, huggingface.CONFIG_FILE))
  vocab = os.path.join(path, directories.VOCAB_FILE)
  architecture = (config.get("architectures") or [None])[0]  # None: read_directory infers it
  return Description(path, "huggingface", None, None, bert, embedding_size,
                     vocab if os.path.exists(vocab) else None,
                     huggingface.read_do_lower_case(path),
                     strip_accents=huggingface.read_strip_accents(path), architecture=architecture)


def _keras_hub(path: str) -> Description:
  bert, embedding_size = keras_hub.encoder_shape(path)
  tokenizer = keras_hub.read_tokenizer(path)
  return Description(path, "keras_hub", None, None, bert, embedding_size, tokenizer.vocab_file,
                     tokenizer.do_lower_case, strip_accents=tokenizer.strip_accents)


def _pretrained(path: str) -> Description:
  located = directories.locate(path)
  config = directories.load_pretraining_config(located.model_dir)
  return Description(path, "pretrained", located.checkpoint_path, located.model_dir,
                     config.bert_config, config.resolved_embedding_size,
                     directories.find_vocab(located.model_dir, config), config.do_lower_case,
                     pretraining_config=config)


def _finetuned(path: str) -> Description:
  model_dir = directories.model_dir_of(path)
  model_config, values = directories.read_finetuned_files(model_dir)
  checkpoint = path if model_dir != path else tf_checkpoint.latest_checkpoint(model_dir)
  vocab = values.get("vocab_file")
  tasks = tuple(spec["task"] for spec in model_config.get("heads", ()))
  bert = model_config.get("bert_config")
  # Chunking always lowercases (official quirk, finetune/tagging/tagging_tasks.py).
  lower = bool(values.get("do_lower_case", True)) or values.get("task_names") == ["chunk"]
  return Description(path, "finetuned", checkpoint, model_dir,
                     BertConfig(**bert) if isinstance(bert, dict) else None,
                     model_config.get("embedding_size"),
                     vocab if vocab and exists(vocab) else None, lower, tasks,
                     finetuning_values=values, model_config=model_config)


def _official(path: str, kind: str, model_name: Optional[str]) -> Description:
  prefix = official.resolve_checkpoint_path(path)
  shapes = official.checkpoint_shapes(prefix)
  bert, embedding_size, lower = official.encoder_shape(shapes, model_name, prefix)
  vocab = os.path.join(os.path.dirname(prefix), directories.VOCAB_FILE)
  tasks = tuple(sorted({name.split("/")[1] for name in shapes
                        if name.startswith("task_specific/")}))
  return Description(path, kind, prefix, None, bert, embedding_size,
                     vocab if os.path.exists(vocab) else None, lower, tasks)


def _official_names(path: str) -> Dict[str, Any]:
  """`{name: shape}` of an official checkpoint at `path`, {} when it is none."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  try:
    return official.checkpoint_shapes(official.resolve_checkpoint_path(path))
  except (official.ConversionError, tf.errors.OpError, ValueError):
    return {}
