"""Where the time of raw-text prediction goes, per batch size: our SavedModel and Keras predict.

    python -m bench.profiles.profile_inference [--model electra_small] [--batch-sizes 1,32]
        [--calls 20] [--top 15] [--work-dir /tmp/electra_inference_bench]

On the bench's model and SST-2 dev texts (bench/serving/inference_throughput.py builds and
caches both in --work-dir), per batch size it prints the wall time per call of
  - the SavedModel's serving_default (tokenizer, encoder, head, one call), cold (the
    first call at each batch shape: oneDNN primitives created) and warm,
  - its parts as separate tf.functions: the in-graph tokenizer (`TextInputs`) alone,
    and the encoder and head on the token ids,
  - Keras `predict` of the same texts (its per-call set-up included),
then the TensorFlow profiler's time per op type of the serving_default calls
(summed over threads: on 2 cores up to twice the wall time) and the op count.
"""

from __future__ import annotations

import collections
import glob
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("USE_TF", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.common import SHARED_DATA, script_parser  # noqa: E402
from bench.serving.inference import models, ours, texts as text_lib  # noqa: E402
from bench.profiles.profile_pretrain_step import op_times, read_space  # noqa: E402


def per_call_ms(function, inputs, warm: bool = True) -> float:
  """Median wall time of `function(x)` (outputs fetched) over `inputs`, after a warm-up
  pass (`warm`) or not (the first call at each input shape)."""
  for x in inputs if warm else []:
    tf.nest.map_structure(np.asarray, function(x))
  times = []
  for x in inputs:
    start = time.perf_counter()
    tf.nest.map_structure(np.asarray, function(x))
    times.append(time.perf_counter() - start)
  return float(np.median(times)) * 1e3


def main() -> None:
  parser = script_parser(__doc__, whole=False)
  parser.add_argument("--model", default="electra_small", choices=list(models.SHAPES))
  parser.add_argument("--batch-sizes", default="1,32")
  parser.add_argument("--calls", type=int, default=20)
  parser.add_argument("--top", type=int, default=15)
  parser.add_argument("--work-dir", default="/tmp/electra_inference_bench")
  args = parser.parse_args()
  texts = text_lib.text_sets(args.work_dir, SHARED_DATA)[:1]
  fixture = models.random_fixtures([args.model], texts, args.work_dir)[0]
  serve = ours.savedmodel(fixture).predict
  model = ours.keras_classifier(fixture.hf_dir, False, fixture.max_seq_length)
  string = [tf.TensorSpec([None], tf.string)]
  tokenize = tf.function(lambda t: model.text_inputs(t), input_signature=string)
  ids = [tf.TensorSpec([None, None], tf.int32)] * 3
  encode = tf.function(lambda *f: model.head(model.encoder(*f), None)["logits"],
                       input_signature=ids)
  sentences = fixture.texts.columns[0]
  order = np.random.default_rng(0).permutation(len(sentences))
  for batch in map(int, args.batch_sizes.split(",")):
    calls = [[sentences[i] for i in order[k * batch:(k + 1) * batch]]
             for k in range(min(args.calls, len(sentences) // batch))]
    features = [tokenize(tf.constant(c)) for c in calls]
    parts = {
        "serving_default, cold": per_call_ms(lambda c: serve([c]), calls, warm=False),
        "serving_default": per_call_ms(lambda c: serve([c]), calls),
        "tokenizer alone": per_call_ms(lambda c: tokenize(tf.constant(c)), calls),
        "encoder + head on ids": per_call_ms(
            lambda f: encode(f["input_ids"], f["input_mask"], f["segment_ids"]), features),
        "Keras predict": per_call_ms(
            lambda c: model.predict(c, batch_size=batch, verbose=0), calls),
    }
    print(f"\n{args.model}, batch {batch}, load {os.getloadavg()[0]:.2f}: ms per call")
    for name, value in parts.items():
      print(f"  {name:24s} {value:8.2f}")
    with tempfile.TemporaryDirectory() as logdir:
      tf.profiler.experimental.start(logdir)
      for c in calls:
        serve([c])
      tf.profiler.experimental.stop()
      times = op_times(read_space(
          glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)[0]))
    by_type, count = collections.Counter(), collections.Counter()
    for (_, op_type), ps in times.items():
      if not op_type.startswith(("__inference", "Run")) and op_type.strip():
        by_type[op_type] += ps / 1e9 / len(calls)
        count[op_type] += 1
    print(f"  serving_default op time {sum(by_type.values()):.2f} ms per call over "
          f"{sum(count.values())} distinct ops; by type:")
    for op_type, value in by_type.most_common(args.top):
      print(f"    {op_type:32s} {value:8.3f} ms  ({count[op_type]} ops)")


if __name__ == "__main__":
  main()
