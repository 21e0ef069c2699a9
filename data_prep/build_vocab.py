"""Learns a WordPiece vocabulary (vocab.txt) from a corpus, for pre-training in any language.

Kept as a script (from a clone); the same as `electra build-vocab` (code:
`electra_tf2.data_prep.build_vocab`).
"""

import sys

from electra_tf2.data_prep.build_vocab import main

if __name__ == "__main__":
  sys.exit(main())
