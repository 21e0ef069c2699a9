"""Weights by official name from any ELECTRA checkpoint: what `from_pretrained` reads.

`load_source(path)` asks checkpoints/describe.py what is at `path` (a Hugging
Face directory, a keras-hub preset, our pre-trained or fine-tuned model directory, an official TF1
checkpoint, pre-trained or fine-tuned) and reads all its tensors under their
official names in our layout (`[in, out]` kernels) into a `Source`, which the
task models assign by name with checkpoints/report.py's strict report. Our own
directories are read by restoring their models (model_directory.py,
models/finetuning.py), so this module sits in models/, beside them. Those and the official
checkpoints are read with TensorFlow, imported then: a Hugging Face directory reads
without it, on every Keras backend.
"""

from __future__ import annotations

import base64
import dataclasses
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from electra_tf2.networks import variable_names
from electra_tf2.text import vocab as vocab_lib
from electra_tf2.checkpoints import huggingface, keras_hub, official, portable
from electra_tf2.checkpoints.describe import Description, describe
from electra_tf2.checkpoints.report import (DEFAULT_IGNORE, ConversionReport, is_ignored,
                                            match_shapes, notice)
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError

# Parts of pre-training checkpoints that a task model does not use: named in the
# report as ignored, never as a problem.
PRETRAINING_ONLY = (r"^generator(_ltr|_rtl)?/", r"^generator_predictions/",
                    r"^cloze_predictions/", r"^discriminator_predictions/")


class SourceError(ElectraError, ValueError):
  """A path that is no checkpoint we can read, or one that does not fit the model."""


@dataclasses.dataclass
class Source:
  """An ELECTRA checkpoint, read.

  kind: "huggingface", "keras_hub", "pretrained", "finetuned" or "official".
  tensors: `{official name: array}` in our layout.
  architecture: the Hugging Face class (config.json's `architectures[0]`, else told from
    the weights' names); None for the other kinds.
  label_lists: the label names of a fine-tuned source's heads, by task, when known.
  head_kinds: their kinds ("classification", "regression", "tagging", ...), when known.
  head_specs: a fine-tuned source's head specs by task (`Task.head_spec()`).
  settings: a fine-tuned source's fine-tuning config (`FinetuningConfig.to_dict()`).
  strip_accents: WordPiece's accent stripping, from the source's tokenizer description
    (None: the official rule, stripped when lowercasing).
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
  strip_accents: Optional[bool] = None
  tokens: Optional[Tuple[str, ...]] = None  # the vocabulary where there is no vocab_file

  def task_names(self) -> List[str]:
    """The fine-tuned heads' tasks (`task_specific/<task>/...`), in name order."""
    return sorted({name.split("/")[1] for name in self.tensors
                   if name.startswith("task_specific/")})

  def vocab_tokens(self) -> List[str]:
    """The vocabulary in id order; a SourceError when the source has none."""
    if self.vocab_file is None and self.tokens is not None:
      return list(self.tokens)
    if self.vocab_file is None:
      raise SourceError(f"{self.path} has no vocab.txt: pass vocab_file=PATH (the "
                        "vocab.txt or SentencePiece .model the model was trained with)")
    if vocab_lib.vocab_kind(self.vocab_file) == "sentencepiece":
      vocab = vocab_lib.load_vocab(self.vocab_file)
      return sorted(vocab, key=vocab.get)
    with open(self.vocab_file, encoding="utf-8") as f:
      return [line.rstrip("\n") for line in f]

  def sentencepiece_model(self) -> Optional[str]:
    """The SentencePiece model of a `.model` vocabulary (base64 of its bytes), else None."""
    if self.vocab_file is None or vocab_lib.vocab_kind(self.vocab_file) != "sentencepiece":
      return None
    with open(self.vocab_file, "rb") as f:
      return base64.b64encode(f.read()).decode("ascii")

  def load(self, variable_map: Mapping[str, Any],
           rename: Optional[Mapping[str, str]] = None, strict: bool = True,
           ignore: Sequence[str] = PRETRAINING_ONLY) -> ConversionReport:
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
    report = match_shapes(variable_map, shapes, self.path, tuple(DEFAULT_IGNORE) + tuple(ignore))
    if strict and not report.complete:
      raise SourceError(f"{report.one_line()} (strict=False keeps what does not load "
                        "at its initial value)")
    for name in report.loaded:
      variable_map[name].assign(self.tensors[source_name[name]])
    message = notice(report)
    if message:
      print(message, file=sys.stderr)
    return report


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def load_source(path: str, model_name: Optional[str] = None,
                vocab_file: Optional[str] = None) -> Source:
  """The `Source` at `path` (checkpoints/describe.py's kinds but SavedModels);
  `vocab_file` overrides its vocabulary, `model_name` is an official checkpoint's preset."""
  try:
    found = describe(path, model_name)
  except ElectraError as e:
    raise SourceError(str(e)) from None
  read = _READERS.get(found.kind)
  if read is None:
    raise SourceError(f"{path} is a SavedModel: load it with tf.saved_model.load; "
                      "from_pretrained reads checkpoints")
  tokens = None
  if found.kind == "huggingface" and vocab_file is None:
    tokens = huggingface.wordpiece_vocab(
        path, found.bert_config.vocab_size, "pass vocab_file=PATH to use WordPiece on a "
        "vocabulary anyway, or feed the model token ids (a dict of input_ids, input_mask, "
        "segment_ids) from that tokenizer")
  source = dataclasses.replace(read(found), tokens=tokens)
  if found.tokenizer is not None and found.tokenizer.do_lower_case == source.do_lower_case:
    source = dataclasses.replace(source, strip_accents=found.tokenizer.strip_accents)
  if vocab_file is not None:
    source = dataclasses.replace(source, vocab_file=vocab_file)
  return source


