"""Moved to `electra_tf2.checkpoints.source`; this import path keeps working as an alias."""

from electra_tf2.checkpoints.source import (PRETRAINING_ONLY, Source,  # noqa: F401
                                            SourceError, load_source)
