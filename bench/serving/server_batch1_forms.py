"""The server graph at batch 1: the encoder written in other graph forms,
timed against our own in one process, to see what each form is worth before building it
into the export.

    python -m bench.serving.server_batch1_forms [--models electra_small,electra_base] [--texts 60]
        [--rounds 5] [--data-dir ../shared/data]
    TF_NUM_INTRAOP_THREADS=1 python -m bench.serving.server_batch1_forms ...   # one thread

Forms, all on the same random weights and token ids (SST-2 dev sentences through our
tokenizer, one at a time; the tokenizer itself is not timed):
  ours        the encoder as the SavedModel runs it (`Encoder.call` in a tf.function:
              variables, three q/k/v projections, heads transposed in and out);
  single_threaded  ours called under TensorFlow's single-threaded function executor
              (`executor_type` SINGLE_THREADED_EXECUTOR: ops run in order on the calling
              thread, kernels keep the intra-op pool; the raw-text signature cannot use
              it, its tokenizer's tf.cond lowers to Switch, which that executor refuses);
  frozen      the same graph with its variables folded into constants
              (convert_variables_to_constants_v2): no ReadVariableOp, constant weights;
  fused_qkv   written here on constants: one `[H, 3H]` q/k/v projection per layer (the
              kernels concatenated once, not per call);
  head_major  fused_qkv with the projection into `[3, heads, seq, head_size]` by a
              batched matmul (kernels stored head-major) and the output projection per
              head then summed: no transpose in the layer (a batch of one only).
Prints each form's p50 ms and its ratio to ours, and its largest difference from ours.
"""

from __future__ import annotations

import math
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from bench.common import SHARED_DATA, log, script_parser  # noqa: E402

SHAPES = {"electra_small": (256, 128), "electra_base": (768, 768)}  # hidden, embedding


def encoder_of(model_name: str, vocab_size: int):
  """A random encoder of the released shape (12 layers, heads of 64, FFN 4H)."""
  from electra_tf2 import BertConfig
  from electra_tf2.networks.encoder import Encoder
  hidden, embedding = SHAPES[model_name]
  bert = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=12,
                    num_attention_heads=hidden // 64, intermediate_size=4 * hidden)
  encoder = Encoder(bert, embedding)
  encoder.build()
  return encoder


def layer_constants(layer):
  """One TransformerLayer's weights as tf constants, in the layouts the forms read."""
  import tensorflow as tf
  hidden, heads = layer.hidden_size, layer.num_attention_heads
  size = hidden // heads
  parts = (layer.query, layer.key, layer.value)
  kernel = np.concatenate([d.kernel.numpy() for d in parts], 1)  # [H, 3H]
  bias = np.concatenate([d.bias.numpy() for d in parts], 0)
  const = lambda dense: (tf.constant(dense.kernel.numpy()), tf.constant(dense.bias.numpy()))
  return {
      "qkv": (tf.constant(kernel), tf.constant(bias)),
      "qkv_heads": (tf.constant(kernel.reshape(hidden, 3, heads, size).transpose(1, 2, 0, 3)),
                    tf.constant(bias.reshape(3, heads, 1, size))),
      "out": const(layer.attention_output_dense),
      "out_heads": tf.constant(layer.attention_output_dense.kernel.numpy().reshape(
          heads, size, hidden)),
      "ln1": (tf.constant(layer.attention_layer_norm.gamma.numpy()),
              tf.constant(layer.attention_layer_norm.beta.numpy())),
      "inter": const(layer.intermediate_dense), "output": const(layer.output_dense),
      "ln2": (tf.constant(layer.output_layer_norm.gamma.numpy()),
              tf.constant(layer.output_layer_norm.beta.numpy())),
  }


def hand_written(encoder, head_major: bool):
  """`fused_qkv` or `head_major`: the encoder's layers on constants (see the docstring)."""
  import tensorflow as tf
  from electra_tf2.layers.layer_norm import layer_norm
  layers = [layer_constants(layer) for layer in encoder.transformer_layers]
  hidden = encoder.hidden_size
  heads = encoder.bert_config.num_attention_heads
  size = hidden // heads
  gelu = lambda x: 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))
  dense = lambda x, w: tf.nn.bias_add(tf.matmul(x, w[0]), w[1])

  def attention(x, bias, w, batch, length):
    if head_major:  # [1, 1, L, H] @ [3, heads, H, size] -> [3, heads, L, size]
      q, k, v = tf.unstack(tf.matmul(x[None, None], w["qkv_heads"][0]) + w["qkv_heads"][1])
      probs = tf.nn.softmax(tf.matmul(q * (1 / math.sqrt(size)), k, transpose_b=True) + bias[0])
      context = tf.matmul(probs, v)  # [heads, L, size] @ [heads, size, H], summed
      return tf.reduce_sum(tf.matmul(context, w["out_heads"]), 0) + w["out"][1]
    qkv = tf.transpose(tf.reshape(dense(x, w["qkv"]), [batch, length, 3, heads, size]),
                       [2, 0, 3, 1, 4])
    q, k, v = tf.unstack(qkv)
    probs = tf.nn.softmax(tf.matmul(q * (1 / math.sqrt(size)), k, transpose_b=True) + bias)
    context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
    return dense(tf.reshape(context, [-1, hidden]), w["out"])

  def encode(input_ids, input_mask, segment_ids):
    embedded = encoder.embeddings(input_ids, segment_ids)
    if encoder.embeddings_project is not None:
      embedded = encoder.embeddings_project(embedded)
    batch, length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
    bias = (1.0 - tf.cast(input_mask, tf.float32)[:, None, None, :]) * -10000.0
    x = tf.reshape(embedded, [-1, hidden])
    for w in layers:
      a = layer_norm(attention(x, bias, w, batch, length) + x, *w["ln1"], 1e-12)
      x = layer_norm(dense(gelu(dense(a, w["inter"])), w["output"]) + a, *w["ln2"], 1e-12)
    return tf.reshape(x, [batch, length, hidden])
  return encode


