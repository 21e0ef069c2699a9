"""`python -m electra_tf2.scoring`: the same as `electra score`."""

import sys

from electra_tf2.scoring.cli import main

sys.exit(main())
