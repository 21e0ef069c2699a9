"""Builds pre-training TFRecords from OpenWebText-style archives.

  electra build-openwebtext-data --data-dir DATA --num-processes 5

Takes <data-dir>/vocab.txt and the tar archives in <data-dir>/openwebtext/
(OpenWebText's urlsf_subset*.xz; any tar compression is fine) and writes
<data-dir>/pretrain_tfrecords/pretrain_data.tfrecord-*-of-N. As in the official
script, each file inside an archive is one document (blank lines do not end
documents), archives are dealt to jobs by i % N == j and shuffled, and the files
of each archive are shuffled. Unlike it, each archive is streamed into a hidden
temporary folder of the output directory, removed afterwards (not extracted
into <data-dir>/tmp, a directory the official script wiped), member names are
sorted before the shuffle (listdir order is arbitrary), and the output
directory only has its shard files replaced.
"""

import os
import sys


import argparse

from electra_tf2.data_prep.build_pretraining_dataset import add_build_flags, resolve_num_processes
from electra_tf2.data_prep.common import DataPrepError, list_input_files, quiet_tensorflow_logs, run_script


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--data-dir", required=True,
                      help="Directory with vocab.txt and openwebtext/ (the archives); the shards "
                           "go to its pretrain_tfrecords/.")
  parser.add_argument("--archives-glob", default=None,
                      help="Archives to read (default <data-dir>/openwebtext/*).")
  parser.add_argument("--vocab-file", default=None, help="Default <data-dir>/vocab.txt.")
  parser.add_argument("--output-dir", default=None,
                      help="Default <data-dir>/pretrain_tfrecords.")
  add_build_flags(parser)
  return parser


def main(argv=None) -> int:
  args = build_parser().parse_args(argv)
  quiet_tensorflow_logs()
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data
  vocab_file = args.vocab_file or os.path.join(args.data_dir, "vocab.txt")
  output_dir = args.output_dir or os.path.join(args.data_dir, "pretrain_tfrecords")
  pattern = args.archives_glob or os.path.join(args.data_dir, "openwebtext", "*")

  def work():
    if not args.archives_glob and not os.path.isdir(os.path.join(args.data_dir, "openwebtext")):
      raise DataPrepError(f"--data-dir {args.data_dir}: no openwebtext/ directory with the "
                          "archives (or pass --archives-glob)")
    archives, notes = list_input_files(globs=[pattern])
    for note in notes:
      print(f"note: {note}", file=sys.stderr)
    if not archives:
      raise DataPrepError(f"no archives found by {pattern!r}")
    cfg = BuildConfig(
        inputs=archives, vocab_file=vocab_file, output_dir=output_dir,
        max_seq_length=args.max_seq_length,
        num_processes=resolve_num_processes(args.num_processes), blanks_separate_docs=False,
        do_lower_case=args.do_lower_case, strip_accents=args.strip_accents,
        num_shards=args.num_shards, seed=args.seed, expected_vocab_size=args.expected_vocab_size,
        mode="archives", progress=args.progress, max_workers=args.max_workers,
        label="build_openwebtext_pretraining_dataset")
    build_pretraining_data(cfg)
  return run_script(work, f"{output_dir} was left as it was (the unfinished shards were removed)")
