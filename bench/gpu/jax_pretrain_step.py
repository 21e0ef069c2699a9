"""Pre-training step throughput of the JAX trainer, with no TensorFlow: the compiled step of
electra_tf2/training/jax_pretraining.py on in-memory batches.

    KERAS_BACKEND=jax python -m bench.gpu.jax_pretrain_step [--model-name electra_small]
        [--hparams JSON] [--seq-len 128] [--batch-sizes 8,32 | --max-batch 256]
        [--mixed-precision float32|mixed_bfloat16] [--steps 10] [--rounds 3]
        [--peak-tflops 989.4] [--split] [--profile 5] [--json FILE]
    ... --train-steps 300 --log-every 10 [--seed 0]     # numerics: a loss curve

For each batch size it builds `JaxPretrainingRun` (the preset with `train_batch_size` the
batch and `max_seq_length` the length), compiles its step ahead of time (the compilation
time is reported apart), runs two warm-up steps, then `--rounds` rounds of `--steps` steps
on one fake batch held on the device, and keeps the best round. A row (printed, and one
JSON line appended to `--json`): sequences/s, steps/s, seconds per step, the hours of one
million such steps, the step's analytic matmul FLOPs (electra_tf2/pretraining/flops.py
`train_step_flops`, the count bench/training/pretrain_throughput.py uses), TFLOP/s and, with
`--peak-tflops` (a datasheet dense bf16 peak: 989.4 for the H100 SXM and the H200), MFU.

`--max-batch N` replaces the batch sizes: the largest of N, N/2, N/4, ... whose step
compiles and runs (halving on out-of-memory). `--split` also times, at the same batch, the
forward pass alone and forward + backward (jit-compiled apart): the optimizer update and
the rest is the step less forward + backward. `--train-steps N` trains N steps instead,
each on a fresh batch of Zipf-distributed tokens from `--seed` (the same batches for every
precision), and records the mean losses of every `--log-every` steps (the numerics item
of scripts/gpu_run.sh --backend jax). `--profile N` traces N more steps with
`jax.profiler` and adds where their device time goes (bench/profiles/trace_summary.py: the top
kernels and the share of matmuls, scatters, random bits, reductions, copies) to the row.
On the CPU it traces every HLO instruction XLA runs (host tracer level 3) and adds their
time, summed over threads, by phase of the step (masking, generator forward, sampling,
discriminator forward, each part's backward, the optimizer update: from the instructions'
`op_name`, the step traced with `phase_scopes`) and by category (dot, elementwise, reduce,
gather or scatter, copy or transpose, random bits), with the traced step's time.

ELECTRA_BLOCK_TENSORFLOW=1 makes `import tensorflow` fail (the GPU machine has none).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from bench import common

LOSSES = ("total_loss", "mlm_loss", "disc_loss")


def parse_args(argv=None) -> argparse.Namespace:
  parser = common.script_parser(__doc__, whole=False)
  common.add_batch_flags(parser)
  parser.add_argument("--split", action="store_true",
                      help="also time forward alone and forward + backward")
  parser.add_argument("--profile", type=int, default=0, metavar="N",
                      help="trace N more steps: where the device time goes")
  parser.add_argument("--profile-dir", default=None,
                      help="with --profile: keep the trace and the compiled step's HLO here")
  parser.add_argument("--train-steps", type=int, default=None,
                      help="numerics: train this many steps on fresh batches, log the losses")
  parser.add_argument("--log-every", type=int, default=10)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--dropout-bits", choices=("threefry", "philox"), default="threefry",
                      help="the random bits of the dropout masks: Keras's (threefry) or, a "
                           "lever, XLA's Philox generator (philox_dropout)")
  parser.add_argument("--attention-kernel", choices=("official", "cudnn"), default="official",
                      help="RunOptions.attention_kernel: cudnn runs the attention and its "
                           "dropout in cuDNN's fused kernel (bf16 on a GPU)")
  args = parser.parse_args(argv)
  if args.mixed_precision not in ("float32", "mixed_bfloat16"):
    parser.error(f"--mixed-precision {args.mixed_precision}: the JAX trainer takes float32 "
                 "or mixed_bfloat16")
  return args


# ---------------------------------------------------------------------------
# One run at one batch size
# ---------------------------------------------------------------------------


def device_batch(run, batch: Dict[str, np.ndarray]):
  """`batch` on the device(s): `run.put` (sharded under DataParallel), else device_put."""
  import jax  # pylint: disable=g-import-not-at-top
  placed = run.put(batch)
  return jax.device_put(placed) if placed is batch else placed


class Bench:
  """A `JaxPretrainingRun` at one batch size, its step compiled, its state and batch on the
  device."""

  def __init__(self, args: argparse.Namespace, batch: int):
    from electra_tf2.training.jax_pretraining import JaxPretrainingRun
    from electra_tf2.training.options import RunOptions
    self.args, self.batch = args, batch
    self.config = make_config(args, batch)
    self.run = JaxPretrainingRun(self.config, RunOptions(
        backend="jax", mixed_precision=args.mixed_precision,
        attention_kernel=args.attention_kernel))
    self.state = self.run.state()
    self.features = self.put(common.fake_pretraining_batch(
        batch, args.seq_len, self.config.vocab_size, args.seed))
    start = time.perf_counter()
    with phase_scopes() if args.profile else contextlib.nullcontext():
      lowered = self.run.step_function.lower(self.state, self.features, np.int32(0))
    self.step_function = lowered.compile()
    self.compile_seconds = time.perf_counter() - start
    self.step = 0
    self.donated = None  # the state the last step took

  def put(self, batch: Dict[str, np.ndarray]):
    return device_batch(self.run, batch)

  def run_steps(self, steps: int, features=None) -> Dict[str, Any]:
    """Runs `steps` steps (on `features`, default the bench's batch) and waits for them;
    the last step's losses as floats."""
    import jax  # pylint: disable=g-import-not-at-top
    losses = None
    for _ in range(steps):
      # As JaxPretrainingRun.step: the donated state dropped a step later, so that the
      # host does not wait for each step to end before queueing the next.
      self.donated, (self.state, losses, _) = self.state, self.step_function(
          self.state, self.features if features is None else features, np.int32(self.step))
      self.step += 1
    jax.block_until_ready(self.state)
    return {k: float(v) for k, v in losses.items()}

  def seconds_per_step(self, steps: int) -> float:
    start = time.perf_counter()
    self.run_steps(steps)
    return (time.perf_counter() - start) / steps

  def split_seconds(self, rounds: int, steps: int) -> Dict[str, float]:
    """Best seconds of the forward pass alone and of forward + backward (gradients)."""
    import jax  # pylint: disable=g-import-not-at-top
    from electra_tf2.pretraining import objectives
    model, config = self.run.model, self.config
    trainable, non_trainable, _ = self.state
    seed = np.array([0, config.seed], np.int32)

    def loss(trainable, non_trainable, features, seed):
      outputs, _ = model.stateless_call(
          trainable, non_trainable, features, training=True, seed=seed,
          denominators=objectives.loss_denominators(config, features))
      return outputs["total_loss"]
    parts = {"forward_seconds": jax.jit(loss),
             "forward_backward_seconds": jax.jit(jax.grad(loss))}
    best = {}
    for name, function in parts.items():
      jax.block_until_ready(function(trainable, non_trainable, self.features, seed))
      best[name] = float("inf")
      for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
          out = function(trainable, non_trainable, self.features, seed)
        jax.block_until_ready(out)
        best[name] = min(best[name], (time.perf_counter() - start) / steps)
    return best

  def profile(self, steps: int, keep_dir: Optional[str] = None) -> Dict[str, Any]:
    """Traces `steps` steps with jax.profiler; bench/profiles/trace_summary.py's summary (top 60
    kernels). `keep_dir` keeps the perfetto trace and the compiled step's HLO (gzipped)."""
    import gzip  # pylint: disable=g-import-not-at-top
    import shutil  # pylint: disable=g-import-not-at-top
    import tempfile  # pylint: disable=g-import-not-at-top

    import jax  # pylint: disable=g-import-not-at-top

    from bench.profiles import trace_summary  # pylint: disable=g-import-not-at-top
    on_cpu = jax.devices()[0].platform == "cpu"
    options = jax.profiler.ProfileOptions()
    if on_cpu:  # XLA:CPU traces each instruction it runs at this level only
      options.host_tracer_level = trace_summary.HOST_TRACER_LEVEL
    with tempfile.TemporaryDirectory() as log_dir:
      start = time.perf_counter()
      with jax.profiler.trace(log_dir, create_perfetto_trace=True, profiler_options=options):
        self.run_steps(steps)
        traced_seconds = (time.perf_counter() - start) / steps
      if keep_dir:
        os.makedirs(keep_dir, exist_ok=True)
        shutil.copy(trace_summary.trace_file(log_dir),
                    os.path.join(keep_dir, "perfetto_trace.json.gz"))
        with gzip.open(os.path.join(keep_dir, "step_hlo.txt.gz"), "wt") as f:
          f.write(self.step_function.as_text())
      events = trace_summary.load_events(log_dir)
    summary = (trace_summary.summarize_host_ops(events, self.step_function.as_text(), top=60)
               if on_cpu else trace_summary.summarize(events, top=60))
    return {**summary, "traced_step_seconds": traced_seconds}


@contextlib.contextmanager
def phase_scopes():
  """Names the parts of the step that are no layer of their own, for a profile: masking,
  sampling, the two losses and the metric statistics run under `jax.named_scope`s
  (`masking`, `sampling`, `generator_loss`, `discriminator_loss`, `metrics`) while the step
  is traced, and so appear in its instructions' `op_name` (bench/profiles/trace_summary.py
  `phase_of`). The computation is the same."""
  import jax  # pylint: disable=g-import-not-at-top
  from electra_tf2.pretraining import pretrain_helpers as helpers, objectives
  wrapped = [(helpers, "mask", "masking"), (objectives, "get_fake_data", "sampling"),
             (objectives, "softmax_output", "generator_loss"),
             (objectives, "discriminator_output", "discriminator_loss"),
             (objectives, "metric_statistics", "metrics")]
  originals = [getattr(module, name) for module, name, _ in wrapped]

  def scoped(function, scope):
    def call(*args, **kwargs):
      with jax.named_scope(scope):
        return function(*args, **kwargs)
    return call
  try:
    for (module, name, scope), function in zip(wrapped, originals):
      setattr(module, name, scoped(function, scope))
    yield
  finally:
    for (module, name, _), function in zip(wrapped, originals):
      setattr(module, name, function)


@contextlib.contextmanager
def philox_dropout():
  """A lever, not the library's path: Keras's JAX dropout draws its masks with threefry
  (`jax.random.bernoulli` on the layer's `SeedGenerator` seed); here the same seed keys
  XLA's own generator (`lax.rng_bit_generator`, Philox on GPUs, through JAX's
  `unsafe_rbg` key) and a 32-bit draw below `keep * 2**32` keeps a value. The same rate
  and scaling, other random bits (tests/test_gpu_run.py checks the keep rate)."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from keras.src.backend.jax import random as jax_random  # pylint: disable=g-import-not-at-top
  original = jax_random.dropout

  def dropout(inputs, rate, noise_shape=None, seed=None):
    words = jnp.asarray(jax_random.jax_draw_seed(seed), jnp.uint32)
    key = jax.random.wrap_key_data(jnp.concatenate([words, words ^ jnp.uint32(0x9E3779B9)]),
                                   impl="unsafe_rbg")
    shape = jax_random._get_concrete_noise_shape(inputs, noise_shape)  # pylint: disable=protected-access
    keep = 1.0 - rate
    kept = jax.random.bits(key, shape, jnp.uint32) < jnp.uint32(min(round(keep * 2**32),
                                                                    2**32 - 1))
    kept = jnp.broadcast_to(kept, inputs.shape)
    return jax.lax.select(kept, inputs / keep, jnp.zeros_like(inputs))
  jax_random.dropout = dropout
  try:
    yield
  finally:
    jax_random.dropout = original


def make_config(args: argparse.Namespace, batch: int):
  from electra_tf2.config.pretraining import resolve_pretraining_config
  overrides = {"max_seq_length": args.seq_len, "train_batch_size": batch, "seed": args.seed}
  if args.train_steps is None:
    overrides["num_warmup_steps"] = 0
  else:
    overrides.update(num_train_steps=args.train_steps,
                     num_warmup_steps=max(1, args.train_steps // 10))
  return resolve_pretraining_config(args.model_name, None,
                                    {**overrides, **json.loads(args.hparams)})


def bench_at(args: argparse.Namespace, batch: int) -> Bench:
  bench = Bench(args, batch)
  bench.run_steps(2)  # warm-up: the first runs also allocate
  return bench


def largest_bench(args: argparse.Namespace) -> Bench:
  _, bench = common.largest_batch(lambda b: bench_at(args, b), args.max_batch,
                                  warm_up=lambda bench: None, name="jax")
  return bench


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------


def environment() -> Dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  import jaxlib  # pylint: disable=g-import-not-at-top
  import keras  # pylint: disable=g-import-not-at-top
  device = jax.devices()[0]
  return {"backend": "jax", "device": f"{device.platform}: {device.device_kind}",
          "devices": jax.device_count(), "jax": jax.__version__,
          "jaxlib": jaxlib.__version__, "keras": keras.__version__,
          "python": platform.python_version()}


def throughput_row(args: argparse.Namespace, bench: Bench) -> Dict[str, Any]:
  from electra_tf2.pretraining.flops import train_step_flops
  best = min(bench.seconds_per_step(args.steps) for _ in range(args.rounds))
  flops = train_step_flops(bench.config, bench.batch)
  row = {"model": args.model_name, "hparams": json.loads(args.hparams),
         "seq_len": args.seq_len, "precision": args.mixed_precision, "jit_compile": True,
         "batch": bench.batch, "seq_per_s": bench.batch / best, "steps_per_s": 1 / best,
         "step_seconds": best, "hours_per_million_steps": 1e6 * best / 3600,
         "compile_seconds": bench.compile_seconds, "train_step_tflop": flops / 1e12,
         "tflops": flops / best / 1e12, "peak_tflops": args.peak_tflops,
         "mfu": flops / best / (args.peak_tflops * 1e12) if args.peak_tflops else None,
         "steps": args.steps, "rounds": args.rounds, "dropout_bits": args.dropout_bits,
         "attention_kernel": args.attention_kernel,
         **environment()}
  if args.split:
    row.update(bench.split_seconds(args.rounds, args.steps))
  if args.profile:
    row.update(profile=bench.profile(args.profile, args.profile_dir),
               profile_steps=args.profile)
  return row


def print_row(r: Dict[str, Any]) -> None:
  mfu = "" if r["mfu"] is None else f" {r['mfu']:>6.1%}"
  print(f"{r['batch']:>5} {r['seq_per_s']:>10.2f} {r['step_seconds'] * 1e3:>10.1f} "
        f"{r['compile_seconds']:>9.1f} {r['tflops'] * 1e3:>12.1f}{mfu}", flush=True)
  if "forward_seconds" in r:
    f, fb, s = r["forward_seconds"], r["forward_backward_seconds"], r["step_seconds"]
    print(f"      split: forward {f * 1e3:.1f} ms ({f / s:.0%}), backward "
          f"{(fb - f) * 1e3:.1f} ms ({(fb - f) / s:.0%}), optimizer and the rest "
          f"{(s - fb) * 1e3:.1f} ms ({(s - fb) / s:.0%}) of {s * 1e3:.1f} ms", flush=True)
  if "profile" in r:
    from bench.profiles import trace_summary  # pylint: disable=g-import-not-at-top
    print(f"      traced: {r['profile']['traced_step_seconds'] * 1e3:.1f} ms per step "
          f"(untraced {r['step_seconds'] * 1e3:.1f})", flush=True)
    trace_summary.print_summary(r["profile"], r["profile_steps"])


def train_curve(args: argparse.Namespace) -> Dict[str, Any]:
  """`--train-steps` steps, each on a fresh Zipf batch of `--seed`; the mean losses of every
  `--log-every` steps."""
  batch = int(args.batch_sizes.split(",")[0])
  start = time.perf_counter()
  bench = Bench(args, batch)
  history: List[Dict[str, Any]] = []
  window: List[Dict[str, float]] = []
  for step in range(args.train_steps):
    features = bench.put(common.fake_pretraining_batch(
        batch, args.seq_len, bench.config.vocab_size, seed=args.seed * 1_000_003 + step,
        zipf=1.3))
    window.append(bench.run_steps(1, features))
    if len(window) == args.log_every or step + 1 == args.train_steps:
      history.append({"step": step + 1, **{k: float(np.mean([w[k] for w in window]))
                                           for k in LOSSES}})
      common.log(f"step {step + 1}: " + ", ".join(f"{k} {history[-1][k]:.4f}"
                                                  for k in LOSSES))
      window = []
  return {"model": args.model_name, "hparams": json.loads(args.hparams),
          "seq_len": args.seq_len, "batch": batch, "precision": args.mixed_precision,
          "jit_compile": True, "seed": args.seed, "steps": args.train_steps,
          "history": history, "seconds": time.perf_counter() - start, **environment()}


def main(argv: Optional[List[str]] = None) -> List[Dict[str, Any]]:
  args = parse_args(argv)
  os.environ.setdefault("KERAS_BACKEND", "jax")
  with philox_dropout() if args.dropout_bits == "philox" else contextlib.nullcontext():
    return measure(args)


def measure(args: argparse.Namespace) -> List[Dict[str, Any]]:
  if args.train_steps is not None:
    record = train_curve(args)
    common.append_json(args.json, record)
    return [record]
  print(f"{'batch':>5} {'seq/s':>10} {'step ms':>10} {'compile s':>9} {'GFLOP/s':>12}"
        + (f" {'MFU':>6}" if args.peak_tflops else ""), flush=True)
  makers: List[Callable[[], Bench]] = (
      [lambda: largest_bench(args)] if args.max_batch else
      [lambda b=int(b): bench_at(args, b) for b in args.batch_sizes.split(",")])
  rows = []
  for make in makers:
    row = throughput_row(args, make())
    print_row(row)
    common.append_json(args.json, row)
    rows.append(row)
  print(f"device: {rows[-1]['device']}, jax {rows[-1]['jax']}, keras {rows[-1]['keras']}")
  return rows


if __name__ == "__main__":
  common.block_tensorflow_if_asked()
  main()
