"""Hugging Face ELECTRA directories, read: config, weights and vocabulary by official name.

A directory holds `config.json` (model_type "electra"), the weights
(`model.safetensors`, sharded safetensors with their `.index.json`, or
`pytorch_model.bin`, which needs torch) and, for text, `vocab.txt` with
`do_lower_case` in `tokenizer_config.json`. Safetensors are read with numpy
alone. PyTorch names and official names are one rule (`hf_parameter_name`,
dense weights transposed to `[in, out]`), the one electra_tf2/conversion/hf_export.py
writes with, so export then import gives the same arrays bit for bit.
Converting a directory into ours: electra_tf2/conversion/hf_import.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from electra_tf2.checkpoints.report import ConversionReport, is_ignored, match_shapes
from electra_tf2.config.encoder import BertConfig
from electra_tf2.config.hparams import ConfigError
from electra_tf2.utils.errors import ElectraError

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_JSON_FILE = "tokenizer.json"
# transformers' buffers, and the generator's output matrix that is tied to the word
# embeddings (read_directory checks that it equals them).
HF_IGNORE = (r"(^|\.)position_ids$", r"^generator_lm_head\.weight$")
PRETRAINING_ARCHITECTURES = ("ElectraForPreTraining", "ElectraForMaskedLM", "ElectraModel")
# The class whose head a tensor name belongs to (the first that matches), for a config.json
# without `architectures` (transformers' from_pretrained does not need it); none: ElectraModel.
_HEAD_ARCHITECTURES = (("discriminator_predictions.", "ElectraForPreTraining"),
                       ("generator_predictions.", "ElectraForMaskedLM"),
                       ("sequence_summary.", "ElectraForMultipleChoice"),
                       ("classifier.out_proj.", "ElectraForSequenceClassification"),
                       ("classifier.", "ElectraForTokenClassification"),
                       ("qa_outputs.", "ElectraForQuestionAnswering"))
# ElectraConfig's defaults, for keys a config.json leaves out (as transformers reads it).
_HF_DEFAULTS = {"vocab_size": 30522, "embedding_size": 128, "hidden_size": 256,
                "num_hidden_layers": 12, "num_attention_heads": 4, "intermediate_size": 1024,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
                "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12,
                "position_embedding_type": "absolute", "tie_word_embeddings": True}
# transformers' `hidden_act` names -> ours (layers/activations.py): gelu is the exact erf
# form in both; gelu_new and gelu_pytorch_tanh are GELU's tanh approximation, our gelu_tanh.
HF_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear",
                  "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
# Ours -> the name hf_export writes.
HF_ACTIVATION_OF = {"gelu": "gelu", "relu": "relu", "tanh": "tanh", "linear": "linear",
                    "gelu_tanh": "gelu_new"}
_NUMPY_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "BF16": np.uint16,
                 "I64": np.int64, "I32": np.int32}


class HuggingFaceImportError(ElectraError, ValueError):
  """A Hugging Face directory that cannot be read as ELECTRA; one line naming the file."""


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------


def read_safetensors(path: str) -> Dict[str, np.ndarray]:
  """`{name: float32 array}` of a safetensors file (bf16/f16 widened), with numpy alone."""
  with open(path, "rb") as f:
    data = f.read()
  try:
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
  except (struct.error, ValueError) as e:
    raise HuggingFaceImportError(f"{path} is not a safetensors file ({e})") from None
  header.pop("__metadata__", None)
  tensors = {}
  for name, info in header.items():
    if info["dtype"] not in _NUMPY_DTYPES:
      raise HuggingFaceImportError(f"{path}: {name} has dtype {info['dtype']}; "
                                   f"supported: {', '.join(_NUMPY_DTYPES)}")
    begin, end = (8 + size + offset for offset in info["data_offsets"])
    array = np.frombuffer(data[begin:end], np.dtype(_NUMPY_DTYPES[info["dtype"]]).newbyteorder("<"))
    if info["dtype"] == "BF16":
      array = (array.astype(np.uint32) << 16).view(np.float32)
    tensors[name] = array.reshape(info["shape"]).astype(
        np.float32 if array.dtype.kind == "f" else array.dtype.newbyteorder("="))
  return tensors


def read_torch_file(path: str) -> Dict[str, np.ndarray]:
  """`{name: float32 array}` of a `pytorch_model.bin` (needs torch)."""
  try:
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise HuggingFaceImportError(
        f"{path} needs torch to read: pip install torch, or convert the directory to "
        "safetensors (model.save_pretrained(dir, safe_serialization=True))") from None
  state = torch.load(path, map_location="cpu", weights_only=True)
  return {name: (value.float() if value.is_floating_point() else value).numpy()
          for name, value in state.items()}


def _read_sharded(directory: str, index_file: str, read) -> Dict[str, np.ndarray]:
  path = os.path.join(directory, index_file)
  try:
    with open(path, encoding="utf-8") as f:
      weight_map = json.load(f)["weight_map"]
  except (ValueError, KeyError, TypeError) as e:
    raise HuggingFaceImportError(f"{path}: no readable weight_map ({e})") from None
  tensors = {}
  for shard in sorted(set(weight_map.values())):
    tensors.update(read(os.path.join(directory, shard)))
  return tensors


def read_weights(directory: str) -> Tuple[Dict[str, np.ndarray], str]:
  """The directory's tensors and the file (or index) they came from."""
  for name, read in ((SAFETENSORS_FILE, read_safetensors), (TORCH_FILE, read_torch_file)):
    if os.path.exists(os.path.join(directory, name)):
      return read(os.path.join(directory, name)), name
    index = name + ".index.json"
    if os.path.exists(os.path.join(directory, index)):
      return _read_sharded(directory, index, read), index
  raise HuggingFaceImportError(
      f"{directory} holds no weights: expected {SAFETENSORS_FILE}, "
      f"{SAFETENSORS_FILE}.index.json or {TORCH_FILE} (save with save_pretrained)")


