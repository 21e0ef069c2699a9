"""Builds ELECTRA pre-training TFRecords from text files: the official examples, faster.

Same examples and flags as the official build_pretraining_dataset.py, plus
--num-shards, --seed, --corpus-glob and --file-list. The output directory is
not wiped: only pretrain_data.tfrecord-*-of-* shards are replaced, once the
whole run has succeeded. See docs/data_prep.md.

  electra build-data --corpus-dir DIR \\
      --vocab-file vocab.txt --output-dir OUT [--num-processes 4] [--num-shards 64]
"""

import os


import argparse

from electra_tf2.data_prep.common import (corpus_files, make_bool_parser, quiet_tensorflow_logs,
                              run_script)


def add_tokenizer_flags(parser: argparse.ArgumentParser) -> None:
  """--do-lower-case/--no-lower-case and --do-strip-accents/--no-strip-accents (official)."""
  parser.add_argument("--do-lower-case", dest="do_lower_case", action="store_true",
                      help="Lowercase the text (default).")
  parser.add_argument("--no-lower-case", dest="do_lower_case", action="store_false",
                      help="Keep the case.")
  parser.add_argument("--do-strip-accents", "--strip-accents", dest="strip_accents",
                      action="store_true",
                      help="Remove accents (default); as officially, only ever done when "
                           "lowercasing.")
  parser.add_argument("--no-strip-accents", dest="strip_accents", action="store_false",
                      help="Keep accents.")
  parser.set_defaults(do_lower_case=True, strip_accents=True)


def add_example_flags(parser: argparse.ArgumentParser) -> None:
  """The examples' flags, shared with the OpenWebText builder and the Beam pipeline."""
  parser.add_argument("--max-seq-length", default=128, type=int,
                      help="Tokens per example (default 128).")
  parser.add_argument("--num-shards", default=1000, type=int,
                      help="Number of output files pretrain_data.tfrecord-i-of-N (official: "
                           "1000; use fewer for a small corpus).")
  parser.add_argument("--seed", default=None, type=int,
                      help="Seed of the packing's random draws, made per document: the "
                           "examples depend on it, the inputs and the settings, not on how "
                           "the work is split. Default: a fresh one, printed in the summary.")
  parser.add_argument("--vocab-size", dest="expected_vocab_size", default=None, type=int,
                      help="The model config's vocab_size: the vocab file must have exactly "
                           "this many tokens.")
  add_tokenizer_flags(parser)


def add_vocab_and_output_flags(parser: argparse.ArgumentParser) -> None:
  """--vocab-file and --output-dir (both required)."""
  parser.add_argument("--vocab-file", required=True,
                      help="The vocabulary: a WordPiece vocab.txt or a SentencePiece .model.")
  parser.add_argument("--output-dir", required=True,
                      help="Directory for the pretrain_data.tfrecord-* shards (created; other "
                           "files in it are left alone).")


def add_blanks_flags(parser: argparse.ArgumentParser) -> None:
  """--blanks-separate-docs [true|false] and --no-blanks-separate-docs."""
  blanks = make_bool_parser("--blanks-separate-docs")
  parser.add_argument("--blanks-separate-docs", nargs="?", const=True, default=True, type=blanks,
                      help="Blank lines end documents (default true). A real boolean: "
                           "'--blanks-separate-docs false' turns it off (the official type=bool "
                           "flag took 'False' for true).")
  parser.add_argument("--no-blanks-separate-docs", dest="blanks_separate_docs",
                      action="store_false", help="Blank lines are skipped; each file is one "
                      "document.")


def add_build_flags(parser: argparse.ArgumentParser) -> None:
  """Flags shared with the OpenWebText builder."""
  add_example_flags(parser)
  parser.add_argument("--num-processes", default=1, type=int,
                      help="Jobs, as the official processes: job j reads inputs i %% N == j, "
                           "orders them with seed+j and writes shards i %% N == j (default 1; "
                           "0: one per CPU core).")
  parser.add_argument("--max-workers", type=int, default=None,
                      help="Processes started to run the jobs (default: one per job up to the "
                           "CPU count, and none for inputs under 20 MB, whose jobs run one "
                           "after the other in this process: starting a TensorFlow worker "
                           "costs more than it saves). The output does not depend on it.")
  parser.add_argument("--no-progress", dest="progress", action="store_false",
                      help="No progress bar.")


def build_parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--corpus-dir", action="append", default=[],
                      help="Directory of text files: the files directly in it, as officially "
                           "(repeatable).")
  parser.add_argument("--corpus-glob", action="append", default=[],
                      help="Glob of text files, ** recursing, e.g. 'data/**/*.txt' (repeatable).")
  parser.add_argument("--file-list", action="append", default=[],
                      help="A file naming one text file per line (repeatable).")
  add_vocab_and_output_flags(parser)
  add_blanks_flags(parser)
  add_build_flags(parser)
  return parser


def resolve_num_processes(n: int) -> int:
  return (os.cpu_count() or 1) if n == 0 else n


def main(argv=None) -> int:
  parser = build_parser()
  args = parser.parse_args(argv)
  if not (args.corpus_dir or args.corpus_glob or args.file_list):
    parser.error("give the text with --corpus-dir, --corpus-glob or --file-list")
  quiet_tensorflow_logs()
  from electra_tf2.data_prep.builder import BuildConfig, build_pretraining_data

  def work():
    inputs = corpus_files(args, name_the_flags=True)
    cfg = BuildConfig(
        inputs=inputs, vocab_file=args.vocab_file, output_dir=args.output_dir,
        max_seq_length=args.max_seq_length,
        num_processes=resolve_num_processes(args.num_processes),
        blanks_separate_docs=args.blanks_separate_docs, do_lower_case=args.do_lower_case,
        strip_accents=args.strip_accents, num_shards=args.num_shards, seed=args.seed,
        expected_vocab_size=args.expected_vocab_size, progress=args.progress,
        max_workers=args.max_workers)
    build_pretraining_data(cfg)
  return run_script(work, f"{args.output_dir} was left as it was (the unfinished shards were "
                          "removed)")
