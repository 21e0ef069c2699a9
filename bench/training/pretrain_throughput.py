"""Pre-training step throughput: electra_tf2 against Model Garden, in the same run.

    python -m bench.training.pretrain_throughput [--model-name electra_small] [--batch-sizes 8,32]
        [--steps 10] [--rounds 3] [--mixed-precision float32] [--jit-compile]
        [--max-batch 256] [--anchor-jit-compile] [--peak-tflops 989.4] [--json FILE]

For each batch size it times a full training step (forward, backward,
optimizer update) of
  - ours: `PretrainingRun.train_step` (in-graph masking, sampling, official
    optimizer), and
  - the anchor: Model Garden's `ElectraPretrainer` (tf_keras) with BertEncoder
    generator/discriminator of the same shapes, the same number of predictions
    and disc weight 50, its masked inputs given (it masks outside the step), and
    tf_keras Adam;
alternating the two `--rounds` times and taking each one's best round (the
machine is shared: one configuration varies by up to 15% between runs). It
prints sequences/s, the ratio, and our model-FLOPs utilisation against a large
matmul timed beside every round (its best time is the peak), in the compute
dtype of `--mixed-precision` (bfloat16 or float16 for the mixed policies).
Model Garden always runs in float32: its `ElectraPretrainer` fails under a
mixed policy (its MaskedLM head adds a float32 bias to half-precision logits). Inputs are in memory: the input
pipeline is measured separately (--pipeline).

`--backend jax` compares our two trainers instead: the TensorFlow one in this process (no
Model Garden) and the JAX one (bench/gpu/jax_pretrain_step.py, KERAS_BACKEND=jax) in a
subprocess run first, at the same batch sizes, precision, steps and rounds; it prints both
and the ratio JAX / TensorFlow.

`--max-batch N` replaces the fixed batch sizes: each side runs at the largest
of N, N/2, N/4, ... whose step fits in memory (a GPU's out-of-memory error
moves on to the next). `--anchor-jit-compile` compiles Model Garden's step
with XLA. `--peak-tflops` adds MFU against a datasheet peak (a GPU's dense
bf16 rate), `--json FILE` appends one JSON object per row.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench.common import (REPO, add_batch_flags, append_json, bench_command,  # noqa: E402
                          fake_pretraining_batch, is_out_of_memory_message)
from bench.common import largest_batch as common_largest_batch, script_parser  # noqa: E402
from electra_tf2.config.pretraining import (PretrainingConfig,  # noqa: E402
                                            resolve_pretraining_config)
from electra_tf2.pretraining.flops import train_step_flops  # noqa: E402
from electra_tf2.training.options import RunOptions  # noqa: E402
from electra_tf2.training.tf_pretraining import PretrainingRun  # noqa: E402


# ---------------------------------------------------------------------------
# Peak
# ---------------------------------------------------------------------------


def compute_dtype(mixed_precision: str) -> tf.DType:
  """The dtype the matmuls of a `--mixed-precision` policy run in."""
  return {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}.get(mixed_precision,
                                                                          tf.float32)


def matmul_peak_flops(dtype: tf.DType = tf.float32, n: int = 2048, repeats: int = 10) -> float:
  """FLOP/s of `repeats` chained `[n, n]` matmuls in `dtype`, best of 3."""
  a = tf.random.normal([n, n], dtype=dtype)
  b = tf.random.normal([n, n], dtype=dtype)

  @tf.function
  def run():
    c = a
    for _ in range(repeats):
      c = tf.matmul(c, b) * 1e-3
    return c
  run().numpy()
  best = float("inf")
  for _ in range(3):
    start = time.perf_counter()
    run().numpy()
    best = min(best, time.perf_counter() - start)
  return 2.0 * n ** 3 * repeats / best


# ---------------------------------------------------------------------------
# The two steps
# ---------------------------------------------------------------------------


def fake_features(config: PretrainingConfig, batch: int, seed: int = 0) -> Dict[str, tf.Tensor]:
  return {k: tf.constant(v) for k, v in fake_pretraining_batch(
      batch, config.max_seq_length, config.vocab_size, seed).items()}


def ours_step(config: PretrainingConfig, batch: int, options: RunOptions) -> Callable:
  run = PretrainingRun(config, options)
  features = fake_features(config, batch)

  @tf.function
  def step():
    return run.train_step([features])["total_loss"]
  return step


def model_garden_step(config: PretrainingConfig, batch: int, jit_compile: bool = False
                      ) -> Callable:
  import tf_keras
  from official.nlp.modeling import models, networks
  d, g = config.bert_config, config.generator_bert_config
  E, N, L = config.resolved_embedding_size, config.max_predictions_per_seq, config.max_seq_length

  def encoder(bert):
    return networks.BertEncoder(
        vocab_size=bert.vocab_size, hidden_size=bert.hidden_size,
        num_layers=bert.num_hidden_layers, num_attention_heads=bert.num_attention_heads,
        max_sequence_length=bert.max_position_embeddings, type_vocab_size=2,
        inner_dim=bert.intermediate_size,
        inner_activation=lambda x: tf_keras.activations.gelu(x, approximate=False),
        output_dropout=0.1, attention_dropout=0.1, embedding_width=E, dict_outputs=True,
        initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))

  pretrainer = models.ElectraPretrainer(
      generator_network=encoder(g), discriminator_network=encoder(d), vocab_size=d.vocab_size,
      num_classes=2, num_token_predictions=N,
      mlm_activation=lambda x: tf_keras.activations.gelu(x, approximate=False),
      mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
  optimizer = tf_keras.optimizers.Adam(1e-4)
  rng = np.random.default_rng(1)
  features = fake_features(config, batch)
  positions = np.sort(rng.integers(1, L - 1, (batch, N)), -1).astype(np.int32)
  inputs = {"input_word_ids": features["input_ids"], "input_mask": features["input_mask"],
            "input_type_ids": features["segment_ids"],
            "masked_lm_positions": tf.constant(positions),
            "masked_lm_ids": tf.gather(features["input_ids"], positions, batch_dims=1),
            "masked_lm_weights": tf.ones([batch, N])}

  @tf.function(jit_compile=jit_compile)
  def step():
    with tf.GradientTape() as tape:
      out = pretrainer(inputs, training=True)
      mlm = tf_keras.losses.sparse_categorical_crossentropy(
          inputs["masked_lm_ids"], out["lm_outputs"], from_logits=True)
      mlm = tf.reduce_sum(mlm * inputs["masked_lm_weights"]) / tf.reduce_sum(
          inputs["masked_lm_weights"])
      mask = tf.cast(inputs["input_mask"], tf.float32)
      disc = tf.nn.sigmoid_cross_entropy_with_logits(
          labels=tf.cast(out["disc_label"], tf.float32), logits=out["disc_logits"])
      loss = mlm + 50.0 * tf.reduce_sum(disc * mask) / tf.reduce_sum(mask)
    variables = pretrainer.trainable_variables
    grads = tape.gradient(loss, variables)
    grads, _ = tf.clip_by_global_norm(grads, 1.0)
    optimizer.apply_gradients(zip(grads, variables))
    return loss
  return step


def time_steps(step: Callable, steps: int) -> float:
  """Seconds per step over `steps` steps (after the caller's warm-up)."""
  start = time.perf_counter()
  for _ in range(steps):
    loss = step()
  loss.numpy()
  return (time.perf_counter() - start) / steps


def is_out_of_memory(error: Exception) -> bool:
  """Whether a TensorFlow error is an allocation failure (XLA reports some as internal)."""
  return isinstance(error, tf.errors.ResourceExhaustedError) or is_out_of_memory_message(error)


def largest_batch(make_step: Callable[[int], Callable], top: int, name: str = ""
                  ) -> Tuple[int, Callable]:
  """The first of top, top/2, top/4, ... whose step builds and runs (compiled and warmed
  up: two steps), with that step; re-raises any error but running out of memory."""
  return common_largest_batch(make_step, top, lambda step: time_steps(step, 2),
                              is_out_of_memory, name, errors=(tf.errors.OpError,))


def device_name() -> str:
  """The first GPU's name as TensorFlow reports it, or "CPU"."""
  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    return "CPU"
  return tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)


