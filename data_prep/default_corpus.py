"""The embedded default corpus, and the whole default data preparation in one call.

Entry point kept for the official command line; the code is
`electra_tf2.data_prep.default_corpus` (also `electra default_corpus`-style subcommands: `electra --help`).
"""

import sys

from electra_tf2.data_prep.default_corpus import main

if __name__ == "__main__":
  sys.exit(main())
