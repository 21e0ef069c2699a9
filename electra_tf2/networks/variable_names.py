"""Official TF1 checkpoint names of our variables (modeling.py scopes, run_pretraining.py heads).

`pretrainer_variable_map(model)` returns `{official_name: keras.Variable}` for
every trainable variable of an `ElectraPretrainer`; `encoder_variable_map`
does the same for one encoder under a scope. The checkpoint converters and
the optimizer's weight-decay / layer-wise rules use these names, so a model
variable without an entry here is a bug (tests/test_variable_names.py).
"""

from __future__ import annotations

from typing import Dict

import keras

from electra_tf2.layers import EmbeddingBlock, MaskedLMHead, TransformerLayer
from electra_tf2.networks.encoder import Encoder

VariableMap = Dict[str, keras.Variable]


def _dense(layer: keras.layers.Dense, prefix: str) -> VariableMap:
  return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(layer: keras.layers.LayerNormalization, prefix: str) -> VariableMap:
  return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def embeddings_variable_map(block: EmbeddingBlock, prefix: str) -> VariableMap:
  """`<prefix>/{word,token_type,position}_embeddings`, `<prefix>/LayerNorm/*`."""
  names = {f"{prefix}/word_embeddings": block.word_embeddings,
           f"{prefix}/token_type_embeddings": block.token_type_embeddings,
           f"{prefix}/position_embeddings": block.position_embeddings}
  names.update(_layer_norm(block.layer_norm, f"{prefix}/LayerNorm"))
  return names


def transformer_layer_variable_map(layer: TransformerLayer, prefix: str) -> VariableMap:
  """The sixteen variables of `encoder/layer_<k>`."""
  names = {}
  names.update(_dense(layer.query, f"{prefix}/attention/self/query"))
  names.update(_dense(layer.key, f"{prefix}/attention/self/key"))
  names.update(_dense(layer.value, f"{prefix}/attention/self/value"))
  names.update(_dense(layer.attention_output_dense, f"{prefix}/attention/output/dense"))
  names.update(_layer_norm(layer.attention_layer_norm, f"{prefix}/attention/output/LayerNorm"))
  names.update(_dense(layer.intermediate_dense, f"{prefix}/intermediate/dense"))
  names.update(_dense(layer.output_dense, f"{prefix}/output/dense"))
  names.update(_layer_norm(layer.output_layer_norm, f"{prefix}/output/LayerNorm"))
  return names


def encoder_variable_map(encoder: Encoder, scope: str, include_embeddings: bool = True
                         ) -> VariableMap:
  """Variables of an encoder under `scope` (e.g. "electra", "generator").

  include_embeddings: False for an encoder whose embedding block is shared and
  named under another scope (the generator's `electra/embeddings`).
  """
  names = {}
  if include_embeddings:
    names.update(embeddings_variable_map(encoder.embeddings, f"{scope}/embeddings"))
  if encoder.embeddings_project is not None:
    names.update(_dense(encoder.embeddings_project, f"{scope}/embeddings_project"))
  for k, layer in enumerate(encoder.transformer_layers):
    names.update(transformer_layer_variable_map(layer, f"{scope}/encoder/layer_{k}"))
  return names


def masked_lm_head_variable_map(head: MaskedLMHead, scope: str) -> VariableMap:
  names = _dense(head.dense, f"{scope}/dense")
  names.update(_layer_norm(head.layer_norm, f"{scope}/LayerNorm"))
  names[f"{scope}/output_bias"] = head.output_bias
  return names


def pretrainer_variable_map(model) -> VariableMap:
  """`{official name: variable}` for an `ElectraPretrainer` (the official checkpoint layout)."""
  names = encoder_variable_map(model.discriminator, "electra")
  for scope in ("generator", "generator_ltr", "generator_rtl"):
    encoder = getattr(model, scope)
    if encoder is not None:
      names.update(encoder_variable_map(encoder, scope,
                                        include_embeddings=encoder.owns_embeddings))
  if model.mlm_head is not None:
    names.update(masked_lm_head_variable_map(model.mlm_head, "generator_predictions"))
  if model.cloze_head is not None:
    names.update(masked_lm_head_variable_map(model.cloze_head, "cloze_predictions"))
  if model.discriminator_head is not None:
    names.update(_dense(model.discriminator_head.dense, "discriminator_predictions/dense"))
    names.update(_dense(model.discriminator_head.dense_1, "discriminator_predictions/dense_1"))
  return names


def official_name_fn(variable_map: VariableMap):
  """A `variable -> official name` function (for the optimizer's name rules)."""
  by_id = {id(v): name for name, v in variable_map.items()}

  def name_of(variable: keras.Variable) -> str:
    try:
      return by_id[id(variable)]
    except KeyError:
      raise KeyError(f"variable {variable.path} has no official checkpoint name") from None
  return name_of
