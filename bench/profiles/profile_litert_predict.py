"""Where `LiteRTModel.predict`'s time goes at batch 1 on short texts (CoLA dev sentences,
about 9 words), against ONNX Runtime's tokenizer and session; then the thread count.

The bench's electra_small fixture (random weights of the released shape, built by
transformers in --work-dir, bench/serving/inference/models.py) written by `export_litert` and
run by `LiteRTModel` (its default threads: one), and its ONNX Runtime anchor of
the same precision (float32 fused or `quantize_dynamic` int8). Per CoLA text, in turn,
the fastest of --repeats turns of each step (p50 over the texts):

- `predict([text])`, and within that very call the interpreter's `invoke()` (timed by
  wrapping it): the rest is the Python around the interpreter (argument checks, length
  batching, the UTF-8 and final-sigma passes, the input set, the output copies and
  re-ordering);
- `prepare_texts` + the object array alone (the UTF-8 and final-sigma passes);
- `predict([text])` as it was before the interpreter was reused, through the signature runner (which allocates every
  tensor again on each call), and its extra time per text;
- ONNX Runtime: the fast tokenizer (`fixture.encode`) and `session.run`.

Then cProfile's heaviest entries of `predict` over the texts, and batch-1 p50 / batch-32
rate per interpreter thread count, alternating in rounds.

  python -m bench.profiles.profile_litert_predict [--quantize dynamic-int8,none] [--texts 300]
      [--repeats 3] [--threads 1,2] [--rounds 3] [--work-dir /tmp/electra_inference_bench]

Results: docs/benchmarks.md#litert-tflite.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402

from bench.common import add_data_flags, log, script_parser  # noqa: E402
from bench.serving.inference import anchors, models, texts as text_lib  # noqa: E402
from bench.serving.inference.side import SIDES  # noqa: E402

LITERT_SIDES = {"dynamic-int8": "litert_dynamic_int8", "none": "litert_fp32"}
ORT_MODELS = {"dynamic-int8": anchors.int8_model, "none": anchors.onnx_model}


def timed(call) -> float:
  start = time.perf_counter()
  call()
  return time.perf_counter() - start


def split(lite, session, fixture, texts, repeats):
  """{step: seconds per text} of batch-1 calls, one text after the other; per text and
  step the fastest of `repeats` turns (a shared host's stalls fall out)."""
  from electra_tf2.text.litert_tokenizer import prepare_texts
  interpreter = lite._interpreter  # pylint: disable=protected-access
  fast = lite._call  # pylint: disable=protected-access
  invoke, inside = interpreter.invoke, []

  def timed_invoke():
    inside.append(timed(invoke))

  def before(text):  # as before: the signature runner allocates every tensor each call
    runner = interpreter.get_signature_runner("serving_default")
    lite._call = runner  # pylint: disable=protected-access
    seconds = timed(lambda: lite.predict([text]))
    lite._call = fast  # pylint: disable=protected-access
    del runner  # Interpreter.invoke refuses while a signature runner holds the interpreter
    return seconds
  steps = {k: [] for k in ("predict", "invoke", "around", "prepare", "before", "saved",
                           "ORT tokenizer", "ORT session.run")}
  for text in texts:
    turns = {k: [] for k in steps if k != "saved"}
    for _ in range(repeats):
      interpreter.invoke = timed_invoke  # the interpreter's share of this very call
      turns["predict"].append(timed(lambda: lite.predict([text])))
      del interpreter.invoke
      turns["invoke"].append(inside.pop())
      turns["around"].append(turns["predict"][-1] - turns["invoke"][-1])
      turns["prepare"].append(timed(lambda: np.array(
          prepare_texts([text], lite.do_lower_case), dtype=object)))
      turns["before"].append(before(text))
      features = []
      turns["ORT tokenizer"].append(timed(
          lambda: features.append(fixture.encode([[text]], "np"))))
      feed = {k: v for k, v in features[0].items() if k in anchors.ONNX_INPUTS}
      turns["ORT session.run"].append(timed(lambda: session.run(["logits"], feed)))
    for k, v in turns.items():
      steps[k].append(min(v))
    steps["around"][-1] = turns["around"][int(np.argmin(turns["predict"]))]
    steps["saved"].append(steps["before"][-1] - steps["predict"][-1])
  return steps


def print_split(steps):
  p50 = {k: 1e3 * float(np.median(v)) for k, v in steps.items()}
  ort = 1e3 * float(np.median(np.add(steps["ORT tokenizer"], steps["ORT session.run"])))
  rows = [
      ("LiteRTModel.predict([text])", p50["predict"]),
      ("  of which the interpreter's invoke()", p50["invoke"]),
      ("  of which Python around it (per call: predict less its invoke)", p50["around"]),
      ("    of which prepare_texts + object array (UTF-8, final sigma)", p50["prepare"]),
      ("predict as before (signature runner: every tensor allocated on each call)",
       p50["before"]),
      ("  its extra time (per text: before less now)", p50["saved"]),
      ("ONNX Runtime: tokenizer + session.run", ort),
      ("  of which the fast tokenizer", p50["ORT tokenizer"]),
      ("  of which session.run", p50["ORT session.run"]),
  ]
  print("| step (batch 1; per text its fastest turn, p50 over the texts) | ms | share of predict |"
        "\n|---|---:|---:|")
  for label, ms in rows:
    print(f"| {label} | {ms:.3f} | {100 * ms / p50['predict']:.0f}% |")


def print_profile(lite, texts, top: int):
  profile = cProfile.Profile()
  profile.enable()
  for text in texts:
    lite.predict([text])
  profile.disable()
  out = io.StringIO()
  pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(top)
  print("\n".join(line for line in out.getvalue().splitlines() if line.strip()))


def threads_table(path, texts, counts, rounds):
  """Batch-1 p50 and batch-32 seq/s of `LiteRTModel(path, num_threads)` per count."""
  from electra_tf2 import LiteRTModel
  lites = {n: LiteRTModel(path, num_threads=n) for n in counts}
  latencies = {n: [] for n in counts}
  rates = {n: [] for n in counts}
  for n in counts:  # warm-up
    lites[n].predict(texts[:64])
  for r in range(rounds):
    for n in counts[r % len(counts):] + counts[:r % len(counts)]:
      time.sleep(0.3)
      latencies[n] += [timed(lambda: lites[n].run_batch([t])) for t in texts[:100]]
      start = time.perf_counter()
      for i in range(0, len(texts), 32):
        lites[n].run_batch(texts[i:i + 32])
      rates[n].append(len(texts) / (time.perf_counter() - start))
  print("| num_threads | batch-1 p50 ms | seq/s @32 (median round) |\n|---|---:|---:|")
  for n in counts:
    print(f"| {n} | {1e3 * np.median(latencies[n]):.2f} | {np.median(rates[n]):.1f} |")


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--quantize", default="dynamic-int8,none",
                      help=f"comma-separated, of {', '.join(LITERT_SIDES)}")
  parser.add_argument("--texts", type=int, default=300, help="CoLA dev texts timed")
  parser.add_argument("--threads", default="1,2", help="interpreter thread counts compared")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--repeats", type=int, default=3,
                      help="turns per text and step in the split (the fastest counts)")
  parser.add_argument("--cprofile", type=int, default=15, help="cProfile entries printed")
  add_data_flags(parser)
  args = parser.parse_args()
  sets = text_lib.text_sets(args.work_dir, args.data_dir, ["cola_dev"])
  if not sets:
    parser.error(f"no CoLA dev set in {args.data_dir}/glue/CoLA/dev.tsv")
  cola = sets[0]
  fixture = models.random_fixtures(["electra_small"], [cola], args.work_dir)[0]
  order = np.random.default_rng(0).permutation(len(cola))
  texts = [cola.columns[0][i] for i in order[:args.texts]]
  import onnxruntime
  from electra_tf2 import LiteRTModel
  counts = [int(n) for n in args.threads.split(",")]
  for quantize in args.quantize.split(","):
    SIDES[LITERT_SIDES[quantize]](fixture)  # writes the .tflite once
    path = fixture.path(f"litert_single_{quantize}.tflite")
    session = onnxruntime.InferenceSession(ORT_MODELS[quantize](fixture),
                                           providers=["CPUExecutionProvider"])
    lite = LiteRTModel(path)
    split(lite, session, fixture, texts[:20], 1)  # warm-up
    load = os.getloadavg()[0]
    steps = split(lite, session, fixture, texts, args.repeats)
    print(f"\n{quantize}, {len(texts)} CoLA dev texts, LiteRTModel's default threads, load "
          f"{load:.2f} -> {os.getloadavg()[0]:.2f}\n")
    print_split(steps)
    print(f"\ncProfile of predict([text]) over the texts, by own time ({quantize}):\n")
    print_profile(lite, texts, args.cprofile)
    load = os.getloadavg()[0]
    print(f"\nthreads, {quantize} (load {load:.2f}):\n")
    threads_table(path, texts, counts, args.rounds)
    print(f"(load after: {os.getloadavg()[0]:.2f})")
    log(f"{quantize} done", "profile")


if __name__ == "__main__":
  main()
