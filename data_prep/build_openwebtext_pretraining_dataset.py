"""Builds pre-training TFRecords from OpenWebText-style archives.

Kept as a script (from a clone); the same as `electra build-openwebtext-data` (code:
`electra_tf2.data_prep.build_openwebtext_pretraining_dataset`).
"""

import sys

from electra_tf2.data_prep.build_openwebtext_pretraining_dataset import main

if __name__ == "__main__":
  sys.exit(main())
