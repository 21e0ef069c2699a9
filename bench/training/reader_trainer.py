"""Is the JAX trainer fed at its step's speed? Its reader, its step and the trainer itself,
one run; and the TensorFlow trainer's tf.data input at the same batch.

    python -m bench.training.reader_trainer [--examples 20000] [--files 8] [--seq-len 128]
        [--batch 128] [--reader-batches 300] [--steps 40] [--log-every 10]
        [--hparams JSON] [--no-tf-data] [--json FILE]

Writes synthetic pre-training TFRecords (ids over BERT's 30,522-word vocabulary, random
lengths, as tests/fixtures.py; written here without TensorFlow) and times, on them:

- `reader`: `PretrainingDataReader` in this process (CRCs checked, the training
  configuration: shuffles on), sequences/s of wall time and of this process's CPU time
  (on a host shared with other jobs the wall figure says how much CPU the process got,
  the CPU figure what one core does);
- `reader process`: the same reader in its worker process (`BackgroundReader`), as the
  trainer takes its batches (wall);
- `tf.data`: `input_pipeline.input_fn` at the same batch in a subprocess (the TensorFlow
  trainer's input, its threads; wall), unless --no-tf-data;
- `step`: the JAX trainer's compiled step (`JaxPretrainingRun.step_function`) on one batch
  held on the device, --hparams over electra_small (default: one layer of width 64, no
  dropout, a 1,000-word vocabulary: the fastest step a CPU runs, so that reading would
  show), on TFRecords of the same layout over the step's vocabulary;
- `feed`: the same compiled step fed as the trainer feeds it (the reader's worker
  process, each batch put on the device two steps ahead) with no progress lines, metrics
  or checkpoints: the feed alone;
- `feed, released at once`: the same with each donated state dropped when the step's
  call returns, as the trainer did before `JaxPretrainingRun.step` (dropping an array a
  running step took waits for that step to end: the host waits for every step);
- `no-op`: a compiled program that hands the step's state back unchanged (donated):
  what passing the state (1,256 arrays for electra_small) costs the host a call;
- the host's time a step of `step`, `feed` and `no-op`, in ms: taking the batch, in the
  call (wall) and this thread's CPU time in the call. A call's wall far above its CPU
  time waited for the devices (their queue full, or the program waiting on the host);
  near it, the host's own work (then the host, not the device, sets the pace where
  taking + call CPU reaches the step's time);
- `trainer`: `electra pretrain --backend jax` itself (`training.jax_pretraining.train`)
  for --steps steps: its progress lines' sequences/s after the first (compile) interval,
  each line's printed (a stall in one interval shows).

Prints each rate and the ratios: feed / step and trainer / step (the target: at least
0.95; feed below it: the feed; trainer below feed: the trainer's logging), reader /
step (how many steps' worth the reader reads), reader / tf.data.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from bench.common import script_parser  # noqa: E402

from electra_tf2.data_io import tfrecord  # noqa: E402
from electra_tf2.data_io.background import BackgroundReader  # noqa: E402
from electra_tf2.data_io.pretraining import PretrainingDataReader  # noqa: E402

SMALL_STEP = {"model_hparam_overrides": {"num_hidden_layers": 1, "hidden_size": 64,
                                         "intermediate_size": 128, "num_attention_heads": 1,
                                         "hidden_dropout_prob": 0.0,
                                         "attention_probs_dropout_prob": 0.0},
              "embedding_size": 32, "num_warmup_steps": 2, "vocab_size": 1000}


def parse_args(argv=None) -> argparse.Namespace:
  parser = script_parser(__doc__, whole=False)
  sizes = {"--examples": 20000, "--files": 8, "--seq-len": 128, "--batch": 128,
           "--reader-batches": 300}
  for flag, default in sizes.items():
    parser.add_argument(flag, type=int, default=default)
  parser.add_argument("--steps", type=int, default=40, help="the trainer's steps")
  parser.add_argument("--log-every", type=int, default=10)
  parser.add_argument("--hparams", default=json.dumps(SMALL_STEP),
                      help="JSON hparams over electra_small's for the step and the trainer")
  parser.add_argument("--mixed-precision", default="float32",
                      choices=("float32", "mixed_bfloat16"),
                      help="the step's and the trainer's precision (a GPU: mixed_bfloat16)")
  parser.add_argument("--no-tf-data", action="store_true")
  parser.add_argument("--tf-data-only", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--json", default=None, help="append the result as one JSON line")
  return parser.parse_args(argv)


def write_data(data_dir: str, examples: int, files: int, seq_len: int, vocab: int = 30522
               ) -> str:
  """vocab.txt (BERT's special ids: 0 and 100-103) of `vocab` words and
  pretrain_tfrecords/ as `electra build-data` lays them out; the TFRecords' glob pattern."""
  rng = np.random.default_rng(0)
  os.makedirs(os.path.join(data_dir, "pretrain_tfrecords"))
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]",
                                                               "[MASK]"])
  tokens += [f"w{i}" for i in range(vocab - len(tokens))]
  with open(os.path.join(data_dir, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  records: List[List[bytes]] = [[] for _ in range(files)]
  for n in range(examples):
    length = int(rng.integers(seq_len // 2, seq_len + 1))
    split = int(rng.integers(2, length - 1))
    ids = rng.integers(104, vocab, seq_len)
    ids[0], ids[split], ids[length - 1] = 101, 102, 102
    ids[length:] = 0
    mask = (np.arange(seq_len) < length).astype(np.int64)
    segments = ((np.arange(seq_len) > split) & (mask == 1)).astype(np.int64)
    records[n % files].append(tfrecord.int64_example(
        {"input_ids": ids, "input_mask": mask, "segment_ids": segments}))
  prefix = os.path.join(data_dir, "pretrain_tfrecords", "pretrain_data.tfrecord")
  for i, shard in enumerate(records):
    tfrecord.write_records(f"{prefix}-{i}-of-{files}", shard)
  return prefix + "*"


def reader_rates(pattern: str, args) -> Dict[str, float]:
  """The reader's sequences/s in this process (wall and CPU) and from its worker process."""
  reader = PretrainingDataReader(pattern, args.seq_len, args.batch, seed=0)
  for _ in range(5):
    next(reader)
  wall, cpu = time.perf_counter(), time.process_time()
  for _ in range(args.reader_batches):
    next(reader)
  sequences = args.reader_batches * args.batch
  rates = {"reader_wall": sequences / (time.perf_counter() - wall),
           "reader_cpu": sequences / (time.process_time() - cpu)}
  with BackgroundReader(reader) as background:
    for _ in range(5):
      next(background)
    wall = time.perf_counter()
    for _ in range(args.reader_batches):
      next(background)
    rates["reader_process"] = sequences / (time.perf_counter() - wall)
  return rates


def tf_data_rate(data_dir: str, args) -> float:
  """input_fn's sequences/s (the TensorFlow trainer's input), in a subprocess."""
  command = [sys.executable, "-m", "bench.training.reader_trainer", "--tf-data-only", data_dir,
             "--seq-len", str(args.seq_len), "--batch", str(args.batch),
             "--reader-batches", str(args.reader_batches)]
  result = subprocess.run(command, capture_output=True, text=True, check=True,
                          env=dict(os.environ, KERAS_BACKEND="tensorflow"))
  return float(result.stdout.strip().splitlines()[-1])


def tf_data_only(args) -> None:
  from electra_tf2.data_io import input_pipeline  # pylint: disable=g-import-not-at-top
  from electra_tf2.config.pretraining import resolve_pretraining_config  # pylint: disable=g-import-not-at-top
  config = resolve_pretraining_config("electra_small", args.tf_data_only,
                                      {"max_seq_length": args.seq_len})
  batches = iter(input_pipeline.input_fn(config, True, args.batch))
  for _ in range(20):  # fills the shuffle and prefetch buffers
    next(batches)
  start = time.perf_counter()
  for _ in range(args.reader_batches):
    next(batches)["input_ids"].numpy()
  print(args.reader_batches * args.batch / (time.perf_counter() - start))


def config_of(data_dir: str, model_dir: str, args):
  from electra_tf2.config.pretraining import resolve_pretraining_config  # pylint: disable=g-import-not-at-top
  hparams = dict(json.loads(args.hparams), max_seq_length=args.seq_len,
                 train_batch_size=args.batch, num_train_steps=args.steps,
                 save_checkpoints_steps=args.steps, iterations_per_loop=args.log_every,
                 model_dir=model_dir)
  return resolve_pretraining_config("electra_small", data_dir, hparams)


def step_timers(config, pattern: str, args) -> Dict[str, Callable[[], Dict[str, float]]]:
  """Timers of the compiled step, each call sequences/s over as many steps as the
  trainer's timed ones and the host's time a step (ms: taking the batch, in the call, this
  thread's CPU time in the call): `step`, on one batch held on the device; `feed`, fed as
  the trainer feeds it (`BackgroundReader`, `put_ahead`) but with no progress lines,
  metrics or checkpoints (the host waits for the devices at the end only); `no-op`, a
  compiled program that hands the step's state back unchanged (donated, as the step's):
  what passing the state costs the host a call."""
  import jax  # pylint: disable=g-import-not-at-top
  from electra_tf2.data_io.background import put_ahead  # pylint: disable=g-import-not-at-top
  from electra_tf2.training.jax_pretraining import JaxPretrainingRun  # pylint: disable=g-import-not-at-top
  run = JaxPretrainingRun(config, run_options(args))
  reader = PretrainingDataReader(pattern, args.seq_len, args.batch, seed=0)
  batch = run.put(next(reader))
  carried = {"state": run.state()}
  steps = max(args.steps - args.log_every, args.log_every)
  no_op = jax.jit(lambda state, batch, step: (state, {}, {}), donate_argnums=(0,))

  def timed(count: int, next_batch: Callable[[], Any], function=run.step_function,
            at_once: bool = False) -> Dict[str, float]:
    state, read, call, call_cpu = carried["state"], 0.0, 0.0, 0.0
    start = time.perf_counter()
    for step in range(count):
      taking = time.perf_counter()
      item = next_batch()
      calling, cpu = time.perf_counter(), time.thread_time()
      # As JaxPretrainingRun.step: the donated state dropped a step later (at_once: when
      # the call returns, as the trainer did before: the host waits for the step's end).
      carried["donated"], (state, losses, _) = state, function(state, item, np.int32(step))
      if at_once:
        carried["donated"] = None
      read += calling - taking
      call += time.perf_counter() - calling
      call_cpu += time.thread_time() - cpu
    jax.block_until_ready((state, losses))
    carried["state"] = state
    return {"rate": count * args.batch / (time.perf_counter() - start),
            "read_ms": 1e3 * read / count, "call_ms": 1e3 * call / count,
            "call_cpu_ms": 1e3 * call_cpu / count}

  def fed(at_once: bool = False) -> Dict[str, float]:
    with BackgroundReader(reader) as background:
      batches = put_ahead(background, run.put)
      timed(5, lambda: next(batches)[0])  # the worker starts, its queue fills
      return timed(steps, lambda: next(batches)[0], at_once=at_once)

  timed(3, lambda: batch)  # compiles
  timed(3, lambda: batch, no_op)
  return {"step": lambda: timed(steps, lambda: batch), "feed": fed,
          "feed, released at once": lambda: fed(at_once=True),
          "no-op": lambda: timed(steps, lambda: batch, no_op)}


def run_options(args):
  from electra_tf2.training.options import RunOptions  # pylint: disable=g-import-not-at-top
  return RunOptions(backend="jax", mixed_precision=args.mixed_precision)


def trainer_rates(config, args) -> List[float]:
  """`train`'s sequences/s of each progress line after the first (which holds the
  compile; the last checkpoint is written after the last line)."""
  from electra_tf2.training.jax_pretraining import train  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryFile("w+") as lines:
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(lines.fileno(), 1)  # the progress lines, wherever sys.stdout was bound
    try:
      train(config, run_options(args))
    finally:
      sys.stdout.flush()
      os.dup2(saved, 1)
      os.close(saved)
    lines.seek(0)
    rates = [float(m) for m in re.findall(r"\| ([0-9.]+) seq/s", lines.read())]
  return rates[1:]


def measure(args) -> Dict[str, Any]:
  with tempfile.TemporaryDirectory() as tmp:
    data_dir = os.path.join(tmp, "data")
    pattern = write_data(data_dir, args.examples, args.files, args.seq_len)
    result: Dict[str, Any] = reader_rates(pattern, args)
    if not args.no_tf_data:
      result["tf_data"] = tf_data_rate(data_dir, args)
    # The step's data: the same layout over the step's (smaller) vocabulary.
    vocab = json.loads(args.hparams).get("vocab_size", 30522)
    if vocab != 30522:
      data_dir = os.path.join(tmp, "step_data")
      pattern = write_data(data_dir, args.examples, args.files, args.seq_len, vocab)
    config = config_of(data_dir, os.path.join(tmp, "model"), args)
    timers = step_timers(config, pattern, args)
    # The step before and after the trainer: on a shared host the load drifts.
    host = {key: timer() for key, timer in timers.items()}
    result["step_before"], result["feed"] = host["step"]["rate"], host["feed"]["rate"]
    result["feed_at_once"] = host["feed, released at once"]["rate"]
    result["host_ms"] = {k: {n: v for n, v in r.items() if n != "rate"}
                         for k, r in host.items()}
    result["trainer_lines"] = trainer_rates(config, args)
    result["trainer"] = float(np.mean(result["trainer_lines"]))
    result["step_after"] = timers["step"]()["rate"]
    result["step"] = (result["step_before"] + result["step_after"]) / 2
  return result


def main(argv=None) -> None:
  args = parse_args(argv)
  if args.tf_data_only:
    tf_data_only(args)
    return
  import jax  # pylint: disable=g-import-not-at-top
  load = os.getloadavg()[0]
  result = measure(args)
  print(f"length {args.seq_len}, batch {args.batch}, {args.files} files, on "
        f"{jax.devices()[0].platform}; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end ({os.cpu_count()} CPUs)")
  names = {"reader_cpu": "reader (CPU time of its process)", "reader_wall": "reader (wall)",
           "reader_process": "reader in its worker process (wall)",
           "tf_data": "tf.data input_fn (wall)",
           "step_before": "step, batch on the device (before the trainer)",
           "step_after": "step, batch on the device (after the trainer)",
           "step": "step (mean of the two)",
           "feed": "step fed as the trainer feeds it, no logs",
           "feed_at_once": "the same, each donated state dropped at once",
           "trainer": "trainer (electra pretrain --backend jax)"}
  for key, name in names.items():
    if key in result:
      print(f"{name:45s} {result[key]:12,.0f} seq/s")
  print("the host's time a step, ms: taking the batch, in the step's call (wall), of it "
        "this thread's CPU")
  for key, split in result["host_ms"].items():
    print(f"  {key:24s} {split['read_ms']:8.3f} {split['call_ms']:8.3f} "
          f"{split['call_cpu_ms']:8.3f}")
  print("trainer's progress lines: " + ", ".join(f"{r:,.0f}" for r in result["trainer_lines"]))
  print(f"feed / step: {result['feed'] / result['step']:.3f}; "
        f"trainer / step: {result['trainer'] / result['step']:.3f}; reader (CPU) / step: "
        f"{result['reader_cpu'] / result['step']:.1f}"
        + (f"; reader (CPU) / tf.data: {result['reader_cpu'] / result['tf_data']:.2f}"
           if "tf_data" in result else ""))
  if args.json:
    with open(args.json, "a", encoding="utf-8") as f:
      f.write(json.dumps(dict(result, seq_len=args.seq_len, batch=args.batch,
                              hparams=json.loads(args.hparams), steps=args.steps,
                              precision=args.mixed_precision,
                              device=str(jax.devices()[0].device_kind))) + "\n")


if __name__ == "__main__":
  main()
