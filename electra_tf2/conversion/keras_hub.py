r"""keras-hub ELECTRA presets, both ways (the `keras-hub` extra).

  electra export --format keras-hub --model-dir DATA/models/electra_small --output-dir PRESET
  electra convert from-keras-hub --preset PRESET --output-dir DATA/models/from_keras_hub

  # in keras-hub, on any Keras backend:
  backbone = keras_hub.models.ElectraBackbone.from_preset("PRESET")
  tokenizer = keras_hub.models.ElectraTokenizer.from_preset("PRESET")

The export writes what keras-hub's own `save_to_preset` writes (config.json,
metadata.json, model.weights.h5, tokenizer.json, assets/tokenizer/vocabulary.txt) from the
discriminator's encoder. keras-hub's ElectraBackbone runs GELU's tanh approximation: a
model with our `gelu_tanh` gives keras-hub's outputs; one with the official exact GELU gives
outputs a little apart, which the export measures on a few texts and prints in one line.
keras-hub's `pooled_dense` (tanh dense on `[CLS]`) has no ELECTRA counterpart: it is
written as keras-hub initialises it (truncated normal of stddev initializer_range, seed 0;
bias 0), untrained, as in keras-hub's presets converted from Hugging Face.

`from-keras-hub` writes one of our model directories (the layout of `convert from-hf`) with
`hidden_act` gelu_tanh and the preset's encoder; the discriminator head, which a preset does
not hold, starts from its initialisation (named in a notice). The Keras models'
`from_pretrained(PRESET)` reads a preset directly (models/sources.py).
"""

from __future__ import annotations

import os
from typing import Sequence

import keras
import numpy as np

from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.utils.atomic_io import atomic_directory, copy_file_atomic
from electra_tf2.checkpoints import keras_hub as presets
from electra_tf2.checkpoints.directories import VOCAB_FILE
from electra_tf2.checkpoints.report import ConversionReport, write_report
from electra_tf2.conversion.hf_import import encoder_pretraining_config
from electra_tf2.models import sources
from electra_tf2.models.pretrainer import ElectraPretrainer

# The texts the export measures keras-hub's outputs on (with a row of the vocabulary's words).
MEASURE_TEXTS = ("The quick brown fox jumps over the lazy dog.",
                 "ELECTRA pre-trains a discriminator: was each token replaced?",
                 "Paris is the capital of France, and Berlin that of Germany.")


def backbone_config(bert, embedding_size: int) -> dict:
  """ElectraBackbone's arguments for an encoder of shape `bert`."""
  return {"vocab_size": bert.vocab_size, "num_layers": bert.num_hidden_layers,
          "num_heads": bert.num_attention_heads, "hidden_dim": bert.hidden_size,
          "embedding_dim": embedding_size, "intermediate_dim": bert.intermediate_size,
          "dropout": bert.hidden_dropout_prob, "max_sequence_length": bert.max_position_embeddings,
          "num_segments": bert.type_vocab_size}


def _measure_texts(vocab: Sequence[str]) -> list:
  words = [t for t in vocab if t.isalpha() and not t.startswith("##")][:40]
  return list(MEASURE_TEXTS) + [" ".join(words)]


def _max_difference(model, backbone, texts) -> float:
  """max |keras-hub's sequence_output - our encoder's| over the real tokens of `texts`."""
  from keras import ops  # pylint: disable=g-import-not-at-top
  features = model.featurize(texts)
  ours = ops.convert_to_numpy(model.encode(features))
  theirs = backbone({"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
                     "padding_mask": features["input_mask"]})["sequence_output"]
  mask = features["input_mask"].astype(bool)
  return float(np.abs(ops.convert_to_numpy(theirs) - ours)[mask].max())


def export_preset(model_dir: str, output_dir: str) -> str:
  """Writes the keras-hub preset of `model_dir`'s discriminator encoder; returns the line
  that says how far keras-hub's outputs are from ours."""
  keras_hub = presets.import_keras_hub("--format keras-hub")
  from electra_tf2.models.discriminator import Discriminator  # pylint: disable=g-import-not-at-top
  model = Discriminator.from_pretrained(model_dir)
  if model.text_inputs.sentencepiece_model:
    raise presets.KerasHubError(f"{model_dir} has a SentencePiece vocabulary; keras-hub's "
                                "ElectraTokenizer is WordPiece")
  bert = model.bert_config
  backbone = keras_hub.models.ElectraBackbone(**backbone_config(bert, model.encoder.embedding_size))
  tensors = {name: np.asarray(variable.numpy()) for name, variable in
             variable_names.encoder_variable_map(model.encoder, "electra").items()}
  presets.assign_backbone(backbone, tensors)
  pooler = backbone.get_layer("pooled_dense")  # not ELECTRA's: keras-hub's initialisation
  pooler.kernel.assign(keras.initializers.TruncatedNormal(
      stddev=bert.initializer_range, seed=0)(tuple(pooler.kernel.shape)))
  pooler.bias.assign(np.zeros(tuple(pooler.bias.shape), np.float32))
  tokenizer = keras_hub.models.ElectraTokenizer(
      vocabulary=list(model.text_inputs.vocab), lowercase=model.text_inputs.do_lower_case,
      strip_accents=model.text_inputs.strip_accents)
  texts = _measure_texts(model.text_inputs.vocab)
  diff = _max_difference(model, backbone, texts)
  with atomic_directory(output_dir) as tmp:
    backbone.save_to_preset(tmp)
    tokenizer.save_to_preset(tmp)
  if (bert.hidden_act or "").lower() == "gelu_tanh":
    return (f"keras-hub's sequence outputs are within {diff:.1e} of ours on {len(texts)} texts "
            "(both run gelu_tanh)")
  return (f"note: keras-hub's ElectraBackbone runs GELU's tanh approximation, this model "
          f"{bert.hidden_act}: its sequence outputs are up to {diff:.2e} from ours on "
          f"{len(texts)} texts (keras-hub's own ELECTRA presets differ from the official "
          "checkpoints the same way)")


def convert_preset(preset: str, output_dir: str) -> ConversionReport:
  """A keras-hub preset -> our model directory (discriminator head at its initialisation).

  Everything is read and checked before anything is written."""
  source = sources.load_source(preset)
  if source.kind != "keras_hub":
    raise presets.KerasHubError(f"{preset} is no keras-hub preset (config.json of "
                                f"{presets.BACKBONE})")
  config = encoder_pretraining_config(preset, source.bert_config, source.embedding_size,
                                      source.vocab_file, source.do_lower_case)
  model = ElectraPretrainer.from_pretraining_config(config)
  variable_map = {name: variable for name, variable in
                  variable_names.pretrainer_variable_map(model).items()
                  if name.startswith("electra/")}
  report = source.load(variable_map)
  head = sorted(set(variable_names.pretrainer_variable_map(model)) - set(variable_map))
  report.missing.extend(head)  # at its initialisation: named in the report and the notice
  if source.vocab_file is not None:
    target = os.path.join(output_dir, VOCAB_FILE)
    copy_file_atomic(source.vocab_file, target)
    config = config.replace(vocab_file=target)
  model_directory.write_model_dir(model, config, output_dir, strip_accents=source.strip_accents)
  write_report(report, output_dir)
  return report
