"""Raw-text inference speed: our SavedModel, Keras predict, export, TextScorer and .tflite
files (LiteRT, four quantizations) against PyTorch eager and ONNX Runtime (float32, int8),
in one run, alternating.

    python -m bench.serving.inference_throughput [--models electra_small,electra_base,sst2_finetuned]
        [--texts sst2_dev,mrpc_dev,cola_dev] [--sides pytorch,ort_fp32,...] [--rounds 3]
        [--latency-texts 50] [--throughput-texts 320] [--work-dir /tmp/electra_inference]

Every side gets the same weights (random classifiers of the released shapes, built by
transformers and kept in --work-dir, see bench/serving/inference/models.py; sst2_finetuned is
electra_small fine-tuned on SST-2 in the bench, bench/serving/inference/finetuned.py, judged on
its dev accuracy) and the same raw texts, tokenisation included. Per side it prints batch-1
latency (p50, p95), sequences/s at --batch-size, the largest logit difference from PyTorch,
and the ratios to ONNX Runtime float32, to PyTorch and to ONNX Runtime int8 (above 1: faster
than the anchor); a side that sorts its texts into batches itself (Keras predict,
TextScorer) is compared with `pytorch_sorted`, PyTorch on the same length-sorted batches.
The sides, their
interface and how to add one: bench/serving/inference/__init__.py. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402

from bench.common import add_text_timing_flags, log, markdown_table, script_parser  # noqa: E402
from bench.serving.inference import finetuned, models, texts as text_lib, timing  # noqa: E402
from bench.serving.inference.side import SIDES  # noqa: E402

FINETUNED = "sst2_finetuned"


def machine() -> str:
  """CPU model, its bf16/AMX/VNNI flags, core count and the load, one line."""
  info = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
  fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
  flags = fields.get("Flags", "").split()
  wanted = [f for f in flags if f.startswith(("avx512_bf16", "amx", "avx512_vnni", "avx512f"))]
  return (f"{fields.get('Model name', '?').strip()}, {os.cpu_count()} CPUs, "
          f"flags {' '.join(wanted)}; load {os.getloadavg()[0]:.2f}")


def versions() -> str:
  import onnxruntime
  import tensorflow as tf
  import torch
  import transformers
  return (f"tensorflow {tf.__version__}, torch {torch.__version__}, onnxruntime "
          f"{onnxruntime.__version__}, transformers {transformers.__version__}, "
          f"python {platform.python_version()}")


def max_difference(a: np.ndarray, b: np.ndarray) -> float:
  """The largest |a - b| where both are defined (NaN pads token outputs)."""
  if a.shape != b.shape:
    return float("inf")
  both = ~(np.isnan(a) | np.isnan(b))
  return float(np.max(np.abs(a - b)[both])) if both.any() else float("nan")


def outputs(predict, texts, batch_size: int) -> np.ndarray:
  parts = [predict(t) for t in timing.batches(texts, batch_size)]
  width = max(p.shape[1] for p in parts)
  return np.concatenate([np.pad(p, [(0, 0), (0, width - p.shape[1])], constant_values=np.nan)
                         for p in parts])


def run_fixture(fixture, args) -> dict:
  texts = fixture.texts
  sides = {}
  for name in args.sides:
    start = time.time()
    side = SIDES[name](fixture)
    if side is not None:
      sides[name] = side
      log(f"{fixture.name}/{texts.name}: built {name} in {time.time() - start:.0f}s", "bench")
  order = np.random.default_rng(0).permutation(len(texts))
  latency = [[column[i] for i in order[:args.latency_texts]] for column in texts.columns]
  throughput = [[column[i] for i in order[:args.throughput_texts]] for column in texts.columns]
  pytorch = sides.get("pytorch") or SIDES["pytorch"](fixture)
  expected = outputs(pytorch.predict, throughput, args.batch_size)
  gold = accuracy_reference(fixture, pytorch, args.batch_size)
  results = {}
  for name, side in sides.items():
    theirs = expected if side.reference is None else outputs(side.reference, throughput,
                                                             args.batch_size)
    results[name] = {"side": side.name, "note": side.note, "max_diff": max_difference(
        outputs(side.predict, throughput, args.batch_size), theirs),
                     "sorts": side.predict_all is not None}
    if gold is not None and side.reference is None:
      results[name].update(accuracy(side.predict, gold, texts, args.batch_size))
  load_before = os.getloadavg()[0]
  timings = timing.alternate(sides, latency, throughput, args.batch_size, args.rounds,
                             log=lambda m: log(m, "bench"))
  for name, t in timings.items():
    results[name].update(p50_ms=t.p(50), p95_ms=t.p(95), rate=t.rate, rates=t.rates)
  return {"model": fixture.name, "texts": texts.name, "load": [load_before, os.getloadavg()[0]],
          "sides": results}


def accuracy_reference(fixture, pytorch, batch_size: int):
  """The float32 PyTorch predictions over the whole set, for a fixture judged on accuracy."""
  if not fixture.judge_accuracy or fixture.texts.labels is None:
    return None
  return outputs(pytorch.predict, fixture.texts.columns, batch_size).argmax(1)


def accuracy(predict, reference: np.ndarray, texts, batch_size: int) -> dict:
  """Dev accuracy of `predict`'s argmax, and its agreement with the float32 `reference`."""
  ours = outputs(predict, texts.columns, batch_size).argmax(1)
  return {"accuracy": float(np.mean(ours == np.array(texts.labels))),
          "agreement": float(np.mean(ours == reference))}