def measure(steps: Dict[str, Tuple[int, Callable]], args, dtype: tf.DType,
            peak: float) -> Tuple[Dict[str, float], float]:
  """Best seconds per step of each side over `args.rounds` alternating rounds, and the
  matmul peak (FLOP/s) re-measured beside every round."""
  best = {name: float("inf") for name in steps}
  for _ in range(args.rounds):
    peak = max(peak, matmul_peak_flops(dtype, args.peak_size))
    for name, (_, step) in steps.items():
      best[name] = min(best[name], time_steps(step, args.steps))
  return best, peak


def row(args, config: PretrainingConfig, steps, best, peak: float) -> Dict[str, Any]:
  """One result: sequences/s of both sides, the ratio, FLOP/s and MFU of ours."""
  batch = steps["ours"][0]
  flops = train_step_flops(config, batch) / best["ours"]
  anchor = steps["mg"][0] / best["mg"] if "mg" in steps else None
  ours = batch / best["ours"]
  return {
      "model": args.model_name, "hparams": json.loads(args.hparams), "seq_len": args.seq_len,
      "precision": args.mixed_precision,
      "jit_compile": args.jit_compile, "batch": batch, "ours_seq_per_s": ours,
      "anchor_batch": steps["mg"][0] if "mg" in steps else None,
      "anchor_jit_compile": args.anchor_jit_compile if "mg" in steps else None,
      "anchor_seq_per_s": anchor, "ratio": ours / anchor if anchor else None,
      "ours_tflops": flops / 1e12, "matmul_peak_tflops": peak / 1e12,
      "mfu_vs_matmul": flops / peak,
      "peak_tflops": args.peak_tflops,
      "mfu_vs_peak": flops / (args.peak_tflops * 1e12) if args.peak_tflops else None,
      "tf32": tf.config.experimental.tensor_float_32_execution_enabled(),
      "device": device_name(), "steps": args.steps, "rounds": args.rounds}


