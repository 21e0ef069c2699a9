"""LiteRT dynamic-int8 through `LiteRTModel.predict` at 1 and 2 interpreter threads against
ONNX Runtime dynamic int8 at its default threads (one per core) and at 1, per text set.

The bench's fixture of each model, electra_small by default (bench/serving/inference/models.py),
written by `export_litert`
(the `litert_dynamic_int8` side's file) and its `quantize_dynamic` ONNX anchor with the
fast tokenizer (bench/serving/inference/anchors.py). Batch 1: per text the fastest of --repeats
turns of each side, one side after the other on the same text (a shared host's stalls fall
out), p50 over the texts. Batch --batch-size: the best of --rounds rounds over the same
batches, sides alternating. Ratios against ONNX Runtime at its default threads.

  python -m bench.serving.litert_threads_vs_ort [--models electra_small,electra_base]
      [--texts cola_dev,sst2_dev,mrpc_dev] [--repeats 3]
      [--latency-texts 100] [--throughput-texts 320] [--rounds 3]
      [--work-dir /tmp/electra_inference_bench]

Results: docs/benchmarks.md#litert-tflite.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402

from bench.common import add_text_timing_flags, log, script_parser  # noqa: E402
from bench.serving.inference import anchors, models, texts as text_lib, timing  # noqa: E402
from bench.serving.inference.side import SIDES  # noqa: E402

ANCHOR = "ORT int8, default threads"


def sides(fixture):
  """{name: predict(columns) -> logits}: LiteRTModel at 1 and 2 threads, ONNX Runtime."""
  import onnxruntime
  from electra_tf2 import LiteRTModel
  SIDES["litert_dynamic_int8"](fixture)  # writes the .tflite once
  pairs = fixture.texts.pairs
  path = fixture.path(f"litert_{'pairs' if pairs else 'single'}_dynamic-int8.tflite")

  def lite(num_threads):
    model = LiteRTModel(path, num_threads=num_threads)
    return lambda texts: model.predict(tuple(texts) if pairs else texts[0],
                                       len(texts[0]))["logits"]

  def ort(num_threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = num_threads  # 0: one per core
    session = onnxruntime.InferenceSession(anchors.int8_model(fixture), options,
                                           providers=["CPUExecutionProvider"])

    def predict(texts):
      features = fixture.encode(texts, "np")
      return session.run(["logits"], {k: features[k] for k in anchors.ONNX_INPUTS
                                      if k in features})[0]
    return predict
  return {"LiteRT 1 thread": lite(1), "LiteRT 2 threads": lite(2), ANCHOR: ort(0),
          "ORT int8, 1 thread": ort(1)}


def measure(named, single, batches, repeats: int, rounds: int):
  """{name: (batch-1 p50 s, best batch rate seq/s)}."""
  for predict in named.values():  # warm-up: the shapes once
    for texts in single[:10] + batches:
      predict(texts)
  latency = {name: [] for name in named}
  for texts in single:
    for name, predict in named.items():
      latency[name].append(min(timing_of(predict, texts) for _ in range(repeats)))
  rates = {name: [] for name in named}
  count = sum(len(b[0]) for b in batches)
  names = list(named)
  for r in range(rounds):
    for name in names[r % len(names):] + names[:r % len(names)]:
      time.sleep(timing.PAUSE_S)
      rates[name].append(count / sum(timing_of(named[name], b) for b in batches))
  return {name: (float(np.median(latency[name])), max(rates[name])) for name in named}


def timing_of(predict, texts) -> float:
  start = time.perf_counter()
  predict(texts)
  return time.perf_counter() - start


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--models", default="electra_small",
                      help="comma-separated: electra_small, electra_base")
  parser.add_argument("--texts", default="cola_dev,sst2_dev,mrpc_dev")
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--batch-size", type=int, default=32)
  add_text_timing_flags(parser, rounds=3, latency_texts=100, throughput_texts=320)
  args = parser.parse_args()
  names = args.texts.split(",")
  sets = sorted(text_lib.text_sets(args.work_dir, args.data_dir, names),
                key=lambda s: names.index(s.name))
  print("| texts (load) | side | batch-1 p50 ms | seq/s @batch | p50 vs ORT default "
        "| seq/s vs ORT default |\n|---|---|---:|---:|---:|---:|")
  for fixture in models.random_fixtures(args.models.split(","), sets, args.work_dir):
    cols = fixture.texts.columns
    order = np.random.default_rng(0).permutation(len(fixture.texts))
    single = [[[c[i]] for c in cols] for i in order[:args.latency_texts]]
    chosen = order[:args.throughput_texts]
    batches = [[[c[i] for i in chosen[j:j + args.batch_size]] for c in cols]
               for j in range(0, len(chosen), args.batch_size)]
    load = os.getloadavg()[0]
    figures = measure(sides(fixture), single, batches, args.repeats, args.rounds)
    p50, rate = figures[ANCHOR]
    label = f"{fixture.name}, {fixture.texts.name} ({load:.2f} -> {os.getloadavg()[0]:.2f})"
    for name, (ms, seq) in figures.items():
      print(f"| {label} | {name} | {1e3 * ms:.2f} | {seq:.1f} | {p50 / ms:.2f}x "
            f"| {seq / rate:.2f}x |", flush=True)
      label = ""
  log("done", "threads")


if __name__ == "__main__":
  main()
