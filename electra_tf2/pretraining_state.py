"""Moved to `electra_tf2.pretraining.state`; this import path keeps working as an alias."""

from electra_tf2.pretraining.state import (  # noqa: F401
    GLOBAL_STEP, arrays_of, assign, global_step_of)
