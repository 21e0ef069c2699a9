"""Throughput of the pre-training data builder: ours vs the official pure-Python path.

Both run on the same corpus in the same run, alternating, best of --rounds:

- official: a transcription of the official build_pretraining_dataset.py job
  (GFile lines, ExampleBuilder, tf.train.Example, TFRecordWriter) with the
  pure-Python BERT FullTokenizer from tf-models-official
  (official.nlp.tools.tokenization, word limit set to the official 200 chars);
  all cores = the official multiprocessing (fork, files i % N == j).
- ours: data_prep.builder.build_pretraining_data (tensorflow-text
  tokenizer, batched); all cores = --num-processes N (spawned workers).

Also the tokenizers alone (pure-Python FullTokenizer vs ours, batched).
tokens/s counts the WordPiece tokens of all lines. One-process figures exclude
the TensorFlow import (both paths need it, and this process has it already).
All-core wall times are not like for like: the official workers are forked from
this process, TensorFlow already imported, while ours are spawned and import it
(several seconds per worker); the "slowest job's own time" rows leave process
start-up out of both.

  python -m bench.training.data_prep_throughput                # ../shared/data corpus (else the
                                                      # embedded default corpus)
  python -m bench.training.data_prep_throughput --corpus-glob 'my/**/*.txt' --vocab-file v.txt
"""

import atexit
import glob
import multiprocessing
import os
import platform
import random
import shutil
import sys
import tempfile
import time

from bench.common import SHARED_DATA, script_parser

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

SHARED = os.environ.get("ELECTRA_SHARED_DATA", SHARED_DATA)


# ---------------------------------------------------------------------------
# The official path (transcribed; used only as the baseline)
# ---------------------------------------------------------------------------

def _official_tokenizer(vocab_file):
  from official.nlp.tools import tokenization  # pylint: disable=g-import-not-at-top
  tok = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
  tok.wordpiece_tokenizer.max_input_chars_per_word = 200  # BERT/ELECTRA value
  return tok


class _OfficialPacker:
  """The official builder's per-line work (build_pretraining_dataset.py:34-114), as its script does it:
  pure-Python tokenization of each line, then the segment rules, then a
  tf.train.Example proto per example."""

  def __init__(self, tokenizer, max_length):
    self.tokenizer = tokenizer
    self.max_length = max_length
    self.target = max_length
    self.buffer = []
    self.length = 0
    self.n_tokens = 0
    self.cls_id = tokenizer.vocab["[CLS]"]
    self.sep_id = tokenizer.vocab["[SEP]"]

  def line(self, text):
    text = text.strip().replace("\n", " ")
    if not text and self.length:
      return self.example()
    ids = self.tokenizer.convert_tokens_to_ids(self.tokenizer.tokenize(text))
    self.n_tokens += len(ids)
    self.buffer.append(ids)
    self.length += len(ids)
    return self.example() if self.length >= self.target else None

  def example(self):
    a_target = 100000 if random.random() < 0.1 else (self.target - 3) // 2
    a, b = [], []
    for ids in self.buffer:
      if not a or len(a) + len(ids) < a_target or (not b and len(a) < a_target
                                                   and random.random() < 0.5):
        a += ids
      else:
        b += ids
    a = a[:self.max_length - 2]
    b = b[:max(0, self.max_length - len(a) - 3)]
    self.buffer, self.length = [], 0
    self.target = random.randint(5, self.max_length) if random.random() < 0.05 else self.max_length
    return self.proto(a, b)

  def proto(self, a, b):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    ids = [self.cls_id] + a + [self.sep_id] + (b + [self.sep_id] if b else [])
    segments = [0] * (len(a) + 2) + [1] * (len(ids) - len(a) - 2)
    pad = [0] * (self.max_length - len(ids))
    features = {"input_ids": ids + pad, "input_mask": [1] * len(ids) + pad,
                "segment_ids": segments + pad}
    return tf.train.Example(features=tf.train.Features(feature={
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        for name, values in features.items()}))


