"""Pre-training TFRecords with Apache Beam: the single-machine builder's examples, on any runner.

Entry point kept for the official command line; the code is
`electra_tf2.data_prep.beam_pretraining` (also `electra beam_pretraining`-style subcommands: `electra --help`).
"""

import sys

from electra_tf2.data_prep.beam_pretraining import main

if __name__ == "__main__":
  sys.exit(main())