def print_row(r: Dict[str, Any]) -> None:
  anchor = "" if r["anchor_seq_per_s"] is None else (
      f"{r['anchor_seq_per_s']:>9.2f} {r['anchor_batch']:>5} {r['ratio']:>6.2f}")
  mfu = "" if r["mfu_vs_peak"] is None else f" {r['mfu_vs_peak']:>9.1%}"
  print(f"{r['batch']:>5} {r['ours_seq_per_s']:>11.2f} {anchor:>22} "
        f"{r['ours_tflops'] * 1e3:>13.1f} {r['mfu_vs_matmul']:>6.1%}{mfu}", flush=True)


def parse_args(argv=None) -> argparse.Namespace:
  parser = script_parser(__doc__, whole=False)
  add_batch_flags(parser)
  parser.add_argument("--backend", choices=("tensorflow", "jax"), default="tensorflow",
                      help="jax: our TensorFlow trainer against our JAX trainer")
  parser.add_argument("--skip-model-garden", action="store_true")
  parser.add_argument("--anchor-jit-compile", action="store_true",
                      help="Model Garden's step compiled with XLA")
  parser.add_argument("--peak-size", type=int, default=2048,
                      help="n of the [n, n] matmuls timed for the peak (8192 on a GPU)")
  return parser.parse_args(argv)


def jax_rows(args) -> list:
  """bench/gpu/jax_pretrain_step.py's rows at the same settings, run in a subprocess."""
  flags = ["--model-name", args.model_name, "--hparams", args.hparams, "--seq-len",
           str(args.seq_len), "--mixed-precision", args.mixed_precision, "--steps",
           str(args.steps), "--rounds", str(args.rounds)]
  flags += (["--max-batch", str(args.max_batch)] if args.max_batch else
            ["--batch-sizes", args.batch_sizes])
  flags += ["--peak-tflops", str(args.peak_tflops)] if args.peak_tflops else []
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "jax.jsonl")
    env = dict(os.environ, KERAS_BACKEND="jax", ELECTRA_BLOCK_TENSORFLOW="1")
    subprocess.run(bench_command("bench.gpu.jax_pretrain_step", *flags, "--json", path),
                   check=True, env=env, cwd=REPO)
    with open(path, encoding="utf-8") as f:
      return [json.loads(line) for line in f if line.strip()]


