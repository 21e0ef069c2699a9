"""Throughput of the Beam pipeline on the DirectRunner against the single-process builder.

In one run, alternating, best of --rounds, on the same corpus and seed:

- single (the anchor): data_prep.builder.build_pretraining_data, one job in
  this process;
- beam, 1 worker: data_prep.beam_pretraining.build_with_beam on the
  DirectRunner in_memory mode, in this process: what one Beam worker core does;
- beam, N workers: the DirectRunner's multi_processing mode with --workers
  worker processes (each starts Python and imports TensorFlow).

TensorFlow is imported before the clock starts, so the first two leave its
import out; the worker processes cannot. tokens/s = WordPiece tokens of all
lines / wall time; per busy worker, over the time the workers spent on the
inputs (reading, tokenizing, packing, serializing, handing records on),
without start-up, sink and shuffle: the input of the Dataflow scaling estimate
in docs/benchmarks.md. The bench checks that every run wrote the same multiset of
examples. The corpus is ../shared/data/corpus copied --repeat times under
distinct folder names (distinct inputs, so distinct documents for the draws).

  python -m bench.training.beam_throughput --repeat 3 --rounds 2 [--workers 2] [--json out.json]
"""

import glob
import hashlib
import os
import platform
import shutil
import sys
import tempfile
import time

from bench.common import SHARED_DATA, script_parser

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

SHARED = os.environ.get("ELECTRA_SHARED_DATA", SHARED_DATA)


def copy_corpus(source: str, repeat: int, into: str):
  """The files under `source`, copied `repeat` times into into/copy<k>/...; sorted paths."""
  files = sorted(p for p in glob.glob(os.path.join(source, "**", "*"), recursive=True)
                 if os.path.isfile(p))
  out = []
  for k in range(repeat):
    for path in files:
      target = os.path.join(into, f"copy{k}", os.path.relpath(path, source))
      os.makedirs(os.path.dirname(target), exist_ok=True)
      shutil.copyfile(path, target)
      out.append(target)
  return sorted(out)


def multiset_digest(out_dir: str) -> str:
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  shards = sorted(glob.glob(os.path.join(out_dir, "pretrain_data.tfrecord-*")))
  records = sorted(r.numpy() for r in tf.data.TFRecordDataset(shards))
  return hashlib.sha256(b"".join(records)).hexdigest()


def run(kind: str, files, vocab_file: str, args) -> dict:
  from electra_tf2.data_prep.beam_pretraining import (  # pylint: disable=g-import-not-at-top
      build_with_beam)
  from electra_tf2.data_prep.builder import (  # pylint: disable=g-import-not-at-top
      BuildConfig, build_pretraining_data)
  out_dir = tempfile.mkdtemp(prefix=f"bench-{kind}-")
  try:
    cfg = BuildConfig(inputs=list(files), vocab_file=vocab_file, output_dir=out_dir,
                      max_seq_length=args.max_seq_length, num_shards=args.num_shards, seed=1,
                      progress=False, max_workers=1)
    start = time.perf_counter()
    if kind == "single":
      summary = build_pretraining_data(cfg, log=lambda s: None, warn=lambda s: None)
    elif kind == "beam-1":
      summary = build_with_beam(cfg, ["--direct_running_mode=in_memory", "--direct_num_workers=1"],
                                log=lambda s: None)
    else:
      summary = build_with_beam(cfg, ["--direct_running_mode=multi_processing",
                                      f"--direct_num_workers={args.workers}"], log=lambda s: None)
    seconds = time.perf_counter() - start
    digest = multiset_digest(out_dir)
  finally:
    shutil.rmtree(out_dir, ignore_errors=True)
  s = summary.stats
  return {"seconds": seconds, "tokens": s.tokens, "examples": s.examples, "digest": digest,
          "work_seconds": sum(s.job_seconds)}


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--corpus", default=os.path.join(SHARED, "corpus"))
  parser.add_argument("--vocab-file", default=os.path.join(SHARED, "vocab", "vocab.txt"))
  parser.add_argument("--repeat", type=int, default=3)
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
  parser.add_argument("--max-seq-length", type=int, default=128)
  parser.add_argument("--num-shards", type=int, default=16)
  parser.add_argument("--json", default=None, help="Also write the results here.")
  args = parser.parse_args()
  if not os.path.isdir(args.corpus) or not os.path.isfile(args.vocab_file):
    sys.exit(f"error: need --corpus ({args.corpus}) and --vocab-file ({args.vocab_file})")

  import apache_beam  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  work = tempfile.mkdtemp(prefix="bench-beam-corpus-")
  try:
    files = copy_corpus(args.corpus, args.repeat, work)
    size = sum(os.path.getsize(f) for f in files)
    print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB; vocab {args.vocab_file}; "
          f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), load average "
          f"{os.getloadavg()[0]:.1f}; Python {platform.python_version()}, TensorFlow "
          f"{tf.__version__}, Beam {apache_beam.__version__}", flush=True)
    kinds = [("single", "builder, 1 process (anchor)"), ("beam-1", "Beam DirectRunner, 1 worker "
             "in this process"), ("beam-n", f"Beam DirectRunner, {args.workers} worker processes")]
    best = {}
    for r in range(args.rounds):
      for kind, _ in kinds:
        res = run(kind, files, args.vocab_file, args)
        print(f"  round {r + 1} {kind}: {res['tokens'] / res['seconds']:,.0f} tokens/s "
              f"({res['examples']:,} examples, {res['seconds']:.2f} s)", flush=True)
        if kind not in best or res["seconds"] < best[kind]["seconds"]:
          best[kind] = res
  finally:
    shutil.rmtree(work, ignore_errors=True)

  assert len({b["digest"] for b in best.values()}) == 1, "the runs wrote different examples"
  anchor = best["single"]
  print()
  print("| run | wall time | tokens/s | examples/s | vs the anchor | tokens/s per busy worker |")
  print("|---|---|---|---|---|---|")
  for kind, label in kinds:
    b = best[kind]
    print(f"| {label} | {b['seconds']:.2f} s | {b['tokens'] / b['seconds']:,.0f} | "
          f"{b['examples'] / b['seconds']:,.0f} | {anchor['seconds'] / b['seconds']:.2f}x | "
          f"{b['tokens'] / b['work_seconds']:,.0f} |")
  print("(per busy worker: tokens / the inputs' processing time summed over the workers; for "
        "the anchor, its job's time)")
  print(f"\nsame multiset of {anchor['examples']:,} examples in every run "
        f"(sha256 {anchor['digest'][:16]})")
  if args.json:
    from electra_tf2.utils.atomic_io import write_json_atomic  # pylint: disable=g-import-not-at-top
    write_json_atomic(args.json, {"corpus_files": len(files), "corpus_bytes": size,
                                  "cpus": os.cpu_count(), "runs": best}, indent=1)


if __name__ == "__main__":
  main()
