"""What XNNPACK's partitions of the dynamic-shape graph cost: the bench's electra_small
classifier (random weights, bench/serving/inference/models.py) converted with dynamic-int8 on int32
ids (no tokenizer) of a dynamic `[None, None]` shape, resized to `[1, --length]`, against the
same converted on a static `[1, --length]` shape (the runtime-shape reshapes folded away, fewer
partitions). Prints each file's DELEGATE (XNNPACK partition), RESHAPE and SHAPE node counts
and the interpreter's `invoke()` p50 over --rounds rounds of --calls calls, alternating.

  python -m bench.serving.litert_static_shape [--length 12] [--threads 1] [--rounds 5] [--calls 100]
      [--work-dir /tmp/electra_inference_bench]

Results: docs/benchmarks.md#litert-tflite.
"""

from __future__ import annotations

import collections
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402

from bench.common import add_data_flags, script_parser  # noqa: E402
from bench.serving.inference import models, texts as text_lib  # noqa: E402
from bench.serving.inference.ours import keras_classifier  # noqa: E402

NAMES = ("input_ids", "input_mask", "segment_ids")


def convert(model, shape) -> bytes:
  """`model`'s logits on int32 features of `shape`, dynamic-int8."""
  import tensorflow as tf

  def logits(input_ids, input_mask, segment_ids):
    return {"logits": model.call_features(dict(zip(NAMES, (input_ids, input_mask,
                                                           segment_ids))))}
  specs = [tf.TensorSpec(shape, tf.int32, name) for name in NAMES]
  root = tf.Module()
  root.weights = [v.value for v in model.variables]
  lite = tf.lite.TFLiteConverter.from_concrete_functions(
      [tf.function(logits, input_signature=specs).get_concrete_function()], root)
  lite.optimizations = [tf.lite.Optimize.DEFAULT]
  return lite.convert()


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--length", type=int, default=12, help="tokens (CoLA: about 12)")
  parser.add_argument("--threads", type=int, default=1)
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--calls", type=int, default=100)
  add_data_flags(parser)
  args = parser.parse_args()
  from electra_tf2.litert.model import make_interpreter
  texts = text_lib.text_sets(args.work_dir, args.data_dir, ["cola_dev", "embedded"])[:1]
  fixture = models.random_fixtures(["electra_small"], texts, args.work_dir)[0]
  model = keras_classifier(fixture.hf_dir, False, fixture.max_seq_length)
  shape = [1, args.length]
  interpreters = {}
  for name, signature in (("dynamic [None, None]", [None, None]), (f"static {shape}", shape)):
    interpreter = make_interpreter(model_content=convert(model, signature),
                                   num_threads=args.threads)
    for detail in interpreter.get_input_details():
      interpreter.resize_tensor_input(detail["index"], shape)
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
      interpreter.set_tensor(detail["index"], np.ones(shape, np.int32))
    ops = interpreter._get_ops_details()  # pylint: disable=protected-access
    nodes = collections.Counter(op["op_name"] for op in ops)
    print(f"{name}: {nodes['DELEGATE']} DELEGATE, {nodes['RESHAPE']} RESHAPE, "
          f"{nodes['SHAPE']} SHAPE nodes", flush=True)
    interpreters[name] = interpreter
  seconds = {name: [] for name in interpreters}
  load = os.getloadavg()[0]
  for _ in range(args.rounds):
    for name, interpreter in interpreters.items():
      for _ in range(args.calls):
        start = time.perf_counter()
        interpreter.invoke()
        seconds[name].append(time.perf_counter() - start)
  for name, values in seconds.items():
    print(f"{name}: invoke() p50 {1e3 * np.median(values):.3f} ms ({len(values)} calls, "
          f"{args.threads} thread(s), load {load:.2f} -> {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
  main()