def forms(encoder):
  """{form name: a function of (ids, mask, segments) int32 `[1, seq_len]`}."""
  import tensorflow as tf
  from tensorflow.python.eager import context  # pylint: disable=g-direct-tensorflow-import
  from tensorflow.python.framework.convert_to_constants import (  # pylint: disable=g-direct-tensorflow-import
      convert_variables_to_constants_v2)
  spec = [tf.TensorSpec([None, None], tf.int32)] * 3
  ours = tf.function(lambda i, m, s: encoder(i, m, s), input_signature=spec)
  frozen = convert_variables_to_constants_v2(ours.get_concrete_function())
  def single_threaded(i, m, s):
    with context.function_executor_type("SINGLE_THREADED_EXECUTOR"):
      return ours(i, m, s)
  return {"ours": ours, "single_threaded": single_threaded,
          "frozen": lambda i, m, s: frozen(i, m, s)[0],
          "fused_qkv": tf.function(hand_written(encoder, False), input_signature=spec),
          "head_major": tf.function(hand_written(encoder, True), input_signature=spec)}


def token_ids(data_dir: str, count: int):
  """The first `count` SST-2 dev sentences as `[1, seq_len]` ids (our tokenizer)."""
  import csv
  from electra_tf2.text.tokenizer import FullTokenizer
  with open(os.path.join(data_dir, "glue", "SST-2", "dev.tsv"), encoding="utf-8") as f:
    texts = [row[0] for row in list(csv.reader(f, delimiter="\t",
                                               quoting=csv.QUOTE_NONE))[1:count + 1]]
  tokenizer = FullTokenizer(os.path.join(data_dir, "vocab", "vocab.txt"))
  vocab = tokenizer.vocab
  rows = []
  for ids in tokenizer.encode_batch(texts):
    row = np.array([[vocab["[CLS]"]] + ids[:126] + [vocab["[SEP]"]]], np.int32)
    rows.append((row, np.ones_like(row), np.zeros_like(row)))
  return rows, len(vocab)


def time_forms(functions, rows, rounds: int):
  """{form: p50 seconds}, the forms alternating call by call."""
  import tensorflow as tf
  inputs = [[tf.constant(a) for a in row] for row in rows]
  for function in functions.values():  # warm-up: every length once
    for args in inputs:
      function(*args)
  times = {name: [] for name in functions}
  for _ in range(rounds):
    for args in inputs:
      for name, function in functions.items():
        start = time.perf_counter()
        function(*args)
        times[name].append(time.perf_counter() - start)
  return {name: float(np.median(t)) for name, t in times.items()}


def main() -> None:
  parser = script_parser(__doc__)
  parser.add_argument("--models", default="electra_small,electra_base")
  parser.add_argument("--texts", type=int, default=60)
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--data-dir", default=SHARED_DATA)
  args = parser.parse_args()
  import tensorflow as tf
  rows, vocab_size = token_ids(args.data_dir, args.texts)
  threads = os.environ.get("TF_NUM_INTRAOP_THREADS", "default")
  for model_name in args.models.split(","):
    functions = forms(encoder_of(model_name, vocab_size))
    first = [tf.constant(a) for a in rows[0]]
    reference = functions["ours"](*first).numpy()
    diffs = {name: float(np.max(np.abs(np.asarray(f(*first)) - reference)))
             for name, f in functions.items()}
    p50 = time_forms(functions, rows, args.rounds)
    log(f"{model_name}, intra-op threads {threads}, load {os.getloadavg()[0]:.1f}", "forms")
    for name in functions:
      print(f"  {name:15s} p50 {1000 * p50[name]:6.2f} ms  {p50['ours'] / p50[name]:.2f}x ours"
            f"  max diff {diffs[name]:.1e}", flush=True)


if __name__ == "__main__":
  main()
