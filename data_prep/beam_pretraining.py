"""Pre-training TFRecords with Apache Beam: the single-machine builder's examples, on any runner.

Kept as a script (from a clone); the same as `electra build-data --runner RUNNER` (code:
`electra_tf2.data_prep.beam_pretraining`).
"""

import sys

from electra_tf2.data_prep.beam_pretraining import main

if __name__ == "__main__":
  sys.exit(main())
