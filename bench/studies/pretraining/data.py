"""Stage `data`: the corpus (plus the tasks' training text), a vocab, TFRecords, task data."""

from __future__ import annotations

import glob
import os
from typing import List

from electra_tf2.utils.atomic_io import write_text_atomic
from bench.studies.pretraining.settings import PRESETS, TASKS


def read_tsv(path: str, header: bool) -> List[List[str]]:
  with open(path, encoding="utf-8-sig") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  return rows[1:] if header else rows


def stage_data(args) -> None:
  from electra_tf2.data_prep import build_vocab
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  work, shared = args.work_dir, args.shared_data
  corpus_dir = os.path.join(work, "corpus")
  if not os.path.isdir(corpus_dir):
    os.makedirs(corpus_dir + ".tmp", exist_ok=True)
    patterns = args.corpus_glob or [os.path.join(shared, "corpus", "**", "*")]
    paths = sorted({p for pattern in patterns for p in glob.glob(pattern, recursive=True)
                    if os.path.isfile(p)})
    root = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    for path in paths:
      name = os.path.relpath(path, root).replace(os.sep, "_")
      os.symlink(os.path.abspath(path), os.path.join(corpus_dir + ".tmp", name))
    if args.corpus == "shared+tasks":
      for task in args.tasks:
        directory, _, columns, header = TASKS[task]
        rows = read_tsv(os.path.join(shared, "glue", directory, "train.tsv"), header)
        text = "\n".join(row[c] for row in rows for c in columns if c < len(row)) + "\n"
        write_text_atomic(os.path.join(corpus_dir + ".tmp", f"task_{task}_train.txt"), text)
    os.replace(corpus_dir + ".tmp", corpus_dir)
  files = sorted(os.path.join(corpus_dir, f) for f in os.listdir(corpus_dir))
  vocab = os.path.join(work, "vocab.txt")
  if not os.path.exists(vocab):
    if PRESETS[args.preset]["vocab"] == "bert":
      from electra_tf2.utils.atomic_io import copy_file_atomic
      copy_file_atomic(os.path.join(shared, "vocab", "vocab.txt"), vocab)
    else:
      build_vocab.main(["--corpus-dir", corpus_dir, "--vocab-size", str(args.vocab_size),
                        "--output", vocab])
  records = os.path.join(work, "pretrain_tfrecords")
  if not glob.glob(os.path.join(records, "pretrain_data.tfrecord-*")):
    build_pretraining_data(BuildConfig(inputs=files, vocab_file=vocab, output_dir=records,
                                       max_seq_length=args.max_seq_length,
                                       num_shards=args.num_shards,
                                       seed=0, progress=False))
  for task in args.tasks:
    directory, _, _, header = TASKS[task]
    target = os.path.join(work, "finetuning_data", task)
    if os.path.exists(os.path.join(target, "dev.tsv")):
      continue
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(shared, "glue", directory, "train.tsv"), encoding="utf-8") as f:
      lines = f.readlines()[:args.train_examples + (1 if header else 0)]
    write_text_atomic(os.path.join(target, "train.tsv"), "".join(lines))
    os.symlink(os.path.abspath(os.path.join(shared, "glue", directory, "dev.tsv")),
               os.path.join(target, "dev.tsv"))


def vocab_size(args) -> int:
  with open(os.path.join(args.work_dir, "vocab.txt"), encoding="utf-8") as f:
    return sum(1 for _ in f)
