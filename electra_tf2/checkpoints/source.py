"""Moved to `electra_tf2.models.sources`; this import path keeps working as an alias."""

from electra_tf2.models.sources import (  # noqa: F401
    PRETRAINING_ONLY, Source, SourceError, finetuned_source, load_source)
