"""Where a `.tflite` call's time goes: threads, the XNNPACK delegate, dynamic shapes, the
tokenizer, for an electra_small-shaped classifier on SST-2 dev sentences.

Variants of the same weights (random, electra_small shape), timed alternating in one
process (rounds rotated), batch-1 p50 over `--latency-texts` calls and sequences/s over
`--throughput-texts` at batch 32:

- dynamic-int8 and float32 `.tflite` with 2 threads (the bench's rows), with 1 thread,
  and without the XNNPACK delegate (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES);
- dynamic-int8 with every row padded to max_seq_length (128) inside the graph: shapes
  after the tokenizer then depend on the batch size only;
- the tokenizer alone (raw strings -> input_ids, input_mask, segment_ids).

  python -m bench.profiles.profile_litert [--rounds 2] [--work-dir /tmp/profile_litert]
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402

from bench.common import add_text_timing_flags, log, script_parser  # noqa: E402


def texts_of_sst2(data_dir):
  with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
    return [line.split("\t")[0] for line in f.read().splitlines()[1:]]


def build(work_dir, vocab):
  """{variant: .tflite path} (written once) and the featurizer-only file."""
  import tensorflow as tf
  from electra_tf2 import BertConfig, TextClassifier
  from electra_tf2.litert.convert import write_tflite
  from electra_tf2.text import litert_tokenizer
  bert = BertConfig(len(vocab), hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                    intermediate_size=1024)
  model = TextClassifier(bert, 128, vocab, num_classes=2)
  paths = {name: os.path.join(work_dir, f"{name}.tflite")
           for name in ("dynamic-int8", "none", "padded", "tokenizer")}
  for quantize in ("dynamic-int8", "none"):
    if not os.path.exists(paths[quantize]):
      model.export_litert(paths[quantize], quantize=quantize)
  if not os.path.exists(paths["padded"]):
    pack = litert_tokenizer.LiteRTFeaturizer.pack

    def padded(self, segments):
      features = pack(self, segments)
      pad = self.max_seq_length - tf.shape(features["input_ids"])[1]
      return {k: tf.pad(v, [[0, 0], [0, pad]]) for k, v in features.items()}
    litert_tokenizer.LiteRTFeaturizer.pack = padded
    try:
      model.export_litert(paths["padded"], quantize="dynamic-int8")
    finally:
      litert_tokenizer.LiteRTFeaturizer.pack = pack
  if not os.path.exists(paths["tokenizer"]):
    featurizer = litert_tokenizer.LiteRTFeaturizer(vocab, True, max_seq_length=128)
    write_tflite(paths["tokenizer"], featurizer.single, ["text"], [], {"do_lower_case": True})
  return paths


def runner(path, threads, xnnpack=True):
  import tensorflow_text as tft
  from ai_edge_litert import interpreter as litert
  kind = (litert.OpResolverType.AUTO if xnnpack
          else litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
  interpreter = litert.InterpreterWithCustomOps(
      custom_op_registerers=tft.tflite_registrar.SELECT_TFTEXT_OPS, model_path=path,
      num_threads=threads, experimental_op_resolver_type=kind)
  run = interpreter.get_signature_runner("serving_default")
  return lambda texts: run(text=np.array([t.encode("utf-8") for t in texts], dtype=object))


def time_turn(run, single, batch):
  latencies = []
  for text in single:
    start = time.perf_counter()
    run([text])
    latencies.append(time.perf_counter() - start)
  start = time.perf_counter()
  for i in range(0, len(batch), 32):
    run(batch[i:i + 32])
  return latencies, len(batch) / (time.perf_counter() - start)


def main():
  parser = script_parser(__doc__)
  add_text_timing_flags(parser, rounds=2, latency_texts=40,
                        throughput_texts=256, work_dir="/tmp/profile_litert")
  args = parser.parse_args()
  os.makedirs(args.work_dir, exist_ok=True)
  with open(os.path.join(args.data_dir, "vocab", "vocab.txt"), encoding="utf-8") as f:
    vocab = [line.rstrip("\n") for line in f]
  paths = build(args.work_dir, vocab)
  texts = texts_of_sst2(args.data_dir)
  order = np.random.default_rng(0).permutation(len(texts))
  single = [texts[i] for i in order[:args.latency_texts]]
  batch = [texts[i] for i in order[:args.throughput_texts]]
  variants = {
      "dynamic-int8, 2 threads, XNNPACK": runner(paths["dynamic-int8"], 2),
      "dynamic-int8, 1 thread, XNNPACK": runner(paths["dynamic-int8"], 1),
      "dynamic-int8, 2 threads, no XNNPACK": runner(paths["dynamic-int8"], 2, False),
      "dynamic-int8 padded to 128, 2 threads": runner(paths["padded"], 2),
      "float32, 2 threads, XNNPACK": runner(paths["none"], 2),
      "float32, 1 thread, XNNPACK": runner(paths["none"], 1),
      "float32, 2 threads, no XNNPACK": runner(paths["none"], 2, False),
      "tokenizer alone, 2 threads": runner(paths["tokenizer"], 2),
  }
  names = list(variants)
  for name in names:  # warm-up
    time_turn(variants[name], single[:4], batch[:64])
  latencies = {name: [] for name in names}
  rates = {name: [] for name in names}
  load = os.getloadavg()[0]
  for r in range(args.rounds):
    for name in names[r % len(names):] + names[:r % len(names)]:
      time.sleep(0.3)
      lat, rate = time_turn(variants[name], single, batch)
      latencies[name] += lat
      rates[name].append(rate)
    log(f"round {r + 1}/{args.rounds} done", "profile")
  print(f"\nload {load:.2f} -> {os.getloadavg()[0]:.2f}\n")
  print("| variant | batch-1 p50 ms | seq/s @32 |\n|---|---:|---:|")
  for name in names:
    print(f"| {name} | {1e3 * np.median(latencies[name]):.2f} | {np.median(rates[name]):.1f} |")


if __name__ == "__main__":
  main()
