"""Moved to `electra_tf2.tasks.preprocessing`; this import path keeps working as an alias."""

from electra_tf2.tasks.preprocessing import (  # noqa: F401
    FORMAT_VERSION, Preprocessor)
