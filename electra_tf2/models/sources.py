"""Where `from_pretrained` reads weights: four kinds of checkpoint, detected from the path.

- a Hugging Face directory (`config.json`, electra_tf2/hf_import.py);
- our pre-trained model directory (`pretrain_config.json` + `ckpt-N`);
- our fine-tuned model directory (`model_config.json` + `ckpt-N`);
- an official TF1 checkpoint, a prefix or its directory, recognised by its
  variable names (`electra/embeddings/word_embeddings`). Its shapes give every
  size but the number of attention heads: `model_name` (a preset such as
  electra_base_released) gives it, else hidden_size // 64 as every official
  size (configs/model_sizes.json).

Every source becomes a `Source`: the encoder's shape, the vocabulary, and all
its tensors under their official names in our layout (`[in, out]` kernels),
which the task models assign by name with convert.py's strict report.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from electra_tf2 import convert, hf_import, model_directory, variable_names
from electra_tf2.config import resolve_pretraining_config
from electra_tf2.encoder_config import BertConfig
from electra_tf2.model_directory import PRETRAIN_CONFIG_FILE
from electra_tf2.errors import ElectraError

# Parts of pre-training checkpoints that a task model does not use: named in the
# report as ignored, never as a problem.
PRETRAINING_ONLY = (r"^generator(_ltr|_rtl)?/", r"^generator_predictions/",
                    r"^cloze_predictions/", r"^discriminator_predictions/")
_WORD_EMBEDDINGS = "electra/embeddings/word_embeddings"


class SourceError(ElectraError, ValueError):
  """A path that is no checkpoint we can read, or one that does not fit the model."""


@dataclasses.dataclass
class Source:
  """An ELECTRA checkpoint, read.

  kind: "huggingface", "pretrained", "finetuned" or "official".
  tensors: `{official name: array}` in our layout.
  architecture: the Hugging Face class (config.json's `architectures[0]`), else None.
  label_lists: the label names of a fine-tuned source's heads, by task, when known.
  head_kinds: their kinds ("classification", "regression", "tagging", ...), when known.
  head_specs: a fine-tuned source's head specs by task (`Task.head_spec()`).
  settings: a fine-tuned source's fine-tuning config (`FinetuningConfig.to_dict()`).
  """
  path: str
  kind: str
  bert_config: BertConfig
  embedding_size: int
  tensors: Dict[str, np.ndarray]
  vocab_file: Optional[str]
  do_lower_case: bool
  architecture: Optional[str] = None
  label_lists: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
  head_kinds: Dict[str, str] = dataclasses.field(default_factory=dict)
  head_specs: Dict[str, Dict[str, Any]] = dataclasses.field(default_factory=dict)
  settings: Dict[str, Any] = dataclasses.field(default_factory=dict)

  def task_names(self) -> List[str]:
    """The fine-tuned heads' tasks (`task_specific/<task>/...`), in name order."""
    return sorted({name.split("/")[1] for name in self.tensors
                   if name.startswith("task_specific/")})

  def vocab_tokens(self) -> List[str]:
    """The vocabulary in id order; a SourceError when the source has none."""
    if self.vocab_file is None:
      raise SourceError(f"{self.path} has no vocab.txt: pass vocab_file=PATH (the "
                        "WordPiece vocabulary the model was trained with)")
    with open(self.vocab_file, encoding="utf-8") as f:
      return [line.rstrip("\n") for line in f]

  def load(self, variable_map: Mapping[str, Any],
           rename: Optional[Mapping[str, str]] = None, strict: bool = True,
           ignore: Sequence[str] = PRETRAINING_ONLY) -> convert.ConversionReport:
    """Assigns the tensors to `{official name: variable}` (a name `rename`s to the source's).

    strict: a missing or misshapen variable is a one-line SourceError and
    nothing is assigned; otherwise they keep their initial values. Tensors
    left over (and not `ignore`d) are named in a notice on stderr.
    """
    rename = dict(rename or {})
    source_name = {name: rename.get(name, name) for name in variable_map}
    by_source = {source_name[name]: name for name in variable_map}
    shapes = {by_source.get(name, name): tuple(value.shape)
              for name, value in self.tensors.items()}
    report = convert.match_shapes(variable_map, shapes, self.path,
                                  tuple(convert.DEFAULT_IGNORE) + tuple(ignore))
    if strict and not report.complete:
      raise SourceError(f"{report.one_line()} (strict=False keeps what does not load "
                        "at its initial value)")
    for name in report.loaded:
      variable_map[name].assign(self.tensors[source_name[name]])
    message = hf_import.notice(report)
    if message:
      print(message, file=sys.stderr)
    return report


# ---------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------


def load_source(path: str, model_name: Optional[str] = None,
                vocab_file: Optional[str] = None) -> Source:
  """The `Source` at `path` (see the module docstring); `vocab_file` overrides its vocab."""
  if os.path.isdir(path) and os.path.exists(os.path.join(path, hf_import.CONFIG_FILE)):
    source = _huggingface(path)
  elif os.path.exists(os.path.join(path, PRETRAIN_CONFIG_FILE)):
    source = _pretrained(path)
  elif convert.is_finetuned_model_dir(path):
    source = _finetuned(path)
  else:
    source = _official(path, model_name)
  if vocab_file is not None:
    source = dataclasses.replace(source, vocab_file=vocab_file)
  return source


def _huggingface(path: str) -> Source:
  directory = hf_import.read_directory(path)
  labels = directory.config.get("id2label")
  label_lists = {}
  if isinstance(labels, dict) and directory.architecture.endswith("Classification"):
    label_lists["classifier"] = [labels[k] for k in sorted(labels, key=int)]
  return Source(path, "huggingface", directory.bert_config, directory.embedding_size,
                directory.official_tensors(), directory.vocab_file, directory.do_lower_case,
                directory.architecture, label_lists)


def _numpy(variable_map) -> Dict[str, np.ndarray]:
  return {name: variable.numpy() for name, variable in variable_map.items()}


def _pretrained(path: str) -> Source:
  config = model_directory.load_pretraining_config(path)
  model = model_directory.restore_pretrainer(path, None, config)
  return Source(path, "pretrained", config.bert_config, config.resolved_embedding_size,
                _numpy(variable_names.pretrainer_variable_map(model)),
                model_directory.find_vocab(path, config), config.do_lower_case)


def _finetuned(path: str) -> Source:
  from electra_tf2.finetune import model as finetune_model  # pylint: disable=g-import-not-at-top
  return finetuned_source(path, *finetune_model.load_finetuned_model(path))


def finetuned_source(path: str, model, config) -> Source:
  """The `Source` of a loaded fine-tuned model (`FinetuningModel`) and its config."""
  vocab = config.vocab_file if tf.io.gfile.exists(config.vocab_file) else None
  labels = {spec["task"]: list(spec["label_list"]) for spec in model.head_specs
            if "label_list" in spec}
  # Chunking always lowercases (official quirk, finetune/tagging.py).
  lower = config.do_lower_case or config.task_names == ["chunk"]
  kinds = {spec["task"]: spec["kind"] for spec in model.head_specs}
  return Source(path, "finetuned", model.bert_config, model.encoder.embedding_size,
                _numpy(model.variable_map()), vocab, lower, None, labels, kinds,
                {spec["task"]: dict(spec) for spec in model.head_specs}, config.to_dict())


def _official(path: str, model_name: Optional[str]) -> Source:
  try:
    prefix = convert.resolve_checkpoint_path(path)
    shapes = convert.checkpoint_shapes(prefix)
  except (convert.ConversionError, tf.errors.OpError, ValueError):
    shapes, prefix = {}, path
  if _WORD_EMBEDDINGS not in shapes:
    raise SourceError(f"{path} is no ELECTRA checkpoint: expected a Hugging Face directory "
                      f"(config.json), a model directory ({PRETRAIN_CONFIG_FILE} or "
                      "model_config.json) or an official TF1 checkpoint (prefix or directory)")
  bert, embedding_size, lower = _official_shape(shapes, model_name, prefix)
  reader = tf.train.load_checkpoint(prefix)
  tensors = {name: reader.get_tensor(name) for name in shapes
             if not convert.is_ignored(name)}
  vocab = os.path.join(os.path.dirname(prefix), convert.VOCAB_FILE)
  return Source(prefix, "official", bert, embedding_size, tensors,
                vocab if os.path.exists(vocab) else None, lower)


def _official_shape(shapes: Mapping[str, tuple], model_name: Optional[str], prefix: str):
  """`(BertConfig, embedding_size, do_lower_case)` of an official checkpoint's `electra/`."""
  vocab_size, embedding_size = shapes[_WORD_EMBEDDINGS]
  layer = "electra/encoder/layer_0/"
  if layer + "attention/self/query/kernel" not in shapes:
    raise SourceError(f"{prefix} has no electra/encoder/layer_0: not an ELECTRA encoder")
  hidden = shapes[layer + "attention/self/query/kernel"][1]
  layers = len({name.split("/")[2] for name in shapes
                if name.startswith("electra/encoder/layer_")})
  base = BertConfig(vocab_size, num_attention_heads=max(1, hidden // 64))
  lower = True
  if model_name is not None:
    preset = resolve_pretraining_config(model_name)
    base, lower = preset.bert_config, preset.do_lower_case
  bert = base.replace(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                      intermediate_size=shapes[layer + "intermediate/dense/kernel"][1],
                      max_position_embeddings=shapes["electra/embeddings/position_embeddings"][0],
                      type_vocab_size=shapes["electra/embeddings/token_type_embeddings"][0])
  if hidden % bert.num_attention_heads:
    raise SourceError(f"{prefix}: hidden size {hidden} is no multiple of {bert.num_attention_heads}"
                      " heads: pass model_name (the preset it was trained with)")
  return bert, embedding_size, lower
