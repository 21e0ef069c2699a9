"""Per-row scales for the int8 word-embedding table of a dynamic-int8 `.tflite`.

The converter's dynamic-range quantization stores the word-embedding table `[vocab,
embedding]` in int8 with one scale for the whole table, the largest |value| over 127, and
looks rows up with GATHER then DEQUANTIZE. One large value makes every row coarse: in a
small SST-2 classifier the largest |value| was 5 times the median row's, and rounding the
table so moved 3 of 872 dev labels where one scale per row moved 1
(bench/serving/mediapipe_agreement.py, docs/deploy.md). This pass keeps the file's size and ops
and gives each row its own scale:

  int8 table (scale 1) --GATHER(ids)--> DEQUANTIZE --> x  `[..., embedding]`
  row scales `[vocab, 1]` --GATHER(ids)--> s  `[..., 1]`
  MUL(x, s) --> the tensor DEQUANTIZE wrote before (its readers unchanged)

GATHER, DEQUANTIZE and MUL are builtin ops: the LiteRT, MediaPipe and TensorFlow Lite
runtimes have their kernels. port: not in the official code, which has no LiteRT export.
"""

from __future__ import annotations

import copy
from typing import Optional, Sequence, Tuple

import numpy as np


def row_scales(table: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
  """`(int8 values, float32 scales [rows, 1])`: each row over the largest |value| of its row
  / 127, rounded (a row of zeros gets scale 1)."""
  scales = np.abs(table).max(axis=1, keepdims=True).astype(np.float32) / 127
  scales[scales == 0] = 1
  return np.clip(np.round(table / scales), -127, 127).astype(np.int8), scales


def rescale_rows(model: bytes, variables: Sequence) -> bytes:
  """`model` (a dynamic-int8 `.tflite`) with per-row scales for the int8 word-embedding
  table that a GATHER reads and one DEQUANTIZE follows, its float values from the
  `word_embeddings` variable of `variables` with the table's shape (other weights of that
  shape are not it); anything else is left as it is."""
  from tensorflow.lite.python import schema_py_generated as schema  # pylint: disable=g-import-not-at-top
  from tensorflow.lite.tools import flatbuffer_utils  # pylint: disable=g-import-not-at-top
  tables = {tuple(v.shape): v for v in variables
            if len(v.shape) == 2 and "word_embeddings" in v.name}
  model_object = flatbuffer_utils.convert_bytearray_to_object(model)
  codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model_object.operatorCodes]
  for subgraph in model_object.subgraphs:
    lookups = [(op, found) for op in subgraph.operators
               for found in [_dequantized_gather(subgraph, codes, op, tables, schema)] if found]
    for gather, (dequantize, table) in lookups:
      new_ops = _rescale(model_object, subgraph, gather, dequantize, table, codes, schema)
      at = subgraph.operators.index(dequantize) + 1  # the new ops run right after it
      subgraph.operators[at:at] = new_ops
  return bytes(flatbuffer_utils.convert_object_to_bytearray(model_object))


def _dequantized_gather(subgraph, codes, op, tables, schema):
  """`(DEQUANTIZE op, float table)` where `op` gathers from an int8 constant table with
  one scale whose only reader DEQUANTIZEs its rows; else None."""
  if codes[op.opcodeIndex] != schema.BuiltinOperator.GATHER:
    return None
  table = subgraph.tensors[op.inputs[0]]
  quantization = table.quantization
  if (table.type != schema.TensorType.INT8 or quantization is None
      or quantization.scale is None or len(quantization.scale) != 1):
    return None
  variable = tables.get(tuple(int(d) for d in table.shape))
  readers = [o for o in subgraph.operators if op.outputs[0] in list(o.inputs)]
  if variable is None or len(readers) != 1:
    return None
  if codes[readers[0].opcodeIndex] != schema.BuiltinOperator.DEQUANTIZE:
    return None
  return readers[0], np.asarray(variable.numpy(), np.float32)


def _rescale(model_object, subgraph, gather, dequantize, table: np.ndarray, codes, schema):
  """Rewrites one table and its lookup in place; the two new ops (GATHER of the scales,
  MUL), to run right after `dequantize`."""
  values, scales = row_scales(table)
  table_tensor = subgraph.tensors[gather.inputs[0]]
  model_object.buffers[table_tensor.buffer].data = values.reshape(-1).view(np.uint8)
  for tensor in (table_tensor, subgraph.tensors[gather.outputs[0]]):
    tensor.quantization = _unit_scale(schema)
  ids = subgraph.tensors[gather.inputs[1]]
  output_index = dequantize.outputs[0]
  output = subgraph.tensors[output_index]
  name = output.name.decode() if isinstance(output.name, bytes) else str(output.name)
  scales_index = _constant(model_object, subgraph, scales, f"{name}/row_scales", schema)
  row_index = _tensor(subgraph, f"{name}/row_scale", list(ids.shape) + [1],
                      _signature(ids, [1]), schema)
  unscaled_index = _tensor(subgraph, f"{name}/unscaled", list(output.shape),
                           _signature(output, []), schema)
  dequantize.outputs = [unscaled_index]
  lookup = copy.deepcopy(gather)
  lookup.inputs, lookup.outputs = [scales_index, gather.inputs[1]], [row_index]
  multiply = schema.OperatorT()
  multiply.opcodeIndex = _opcode(model_object, codes, schema.BuiltinOperator.MUL, schema)
  multiply.inputs, multiply.outputs = [unscaled_index, row_index], [output_index]
  multiply.builtinOptionsType = schema.BuiltinOptions.MulOptions
  multiply.builtinOptions = schema.MulOptionsT()
  return [lookup, multiply]


def _unit_scale(schema):
  params = schema.QuantizationParametersT()
  params.scale, params.zeroPoint = np.ones([1], np.float32), np.zeros([1], np.int64)
  return params


def _signature(tensor, tail: list) -> Optional[np.ndarray]:
  signature = tensor.shapeSignature
  return None if signature is None else np.array(list(signature) + tail, np.int32)


def _tensor(subgraph, name: str, shape: list, signature, schema, buffer: int = 0) -> int:
  tensor = schema.TensorT()
  tensor.name, tensor.type, tensor.buffer = name.encode(), schema.TensorType.FLOAT32, buffer
  tensor.shape = np.array(shape, np.int32)
  tensor.shapeSignature = signature
  subgraph.tensors.append(tensor)
  return len(subgraph.tensors) - 1


def _constant(model_object, subgraph, value: np.ndarray, name: str, schema) -> int:
  buffer = schema.BufferT()
  buffer.data = np.ascontiguousarray(value, np.float32).reshape(-1).view(np.uint8)
  model_object.buffers.append(buffer)
  return _tensor(subgraph, name, list(value.shape), None, schema,
                 buffer=len(model_object.buffers) - 1)


def _opcode(model_object, codes: list, builtin: int, schema) -> int:
  """The index of `builtin`'s operator code, appended if the model has none."""
  if builtin in codes:
    return codes.index(builtin)
  code = schema.OperatorCodeT()
  code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, min(builtin, 127), 1
  model_object.operatorCodes.append(code)
  codes.append(builtin)
  return len(codes) - 1
