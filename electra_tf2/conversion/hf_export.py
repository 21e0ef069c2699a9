r"""Hugging Face directories (config.json + model.safetensors) for users who move to PyTorch.

  electra hf-export --model-dir DATA/models/electra_small \
      --output-dir hf/electra-small-discriminator
  electra hf-export --model-dir DATA/models/electra_small \
      --output-dir hf/electra-small-generator --generator

  # in PyTorch:
  from transformers import ElectraForPreTraining
  model = ElectraForPreTraining.from_pretrained("hf/electra-small-discriminator")

The discriminator becomes an `ElectraForPreTraining`, the generator (or the
MLM model of the BERT objective) an `ElectraForMaskedLM` whose output layer is
tied to the word embeddings, as in ours. With a known vocabulary the directory
also gets `vocab.txt` and `tokenizer_config.json`, for `ElectraTokenizerFast`.

Parameter names follow the rules of transformers' `load_tf_weights_in_electra`
applied to our official names (dense kernels are transposed to `[out, in]`);
tests/test_hf_parity.py checks the result against transformers itself. The
weights are written by `write_safetensors` with numpy alone: neither torch
nor transformers is needed to export.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import struct
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from electra_tf2.models import model_directory
from electra_tf2.networks import variable_names
from electra_tf2.text import description as tokenizer_description
from electra_tf2.utils.atomic_io import atomic_path, copy_file_atomic, open_file, write_json_atomic
from electra_tf2.checkpoints import describe as describe_lib, directories
from electra_tf2.checkpoints.huggingface import HF_ACTIVATION_OF, hf_parameter_name
from electra_tf2.config.encoder import BertConfig
from electra_tf2.utils.errors import ElectraError, command
from electra_tf2.utils.run_lock import hold

WEIGHTS_FILE = "model.safetensors"
LAYER_NORM_EPS = 1e-12  # the official layer_norm's (model/modeling.py:392-395)
_SAFETENSORS_DTYPES = {np.dtype("float32"): "F32"}


class HuggingFaceExportError(ElectraError, ValueError):
  """A model that has no Hugging Face counterpart in the requested mode."""


def write_safetensors(path: str, tensors: Mapping[str, np.ndarray]) -> None:
  """Writes the safetensors format: u64 header size, JSON header, raw little-endian data."""
  header: Dict[str, Any] = {"__metadata__": {"format": "pt"}}
  arrays = []
  offset = 0
  for name in sorted(tensors):
    array = np.ascontiguousarray(tensors[name])
    if array.dtype not in _SAFETENSORS_DTYPES:
      raise ValueError(f"{name}: dtype {array.dtype} is not supported (float32 only)")
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    header[name] = {"dtype": _SAFETENSORS_DTYPES[array.dtype], "shape": list(array.shape),
                    "data_offsets": [offset, offset + array.nbytes]}
    arrays.append(array)
    offset += array.nbytes
  encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
  encoded += b" " * (-len(encoded) % 8)  # the data starts 8-byte aligned
  with atomic_path(path) as tmp, open_file(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(encoded)))
    f.write(encoded)
    for array in arrays:
      f.write(array.tobytes())


def hf_config(bert_config: BertConfig, embedding_size: int, architecture: str,
              pad_token_id: int = 0) -> Dict[str, Any]:
  """The `ElectraConfig` (config.json) of one encoder with our shapes."""
  return {
      "architectures": [architecture],
      "model_type": "electra",
      "vocab_size": bert_config.vocab_size,
      "embedding_size": embedding_size,
      "hidden_size": bert_config.hidden_size,
      "num_hidden_layers": bert_config.num_hidden_layers,
      "num_attention_heads": bert_config.num_attention_heads,
      "intermediate_size": bert_config.intermediate_size,
      "hidden_act": HF_ACTIVATION_OF[(bert_config.hidden_act or "linear").lower()],
      "hidden_dropout_prob": bert_config.hidden_dropout_prob,
      "attention_probs_dropout_prob": bert_config.attention_probs_dropout_prob,
      "max_position_embeddings": bert_config.max_position_embeddings,
      "type_vocab_size": bert_config.type_vocab_size,
      "initializer_range": bert_config.initializer_range,
      "layer_norm_eps": LAYER_NORM_EPS,
      "position_embedding_type": "absolute",
      "pad_token_id": pad_token_id,
      "tie_word_embeddings": True,
      "torch_dtype": "float32",
  }


def hf_state_dict(model, generator: bool = False) -> Dict[str, np.ndarray]:
  """`{PyTorch name: array}` of the discriminator or of the generator of an `ElectraPretrainer`."""
  names = variable_names.pretrainer_variable_map(model)
  if generator:
    encoder = model.mlm_encoder
    if encoder is None:
      raise HuggingFaceExportError("this model has no MLM generator (uniform or ELECTRIC "
                                   "two-tower generator): nothing maps to ElectraForMaskedLM")
    if (encoder.bert_config.hidden_act or "linear").lower() != "gelu":
      raise HuggingFaceExportError(
          f"hidden_act is {encoder.bert_config.hidden_act!r}, but transformers' "
          "ElectraForMaskedLM applies gelu in generator_predictions where ELECTRA applies "
          "hidden_act (run_pretraining.py:254-268): the generator has no Hugging Face "
          "equivalent; export the discriminator (without --generator)")
    scope = encoder.name
    embeddings = f"{scope}/embeddings/" if encoder.owns_embeddings else "electra/embeddings/"
    prefixes = (embeddings, f"{scope}/embeddings_project/", f"{scope}/encoder/",
                "generator_predictions/")
  else:
    model.check_electra_discriminator("ElectraForPreTraining",
                                      "export the generator with --generator, if any")
    scope = "electra"
    prefixes = ("electra/", "discriminator_predictions/")
  state = {}
  for official, variable in names.items():
    if official.startswith(prefixes):
      value = variable.numpy()
      state[hf_parameter_name(official, scope)] = value.T if official.endswith("/kernel") else value
  return state


def export_hugging_face(model, output_dir: str, generator: bool = False,
                        vocab_file: Optional[str] = None, do_lower_case: bool = True,
                        strip_accents: Optional[bool] = None) -> str:
  """Writes `output_dir` with config.json, model.safetensors and (with a vocab) the tokenizer
  (strip_accents: WordPiece's accent stripping, None the official rule: when lowercasing)."""
  state = hf_state_dict(model, generator)
  encoder = model.mlm_encoder if generator else model.discriminator
  architecture = "ElectraForMaskedLM" if generator else "ElectraForPreTraining"
  bert = encoder.bert_config
  write_json_atomic(os.path.join(output_dir, "config.json"),
                    hf_config(bert, encoder.embedding_size, architecture,
                              model.objective.special_ids.pad), sort_keys=False)
  write_safetensors(os.path.join(output_dir, WEIGHTS_FILE), state)
  if vocab_file is not None:
    description = tokenizer_description.describe_vocab(vocab_file, do_lower_case, strip_accents)
    if description.kind == "sentencepiece":
      # DeBERTa-v3's tokenizer: a SentencePiece model packed as [CLS] a [SEP] (b [SEP]),
      # the special tokens named by their spellings in the model.
      vocab_name = "spm.model"
      tokenizer = {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False,
                   "split_by_punct": False, "vocab_type": "spm",
                   **{f"{role}_token": token for role, token in
                      zip(("pad", "unk", "cls", "sep", "mask"), description.special_tokens)},
                   "bos_token": description.special_tokens[2],
                   "eos_token": description.special_tokens[3],
                   "model_max_length": bert.max_position_embeddings}
    else:
      vocab_name = "vocab.txt"
      tokenizer = {"tokenizer_class": "ElectraTokenizer", "do_lower_case": do_lower_case,
                   "strip_accents": description.strip_accents,
                   "model_max_length": bert.max_position_embeddings}
    copy_file_atomic(vocab_file, os.path.join(output_dir, vocab_name))
    write_json_atomic(os.path.join(output_dir, "tokenizer_config.json"), tokenizer,
                      sort_keys=False)
    tokenizer_description.write_description(
        output_dir, dataclasses.replace(description,
                                        vocab_file=os.path.join(output_dir, vocab_name)))
  return output_dir


@command
def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
                                   description="\n\n".join(__doc__.split("\n\n")[:2]),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model-dir", required=True,
                      help="model directory (pretrain_config.json + ckpt-N)")
  parser.add_argument("--checkpoint", default=None, help="a ckpt-N prefix (default the latest)")
  parser.add_argument("--output-dir", required=True, help="Hugging Face directory to write")
  parser.add_argument("--generator", action="store_true",
                      help="export the generator as ElectraForMaskedLM (default: the "
                           "discriminator as ElectraForPreTraining)")
  parser.add_argument("--vocab-file", default=None,
                      help="vocabulary to include (default MODEL_DIR/vocab.txt or the config's)")
  args = parser.parse_args(argv)
  found = describe_lib.describe(args.model_dir)
  if found.kind != "pretrained":
    raise directories.PretrainedModelError(
        f"--model-dir {args.model_dir} is {describe_lib.KIND_NAMES[found.kind]}: hf-export takes "
        "a pre-trained model directory")
  config = found.pretraining_config
  model = model_directory.restore_pretrainer(found.model_dir, args.checkpoint or found.checkpoint,
                                             config)
  vocab_file = args.vocab_file or found.vocab_file
  # The casing the model was pre-trained with (its tokenizer description), else the config's.
  casing = found.tokenizer
  with hold(args.output_dir):
    export_hugging_face(model, args.output_dir, args.generator, vocab_file,
                        casing.do_lower_case if casing else config.do_lower_case,
                        casing.strip_accents if casing else None)
  print(f"wrote {args.output_dir} (config.json, {WEIGHTS_FILE}"
        f"{', the vocabulary, tokenizer_config.json' if vocab_file else ''})")
  return 0
