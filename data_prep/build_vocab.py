"""Learns a WordPiece vocabulary (vocab.txt) from a corpus, for pre-training in any language.

Entry point kept for the official command line; the code is
`electra_tf2.data_prep.build_vocab` (also `electra build_vocab`-style subcommands: `electra --help`).
"""

import sys

from electra_tf2.data_prep.build_vocab import main

if __name__ == "__main__":
  sys.exit(main())
