"""LiteRT sides: the fixture's `TextClassifier` written by `export_litert` and run by
`electra_tf2.LiteRTModel` (ai-edge-litert's interpreter, XNNPACK, tensorflow-text's TFLite
kernels), one side per quantization:

- `litert_fp32` (quantize="none"), `litert_fp16` ("float16"),
- `litert_dynamic_int8` ("dynamic-int8": int8 weights, inputs of the matrix products
  quantized per call, as ONNX Runtime's `quantize_dynamic`),
- `litert_int8` ("int8": int8 matrix products, GELU, gathers and means, calibrated on
  100 training texts of the task: SST-2 or MRPC train, else texts past the timed ones).

Each `.tflite` file is kept under the fixture's work directory and its size is in the
row's note. The interpreter runs on `LiteRTModel`'s default threads (`default_threads()`,
chosen by bench/serving/litert_threads_vs_ort.py), as ONNX Runtime runs on its own default (one
thread per core): each side as a user gets it. A batch of raw strings goes through
`LiteRTModel.predict` with that batch size, one interpreter call (tokenisation in the file).
"""

from __future__ import annotations

import functools
import os

from bench.common import SHARED_DATA
from bench.serving.inference.ours import keras_classifier
from bench.serving.inference.side import Side, register
from bench.serving.inference.texts import _tsv

CALIBRATION_TEXTS = 100
TRAIN_SETS = {"sst2_dev": ("SST-2", (0,)), "mrpc_dev": ("MRPC", (3, 4))}


def calibration_texts(fixture):
  """Representative texts for int8 (tab-separated pairs): the task's training texts."""
  if fixture.texts.name in TRAIN_SETS:
    task, columns = TRAIN_SETS[fixture.texts.name]
    path = os.path.join(SHARED_DATA, "glue", task, "train.tsv")
    if os.path.exists(path):
      rows = _tsv(path)[:CALIBRATION_TEXTS]
      return ["\t".join(row[c] for c in columns) for row in rows]
  return ["\t".join(column[-i] for column in fixture.texts.columns)
          for i in range(1, CALIBRATION_TEXTS + 1)]


def _litert(fixture, quantize: str) -> Side:
  from electra_tf2 import LiteRTModel
  from electra_tf2.litert.model import default_threads
  pairs = fixture.texts.pairs
  path = fixture.path(f"litert_{'pairs' if pairs else 'single'}_{quantize}.tflite")
  if not os.path.exists(path):
    model = keras_classifier(fixture.hf_dir, pairs, fixture.max_seq_length)
    model.export_litert(path, quantize=quantize, calibration_texts=(
        calibration_texts(fixture) if quantize == "int8" else None))
  lite = LiteRTModel(path)

  def predict(texts):  # one batch of the bench's texts: one interpreter call
    return lite.predict(tuple(texts) if pairs else texts[0], len(texts[0]))["logits"]
  return Side(f"ours: LiteRT .tflite ({quantize})", predict,
              note=f"export_litert(quantize={quantize!r}), {os.path.getsize(path) / 2**20:.1f} "
                   f"MiB; LiteRTModel on raw strings, {default_threads()} thread(s)")


# Side name -> the quantize option of export_litert.
SIDES = {"litert_fp32": "none", "litert_fp16": "float16",
         "litert_dynamic_int8": "dynamic-int8", "litert_int8": "int8"}
for _name, _quantize in SIDES.items():
  register(_name)(functools.partial(_litert, quantize=_quantize))
