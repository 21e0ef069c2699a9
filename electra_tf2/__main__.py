"""`python -m electra_tf2`: the `electra` command."""

import sys

from electra_tf2.cli.commands import main

sys.exit(main())
