"""`.tflite` files (LiteRT) that take raw strings: conversion, quantization, checks.

`write_tflite` turns a serving function (tf.string `[batch]` inputs -> a dict
of tensors) into a `.tflite` file with TFLite builtins plus the tensorflow-text
ops of `tensorflow_text.tflite_registrar` (the tokenizer of
electra_tf2/text/litert_tokenizer.py), no Select TF ops. Signatures:

  serving_default  inputs `text` (and `text_b` for pairs): string [batch];
                   outputs the SavedModel's, under the same names; or, for a
                   QuestionAnswerer, TOKEN_IDS int32 [windows, max_seq_length] and
                   the QA head's outputs (electra_tf2/litert/qa.py builds the windows
                   and the answers around the file); or, for MediaPipe Tasks'
                   TextClassifier, MEDIAPIPE_IDS int32 [1, max_seq_length] and
                   `probabilities` (electra_tf2/litert/mediapipe.py adds its metadata).

The file's metadata entry "electra_tf2" holds JSON settings (`do_lower_case`,
`max_seq_length`, `quantize`, and `tokenizer`: "sentencepiece" for a SentencePiece
model), which electra_tf2.litert.model.LiteRTModel reads.

Quantization (`quantize`):
  none          float32, as the SavedModel;
  float16       weights stored as float16, computed in float32;
  dynamic-int8  int8 weights (the word embeddings with a scale per row:
                litert/embedding_rows.py); matrix products quantize their inputs at
                run time;
  int8          int8 weights and activations of the ops in INT8_OPS (matrix products,
                GELU, the embedding gathers, means), their ranges calibrated on
                representative texts (`calibration_texts`); additions, products,
                softmax and the rest of LayerNorm stay float32: in int8 they lose
                the model (SST-2 agreement with float32: 62.61% with every op int8,
                97.94% with INT8_OPS; docs/benchmarks.md).
"""

from __future__ import annotations

import json
import re
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from electra_tf2.utils.atomic_io import atomic_path
from electra_tf2.utils.errors import ElectraError
from electra_tf2.litert import embedding_rows
from electra_tf2.litert.model import METADATA_NAME, make_interpreter

QUANTIZE = ("none", "float16", "dynamic-int8", "int8")
_BYTES_PER_WEIGHT = {"none": 4, "float16": 2, "dynamic-int8": 1, "int8": 1}
MAX_FLATBUFFER_BYTES = 2 ** 31  # a flatbuffer's offsets are 32-bit
CALIBRATION_STEPS = 100
# The inputs of a .tflite on token ids (a QuestionAnswerer's: windows built in Python).
TOKEN_IDS = ("input_ids", "input_mask", "segment_ids")
# The inputs of a .tflite for MediaPipe Tasks' TextClassifier, int32 [1, max_seq_length]
# (the same three, as BERT's TF Hub models name them; electra_tf2/litert/mediapipe.py).
MEDIAPIPE_IDS = ("input_word_ids", "input_mask", "input_type_ids")
# The ops `quantize="int8"` runs in int8; every other op stays float32.
INT8_OPS = ("FULLY_CONNECTED", "BATCH_MATMUL", "GELU", "MEAN", "GATHER", "RESHAPE",
            "TRANSPOSE")


class LiteRTError(ElectraError, ValueError):
  """A model or option that cannot be written as a .tflite file."""


def check_quantize(quantize: str, calibration_texts: Optional[Sequence[str]]) -> None:
  if quantize not in QUANTIZE:
    raise LiteRTError(f"quantize must be one of {', '.join(QUANTIZE)}, got {quantize!r}")
  if quantize == "int8" and not calibration_texts:
    raise LiteRTError("quantize int8 calibrates activation ranges on representative texts: "
                      "pass calibration_texts (--calibration-file: one text per line)")
  if quantize != "int8" and calibration_texts:
    raise LiteRTError(f"calibration texts (--calibration-file) only apply to quantize int8, "
                      f"not {quantize}")


def check_size(variables: Sequence, quantize: str) -> None:
  """Refuses, in one line, weights that a flatbuffer cannot hold (over 2 GB)."""
  size = sum(int(np.prod(v.shape)) for v in variables) * _BYTES_PER_WEIGHT[quantize]
  if size >= MAX_FLATBUFFER_BYTES:
    raise LiteRTError(f"the weights take {size / 2 ** 30:.1f} GiB with quantize {quantize}; "
                      "a .tflite flatbuffer holds at most 2 GiB: quantize them "
                      "(dynamic-int8, float16) or export a SavedModel")


