"""The embedded default corpus, and the whole default data preparation in one call.

Kept as a script (from a clone); the same as `electra default-data` (code:
`electra_tf2.data_prep.default_corpus`).
"""

import sys

from electra_tf2.data_prep.default_corpus import main

if __name__ == "__main__":
  sys.exit(main())