def _huggingface(found: Description) -> Source:
  directory = huggingface.read_directory(found.path)
  labels = directory.config.get("id2label")
  label_lists = {}
  if isinstance(labels, dict) and directory.architecture.endswith("Classification"):
    label_lists["classifier"] = [labels[k] for k in sorted(labels, key=int)]
  return Source(found.path, "huggingface", found.bert_config, found.embedding_size,
                directory.official_tensors(), found.vocab_file, found.do_lower_case,
                directory.architecture, label_lists, strip_accents=found.strip_accents)


def _keras_hub(found: Description) -> Source:
  return Source(found.path, "keras_hub", found.bert_config, found.embedding_size,
                keras_hub.read_weights(found.path), found.vocab_file, found.do_lower_case,
                strip_accents=found.strip_accents)


def _numpy(variable_map) -> Dict[str, np.ndarray]:
  return {name: variable.numpy() for name, variable in variable_map.items()}


def _pretrained(found: Description) -> Source:
  if portable.is_portable(found.checkpoint):  # a JAX run's (or converted): read on any backend
    arrays, _ = portable.load(found.checkpoint)
    tensors = {name: value for name, value in arrays.items()
               if name != "global_step" and not name.endswith(("/adam_m", "/adam_v"))}
    return Source(found.path, "pretrained", found.bert_config, found.embedding_size, tensors,
                  found.vocab_file, found.do_lower_case)
  from electra_tf2.models import model_directory  # pylint: disable=g-import-not-at-top
  model = model_directory.restore_pretrainer(found.model_dir, found.checkpoint,
                                             found.pretraining_config)
  return Source(found.path, "pretrained", found.bert_config, found.embedding_size,
                _numpy(variable_names.pretrainer_variable_map(model)), found.vocab_file,
                found.do_lower_case)


def _finetuned(found: Description) -> Source:
  from electra_tf2.models import finetuning as finetune_model  # pylint: disable=g-import-not-at-top
  model, config = finetune_model.load_finetuned_model(found.model_dir, found.checkpoint)
  return finetuned_source(found, config, model)


def finetuned_source(found: Description, config, model) -> Source:
  """The `Source` of a fine-tuned model directory `found` from its loaded `FinetuningModel`
  and `FinetuningConfig`."""
  labels = {spec["task"]: list(spec["label_list"]) for spec in model.head_specs
            if "label_list" in spec}
  kinds = {spec["task"]: spec["kind"] for spec in model.head_specs}
  return Source(found.path, "finetuned", found.bert_config, found.embedding_size,
                _numpy(model.variable_map()), found.vocab_file, found.do_lower_case, None,
                labels, kinds, {spec["task"]: dict(spec) for spec in model.head_specs},
                config.to_dict())


def _official(found: Description) -> Source:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(found.checkpoint)
  tensors = {name: reader.get_tensor(name) for name in official.checkpoint_shapes(found.checkpoint)
             if not is_ignored(name)}
  return Source(found.checkpoint, "official", found.bert_config, found.embedding_size, tensors,
                found.vocab_file, found.do_lower_case)


_READERS = {"keras_hub": _keras_hub, "huggingface": _huggingface, "pretrained": _pretrained, "finetuned": _finetuned,
            "official": _official, "official_finetuned": _official}
