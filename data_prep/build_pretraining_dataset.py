"""Builds ELECTRA pre-training TFRecords from text files: the official examples, faster.

Entry point kept for the official command line; the code is
`electra_tf2.data_prep.build_pretraining_dataset` (also `electra build_pretraining_dataset`-style subcommands: `electra --help`).
"""

import sys

from electra_tf2.data_prep.build_pretraining_dataset import main

if __name__ == "__main__":
  sys.exit(main())
