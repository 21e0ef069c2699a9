"""bench/serving/server_graph_levers.py's accounting: ops per encoder layer from profiled op names,
tf.custom_gradient markers in a SavedModel, ratios to ONNX Runtime in its table.

Oracles: hand-counted op names, a SavedModel written here with and without
tf.custom_gradient, hand-computed ratios.
"""

import pytest
import tensorflow as tf

from bench.serving import server_graph_levers as levers


def test_ops_per_layer_counts_each_encoder_layer_under_keras_scope_suffixes():
  """Keras names a reused scope `layer_0_1/`; ops outside the layers count in the total only."""
  ops = {("StatefulPartitionedCall/electra_1/layer_0_1/MatMul", "_FusedMatMul"),
         ("StatefulPartitionedCall/electra_1/layer_0_1/MatMul_1", "_FusedMatMul"),
         ("StatefulPartitionedCall/electra_1/layer_0_1/Softmax", "Softmax"),
         ("StatefulPartitionedCall/electra_1/layer_11/MatMul", "_FusedMatMul"),
         ("StatefulPartitionedCall/electra_1/layer_11/MatMul_1", "_FusedMatMul"),
         ("StatefulPartitionedCall/electra_1/embeddings_1/GatherV2", "GatherV2"),
         ("StatefulPartitionedCall/classifier_1/player_2/Tanh", "Tanh")}
  counted = levers.ops_per_layer(ops)
  assert counted == {"layers": 2, "total": 7, "per_layer": {"_FusedMatMul": 2.0, "Softmax": 0.5}}


def test_custom_gradient_markers_found_in_a_saved_model(tmp_path):
  @tf.custom_gradient
  def double(x):
    return 2.0 * x, lambda dy: 2.0 * dy

  counts = {}
  for name, function in (("plain", lambda x: 2.0 * x), ("custom", double)):
    module = tf.Module()
    module.f = tf.function(function, input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / name))
    counts[name] = levers.custom_gradient_markers(str(tmp_path / name))
  assert counts["plain"] == 0 and counts["custom"] >= 1


def test_table_ratios_are_against_ort_of_the_same_record():
  """p50 ratio: ORT's latency over ours; throughput ratio: ours over ORT's (above 1: faster)."""
  side = lambda p50, rate: {"p50_ms": p50, "p95_ms": p50, "rate": rate, "max_diff_vs_ort": 0.0}
  record = {"setting": "default", "model": "m", "onednn": False, "load": [1.0, 1.0],
            "ops": {"savedmodel": {"per_layer": {"MatMul": 6.0, "AddV2": 2.0}}},
            "sides": {"ort_fp32": side(10.0, 200.0), "savedmodel": side(20.0, 300.0)}}
  row = levers.table([record]).splitlines()[2].split(" | ")
  assert row[2] == "sst2_dev" and row[3] == "savedmodel"  # records before --texts: SST-2
  assert row[7] == "0.50x" and row[10] == "1.50x" and row[12] == "8"


def test_serving_graph_ops_are_what_tensorflow_runs_after_grappler(tmp_path):
  """MatMul and BiasAdd run as one fused op (Grappler's remapper); arguments and constants
  are left out."""
  module = tf.Module()
  module.w, module.b = tf.Variable([[2.0, 3.0]]), tf.Variable([1.0, 1.0])

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string, "text")])
  def serve(text):
    x = tf.cast(tf.strings.length(text), tf.float32)[:, None]
    return {"y": tf.nn.bias_add(tf.matmul(x, module.w), module.b)}
  tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": serve})
  types = sorted(t for _, t in levers.serving_graph_ops(str(tmp_path), "abc"))
  fused = [t for t in types if t.endswith("FusedMatMul")]
  assert len(fused) == 1 and "BiasAdd" not in types and "MatMul" not in types
  assert "StringLength" in types and types.count("ReadVariableOp") == 2
  assert not {"_Arg", "_Retval", "Const"} & set(types)


def test_batch1_forms_compute_the_encoders_states():
  """bench/serving/server_batch1_forms.py's forms (the single-threaded executor, constants, fused
  q/k/v, head-major projections) give our encoder's states (itself tested against a numpy
  reference), so their timings compare the same computation. Every weight and bias is
  drawn at a scale where attention is far from uniform (checked), and a padded token and a
  second segment reach the mask and segment paths."""
  import numpy as np
  from bench.serving import server_batch1_forms as forms
  from electra_tf2 import BertConfig
  from electra_tf2.networks.encoder import Encoder
  encoder = Encoder(BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=32), 8)
  encoder.build()
  rng = np.random.default_rng(0)
  for variable in encoder.weights:
    variable.assign(rng.normal(0.0, 0.6, variable.shape).astype(np.float32))
  ids = tf.constant([[2, 7, 9, 11, 3, 0]])
  args = (ids, tf.constant([[1, 1, 1, 1, 1, 0]]), tf.constant([[0, 0, 0, 1, 1, 0]]))
  layer = encoder.transformer_layers[0]
  x = encoder.embeddings_project(encoder.embeddings(ids, args[2]))[0].numpy()
  scores = (layer.query(x).numpy()[:, :8] @ layer.key(x).numpy()[:, :8].T) / np.sqrt(8)
  probs = np.exp(scores - scores.max(-1, keepdims=True))
  probs /= probs.sum(-1, keepdims=True)
  # the first head of the first layer: each row far from uniform (1/6 each)
  assert probs.max(-1).min() > 0.4, probs
  functions = forms.forms(encoder)
  assert set(functions) == {"ours", "single_threaded", "frozen", "fused_qkv", "head_major"}
  want = functions["ours"](*args).numpy()
  for name, function in functions.items():
    np.testing.assert_allclose(np.asarray(function(*args)), want, rtol=1e-4, atol=1e-4,
                               err_msg=name)


def test_padding_share_counts_pad_rows_of_each_batch_padded_to_its_longest():
  """Texts of 2, 4, 1 and 1 tokens in batches of 2: [2, 4] pads to 8 rows (2 pad), [1, 1]
  to 2 (0 pad): 2 of 10 rows."""
  import numpy as np

  def featurize(texts):
    longest = max(len(t) for t in texts)
    return {"input_mask": np.array([[1] * len(t) + [0] * (longest - len(t)) for t in texts])}
  assert levers.padding_share(featurize, ["ab", "abcd", "a", "b"], 2) == pytest.approx(0.2)
