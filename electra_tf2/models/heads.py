"""Fine-tuning head kinds: `register_head(kind, layer, hf_architecture)` adds one.

A task's `head_spec()` names its head's kind: `{"kind": ..., "task": ..., the layer's
other constructor arguments}`. The kind's layer (a `layers.task_heads.TaskHead`) holds
what fine-tuning, evaluation and export ask of a head: its outputs, `loss`,
`official_layers` (checkpoint names), `reads_first_token_only`, `serving_features` and
`serving_outputs`. hf_architecture: the transformers class whose head this kind is, for
the Keras models on raw text that read Hugging Face directories (text_classifier.py,
token_classifier.py, question_answerer.py); None where transformers has none.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple, Type

import keras

from electra_tf2.layers.task_heads import (ClassificationHead, QAHead, RegressionHead,
                                           TaggingHead, TaskHead)


@dataclasses.dataclass(frozen=True)
class HeadKind:
  """A registered head kind: its name, layer class and Hugging Face class."""
  kind: str
  layer: Type[TaskHead]
  hf_architecture: Optional[str] = None


_KINDS: Dict[str, HeadKind] = {}


def register_head(kind: str, layer: Type[TaskHead], hf_architecture: Optional[str] = None
                  ) -> HeadKind:
  """Makes `kind` a head kind built by `layer`; ValueError if the kind is taken."""
  if kind in _KINDS:
    raise ValueError(f"head kind {kind!r} is registered already")
  _KINDS[kind] = HeadKind(kind, layer, hf_architecture)
  return _KINDS[kind]


def head_kind(kind: str) -> HeadKind:
  """The registration of `kind`; ValueError naming the known kinds if there is none."""
  if kind not in _KINDS:
    raise ValueError(f"unknown head kind {kind!r}; known: {', '.join(_KINDS)}")
  return _KINDS[kind]


def kinds_of(hf_architecture: str) -> Tuple[str, ...]:
  """The head kinds whose Hugging Face class is `hf_architecture`."""
  return tuple(k.kind for k in _KINDS.values() if k.hf_architecture == hf_architecture)


def build_head(spec: Mapping[str, Any], dtype=None) -> keras.layers.Layer:
  """A head from its spec {"kind": ..., "task": ..., constructor arguments}."""
  spec = dict(spec)
  return head_kind(spec.pop("kind")).layer(dtype=dtype, **spec)


register_head("classification", ClassificationHead, "ElectraForSequenceClassification")
register_head("regression", RegressionHead, "ElectraForSequenceClassification")
register_head("tagging", TaggingHead, "ElectraForTokenClassification")
register_head("qa", QAHead, "ElectraForQuestionAnswering")