def write_tflite(path: str, serve: Callable[..., Dict[str, tf.Tensor]],
                 input_names: Sequence[str], variables: Sequence, settings: Dict[str, object],
                 quantize: str = "none",
                 calibration_texts: Optional[Sequence[str]] = None) -> str:
  """Writes the `.tflite` of `serve` (tf.string `[batch]` per name of `input_names`; for
  TOKEN_IDS, int32 `[batch, seq_len]` token ids) to `path` (atomically); returns `path`.

  `variables`: the TensorFlow variables `serve` reads (under Keras ones: `v.value`);
  `settings`: JSON values for the metadata (do_lower_case, max_seq_length).
  """
  return write_file(path, tflite_model(serve, input_names, variables, settings, quantize,
                                       calibration_texts))


def tflite_model(serve: Callable[..., Dict[str, tf.Tensor]], input_names: Sequence[str],
                 variables: Sequence, settings: Dict[str, object], quantize: str = "none",
                 calibration_texts: Optional[Sequence[str]] = None) -> bytes:
  """The `.tflite` of `write_tflite`, as bytes; for MEDIAPIPE_IDS, on int32
  `[1, max_seq_length]` token ids (electra_tf2/litert/mediapipe.py)."""
  token_ids = tuple(input_names) in (TOKEN_IDS, MEDIAPIPE_IDS)
  if token_ids and quantize == "int8":
    raise LiteRTError("quantize int8 calibrates on texts, which a .tflite on token ids does "
                      "not take: use dynamic-int8 or float16")
  check_quantize(quantize, calibration_texts)
  check_size(variables, quantize)
  lite = converter(serve, input_names, variables, quantize, calibration_texts,
                   bool(settings.get("do_lower_case", True)),
                   settings.get("tokenizer") == "sentencepiece",
                   settings.get("max_seq_length"))
  try:
    model = lite.convert()
    if quantize == "int8":
      model = quantize_int8(model)
    if quantize == "dynamic-int8":
      model = embedding_rows.rescale_rows(model, variables)
  except Exception as e:  # the converter's errors are pages of MLIR
    raise LiteRTError(_conversion_error(e)) from None
  model = with_metadata(model, dict(settings, quantize=quantize))
  sample = (np.ones([1, int(settings["max_seq_length"])], np.int32)  # a full window
            if token_ids else np.array([b"a"], dtype=object))
  check_kernels(model, [sample] * len(input_names))
  return model


def write_file(path: str, model: bytes) -> str:
  """Writes `model` to `path` atomically; returns `path`."""
  with atomic_path(path) as tmp:
    with open(tmp, "wb") as f:
      f.write(model)
  return path


def _serving_default(serve: Callable[..., Dict[str, tf.Tensor]], input_names: Sequence[str],
                     max_seq_length: Optional[int]):
  """`serve` as a concrete function named serving_default (the converter names signatures
  after functions) on tf.string `[batch]` inputs named `input_names`, on int32
  `[batch, seq_len]` TOKEN_IDS, or on int32 `[1, max_seq_length]` MEDIAPIPE_IDS."""
  if tuple(input_names) == TOKEN_IDS:
    def serving_default(input_ids, input_mask, segment_ids):  # pylint: disable=function-redefined
      return serve(input_ids, input_mask, segment_ids)
    specs = [tf.TensorSpec([None, None], tf.int32, name) for name in TOKEN_IDS]
    return tf.function(serving_default, input_signature=specs).get_concrete_function()
  if tuple(input_names) == MEDIAPIPE_IDS:
    def serving_default(input_word_ids, input_mask, input_type_ids):  # pylint: disable=function-redefined
      return serve(input_word_ids, input_mask, input_type_ids)
    specs = [tf.TensorSpec([1, max_seq_length], tf.int32, name) for name in MEDIAPIPE_IDS]
    return tf.function(serving_default, input_signature=specs).get_concrete_function()
  specs = [tf.TensorSpec([None], tf.string, name) for name in input_names]
  if len(input_names) == 1:
    def serving_default(text):
      return serve(text)
  else:
    def serving_default(text, text_b):
      return serve(text, text_b)
  return tf.function(serving_default, input_signature=specs).get_concrete_function()


