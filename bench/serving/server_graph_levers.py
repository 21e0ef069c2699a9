"""The server graph's levers, each on its own, against ONNX Runtime float32
timed in the same process: oneDNN and threading settings, an XLA-compiled encoder with
length buckets, and the ops the serving graph runs per encoder layer.

    python -m bench.serving.server_graph_levers [--models electra_small,electra_base]
        [--settings default,onednn,...] [--rounds 2] [--latency-texts 60]
        [--throughput-texts 128] [--work-dir /tmp/electra_inference_bench] [--json FILE]
    python -m bench.serving.server_graph_levers --layer-norm-forms

One subprocess per setting (environment variables are read when TensorFlow starts). In
each: bench/serving/inference_throughput.py's `savedmodel` side (our `export_saved_model`,
`serving_default` on raw strings) and `ort_fp32` side on the same SST-2 dev texts and
random weights, timed alternately (bench/serving/inference/timing.py), plus for the `xla_*`
settings our Keras model's tokenizer as its own tf.function and the encoder and head as a
`jit_compile=True` function on ids padded to the next bucket (16, 32, 64, 128 tokens).
Per setting and model it prints batch-1 p50 and sequences/s at batch 32, each as a ratio
to ONNX Runtime float32 of the same run (above 1: faster), and the ops one encoder layer
runs, by type, in the graph TensorFlow executes (RunMetadata partition graphs: after
Grappler and the oneDNN rewrite), and the SavedModel's `tf.custom_gradient` markers.
`--layer-norm-forms` instead profiles LayerNorm written in the forms the remapper's
`_MklLayerNorm` pattern names (tensorflow grappler/optimizers/remapper.cc,
`FindMklLayerNorm`) and prints the op types each runs (fused or not).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402

from bench.common import (REPO, add_text_timing_flags, append_json, bench_command,  # noqa: E402
                          log, markdown_table, script_parser)

BUCKETS = (16, 32, 64, 128)
ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
# name: (environment variables, extra sides: "xla" and/or "fused_ln")
SETTINGS = {
    "default": ({}, ()),
    "eigen": ({"TF_ENABLE_ONEDNN_OPTS": "0"}, ()),
    "onednn": (ONEDNN, ("fused_ln",)),
    "onednn_frozen": ({**ONEDNN, "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}, ()),
    "intra1": ({"TF_NUM_INTRAOP_THREADS": "1"}, ()),
    "intra1_inter1": (ONE_THREAD, ()),
    "onednn_intra1_inter1": ({**ONEDNN, **ONE_THREAD}, ("fused_ln",)),
    "fused_ln": ({}, ("fused_ln",)),
    "xla_buckets": ({}, ("xla",)),
    "xla_buckets_intra1": ({"TF_NUM_INTRAOP_THREADS": "1"}, ("xla",)),
    "skip_padding": ({}, ("padded",)),
}
LAYER = re.compile(r"/layer_(\d+)(?:_\d+)?/")


def profile_ops(function, calls):
  """{(op name, op type)} that `function(c)` runs over `calls`, from the TF profiler."""
  import tensorflow as tf
  from bench.profiles.profile_pretrain_step import op_times, read_space
  with tempfile.TemporaryDirectory() as logdir:
    tf.profiler.experimental.start(logdir)
    for c in calls:
      function(c)
    tf.profiler.experimental.stop()
    space = read_space(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0])
  return {key for key in op_times(space)
          if key[1].strip() and not key[1].startswith(("__inference", "Run"))}


def serving_graph_ops(saved_model_dir: str, text: str):
  """{(node name, op type)} of the partition graphs TensorFlow runs for the SavedModel's
  `serving_default` (after Grappler and the oneDNN rewrite; RunMetadata of its first
  call), less the nodes that compute nothing (arguments, constants, NoOp)."""
  import tensorflow as tf
  from tensorflow.python.eager import context
  serve = tf.saved_model.load(saved_model_dir).signatures["serving_default"]
  context.enable_run_metadata()
  try:
    serve(text=tf.constant([text]))
    metadata = context.export_run_metadata()
  finally:
    context.disable_run_metadata()
  return {(n.name, n.op) for f in metadata.function_graphs for g in f.partition_graphs
          for n in g.node if n.op not in ("_Arg", "_Retval", "Const", "NoOp", "_EagerConst")}


def ops_per_layer(ops) -> dict:
  """Op types (with counts) of one encoder layer: the ops under `layer_<k>/`, over layers."""
  per_layer = collections.Counter()
  layers = set()
  for name, op_type in ops:
    match = LAYER.search(name)
    if match:
      layers.add(match.group(1))
      per_layer[op_type] += 1
  return {"layers": len(layers), "total": len(ops),
          "per_layer": {k: v / max(len(layers), 1) for k, v in per_layer.most_common()}}


def custom_gradient_markers(saved_model_dir: str) -> int:
  """Nodes of the SavedModel's graph (functions included) that tf.custom_gradient marked
  (`_gradient_op_type` attribute on their IdentityN)."""
  from tensorflow.core.protobuf import saved_model_pb2
  model = saved_model_pb2.SavedModel()
  with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
    model.ParseFromString(f.read())
  graph = model.meta_graphs[0].graph_def
  nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
  return sum("_gradient_op_type" in n.attr for n in nodes)


def xla_side(fixture):
  """The Keras model's tokenizer (a tf.function), ids padded to the next bucket, then the
  encoder and head as one `jit_compile=True` function: one compilation per (batch, bucket)."""
  import tensorflow as tf
  from bench.serving.inference import ours
  from bench.serving.inference.side import Side
  model = ours.keras_classifier(fixture.hf_dir, False, fixture.max_seq_length)
  tokenize = tf.function(lambda t: model.text_inputs(t),
                         input_signature=[tf.TensorSpec([None], tf.string)])
  ids = [tf.TensorSpec([None, None], tf.int32)] * 3
  encode = tf.function(lambda *f: model.head(model.encoder(*f), None)["logits"],
                       input_signature=ids, jit_compile=True)

  def predict(texts):
    features = tokenize(tf.constant(texts[0]))
    length = int(features["input_ids"].shape[1])
    bucket = next(b for b in BUCKETS if b >= length)
    padded = [tf.pad(features[k], [[0, 0], [0, bucket - length]])
              for k in ("input_ids", "input_mask", "segment_ids")]
    return encode(*padded).numpy()
  return Side("ours: XLA encoder, length buckets", predict,
              note=f"tokenizer tf.function; encoder+head jit_compile on buckets {BUCKETS}")


def patched_export_side(fixture, suffix: str, owner, method: str, patch, name: str):
  """A side on our SavedModel exported with `owner.method` replaced by `patch` during the
  export only (cached under the fixture as savedmodel_single_float32_<suffix>)."""
  import tensorflow as tf
  from electra_tf2 import TextClassifier
  from bench.serving.inference.side import Side
  path = fixture.path(f"savedmodel_single_float32_{suffix}")
  if not os.path.exists(os.path.join(path, "saved_model.pb")):
    original = getattr(owner, method)
    setattr(owner, method, patch)
    try:
      TextClassifier.from_pretrained(fixture.hf_dir, max_seq_length=fixture.max_seq_length
                                     ).export_saved_model(path)
    finally:
      setattr(owner, method, original)
  serve = tf.saved_model.load(path).signatures["serving_default"]
  return Side(name, lambda texts: serve(text=tf.constant(texts[0]))["logits"].numpy())


def fused_layer_norm_side(fixture):
  """Our SavedModel exported with every LayerNorm as Keras 2's FusedBatchNormV3 form, the
  pattern the remapper turns into one `_MklLayerNorm` with oneDNN on (remapper.cc
  `layer_norm_pattern_1`)."""
  import tensorflow as tf
  from electra_tf2.layers.layer_norm import LayerNorm

  def fused(self, inputs):
    shape, depth = tf.shape(inputs), inputs.shape[-1]
    rows = tf.reduce_prod(shape[:-1])
    empty = tf.constant([], tf.float32)
    normed = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(inputs, [1, rows, depth, 1]), scale=tf.fill([rows], 1.0),
        offset=tf.fill([rows], 0.0), mean=empty, variance=empty, epsilon=self.epsilon,
        data_format="NCHW", is_training=True)[0]
    return tf.reshape(normed, shape) * self.gamma + self.beta
  return patched_export_side(fixture, "fused_ln", LayerNorm, "call", fused,
                             "ours: SavedModel, LayerNorm as FusedBatchNormV3")


def padded_side(fixture):
  """Our SavedModel as exported before `skip_padding` (the encoder on every padded row)."""
  from electra_tf2 import TextClassifier

  def padded_serve(self, *texts):
    return self.serve_features(self.text_features(*texts), skip_padding=False)
  return patched_export_side(fixture, "padded", TextClassifier, "serve", padded_serve,
                             "ours: SavedModel, padded graph (no skip_padding)")


def padding_share(featurize, texts, batch_size: int) -> float:
  """The share of pad rows in `texts` cut into batches, each padded to its longest row
  (`featurize(batch)["input_mask"]`, as `TextModel.featurize`)."""
  masks = [np.asarray(featurize(texts[i:i + batch_size])["input_mask"])
           for i in range(0, len(texts), batch_size)]
  return 1.0 - sum(int(m.sum()) for m in masks) / sum(m.size for m in masks)


def run_setting(args) -> None:
  """In this process (its environment set by the parent): every model, one JSON line each."""
  import tensorflow as tf
  from tensorflow.python.util import _pywrap_util_port
  from bench.serving.inference import models, ours, texts as text_lib, timing
  from bench.serving.inference.side import SIDES
  _, extras = SETTINGS[args.setting]
  text_set = text_lib.text_sets(args.work_dir, args.data_dir, [args.texts, "embedded"])[:1]
  if text_set[0].pairs:
    raise SystemExit(f"--texts {args.texts}: single texts only (pairs: "
                     "bench/serving/inference_throughput.py)")
  for fixture in models.random_fixtures(args.models.split(","), text_set, args.work_dir):
    sides = {"ort_fp32": SIDES["ort_fp32"](fixture), "savedmodel": SIDES["savedmodel"](fixture)}
    saved = fixture.path("savedmodel_single_float32")  # the savedmodel side's export
    if "xla" in extras:
      sides["xla_buckets"] = xla_side(fixture)
    if "fused_ln" in extras:
      sides["fused_ln"] = fused_layer_norm_side(fixture)
    if "padded" in extras:
      sides["padded"] = padded_side(fixture)
    texts = fixture.texts.columns[0]
    order = np.random.default_rng(0).permutation(len(texts))
    latency = [[texts[i] for i in order[:args.latency_texts]]]
    throughput = [[texts[i] for i in order[:args.throughput_texts]]]
    padding = padding_share(ours.keras_classifier(fixture.hf_dir, False,
                                                  fixture.max_seq_length).featurize,
                            throughput[0], 32)
    log(f"{fixture.name}: padding {100 * padding:.0f}% of the batch-32 rows", args.setting)
    reference = sides["ort_fp32"].predict(throughput)
    diffs = {n: float(np.max(np.abs(s.predict(throughput) - reference)))
             for n, s in sides.items()}
    load = os.getloadavg()[0]
    timings = timing.alternate(sides, latency, throughput, 32, args.rounds,
                               log=lambda m: log(m, args.setting))
    paths = {"savedmodel": saved, "fused_ln": saved + "_fused_ln", "padded": saved + "_padded"}
    profiled = {name: serving_graph_ops(paths[name], latency[0][0]) for name in sides
                if name in paths}
    ops = {name: ops_per_layer(p) for name, p in profiled.items()}
    record = {"setting": args.setting, "model": fixture.name, "texts": text_set[0].name,
              "padding_share": padding,
              "load": [load, os.getloadavg()[0]],
              "onednn": bool(_pywrap_util_port.IsMklEnabled()),
              "custom_gradient_markers": custom_gradient_markers(saved),
              "identity_n_run": sum(t == "IdentityN" for _, t in profiled["savedmodel"]),
              "ops": ops, "sides": {
                  n: {"p50_ms": t.p(50), "p95_ms": t.p(95), "rate": t.rate,
                      "max_diff_vs_ort": diffs[n]} for n, t in timings.items()}}
    print("RESULT " + json.dumps(record), flush=True)


def layer_norm_forms() -> None:
  """Profiles LayerNorm in our formula and in the remapper's patterns; prints op types."""
  import tensorflow as tf
  from tensorflow.python.util import _pywrap_util_port
  from electra_tf2.layers.layer_norm import layer_norm
  gamma, beta = tf.Variable(tf.random.normal([256])), tf.Variable(tf.random.normal([256]))
  eps = 1e-12

  def moments(x):
    mean = tf.reduce_mean(x, -1, keepdims=True)
    centred = tf.subtract(x, mean, name="a_centred")
    return mean, centred, tf.reduce_mean(tf.square(centred), -1, keepdims=True)

  def pattern_2(x):  # remapper.cc layer_norm_pattern_2, input order kept after Grappler
    _, centred, variance = moments(x)
    scale = tf.multiply(tf.math.rsqrt(variance + eps), gamma, name="z_scale")
    return tf.add(beta, tf.multiply(centred, scale, name="z_normed"), name="out")

  def common_norm(x):  # remapper.cc IsCommonNormPattern (it wants constant gamma, beta)
    mean = tf.reduce_mean(x, -1, keepdims=True)
    variance = tf.reduce_mean(tf.math.squared_difference(x, mean), -1, keepdims=True)
    scale = tf.math.rsqrt(variance + eps) * gamma
    return x * scale + (beta - mean * scale)

  import keras
  keras_norm = keras.layers.LayerNormalization(epsilon=eps)
  keras_norm.build((None, 256))
  keras_norm.gamma.assign(gamma)
  keras_norm.beta.assign(beta)

  def pattern_1(x):  # remapper.cc layer_norm_pattern_1: Keras 2's FusedBatchNormV3 form
    rows = tf.shape(x)[0]
    empty = tf.constant([], tf.float32)
    normed = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(x, [1, rows, 256, 1]), scale=tf.fill([rows], 1.0),
        offset=tf.fill([rows], 0.0), mean=empty, variance=empty, epsilon=eps,
        data_format="NCHW", is_training=True)[0]
    return tf.reshape(normed, tf.shape(x)) * gamma + beta
  x = tf.random.normal([13, 256])
  reference = layer_norm(x, gamma, beta, eps).numpy()
  print(f"oneDNN: {bool(_pywrap_util_port.IsMklEnabled())}")
  forms = (("ours (custom_gradient, sum/depth)", lambda x: layer_norm(x, gamma, beta, eps)),
           ("remapper pattern 1", pattern_1),
           ("remapper pattern 2", pattern_2), ("remapper common norm", common_norm),
           ("keras LayerNormalization", keras_norm))
  for name, form in forms:
    function = tf.function(form, input_signature=[tf.TensorSpec([None, 256], tf.float32)])
    diff = float(np.max(np.abs(function(x).numpy() - reference)))
    types = collections.Counter(t for _, t in profile_ops(function, [x] * 3))
    print(f"  {name:36s} max diff {diff:.1e}; ops {dict(types)}")


