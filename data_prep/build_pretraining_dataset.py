"""Builds ELECTRA pre-training TFRecords from text files: the official examples, faster.

Kept as a script (from a clone); the same as `electra build-data` (code:
`electra_tf2.data_prep.build_pretraining_dataset`).
"""

import sys

from electra_tf2.data_prep.build_pretraining_dataset import main

if __name__ == "__main__":
  sys.exit(main())