def converter(serve: Callable[..., Dict[str, tf.Tensor]], input_names: Sequence[str],
              variables: Sequence, quantize: str = "none",
              calibration_texts: Optional[Sequence[str]] = None, do_lower_case: bool = True,
              sentencepiece: bool = False, max_seq_length: Optional[int] = None):
  """The TFLiteConverter of `serve`, set for `quantize`; for "int8" its `convert()` gives
  the calibrated float model, which `quantize_int8` quantizes (`do_lower_case`,
  `sentencepiece`: how `prepare_texts` readies the calibration texts; `max_seq_length`:
  the MEDIAPIPE_IDS' length)."""
  import tensorflow_text as tft  # pylint: disable=g-import-not-at-top
  root = tf.Module()
  root.weights = list(variables)
  lite = tf.lite.TFLiteConverter.from_concrete_functions(
      [_serving_default(serve, input_names, max_seq_length)], root)
  lite.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  lite.allow_custom_ops = True  # the tensorflow-text ops, with kernels in the registrar
  if quantize == "none":
    return lite
  lite.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantize == "float16":
    lite.target_spec.supported_types = [tf.float16]
  elif quantize == "int8":
    # The calibrating interpreter runs the tokenizer too: it needs the TF Text kernels.
    lite.target_spec._experimental_custom_op_registerers = list(  # pylint: disable=protected-access
        tft.tflite_registrar.SELECT_TFTEXT_OPS)
    lite.representative_dataset = _representative(calibration_texts, input_names,
                                                  do_lower_case, sentencepiece)
    lite._experimental_calibrate_only = True  # pylint: disable=protected-access
  return lite


def quantize_int8(calibrated: bytes, int8_ops: Sequence[str] = INT8_OPS) -> bytes:
  """The calibrated float model with `int8_ops` quantized, the other ops denylisted (what
  tf.lite.experimental.QuantizationDebugger's selective quantization does; it cannot
  run the tokenizer's custom ops itself)."""
  from tensorflow.lite.python import convert as lite_convert  # pylint: disable=g-import-not-at-top
  from tensorflow.lite.python import schema_py_generated as schema
  names = {code: name for name, code in vars(schema.BuiltinOperator).items()
           if not name.startswith("_")}
  root = schema.Model.GetRootAsModel(calibrated, 0)
  ops = set()
  for i in range(root.OperatorCodesLength()):
    code = root.OperatorCodes(i)
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if code.CustomCode() is None and names.get(builtin) not in int8_ops:
      ops.add(names[builtin])
  return lite_convert.mlir_quantize(calibrated, denylisted_ops=sorted(ops))


def _representative(texts: Sequence[str], input_names: Sequence[str], do_lower_case: bool,
                    sentencepiece: bool):
  """The converter's calibration inputs: one text (tab-separated pairs) per step."""
  from electra_tf2.text.litert_tokenizer import prepare_texts  # pylint: disable=g-import-not-at-top

  def generate():
    for text in list(texts)[:CALIBRATION_STEPS]:
      columns = text.split("\t", len(input_names) - 1) + [""] * (len(input_names) - 1)
      yield {name: np.array(prepare_texts([column], do_lower_case, sentencepiece),
                            dtype=object)
             for name, column in zip(input_names, columns)}
  return generate


def _conversion_error(error: Exception) -> str:
  """One line for the converter's error: the ops it has no kernel for, if that is it."""
  text = str(error)
  ops = sorted(set(re.findall(r"'(?:tf|tfl)\.(\w+)' op is neither a custom op nor a flex op",
                              text)))
  if ops:
    return (f"LiteRT has no kernel for {', '.join(ops)}: this model cannot be written as a "
            ".tflite without Select TF ops; export a SavedModel instead")
  first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
  return f"the TFLite converter failed: {first[:300]}"


def with_metadata(model: bytes, settings: Dict[str, object]) -> bytes:
  """`model` with the metadata entry METADATA_NAME: `settings` as JSON."""
  return add_metadata(model, {METADATA_NAME: json.dumps(settings).encode("utf-8")})


def add_metadata(model: bytes, entries: Dict[str, bytes]) -> bytes:
  """`model` with a metadata entry (a buffer) per name of `entries`."""
  from tensorflow.lite.python import schema_py_generated as schema
  from tensorflow.lite.tools import flatbuffer_utils  # pylint: disable=g-import-not-at-top
  model_object = flatbuffer_utils.convert_bytearray_to_object(model)
  for name, data in entries.items():
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(data, np.uint8)
    model_object.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = name.encode("utf-8"), len(model_object.buffers) - 1
    model_object.metadata = (model_object.metadata or []) + [entry]
  return bytes(flatbuffer_utils.convert_object_to_bytearray(model_object))


def check_kernels(model: bytes, inputs: Sequence[np.ndarray]) -> None:
  """Refuses, in one line, a model with an op the interpreter has no kernel for (it
  runs the model once on `inputs`, one array per input)."""
  try:
    runner = make_interpreter(model_content=model).get_signature_runner("serving_default")
    runner(**dict(zip(runner.get_input_details(), inputs)))
  except (RuntimeError, ValueError) as e:
    ops = sorted(set(re.findall(r"unresolved custom op: (\w+)", str(e))))
    if not ops:
      raise
    raise LiteRTError(f"LiteRT has no kernel for {', '.join(ops)}: this model cannot run "
                      "as a .tflite; export a SavedModel instead") from None