TABLE_HEADERS = ("setting", "model", "texts", "side", "oneDNN", "p50 ms", "ORT p50 ms",
                 "p50 vs ORT", "seq/s @32", "ORT seq/s", "seq/s vs ORT", "max diff vs ORT",
                 "ops/layer", "load")


def table(records) -> str:
  """One row per setting, model and side: ours against ORT float32 of the same run."""
  rows = []
  for r in records:
    ort = r["sides"]["ort_fp32"]
    for name, s in r["sides"].items():
      if name == "ort_fp32":
        continue
      ops = r["ops"].get(name)
      per_layer = f"{sum(ops['per_layer'].values()):.0f}" if ops else "-"
      rows.append([
          r["setting"], r["model"], r.get("texts", "sst2_dev"), name,
          "on" if r["onednn"] else "off", f"{s['p50_ms']:.1f}", f"{ort['p50_ms']:.1f}",
          f"{ort['p50_ms'] / s['p50_ms']:.2f}x", f"{s['rate']:.0f}", f"{ort['rate']:.0f}",
          f"{s['rate'] / ort['rate']:.2f}x", f"{s['max_diff_vs_ort']:.1e}", per_layer,
          f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"])
  return markdown_table(TABLE_HEADERS, rows)


def main() -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--models", default="electra_small,electra_base")
  parser.add_argument("--settings", default=",".join(SETTINGS),
                      help=f"comma-separated, of {', '.join(SETTINGS)}")
  parser.add_argument("--setting", default=None, help=argparse.SUPPRESS)  # the child's
  add_text_timing_flags(parser, rounds=2, latency_texts=60, throughput_texts=128)
  parser.add_argument("--texts", default="sst2_dev",
                      help="a single-text set of bench/serving/inference/texts.py (sst2_dev, cola_dev)")
  parser.add_argument("--layer-norm-forms", action="store_true")
  parser.add_argument("--json", default=None, help="append each result as a JSON line here")
  args = parser.parse_args()
  if args.layer_norm_forms:
    layer_norm_forms()
    return
  if args.setting:
    run_setting(args)
    return
  unknown = sorted(set(args.settings.split(",")) - set(SETTINGS))
  if unknown:
    parser.error(f"unknown settings {', '.join(unknown)}: use {', '.join(SETTINGS)}")
  records = []
  for setting in args.settings.split(","):
    env = {**os.environ, **SETTINGS[setting][0]}
    command = bench_command("bench.serving.server_graph_levers", "--setting", setting, *[
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
        if k in ("models", "rounds", "latency_texts", "throughput_texts", "work_dir",
                 "data_dir", "texts")])
    log(f"{setting}: {' '.join(f'{k}={v}' for k, v in SETTINGS[setting][0].items())}", "levers")
    out = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    results = [json.loads(line[7:]) for line in out.stdout.splitlines()
               if line.startswith("RESULT ")]
    if out.returncode or not results:
      log(f"{setting} failed: {out.stderr[-2000:]}", "levers")
      continue
    for r in results:
      log(f"{setting}/{r['model']}: ops per layer {r['ops']}, custom_gradient markers "
          f"{r['custom_gradient_markers']} (IdentityN run: {r.get('identity_n_run')})", "levers")
    records += results
    for r in results:
      append_json(args.json, r)
    print(table(records[-len(results):]), flush=True)
  print("\n" + table(records))


if __name__ == "__main__":
  main()
