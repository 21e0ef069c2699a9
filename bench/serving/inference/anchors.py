"""The anchors: PyTorch eager and ONNX Runtime (float32 fused, dynamic int8), all fed by
transformers' fast tokenizer.

The ONNX model is exported with torch.onnx's TorchScript exporter (`dynamo=False`:
the graph onnxruntime's transformer optimizer knows how to fuse), opset 17, batch and
length dynamic; `optimizer.optimize_model(model_type="bert")` fuses it
(EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu) and
`quantize_dynamic` makes the int8 model of the fused one (int8 weights, activations
quantised per call). The sessions run on the CPU provider with onnxruntime's
default threads (one per core).
"""

from __future__ import annotations

import os

import numpy as np

from bench.serving.inference.side import Side, register

ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def torch_logits(fixture, texts) -> np.ndarray:
  """The PyTorch classifier's logits `[batch, num_labels]`, tokenizer included."""
  import torch
  with torch.inference_mode():
    return fixture.torch_model(**fixture.encode(texts, "pt")).logits.numpy()


@register("pytorch")
def pytorch(fixture) -> Side:
  return Side("PyTorch eager", lambda texts: torch_logits(fixture, texts),
              note="transformers ElectraForSequenceClassification, inference_mode")


@register("pytorch_sorted")
def pytorch_sorted(fixture) -> Side:
  """PyTorch fed the batches Keras predict and TextScorer make (texts sorted by length,
  electra_tf2/utils/batching.py): the anchor of the sides that batch themselves."""
  from electra_tf2.utils import batching

  def predict_all(texts, batch_size):
    order, chunks = batching.length_batches(batching.text_lengths(texts), batch_size)
    parts = [torch_logits(fixture, [[column[i] for i in chunk] for column in texts])
             for chunk in chunks]
    width = max(p.shape[1] for p in parts)  # token scorers: NaN past each batch's tokens
    parts = [np.pad(p, [(0, 0), (0, width - p.shape[1])], constant_values=np.nan)
             for p in parts]
    return batching.restore_order(np.concatenate(parts), order)
  return Side("PyTorch eager, length-sorted batches", lambda texts: torch_logits(fixture, texts),
              note="the pytorch side on the batches of Keras predict (sorted by length)",
              predict_all=predict_all)


def onnx_model(fixture) -> str:
  """The model exported by torch.onnx, then fused by onnxruntime's transformer optimizer."""
  import torch
  from onnxruntime.transformers import optimizer
  fused = fixture.path("model_fused.onnx")
  if os.path.exists(fused):
    return fused
  raw = fixture.path("model.onnx")
  example = fixture.encode([["a first text", "and a second one"]], "pt")
  axes = {name: {0: "batch", 1: "length"} for name in ONNX_INPUTS}
  axes["logits"] = {0: "batch"}
  torch.onnx.export(fixture.torch_model, tuple(example[k] for k in ONNX_INPUTS), raw,
                    input_names=list(ONNX_INPUTS), output_names=["logits"],
                    dynamic_axes=axes, opset_version=17, dynamo=False)
  model = optimizer.optimize_model(raw, model_type="bert",
                                   num_heads=fixture.config["num_attention_heads"],
                                   hidden_size=fixture.config["hidden_size"])
  model.save_model_to_file(fused + ".tmp")
  os.replace(fused + ".tmp", fused)
  os.remove(raw)
  return fused


def int8_model(fixture) -> str:
  """`quantize_dynamic` of the fused model: int8 weights of MatMul/Attention."""
  from onnxruntime.quantization import QuantType, quantize_dynamic
  path = fixture.path("model_int8.onnx")
  if not os.path.exists(path):
    quantize_dynamic(onnx_model(fixture), path + ".tmp", weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": 1})  # float for fused ops' outputs
    os.replace(path + ".tmp", path)
  return path


def onnx_side(fixture, name: str, path: str, note: str) -> Side:
  import onnxruntime
  session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
  inputs = {i.name for i in session.get_inputs()}

  def predict(texts):
    features = fixture.encode(texts, "np")
    return session.run(["logits"], {k: v for k, v in features.items() if k in inputs})[0]
  return Side(name, predict, note=note)


@register("ort_fp32")
def ort_fp32(fixture) -> Side:
  return onnx_side(fixture, "ONNX Runtime float32", onnx_model(fixture),
                   "torch.onnx (TorchScript exporter), onnxruntime.transformers.optimizer")


@register("ort_int8")
def ort_int8(fixture) -> Side:
  return onnx_side(fixture, "ONNX Runtime int8", int8_model(fixture),
                   "quantize_dynamic (QInt8 weights) of the fused model")