def read_config(directory: str) -> Dict[str, Any]:
  """config.json, checked to be an ELECTRA config."""
  path = os.path.join(directory, CONFIG_FILE)
  if not os.path.exists(path):
    raise HuggingFaceImportError(f"{path} is missing: {directory} is not a Hugging Face "
                                 "model directory")
  try:
    with open(path, encoding="utf-8") as f:
      config = json.load(f)
  except ValueError as e:
    raise HuggingFaceImportError(f"{path} is not JSON ({e})") from None
  if not isinstance(config, dict) or config.get("model_type") != "electra":
    found = config.get("model_type") if isinstance(config, dict) else None
    raise HuggingFaceImportError(f"{path}: model_type is {found!r}, not 'electra': only "
                                 "ELECTRA checkpoints load here")
  return config


def encoder_shape(config: Mapping[str, Any], path: str) -> Tuple[BertConfig, int]:
  """`(BertConfig, embedding_size)` of an ElectraConfig dict; errors name the field."""
  values = dict(_HF_DEFAULTS, **config)
  for key, expected in (("layer_norm_eps", 1e-12), ("position_embedding_type", "absolute")):
    if values[key] != expected:
      raise HuggingFaceImportError(f"{path}: {key} is {values[key]!r}; ELECTRA (and this "
                                   f"port) uses {expected!r}")
  act = str(values["hidden_act"] or "linear").lower()
  if act not in HF_ACTIVATIONS:
    raise HuggingFaceImportError(
        f"{path}: hidden_act is {values['hidden_act']!r}, which ELECTRA does not have: use "
        f"{', '.join(HF_ACTIVATIONS)} (gelu_fast and other approximations give other numbers)")
  values["hidden_act"] = HF_ACTIVATIONS[act]
  fields = {f.name for f in dataclasses.fields(BertConfig)}
  bert = BertConfig(**{k: values[k] for k in fields})
  try:
    bert.validate(path)
  except ConfigError as e:
    raise HuggingFaceImportError(str(e)) from None
  return bert, int(values["embedding_size"])