def step_settings(args) -> Tuple[RunOptions, Callable[[int], PretrainingConfig]]:
  """The run options of --mixed-precision and --jit-compile, and the config of a batch size:
  --model-name with --hparams, length --seq-len, no warm-up."""
  options = RunOptions(distribution_strategy="one_device",
                       mixed_precision=args.mixed_precision, jit_compile=args.jit_compile)
  hparams = json.loads(args.hparams)

  def config(batch: int) -> PretrainingConfig:
    return resolve_pretraining_config(args.model_name, None, {
        **hparams, "max_seq_length": args.seq_len, "train_batch_size": batch,
        "num_warmup_steps": 0})
  return options, config


def compare_backends(args) -> None:
  """Our TensorFlow step (in this process) against our JAX step (a subprocess, first)."""
  jax_by_batch = {r["batch"]: r for r in jax_rows(args)}
  options, config = step_settings(args)
  print(f"{'batch':>5} {'TF seq/s':>10} {'JAX seq/s':>10} {'JAX/TF':>7} "
        f"{'JAX compile s':>13} {'TF GFLOP/s':>11} {'JAX GFLOP/s':>11}", flush=True)
  for batch, jax_row in sorted(jax_by_batch.items()):
    step = ours_step(config(batch), batch, options)
    time_steps(step, 2)
    best = min(time_steps(step, args.steps) for _ in range(args.rounds))
    tf_seq = batch / best
    flops = train_step_flops(config(batch), batch)
    record = {"model": args.model_name, "hparams": json.loads(args.hparams),
              "seq_len": args.seq_len, "precision": args.mixed_precision, "batch": batch,
              "tf_jit_compile": args.jit_compile, "tf_seq_per_s": tf_seq,
              "jax_seq_per_s": jax_row["seq_per_s"],
              "jax_compile_seconds": jax_row["compile_seconds"],
              "ratio_jax_over_tf": jax_row["seq_per_s"] / tf_seq,
              "tf_tflops": flops / best / 1e12, "jax_tflops": jax_row["tflops"],
              "device": device_name(), "jax_device": jax_row["device"], "steps": args.steps,
              "rounds": args.rounds}
    print(f"{batch:>5} {tf_seq:>10.2f} {jax_row['seq_per_s']:>10.2f} "
          f"{record['ratio_jax_over_tf']:>7.2f} {jax_row['compile_seconds']:>13.1f} "
          f"{record['tf_tflops'] * 1e3:>11.1f} {jax_row['tflops'] * 1e3:>11.1f}", flush=True)
    append_json(args.json, record)


def main(argv=None) -> None:
  args = parse_args(argv)
  if args.backend == "jax":
    compare_backends(args)
    return
  peak = 0.0
  dtype = compute_dtype(args.mixed_precision)
  options, config = step_settings(args)
  makers = {"ours": lambda b: ours_step(config(b), b, options)}
  if not args.skip_model_garden:
    makers["mg"] = lambda b: model_garden_step(config(b), b, args.anchor_jit_compile)
  print(f"{'batch':>5} {'ours seq/s':>11} {'MG seq/s':>9} {'batch':>5} {'ratio':>6} "
        f"{'ours GFLOP/s':>13} {'MFU':>6}" + (" MFU(peak)" if args.peak_tflops else ""))
  batches = ([None] if args.max_batch else
             [int(b) for b in args.batch_sizes.split(",")])
  for batch in batches:
    if batch is None:  # each side at its largest batch
      steps = {name: largest_batch(make, args.max_batch, name) for name, make in makers.items()}
    else:
      steps = {name: (batch, make(batch)) for name, make in makers.items()}
      for _, step in steps.values():  # compile and warm up
        time_steps(step, 2)
    best, peak = measure(steps, args, dtype, peak)
    record = row(args, config(steps["ours"][0]), steps, best, peak)
    print_row(record)
    append_json(args.json, record)
  print(f"{dtype.name} matmul peak ({args.peak_size}^3, best of this run's rounds): "
        f"{peak / 1e9:.1f} GFLOP/s; MFU is against it")


if __name__ == "__main__":
  main()
