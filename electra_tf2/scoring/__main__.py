"""`python -m electra_tf2.scoring`: the same as `electra score`."""

import sys

from electra_tf2.commands import subcommand_main

sys.exit(subcommand_main("score", sys.argv[1:])())