def _official_job(job_id, num_jobs, files, vocab_file, out_dir, max_length, num_shards, seed,
                  result_queue=None):
  """One official job: its files (i % N == j) shuffled, lines packed, shards round-robin."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  random.seed(seed + job_id)
  packer = _OfficialPacker(_official_tokenizer(vocab_file), max_length)
  shards = [tf.io.TFRecordWriter(os.path.join(out_dir, f"pretrain_data.tfrecord-{i}-of-{num_shards}"))
            for i in range(num_shards) if i % num_jobs == job_id]
  written = 0

  def write(example):
    nonlocal written
    if example:
      shards[written % len(shards)].write(example.SerializeToString())
      written += 1

  mine = [f for i, f in enumerate(files) if i % num_jobs == job_id]
  random.shuffle(mine)
  for path in mine:
    with tf.io.gfile.GFile(path) as f:
      for line in f:
        write(packer.line(line.strip()))  # blank lines too: blanks separate documents
    write(packer.line(""))
  for shard in shards:
    shard.close()
  result = (packer.n_tokens, written, time.perf_counter() - start)
  if result_queue is not None:
    result_queue.put(result)
  return result


def official_run(files, vocab_file, max_length, num_shards, processes, seed=1):
  out_dir = tempfile.mkdtemp(prefix="bench-official-")
  try:
    start = time.perf_counter()
    if processes == 1:
      tokens, examples, job_seconds = _official_job(0, 1, files, vocab_file, out_dir, max_length,
                                                    num_shards, seed)
    else:
      ctx = multiprocessing.get_context("fork")  # the official script's default on Linux
      q = ctx.Queue()
      jobs = [ctx.Process(target=_official_job, args=(j, processes, files, vocab_file, out_dir,
                                                      max_length, num_shards, seed, q))
              for j in range(processes)]
      for j in jobs:
        j.start()
      results = [q.get() for _ in jobs]
      for j in jobs:
        j.join()
      tokens = sum(r[0] for r in results)
      examples = sum(r[1] for r in results)
      job_seconds = max(r[2] for r in results)
    seconds = time.perf_counter() - start
  finally:
    shutil.rmtree(out_dir, ignore_errors=True)
  return {"tokens": tokens, "examples": examples, "seconds": seconds,
          "steady_seconds": job_seconds}


# ---------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------

def ours_run(files, vocab_file, max_length, num_shards, processes, seed=1):
  from electra_tf2.data_prep.builder import (  # pylint: disable=g-import-not-at-top
      BuildConfig, build_pretraining_data)
  out_dir = tempfile.mkdtemp(prefix="bench-ours-")
  try:
    cfg = BuildConfig(inputs=list(files), vocab_file=vocab_file, output_dir=out_dir,
                      max_seq_length=max_length, num_processes=processes,
                      num_shards=num_shards, seed=seed, progress=False,
                      max_workers=processes)  # one worker process per job, even when small
    start = time.perf_counter()
    summary = build_pretraining_data(cfg, log=lambda s: None, warn=lambda s: None)
    seconds = time.perf_counter() - start
  finally:
    shutil.rmtree(out_dir, ignore_errors=True)
  s = summary.stats
  return {"tokens": s.tokens, "examples": s.examples, "seconds": seconds,
          "steady_seconds": max(s.job_seconds) if s.job_seconds else seconds}


def tokenizer_only(files, vocab_file):
  """tokens/s of the two tokenizers alone over every line."""
  from electra_tf2.text.tokenizer import FullTokenizer  # pylint: disable=g-import-not-at-top
  lines = []
  for path in files:
    with open(path, "rb") as f:
      lines += f.read().replace(b"\r", b"").decode("utf-8", "replace").split("\n")
  lines = [l.strip() for l in lines if l.strip()]
  oracle = _official_tokenizer(vocab_file)
  start = time.perf_counter()
  n_oracle = sum(len(oracle.convert_tokens_to_ids(oracle.tokenize(l))) for l in lines)
  t_oracle = time.perf_counter() - start
  ours = FullTokenizer(vocab_file)
  ours.encode_lines_flat(lines[:100])  # trace once
  start = time.perf_counter()
  flat, _ = ours.encode_lines_flat(lines)
  t_ours = time.perf_counter() - start
  assert n_oracle == len(flat), (n_oracle, len(flat))
  return {"lines": len(lines), "tokens": n_oracle, "oracle_seconds": t_oracle,
          "ours_seconds": t_ours}


def main():
  parser = script_parser(__doc__)
  parser.add_argument("--corpus-glob", default=os.path.join(SHARED, "corpus", "**", "*"))
  parser.add_argument("--vocab-file", default=os.path.join(SHARED, "vocab", "vocab.txt"))
  parser.add_argument("--repeat", type=int, default=1, help="Read the corpus this many times.")
  parser.add_argument("--max-seq-length", type=int, default=128)
  parser.add_argument("--num-shards", type=int, default=16)
  parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                      help="Processes of the all-cores runs (default: CPU count).")
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--skip-all-cores", action="store_true")
  parser.add_argument("--json", default=None, help="Also write the results here.")
  args = parser.parse_args()

  files = sorted(p for p in glob.glob(args.corpus_glob, recursive=True) if os.path.isfile(p))
  if not files and not os.path.isdir(SHARED) and args.corpus_glob == parser.get_default("corpus_glob"):
    # No ../shared/data: use the embedded default corpus and a vocab learned from it.
    from electra_tf2.data_prep.build_vocab import (  # pylint: disable=g-import-not-at-top
        learn_vocab_from_files)
    from electra_tf2.data_prep.default_corpus import (  # pylint: disable=g-import-not-at-top
        write_default_corpus)
    tmp = tempfile.mkdtemp(prefix="bench-default-")
    atexit.register(shutil.rmtree, tmp, True)
    write_default_corpus(os.path.join(tmp, "corpus"))
    files = sorted(glob.glob(os.path.join(tmp, "corpus", "*")))
    args.vocab_file = os.path.join(tmp, "vocab.txt")
    learn_vocab_from_files(files, 8000, args.vocab_file, log=None)
  if not files or not os.path.isfile(args.vocab_file):
    sys.exit(f"error: need a corpus ({args.corpus_glob!r} matched {len(files)} files) and a vocab "
             f"({args.vocab_file}); pass --corpus-glob and --vocab-file")
  files = sorted(files * args.repeat)  # sorted, as both builders read them
  size = sum(os.path.getsize(f) for f in files)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB; vocab {args.vocab_file}; "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}); "
        f"Python {platform.python_version()}, TensorFlow {tf.__version__}", flush=True)

  results = {"corpus_files": len(files), "corpus_bytes": size, "cpus": os.cpu_count(),
             "runs": {}}
  configs = [("1 process", 1)]
  if not args.skip_all_cores and args.processes > 1:
    configs.append((f"{args.processes} processes", args.processes))
  for name, n in configs:
    best = {}
    for r in range(args.rounds):
      for who, fn in (("official", official_run), ("ours", ours_run)):
        res = fn(files, args.vocab_file, args.max_seq_length, args.num_shards, n)
        print(f"  round {r + 1} {name} {who}: {res['tokens'] / res['seconds']:,.0f} tokens/s "
              f"({res['tokens']:,} tokens, {res['examples']:,} examples, {res['seconds']:.2f} s)",
              flush=True)
        if who not in best or res["seconds"] < best[who]["seconds"]:
          best[who] = res
    results["runs"][name] = best
  tok = tokenizer_only(sorted(set(files)), args.vocab_file)
  results["tokenizer_only"] = tok

  print()
  print("| run | official (pure-Python FullTokenizer) | ours (tensorflow-text) | speed-up |")
  print("|---|---|---|---|")
  for name, best in results["runs"].items():
    o, u = best["official"], best["ours"]
    # Same rules; the official draws come from one generator per process, ours per
    # document, so the counts agree within a fraction of a percent, not exactly.
    assert abs(u["examples"] / o["examples"] - 1) < 0.01, "the two builders disagree"
    o_rate, u_rate = o["tokens"] / o["seconds"], u["tokens"] / u["seconds"]
    print(f"| builder, {name} | {o_rate:,.0f} tokens/s ({o['seconds']:.2f} s) | "
          f"{u_rate:,.0f} tokens/s ({u['seconds']:.2f} s) | {u_rate / o_rate:.1f}x |")
    if name != "1 process":
      o_steady, u_steady = o["tokens"] / o["steady_seconds"], u["tokens"] / u["steady_seconds"]
      print(f"| builder, {name}, slowest job's own time (no process start-up) | "
            f"{o_steady:,.0f} tokens/s ({o['steady_seconds']:.2f} s) | {u_steady:,.0f} tokens/s "
            f"({u['steady_seconds']:.2f} s) | {u_steady / o_steady:.1f}x |")
  print(f"| tokenizer alone, 1 process | {tok['tokens'] / tok['oracle_seconds']:,.0f} tokens/s | "
        f"{tok['tokens'] / tok['ours_seconds']:,.0f} tokens/s | "
        f"{tok['oracle_seconds'] / tok['ours_seconds']:.1f}x |")
  if args.json:
    from electra_tf2.utils.atomic_io import write_json_atomic  # pylint: disable=g-import-not-at-top
    write_json_atomic(args.json, results, indent=1, sort_keys=False)


if __name__ == "__main__":
  main()
