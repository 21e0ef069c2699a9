"""electra_tf2/litert/embedding_rows.py: per-row scales for the dynamic-int8 word embeddings."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorflow_text")

from fixtures import WORD_VOCAB  # noqa: E402

import electra_tf2  # noqa: E402
from electra_tf2.litert import embedding_rows  # noqa: E402

TEXTS = ["the cat sat on the mat .", "what is the capital of france ?", "a big red house"]


def test_row_scales_hand_computed():
  values, scales = embedding_rows.row_scales(np.array([[0.5, -1.0], [0.0, 0.0], [0.03, -0.09]],
                                                      np.float32))
  np.testing.assert_allclose(scales, [[1 / 127], [1.0], [0.09 / 127]], rtol=1e-6)
  assert values.dtype == np.int8
  np.testing.assert_array_equal(values, [[64, -127], [0, 0], [42, -127]])  # 63.5 -> 64 (even)


def file_tensors(path: str):
  """`{name: (array, scales)}` of every tensor of the .tflite that holds a constant."""
  from tensorflow.lite.python import schema_py_generated as schema
  from tensorflow.lite.tools import flatbuffer_utils
  with open(path, "rb") as f:
    model = flatbuffer_utils.convert_bytearray_to_object(f.read())
  dtypes = {schema.TensorType.INT8: np.int8, schema.TensorType.FLOAT32: np.float32}
  found = {}
  for tensor in model.subgraphs[0].tensors:
    data = model.buffers[tensor.buffer].data
    if data is not None and len(data) and tensor.type in dtypes:
      array = np.asarray(data, np.uint8).view(dtypes[tensor.type]).reshape(list(tensor.shape))
      scales = None if tensor.quantization is None else tensor.quantization.scale
      found[tensor.name.decode()] = (array, scales)
  return found


@pytest.mark.parametrize("target", ["litert", "mediapipe"])
def test_the_dynamic_int8_file_holds_each_row_at_its_own_scale(tmp_path, target):
  """The file's int8 table and row scales are numpy's per-row rounding of the Keras table
  (the converter's single scale is replaced), and the file predicts as the model does."""
  tf.keras.utils.set_random_seed(3)
  bert = electra_tf2.BertConfig(len(WORD_VOCAB), hidden_size=32, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=64)
  model = electra_tf2.TextClassifier(bert, None, WORD_VOCAB, max_seq_length=16,
                                     label_list=["no", "yes"])
  table = next(v for v in model.weights if "word_embeddings" in v.path).numpy()
  table[5] *= 20  # one row far larger than the others: one scale would coarsen them all
  next(v for v in model.weights if "word_embeddings" in v.path).assign(table)
  path = model.export_litert(str(tmp_path / "m.tflite"), "dynamic-int8", target=target)
  tensors = file_tensors(path)
  want_values, want_scales = embedding_rows.row_scales(table)
  # The table: the int8 tensor of its shape with one scale, now 1 (dense kernels of the
  # same shape have a scale per channel).
  [values] = [a for a, s in tensors.values()
              if a.dtype == np.int8 and a.shape == table.shape and len(s) == 1 and s[0] == 1]
  np.testing.assert_array_equal(values, want_values)
  [(scales, _)] = [t for name, t in tensors.items() if name.endswith("/row_scales")]
  np.testing.assert_array_equal(scales, want_scales)
  # Each row back within half its own step of the float row.
  assert (np.abs(values * scales - table) <= scales / 2 + 1e-9).all()
  if target == "litert":
    got = electra_tf2.LiteRTModel(path).predict(TEXTS)["probabilities"]
    np.testing.assert_allclose(got, model.serve(tf.constant(TEXTS))["probabilities"].numpy(),
                               atol=2e-2)
