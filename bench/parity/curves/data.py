"""Stage `data`: the shared corpus and WikiText-2 valid as length-64 TFRecords."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

from bench.common import REPO


def stage_data(args) -> None:
  data = os.path.join(args.work_dir, "data")
  corpus = os.path.join(args.shared_data, "corpus")
  vocab = os.path.join(args.shared_data, "vocab", "vocab.txt")
  builds = {"pretrain_tfrecords": (os.path.join(corpus, "**", "*.txt"), 8),
            "heldout_tfrecords": (os.path.join(corpus, "wikitext-2-raw", "wiki.valid.raw"), 1)}
  for name, (pattern, shards) in builds.items():
    if glob.glob(os.path.join(data, name, "pretrain_data.tfrecord-*")):
      continue
    subprocess.run([sys.executable, "data_prep/build_pretraining_dataset.py", "--corpus-glob",
                    pattern, "--vocab-file", vocab, "--output-dir", os.path.join(data, name),
                    "--max-seq-length", "64", "--num-shards", str(shards), "--seed", "0",
                    "--no-progress"], check=True, cwd=REPO)
  if not os.path.exists(os.path.join(data, "vocab.txt")):
    from electra_tf2.utils.atomic_io import copy_file_atomic
    copy_file_atomic(vocab, os.path.join(data, "vocab.txt"))