# ---------------------------------------------------------------------------
# A directory
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class HuggingFaceDirectory:
  """What a Hugging Face ELECTRA directory holds.

  architecture: config.json's `architectures[0]`, else the class whose head the weights hold.
  tensors: `{PyTorch name: float32 array}` as stored (dense weights `[out, in]`).
  vocab_file: its vocab.txt, None if absent; do_lower_case from tokenizer_config.json.
  """
  path: str
  config: Dict[str, Any]
  architecture: str
  bert_config: BertConfig
  embedding_size: int
  tensors: Dict[str, np.ndarray]
  weights_file: str
  vocab_file: Optional[str]
  do_lower_case: bool

  def hf_names(self, variable_map: Mapping[str, Any], scope: str = "electra",
               extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """`{official name: PyTorch name}`: hf_export's rule, `extra` for heads it does not know."""
    names = {name: hf_parameter_name(name, scope) for name in variable_map}
    names.update(extra or {})
    return names

  def value(self, official: str, hf_name: str) -> np.ndarray:
    """The tensor of `hf_name` in our layout (`kernel`s transposed to `[in, out]`)."""
    value = self.tensors[hf_name]
    return value.T if official.endswith("/kernel") else value

  def official_tensors(self) -> Dict[str, np.ndarray]:
    """Every tensor under its official name in our layout; names outside hf_export's rule
    (and the ignored buffers) are kept as stored."""
    tensors = {}
    for name, value in self.tensors.items():
      if is_ignored(name, HF_IGNORE):
        continue
      official = official_name(name)
      if hf_parameter_name(official, "electra") != name:
        official = name
      tensors[official] = self.value(official, name) if official != name else value
    return tensors

  def match(self, variable_map: Mapping[str, Any], names: Mapping[str, str]
            ) -> ConversionReport:
    """conversion/convert.py's report of `variable_map` against this directory's tensors."""
    shapes = {official: tuple(self.value(official, hf).shape) for official, hf in names.items()
              if hf in self.tensors}
    used = {names[official] for official in shapes}
    shapes.update({hf: tuple(v.shape) for hf, v in self.tensors.items() if hf not in used})
    source = os.path.join(self.path, self.weights_file)
    return match_shapes(variable_map, shapes, source, HF_IGNORE)

  def assign(self, variable_map: Mapping[str, Any], names: Mapping[str, str],
             strict: bool = True, allow_unused: bool = False) -> ConversionReport:
    """Assigns every matching tensor; strict: nothing assigned unless all fit (one-line error)."""
    report = self.match(variable_map, names)
    if strict and not (report.complete if allow_unused else report.ok):
      raise HuggingFaceImportError(f"{report.one_line()} (strict import; --no-strict or "
                                   "strict=False loads what fits)")
    for official in report.loaded:
      variable_map[official].assign(self.value(official, names[official]))
    return report


def hf_parameter_name(official_name: str, encoder_scope: str) -> str:
  """The PyTorch parameter name of an official variable name.

  `encoder_scope` is the scope that becomes HF's `electra.` ("electra" for the
  discriminator, "generator" for the generator); `electra/embeddings/` always
  does, as the generator shares it.
  """
  name = re.sub(rf"^({re.escape(encoder_scope)}|electra)/embeddings/", "electra/embeddings/",
                official_name)
  name = re.sub(rf"^{re.escape(encoder_scope)}/", "electra/", name)
  name = name.replace("generator_predictions/output_bias", "generator_lm_head/bias")
  name = name.replace("/dense_1/", "/dense_prediction/")
  name = re.sub(r"/layer_(\d+)/", r"/layer/\1/", name)
  name = re.sub(r"/(kernel|gamma)$", "/weight", name)
  name = re.sub(r"/beta$", "/bias", name)
  name = re.sub(r"_embeddings$", "_embeddings/weight", name)
  return name.replace("/", ".")


def official_name(hf_name: str) -> str:
  """The official name of a PyTorch parameter name: `hf_export.hf_parameter_name` undone.

  Callers check `hf_parameter_name(official_name(n), "electra") == n`, so a name
  outside the rule (a fine-tuned head's, say) is never renamed by accident.
  """
  name = re.sub(r"\.layer\.(\d+)\.", r".layer_\1.", hf_name).replace(".", "/")
  name = re.sub(r"_embeddings/weight$", "_embeddings", name)
  name = re.sub(r"LayerNorm/weight$", "LayerNorm/gamma", name)
  name = re.sub(r"LayerNorm/bias$", "LayerNorm/beta", name)
  name = re.sub(r"/weight$", "/kernel", name)
  name = name.replace("/dense_prediction/", "/dense_1/")
  return name.replace("generator_lm_head/bias", "generator_predictions/output_bias")


def read_directory(path: str) -> HuggingFaceDirectory:
  """Reads and checks a Hugging Face ELECTRA directory (nothing is built or written)."""
  config = read_config(path)
  config_path = os.path.join(path, CONFIG_FILE)
  bert, embedding_size = encoder_shape(config, config_path)
  if not (config.get("architectures") or ["Electra"])[0].startswith("Electra"):
    raise HuggingFaceImportError(f"{config_path}: architectures is {config['architectures']}, "
                                 "not an ELECTRA class")
  tensors, weights_file = read_weights(path)
  if not any(name.startswith("electra.") for name in tensors):  # ElectraModel: no prefix
    tensors = {f"electra.{name}": value for name, value in tensors.items()}
  architectures = config.get("architectures") or [architecture_of(tensors)]
  _check_tied_output(tensors, config, os.path.join(path, weights_file))
  vocab_file = os.path.join(path, "vocab.txt")
  vocab_file = vocab_file if os.path.exists(vocab_file) else None
  directory = HuggingFaceDirectory(path, config, architectures[0], bert, embedding_size,
                                   tensors, weights_file, vocab_file, read_do_lower_case(path))
  if vocab_file is not None:
    with open(vocab_file, encoding="utf-8") as f:
      _check_vocab_size(vocab_file, sum(1 for _ in f), bert.vocab_size)
  return directory


def _check_vocab_size(vocab_file: str, size: int, vocab_size: int) -> None:
  """A vocabulary of `size` tokens fits embeddings of `vocab_size` rows: as many, or fewer
  (a padded table, as transformers allows)."""
  if size > vocab_size:
    raise HuggingFaceImportError(f"{vocab_file} has {size} tokens, more than the {vocab_size} "
                                 f"rows of the embeddings (vocab_size in {CONFIG_FILE}): put "
                                 "back the vocabulary the model was trained with")


def architecture_of(tensors: Mapping[str, Any]) -> str:
  """The transformers class whose head the tensor names hold (ElectraModel: none)."""
  for prefix, architecture in _HEAD_ARCHITECTURES:
    if any(name.startswith(prefix) for name in tensors):
      return architecture
  return "ElectraModel"


def _check_tied_output(tensors: Mapping[str, np.ndarray], config: Mapping[str, Any],
                       path: str) -> None:
  """The generator's output matrix must be the word embeddings, as in ELECTRA."""
  output = tensors.get("generator_lm_head.weight")
  embeddings = tensors.get("electra.embeddings.word_embeddings.weight")
  untied = config.get("tie_word_embeddings") is False
  if output is not None and embeddings is not None and (
      untied or output.shape != embeddings.shape or not np.array_equal(output, embeddings)):
    raise HuggingFaceImportError(f"{path}: generator_lm_head.weight is not tied to the word "
                                 "embeddings (tie_word_embeddings), which ELECTRA's generator is")


def read_do_lower_case(path: str) -> bool:
  """tokenizer_config.json's do_lower_case (ElectraTokenizer's default True). It decides
  over a tokenizer.json's normalizer, as in transformers (ElectraTokenizerFast rebuilds the
  normalizer with it)."""
  return bool(_tokenizer_config(path).get("do_lower_case", True))


def read_strip_accents(path: str) -> Optional[bool]:
  """tokenizer_config.json's strip_accents (None, the default, strips when lowercasing)."""
  value = _tokenizer_config(path).get("strip_accents")
  return None if value is None else bool(value)


# The tokenizers whose rules are BERT's WordPiece, the one our models build in.
WORDPIECE_TOKENIZERS = ("ElectraTokenizer", "ElectraTokenizerFast", "BertTokenizer",
                        "BertTokenizerFast")


def wordpiece_vocab(path: str, vocab_size: int, fix: str) -> Optional[Tuple[str, ...]]:
  """Checks that the directory's tokenizer, where it has one (vocab.txt or tokenizer.json),
  is BERT's WordPiece with its defaults, as our models build in; returns the vocabulary in id
  order of its tokenizer.json where there is no vocab.txt (a fast tokenizer saved with
  legacy_format=False), else None. Its casing is tokenizer_config.json's.

  Raises:
    HuggingFaceImportError: in one line ending with `fix` (what the caller can do):
      tokenizer_config.json names another tokenizer_class (BertJapaneseTokenizer's MeCab
      words, ...) or sets tokenize_chinese_chars or do_basic_tokenize false; tokenizer.json
      is unreadable, not WordPiece with BERT's normalizer and pre-tokenizer splitting CJK
      characters, or longer than the `vocab_size` embedding rows.
  """
  tokens = None
  if not os.path.exists(os.path.join(path, "vocab.txt")):
    tokens = _tokenizer_json_vocab(path, fix)
    if tokens is None:
      return None
    _check_vocab_size(os.path.join(path, TOKENIZER_JSON_FILE), len(tokens), vocab_size)
  values = _tokenizer_config(path)
  found = values.get("tokenizer_class")
  if found is not None and found not in WORDPIECE_TOKENIZERS:
    problem = f"tokenizer_class is {found}"
  elif values.get("tokenize_chinese_chars", True) is False:
    problem = "tokenize_chinese_chars is false"
  elif values.get("do_basic_tokenize", True) is False:
    problem = "do_basic_tokenize is false"
  else:
    return tokens
  raise HuggingFaceImportError(
      f"{os.path.join(path, TOKENIZER_CONFIG_FILE)}: {problem}, not BERT's WordPiece "
      f"tokenizer that our models build in (their ids would differ from transformers'): {fix}")


def _tokenizer_json_vocab(path: str, fix: str) -> Optional[Tuple[str, ...]]:
  """The WordPiece vocabulary in id order of the directory's tokenizer.json (None without
  one); a one-line HuggingFaceImportError ending with `fix` if it is not BERT's WordPiece."""
  json_path = os.path.join(path, TOKENIZER_JSON_FILE)
  if not os.path.exists(json_path):
    return None
  try:
    with open(json_path, encoding="utf-8") as f:
      values = json.load(f)
    model, normalizer = values["model"], values.get("normalizer") or {}
    kinds = (model.get("type"), normalizer.get("type"),
             (values.get("pre_tokenizer") or {}).get("type"))
    vocab = model["vocab"]
  except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
    raise HuggingFaceImportError(f"{json_path} is not a tokenizer.json ({type(e).__name__}: "
                                 f"{e}): {fix}") from None
  if (kinds != ("WordPiece", "BertNormalizer", "BertPreTokenizer")
      or normalizer.get("handle_chinese_chars") is False):
    raise HuggingFaceImportError(
        f"{json_path}: model, normalizer and pre-tokenizer are {', '.join(map(str, kinds))}"
        f"{' (CJK characters not split)' if kinds[0] == 'WordPiece' else ''}, not BERT's "
        f"WordPiece tokenizer that our models build in: {fix}")
  tokens = sorted(vocab, key=vocab.get)
  if [vocab[t] for t in tokens] != list(range(len(tokens))):
    raise HuggingFaceImportError(f"{json_path}: the WordPiece ids are not "
                                 f"0..{len(tokens) - 1}: {fix}")
  return tuple(tokens)


def _tokenizer_config(path: str) -> Dict[str, Any]:
  """tokenizer_config.json of the directory `path` ({} without one)."""
  config_path = os.path.join(path, TOKENIZER_CONFIG_FILE)
  if not os.path.exists(config_path):
    return {}
  try:
    with open(config_path, encoding="utf-8") as f:
      values = json.load(f)
  except ValueError as e:
    raise HuggingFaceImportError(f"{config_path} is not a JSON object ({e})") from None
  if not isinstance(values, dict):
    raise HuggingFaceImportError(f"{config_path} is not a JSON object")
  return values