TABLE_HEADERS = ("side", "batch-1 p50 ms", "p95 ms", "seq/s @batch", "p50 vs ORT fp32",
                 "seq/s vs ORT fp32", "seq/s vs PyTorch (same batches)", "max logit diff",
                 "dev acc", "agree", "p50 vs ORT int8", "seq/s vs ORT int8")


def table(result: dict) -> str:
  """The markdown table of one fixture, with the ratios to the anchors."""
  sides = result["sides"]
  ort, ort_int8 = sides.get("ort_fp32"), sides.get("ort_int8")
  rows = []
  for r in sides.values():
    # Sides that batch themselves (sorted by length) against PyTorch on the same batches.
    torch = sides.get("pytorch_sorted" if r.get("sorts") else "pytorch")

    def ratio(anchor, key, inverse=False):
      if anchor is None:
        return "-"
      return f"{(anchor[key] / r[key]) if inverse else (r[key] / anchor[key]):.2f}x"
    acc = f"{100 * r['accuracy']:.2f}" if "accuracy" in r else "-"
    agree = f"{100 * r['agreement']:.2f}" if "agreement" in r else "-"
    rows.append([r["side"], f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['rate']:.1f}",
                 ratio(ort, "p50_ms", True), ratio(ort, "rate"), ratio(torch, "rate"),
                 f"{r['max_diff']:.1e}", acc, agree, ratio(ort_int8, "p50_ms", True),
                 ratio(ort_int8, "rate")])
  return (f"{result['model']} on {result['texts']} (load {result['load'][0]:.2f} -> "
          f"{result['load'][1]:.2f})\n\n" + markdown_table(TABLE_HEADERS, rows))


def main() -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--models", default=f"electra_small,electra_base,{FINETUNED}",
                      help=f"comma-separated, of {', '.join(models.SHAPES)}, {FINETUNED}")
  parser.add_argument("--finetune-epochs", type=float, default=3,
                      help=f"{FINETUNED}: epochs over SST-2 train (official: 3)")
  parser.add_argument("--texts", default=None,
                      help="text sets (default all: sst2_dev,mrpc_dev,cola_dev, or embedded)")
  parser.add_argument("--sides", default=",".join(SIDES), help="comma-separated side names")
  parser.add_argument("--batch-size", type=int, default=32)
  add_text_timing_flags(parser, rounds=3, latency_texts=50, throughput_texts=320)
  parser.add_argument("--output", default=None, help="a JSON file for the results")
  args = parser.parse_args()
  args.sides = args.sides.split(",")
  unknown = sorted(set(args.sides) - set(SIDES))
  if unknown:
    parser.error(f"unknown sides {', '.join(unknown)}: use {', '.join(SIDES)}")
  log(machine(), "bench")
  log(versions(), "bench")
  text_sets = text_lib.text_sets(args.work_dir, args.data_dir,
                                 args.texts.split(",") if args.texts else None)
  names = args.models.split(",")
  fixtures = models.random_fixtures([n for n in names if n in models.SHAPES], text_sets,
                                    args.work_dir)
  sst2 = [t for t in text_sets if t.name == "sst2_dev"]
  if FINETUNED in names and sst2:
    hf_dir = finetuned.fine_tune_sst2(args.data_dir, sst2[0].vocab_file, args.work_dir,
                                      args.finetune_epochs, log=lambda m: log(m, "bench"))
    fixtures.append(models.ModelFixture(FINETUNED, hf_dir, sst2[0], os.path.join(
        args.work_dir, "sides", os.path.basename(hf_dir)), judge_accuracy=True))
  results = []
  for fixture in fixtures:
    results.append(run_fixture(fixture, args))
    print("\n" + table(results[-1]) + "\n", flush=True)
  if args.output:
    with open(args.output, "w", encoding="utf-8") as f:
      json.dump({"machine": machine(), "versions": versions(), "args": vars(args),
                 "results": results}, f, indent=1)


if __name__ == "__main__":
  main()
