r"""Hugging Face ELECTRA directories -> our model directories (`electra convert from-hf`).

  electra convert from-hf --hf-dir electra-small-discriminator \
      --output-dir DATA/models/electra_small_hf

Reading a directory (config, weights by official name, vocabulary):
electra_tf2/checkpoints/huggingface.py. `ElectraForPreTraining` becomes a model
directory with the discriminator and its head, `ElectraForMaskedLM` one with
the MLM model (the BERT objective, the encoder under `electra`), `ElectraModel`
and the fine-tuned architectures their encoder (the discriminator head stays
random: `--no-strict`, with a notice). Matching is strict, with
checkpoints/report.py's report.
"""

from __future__ import annotations

import os

from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.utils.atomic_io import copy_file_atomic, write_text_atomic
from electra_tf2.checkpoints.directories import VOCAB_FILE
from electra_tf2.checkpoints.huggingface import (
    CONFIG_FILE, HuggingFaceDirectory, HuggingFaceImportError, read_directory, read_strip_accents,
    wordpiece_vocab)
from electra_tf2.checkpoints.report import ConversionReport, write_report
from electra_tf2.config.encoder import BertConfig
from electra_tf2.config.hparams import read_config
from electra_tf2.config.pretraining import resolve_pretraining_config
from electra_tf2.models.pretrainer import ElectraPretrainer


def _model_size(bert: BertConfig) -> str:
  """The official model_size with the encoder's width and depth (model_sizes.json), "small"
  for other shapes: fine-tuning takes its defaults from it (large: learning rate 5e-5,
  layer-wise decay 0.9; configure_finetuning.py:134-163)."""
  for name, shape in read_config("model_sizes.json")["sizes"].items():
    if (shape["hidden_size"], shape["num_hidden_layers"]) == (bert.hidden_size,
                                                              bert.num_hidden_layers):
      return name
  return "small"


def pretraining_config(directory: HuggingFaceDirectory):
  """The `PretrainingConfig` of the directory's model: the discriminator with its head
  (uniform generator: none to load), or for ElectraForMaskedLM the BERT (MLM) objective."""
  bert = directory.bert_config
  masked_lm = directory.architecture == "ElectraForMaskedLM"
  if masked_lm and (bert.hidden_act or "linear").lower() != "gelu":
    raise HuggingFaceImportError(
        f"{os.path.join(directory.path, CONFIG_FILE)}: hidden_act is {bert.hidden_act!r}, but "
        "transformers' ElectraForMaskedLM applies gelu in generator_predictions where ELECTRA "
        "applies hidden_act (run_pretraining.py:254-268): its generator has no ELECTRA "
        "equivalent; the Keras models' from_pretrained reads its encoder")
  return encoder_pretraining_config(directory.path, bert, directory.embedding_size,
                                    directory.vocab_file, directory.do_lower_case, masked_lm)


def encoder_pretraining_config(path: str, bert: BertConfig, embedding_size: int,
                               vocab_file, do_lower_case: bool, masked_lm: bool = False):
  """The `PretrainingConfig` of an encoder of shape `bert` read from `path`: the
  discriminator (uniform generator), or with `masked_lm` the BERT (MLM) objective."""
  overrides = {k: v for k, v in bert.to_dict().items() if k != "vocab_size"}
  hparams = {"model_size": _model_size(bert), "model_hparam_overrides": overrides,
             "embedding_size": embedding_size, "vocab_size": bert.vocab_size,
             "vocab_file": vocab_file, "do_lower_case": do_lower_case,
             "electra_objective": not masked_lm, "uniform_generator": not masked_lm,
             "max_seq_length": min(128, bert.max_position_embeddings)}
  config = resolve_pretraining_config("electra_small", None, hparams)
  return config.replace(model_name=os.path.basename(os.path.normpath(path)))


def pretrainer_from_directory(directory: HuggingFaceDirectory, strict: bool = True):
  """`(ElectraPretrainer, config, report)` with the directory's weights."""
  config = pretraining_config(directory)
  model = ElectraPretrainer.from_pretraining_config(config)
  variable_map = variable_names.pretrainer_variable_map(model)
  report = directory.assign(variable_map, directory.hf_names(variable_map), strict)
  return model, config, report


def convert_directory(hf_dir: str, output_dir: str, strict: bool = True
                      ) -> ConversionReport:
  """A Hugging Face directory -> our model directory (as `convert to-tf2` writes it).

  Everything is read and checked before anything is written.
  """
  directory = read_directory(hf_dir)
  tokens = wordpiece_vocab(hf_dir, directory.bert_config.vocab_size,
                           "from-hf converts checkpoints tokenized with BERT's WordPiece only")
  model, config, report = pretrainer_from_directory(directory, strict)
  target = os.path.join(output_dir, VOCAB_FILE)
  if directory.vocab_file is not None:
    copy_file_atomic(directory.vocab_file, target)
    config = config.replace(vocab_file=target)
  elif tokens is not None:  # tokenizer.json, no vocab.txt
    write_text_atomic(target, "".join(f"{token}\n" for token in tokens))
    config = config.replace(vocab_file=target)
  model_directory.write_model_dir(model, config, output_dir,
                                  strip_accents=read_strip_accents(hf_dir))
  write_report(report, output_dir)
  return report
